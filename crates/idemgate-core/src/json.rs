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
    /// An object of these members (unique by construction of the map).
    pub(crate) fn from_members(members: BTreeMap<String, Json>) -> Self {
        Self(members)
    }

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
mod tests;
