//! Strict JSON, case by case: what parses, what is refused and why, and the limits.
#![allow(clippy::unwrap_used)]

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
    assert_eq!(with_depth(&nested(MAX_DEPTH_CEILING + 1), limit), Err(JsonError::TooDeep { limit: MAX_DEPTH_CEILING }));
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
