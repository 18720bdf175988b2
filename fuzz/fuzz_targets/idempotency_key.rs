//! The Idempotency-Key header parser on arbitrary bytes: never panics, and what it
//! accepts is 1 to 255 characters of printable ASCII.
#![no_main]

use idemgate_core::idempotency::parse_key;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(key) = parse_key(data) {
        assert!((1..=255).contains(&key.len()));
        assert!(key.bytes().all(|b| (0x20..=0x7e).contains(&b)));
    }
});
