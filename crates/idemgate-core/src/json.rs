//! Strict JSON parsing of webhook bodies.
//!
//! A webhook's signature covers the raw bytes, while the handler acts on the parsed value.
//! The two must agree, so a body has to be unambiguous: plain `serde_json::Value` silently
//! keeps the last of two duplicate keys (`{"amount":1,"amount":1000}`), and other parsers
//! keep the first, so a signed body could mean different things to different consumers.
//! This module rejects such bodies, along with everything else that could be read more than
//! one way: invalid UTF-8, a byte order mark, non-finite numbers, trailing data, and nesting
//! deeper than a configured limit (which also protects the stack).
//!
//! Error messages never contain payload bytes, key names or values, because they end up in
//! logs and HTTP error reasons and the payload may be sensitive.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// The highest nesting depth that will ever be enforced.
///
/// A configured [`Limits::max_depth`] above this value is clamped to it: parsing recurses
/// once per nesting level, and this ceiling keeps that recursion well within a thread's
/// stack whatever the configuration says. Measured at 512 nested objects: about 0.3 MiB of
/// stack in a release build and 1.3 MiB in a debug build, under the 2 MiB of a default
/// spawned thread.
pub const MAX_DEPTH_CEILING: usize = 512;

/// Limits applied while parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The deepest nesting of arrays and objects accepted.
    ///
    /// Depth counts nested arrays/objects: a top-level scalar is depth 0, `{}` and `[]`
    /// are depth 1, `{"a":[1]}` is depth 2. Values above [`MAX_DEPTH_CEILING`] are clamped
    /// to it. Defaults to 64.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_depth: 64 }
    }
}

/// A parsed JSON value whose objects had unique keys and whose numbers are finite.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A finite number.
    Number(Number),
    /// A string, with escapes resolved.
    String(String),
    /// An array, in input order.
    Array(Vec<Json>),
    /// An object with unique keys.
    Object(Object),
}

/// A finite JSON number, keeping integers exact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// The literal had no fraction and no exponent and fits in i64 or u64 (store as i128).
    Integer(i128),
    /// Anything else that is finite: `3.0`, `1e2`, `0.5`, an integer literal outside the
    /// u64/i64 range, and `-0` (serde_json reports it as the float `-0.0`, keeping its sign).
    Float(f64),
}

/// An object whose keys were unique in the input.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object(BTreeMap<String, Json>);

impl Object {
    /// The member named `key`, if any.
    pub fn get(&self, key: &str) -> Option<&Json> {
        self.0.get(key)
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the object has no members.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a member named `key` exists.
    pub fn contains_key(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// The member names, in sorted order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The members, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Json)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
}

impl Json {
    /// The string, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(s) => Some(s),
            _ => None,
        }
    }

    /// The boolean, if this is a boolean (never `0`/`1` or `"true"`).
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Self::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The integer, if this is an integer literal within the i64 range.
    ///
    /// Never converts a float (`3.0` gives `None`), a boolean or a string (`"5"`).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Self::Number(Number::Integer(i)) => i64::try_from(*i).ok(),
            _ => None,
        }
    }

    /// The object, if this is an object.
    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Self::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[Json]> {
        match self {
            Self::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The member named `key`, if this is an object that has one.
    pub fn get(&self, key: &str) -> Option<&Json> {
        self.as_object()?.get(key)
    }

    /// The value at an RFC 6901 JSON pointer.
    ///
    /// `""` is the whole document; `"/a/0"` is element 0 of member `a`. In a token, `~1`
    /// stands for `/` and `~0` for `~`; any other `~` makes the pointer invalid. Array
    /// indices are decimal without leading zeros; `-` (past the end) never resolves.
    pub fn pointer(&self, pointer: &str) -> Option<&Json> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        rest.split('/').try_fold(self, |value, token| value.step(&unescape_pointer_token(token)?))
    }

    /// A name for this value's type, for error messages: `"null"`, `"boolean"`,
    /// `"number"`, `"string"`, `"array"` or `"object"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "boolean",
            Self::Number(_) => "number",
            Self::String(_) => "string",
            Self::Array(_) => "array",
            Self::Object(_) => "object",
        }
    }

    /// One pointer step: a member of an object or an element of an array.
    fn step(&self, token: &str) -> Option<&Json> {
        match self {
            Self::Object(o) => o.get(token),
            Self::Array(a) => a.get(parse_array_index(token)?),
            _ => None,
        }
    }
}

/// Resolves `~1` and `~0` in a pointer token; `None` on any other use of `~`.
fn unescape_pointer_token(token: &str) -> Option<String> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        match c {
            '~' => match chars.next()? {
                '0' => out.push('~'),
                '1' => out.push('/'),
                _ => return None,
            },
            c => out.push(c),
        }
    }
    Some(out)
}

/// An RFC 6901 array index: `0`, or digits without a leading zero.
fn parse_array_index(token: &str) -> Option<usize> {
    let digits_only = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    if !digits_only || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token.parse().ok()
}

impl From<&Json> for serde_json::Value {
    /// Lossless for integers within the i64/u64 range; floats become f64 numbers.
    ///
    /// Values that [`parse`] never produces (a non-finite float, an integer outside
    /// both ranges) become `null` and the nearest f64 respectively.
    fn from(json: &Json) -> Self {
        use serde_json::Value;
        match json {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => number_to_value(*n),
            Json::String(s) => Value::String(s.clone()),
            Json::Array(items) => Value::Array(items.iter().map(Value::from).collect()),
            Json::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.to_owned(), Value::from(v))).collect()),
        }
    }
}

fn number_to_value(n: Number) -> serde_json::Value {
    match n {
        Number::Integer(i) => {
            if let Ok(v) = i64::try_from(i) {
                v.into()
            } else if let Ok(v) = u64::try_from(i) {
                v.into()
            } else {
                float_to_value(i as f64)
            }
        }
        Number::Float(f) => float_to_value(f),
    }
}

fn float_to_value(f: f64) -> serde_json::Value {
    serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// Why a body is not acceptable JSON.
///
/// Messages are lowercase, without a trailing period, and never contain payload bytes, key
/// names or values; positions are 1-based lines and columns as reported by serde_json.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonError {
    /// The body is not valid UTF-8.
    #[error("body is not valid utf-8")]
    InvalidUtf8,
    /// The body starts with a UTF-8 byte order mark (EF BB BF).
    #[error("body starts with a byte order mark")]
    ByteOrderMark,
    /// Any grammar error: empty input, `NaN`/`Infinity` literals, lone surrogate escapes,
    /// raw control characters in strings, and so on.
    #[error("invalid json syntax at line {line} column {column}")]
    Syntax {
        /// Line of the error.
        line: usize,
        /// Column of the error.
        column: usize,
    },
    /// A number that is not finite as an f64, such as `1e400`.
    #[error("number out of range at line {line} column {column}")]
    NumberOutOfRange {
        /// Line of the error.
        line: usize,
        /// Column of the error.
        column: usize,
    },
    /// The same key (after unescaping) twice in one object, at any depth.
    #[error("duplicate object key at line {line} column {column}")]
    DuplicateKey {
        /// Line of the error.
        line: usize,
        /// Column of the error.
        column: usize,
    },
    /// Arrays and objects nested deeper than the (clamped) limit.
    #[error("json nested deeper than {limit} levels")]
    TooDeep {
        /// The depth limit in force.
        limit: usize,
    },
    /// Non-whitespace after the value.
    #[error("trailing data after json value at line {line} column {column}")]
    TrailingData {
        /// Line of the error.
        line: usize,
        /// Column of the error.
        column: usize,
    },
}

impl JsonError {
    /// A short, stable snake_case code for this variant, fit for a bounded metric label.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::InvalidUtf8 => "invalid_utf8",
            Self::ByteOrderMark => "byte_order_mark",
            Self::Syntax { .. } => "syntax",
            Self::NumberOutOfRange { .. } => "number_out_of_range",
            Self::DuplicateKey { .. } => "duplicate_key",
            Self::TooDeep { .. } => "too_deep",
            Self::TrailingData { .. } => "trailing_data",
        }
    }
}

/// Parses `bytes` as one strict JSON value.
///
/// Rejects invalid UTF-8, a leading byte order mark, syntax errors, non-finite numbers,
/// duplicate keys in any object, nesting deeper than `limits.max_depth` (clamped to
/// [`MAX_DEPTH_CEILING`]) and anything but whitespace after the value.
pub fn parse(bytes: &[u8], limits: Limits) -> Result<Json, JsonError> {
    let text = std::str::from_utf8(bytes).map_err(|_| JsonError::InvalidUtf8)?;
    if text.starts_with('\u{feff}') {
        return Err(JsonError::ByteOrderMark);
    }
    let ctx = Ctx::new(limits.max_depth.min(MAX_DEPTH_CEILING));
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let seed = ValueSeed { ctx: &ctx, depth: 0 };
    let value = seed.deserialize(&mut de).map_err(|e| ctx.to_json_error(&e))?;
    de.end().map_err(|e| JsonError::TrailingData { line: e.line(), column: e.column() })?;
    Ok(value)
}

/// Why the visitor stopped parsing on its own.
#[derive(Debug, Clone, Copy)]
enum Abort {
    DuplicateKey,
    TooDeep,
    NumberOutOfRange,
}

/// State shared by every level of one parse.
struct Ctx {
    max_depth: usize,
    /// Set just before the visitor returns its own error, so it can be recognised.
    abort: Cell<Option<Abort>>,
}

impl Ctx {
    fn new(max_depth: usize) -> Self {
        Self { max_depth, abort: Cell::new(None) }
    }

    /// Records why parsing stops and returns the error that stops it.
    fn abort<E: de::Error>(&self, why: Abort) -> E {
        self.abort.set(Some(why));
        E::custom("rejected by strict json rules")
    }

    /// Maps a serde_json error to ours, dropping its message (it never reaches callers).
    fn to_json_error(&self, err: &serde_json::Error) -> JsonError {
        let (line, column) = (err.line(), err.column());
        match self.abort.take() {
            Some(Abort::TooDeep) => JsonError::TooDeep { limit: self.max_depth },
            Some(Abort::DuplicateKey) => JsonError::DuplicateKey { line, column },
            Some(Abort::NumberOutOfRange) => JsonError::NumberOutOfRange { line, column },
            None if is_number_out_of_range(err) => JsonError::NumberOutOfRange { line, column },
            None => JsonError::Syntax { line, column },
        }
    }
}

/// serde_json exposes no error code, only its category and message.
fn is_number_out_of_range(err: &serde_json::Error) -> bool {
    err.is_syntax() && err.to_string().starts_with("number out of range")
}

/// Deserializes one value nested inside `depth` arrays/objects.
#[derive(Clone, Copy)]
struct ValueSeed<'c> {
    ctx: &'c Ctx,
    depth: usize,
}

impl ValueSeed<'_> {
    /// The seed for the members of a container at this level, or `TooDeep`.
    fn enter<E: de::Error>(self) -> Result<Self, E> {
        let depth = self.depth + 1;
        if depth > self.ctx.max_depth {
            return Err(self.ctx.abort(Abort::TooDeep));
        }
        Ok(Self { depth, ..self })
    }
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Json;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a json value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(Number::Integer(v.into())))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(Number::Integer(v.into())))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        if !v.is_finite() {
            return Err(self.ctx.abort(Abort::NumberOutOfRange));
        }
        Ok(Json::Number(Number::Float(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let inner = self.enter()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let inner = self.enter()?;
        let mut members = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            match members.entry(key) {
                Entry::Occupied(_) => return Err(self.ctx.abort(Abort::DuplicateKey)),
                Entry::Vacant(slot) => {
                    slot.insert(map.next_value_seed(inner)?);
                }
            }
        }
        Ok(Json::Object(Object(members)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn strict(text: &str) -> Result<Json, JsonError> {
        parse(text.as_bytes(), Limits::default())
    }

    fn ok(text: &str) -> Json {
        strict(text).unwrap()
    }

    fn reason(text: &str) -> &'static str {
        strict(text).unwrap_err().reason()
    }

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    fn nested_objects(depth: usize) -> String {
        format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
    }

    fn with_depth(text: &str, max_depth: usize) -> Result<Json, JsonError> {
        parse(text.as_bytes(), Limits { max_depth })
    }

    #[test]
    fn parses_all_kinds() {
        let doc = ok(r#"{"n":null,"b":true,"i":-5,"f":0.5,"s":"x\n","a":[1,"two"],"o":{}}"#);
        let kinds: Vec<_> = doc.as_object().unwrap().iter().map(|(_, v)| v.kind()).collect();
        assert_eq!(kinds, ["array", "boolean", "number", "number", "null", "object", "string"]);
        assert_eq!(doc.get("s").unwrap().as_str(), Some("x\n"));
        assert_eq!(doc.get("i").unwrap().as_i64(), Some(-5));
        assert_eq!(doc.get("b").unwrap().as_bool(), Some(true));
        assert_eq!(doc.get("a").unwrap().as_array().unwrap().len(), 2);
        assert!(doc.get("o").unwrap().as_object().unwrap().is_empty());
    }

    #[test]
    fn object_accessors() {
        let doc = ok(r#"{"b":1,"a":2}"#);
        let obj = doc.as_object().unwrap();
        assert_eq!(obj.len(), 2);
        assert!(obj.contains_key("a"));
        assert!(!obj.contains_key("c"));
        assert_eq!(obj.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(obj.get("b"), Some(&Json::Number(Number::Integer(1))));
    }

    #[test]
    fn duplicate_key_at_top_level() {
        assert!(matches!(strict(r#"{"a":1,"a":2}"#), Err(JsonError::DuplicateKey { line: 1, .. })));
    }

    #[test]
    fn duplicate_key_nested_in_object_inside_array() {
        assert_eq!(reason(r#"[1,{"x":{"k":1,"k":true}}]"#), "duplicate_key");
    }

    #[test]
    fn duplicate_key_via_escape() {
        assert_eq!(reason(r#"{"a":1,"\u0061":2}"#), "duplicate_key");
    }

    #[test]
    fn same_key_in_different_objects_is_fine() {
        let doc = ok(r#"{"a":{"a":1},"b":[{"a":2},{"a":3}]}"#);
        assert_eq!(doc.pointer("/b/1/a").unwrap().as_i64(), Some(3));
    }

    #[test]
    fn non_finite_literals_rejected() {
        for text in ["NaN", "Infinity", "-Infinity", "[NaN]", r#"{"a":Infinity}"#] {
            assert_eq!(reason(text), "syntax", "{text}");
        }
    }

    #[test]
    fn overflowing_numbers_rejected() {
        assert!(matches!(strict("1e400"), Err(JsonError::NumberOutOfRange { line: 1, .. })));
        assert_eq!(reason("[-1e400]"), "number_out_of_range");
    }

    #[test]
    fn non_finite_float_from_visitor_rejected() {
        use serde::de::IntoDeserializer;
        let ctx = Ctx::new(64);
        let seed = ValueSeed { ctx: &ctx, depth: 0 };
        let de: de::value::F64Deserializer<de::value::Error> = f64::INFINITY.into_deserializer();
        assert!(seed.deserialize(de).is_err());
        assert!(matches!(ctx.abort.get(), Some(Abort::NumberOutOfRange)));
    }

    #[test]
    fn invalid_utf8_rejected() {
        let err = parse(b"{\"a\":\"\xff\"}", Limits::default()).unwrap_err();
        assert_eq!(err, JsonError::InvalidUtf8);
        assert_eq!(err.to_string(), "body is not valid utf-8");
    }

    #[test]
    fn byte_order_mark_rejected() {
        let err = parse(b"\xef\xbb\xbf{}", Limits::default()).unwrap_err();
        assert_eq!(err, JsonError::ByteOrderMark);
    }

    #[test]
    fn trailing_data_rejected() {
        assert_eq!(reason("{} x"), "trailing_data");
        assert!(matches!(strict("{}{}"), Err(JsonError::TrailingData { line: 1, column: 3 })));
    }

    #[test]
    fn trailing_whitespace_accepted() {
        assert_eq!(ok(" {} \n\t\r "), Json::Object(Object::default()));
    }

    #[test]
    fn empty_and_whitespace_only_rejected() {
        assert_eq!(reason(""), "syntax");
        assert_eq!(reason(" \n\t "), "syntax");
    }

    #[test]
    fn depth_counting() {
        assert!(with_depth("1", 0).is_ok());
        assert_eq!(with_depth("[]", 0), Err(JsonError::TooDeep { limit: 0 }));
        assert!(with_depth(r#"{"a":[1]}"#, 2).is_ok());
        assert_eq!(with_depth(r#"{"a":[1]}"#, 1), Err(JsonError::TooDeep { limit: 1 }));
    }

    #[test]
    fn depth_exactly_max_accepted_one_more_rejected() {
        let limit = Limits::default().max_depth;
        assert!(strict(&nested(limit)).is_ok());
        assert_eq!(strict(&nested(limit + 1)), Err(JsonError::TooDeep { limit }));
    }

    #[test]
    fn very_deep_input_is_too_deep_without_overflow() {
        assert_eq!(strict(&nested(100_000)), Err(JsonError::TooDeep { limit: 64 }));
        assert_eq!(reason(&"[".repeat(100_000)), "too_deep");
        assert_eq!(reason(&r#"{"a":"#.repeat(100_000)), "too_deep");
    }

    #[test]
    fn max_depth_above_ceiling_is_clamped() {
        let limit = MAX_DEPTH_CEILING * 10;
        assert!(with_depth(&nested(MAX_DEPTH_CEILING), limit).is_ok());
        assert!(with_depth(&nested_objects(MAX_DEPTH_CEILING), limit).is_ok());
        assert_eq!(with_depth(&nested_objects(MAX_DEPTH_CEILING + 1), limit).map_err(|e| e.reason()), Err("too_deep"));
        assert_eq!(
            with_depth(&nested(MAX_DEPTH_CEILING + 1), limit),
            Err(JsonError::TooDeep { limit: MAX_DEPTH_CEILING })
        );
    }

    #[test]
    fn as_i64_never_coerces() {
        assert_eq!(ok("true").as_i64(), None);
        assert_eq!(ok(r#""5""#).as_i64(), None);
        assert_eq!(ok("3.0"), Json::Number(Number::Float(3.0)));
        assert_eq!(ok("3.0").as_i64(), None);
        assert_eq!(ok("5").as_i64(), Some(5));
        assert_eq!(ok("18446744073709551615").as_i64(), None);
    }

    #[test]
    fn as_bool_never_coerces() {
        assert_eq!(ok("1").as_bool(), None);
        assert_eq!(ok(r#""true""#).as_bool(), None);
        assert_eq!(ok("false").as_bool(), Some(false));
    }

    #[test]
    fn number_classification() {
        assert_eq!(ok("1e2"), Json::Number(Number::Float(100.0)));
        assert!(matches!(ok("-0"), Json::Number(Number::Float(f)) if f.is_sign_negative()));
        assert_eq!(ok("-0").as_i64(), None);
        let neg_zero_float = ok("-0.0");
        assert!(matches!(neg_zero_float, Json::Number(Number::Float(f)) if f.is_sign_negative()));
        assert_eq!(ok("18446744073709551615"), Json::Number(Number::Integer(u64::MAX.into())));
        assert_eq!(ok("-9223372036854775808"), Json::Number(Number::Integer(i64::MIN.into())));
        assert_eq!(ok("18446744073709551616"), Json::Number(Number::Float(18_446_744_073_709_551_616.0)));
    }

    #[test]
    fn pointer_resolution() {
        let doc = ok(r#"{"a/b":1,"m~n":2,"arr":[10,20],"":3,"o":{"x":[true]}}"#);
        assert_eq!(doc.pointer(""), Some(&doc));
        assert_eq!(doc.pointer("/a~1b").unwrap().as_i64(), Some(1));
        assert_eq!(doc.pointer("/m~0n").unwrap().as_i64(), Some(2));
        assert_eq!(doc.pointer("/arr/1").unwrap().as_i64(), Some(20));
        assert_eq!(doc.pointer("/").unwrap().as_i64(), Some(3));
        assert_eq!(doc.pointer("/o/x/0").unwrap().as_bool(), Some(true));
    }

    #[test]
    fn pointer_rejects_invalid() {
        let doc = ok(r#"{"arr":[10,20],"m~n":2}"#);
        for p in ["arr", "/arr/01", "/arr/2", "/arr/-", "/arr/+1", "/arr/", "/m~2n", "/m~", "/x"] {
            assert_eq!(doc.pointer(p), None, "{p}");
        }
        assert_eq!(ok("1").pointer("/0"), None);
    }

    #[test]
    fn error_messages_contain_no_payload() {
        let cases = [
            r#"{"secretkey":1,"secretkey":2}"#,
            r#"{"secretkey":secretvalue}"#,
            r#"{"secretkey":1} secretkey"#,
            r#"{"secretkey":1e999}"#,
        ];
        for text in cases {
            let message = strict(text).unwrap_err().to_string();
            assert!(!message.contains("secret"), "{message}");
        }
        let message = strict(r#"{"secretkey":1,"secretkey":2}"#).unwrap_err().to_string();
        assert!(message.starts_with("duplicate object key at line 1"), "{message}");
    }

    #[test]
    fn reasons_are_stable() {
        let all = [
            (JsonError::InvalidUtf8, "invalid_utf8"),
            (JsonError::ByteOrderMark, "byte_order_mark"),
            (JsonError::Syntax { line: 1, column: 1 }, "syntax"),
            (JsonError::NumberOutOfRange { line: 1, column: 1 }, "number_out_of_range"),
            (JsonError::DuplicateKey { line: 1, column: 1 }, "duplicate_key"),
            (JsonError::TooDeep { limit: 1 }, "too_deep"),
            (JsonError::TrailingData { line: 1, column: 1 }, "trailing_data"),
        ];
        for (err, code) in all {
            assert_eq!(err.reason(), code);
            let message = err.to_string();
            assert_eq!(message, message.to_lowercase());
            assert!(!message.ends_with('.'));
        }
    }

    #[test]
    fn lone_surrogate_rejected() {
        assert_eq!(reason(r#""\ud800""#), "syntax");
        assert_eq!(reason(r#""\udc00""#), "syntax");
        assert_eq!(ok(r#""\ud83d\ude00""#).as_str(), Some("\u{1f600}"));
    }

    #[test]
    fn raw_control_character_in_string_rejected() {
        assert_eq!(reason("\"a\u{1}b\""), "syntax");
        assert_eq!(reason("\"a\nb\""), "syntax");
    }

    #[test]
    fn converts_to_serde_json_value() {
        let text = r#"{"a":[1,-2,18446744073709551615,0.5],"b":{"c":null,"d":"e","f":false}}"#;
        let value = serde_json::Value::from(&ok(text));
        let expected: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(value, expected);
        assert_eq!(value.to_string(), text);
    }

    #[test]
    fn large_numbers_parse_to_the_correctly_rounded_float() {
        // Found by the json fuzz target: without serde_json's float_roundtrip, this
        // integer literal beyond u64 parsed to a neighbouring float, so re-serialising
        // the parsed value gave a different number than the sender wrote.
        let text = " 444444444444044444444444444444";
        let Json::Number(Number::Float(f)) = strict(text).unwrap() else { panic!("not a float") };
        assert_eq!(f, 444444444444044444444444444444f64);
        assert_eq!(f.to_string().parse::<f64>().unwrap(), f);
    }
}
