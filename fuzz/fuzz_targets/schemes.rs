//! Every scheme's header parsing and verification on arbitrary headers and bodies: never
//! panics, and never accepts a delivery (the fuzzer cannot know the secret).
#![no_main]

use http::{HeaderMap, HeaderName, HeaderValue};
use idemgate_core::{
    Secret, SecretSet, UnixTime,
    scheme::{self, RawDelivery},
};
use libfuzzer_sys::fuzz_target;

/// Every header name any scheme reads.
const NAMES: [&str; 16] = [
    "webhook-id", "webhook-timestamp", "webhook-signature", "svix-id", "svix-timestamp", "svix-signature",
    "x-hub-signature-256", "x-github-delivery", "stripe-signature", "x-shopify-hmac-sha256",
    "x-shopify-event-id", "x-slack-signature", "x-slack-request-timestamp", "demo-delivery-id",
    "demo-timestamp", "demo-signature",
];

fuzz_target!(|data: &[u8]| {
    // The input is header values separated by newlines, then the body.
    let mut parts = data.splitn(NAMES.len() + 1, |b| *b == b'\n');
    let mut headers = HeaderMap::new();
    for name in NAMES {
        let Some(value) = parts.next() else { break };
        if let Ok(value) = HeaderValue::from_bytes(value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    let body = parts.next().unwrap_or_default();
    let secrets = SecretSet::new(vec![Secret::new(b"whsec_fuzzing-secret-key-of-enough-length".to_vec())]).unwrap();
    for scheme in scheme::SCHEMES {
        let verified = scheme.verify(&secrets, RawDelivery { headers: &headers, body }, UnixTime(1_800_000_000));
        assert!(verified.is_err(), "{} accepted a forged delivery", scheme.name());
        let _ = scheme.decode_secret(&String::from_utf8_lossy(body));
    }
});
