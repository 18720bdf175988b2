//! The configuration parser on arbitrary text: never panics, and every error names a key
//! on one line.
#![no_main]

use idemgate::config::raw;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(err) = raw::parse(&text, std::iter::empty()) {
        assert!(!err.key.is_empty());
        assert_eq!(err.to_string().lines().count(), 1, "{err}");
    }
});
