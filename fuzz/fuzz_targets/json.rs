//! Strict JSON on arbitrary bytes: never panics, never overflows the stack, and whatever
//! it accepts re-serialises to JSON that it accepts again with the same value.
#![no_main]

use idemgate_core::json::{self, Limits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = json::parse(data, Limits::default()) {
        let text = serde_json::Value::from(&value).to_string();
        let reparsed = json::parse(text.as_bytes(), Limits::default()).expect("re-serialised JSON must parse");
        assert_eq!(serde_json::Value::from(&reparsed).to_string(), text);
    }
});
