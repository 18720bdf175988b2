//! Properties of the pure core, checked on generated inputs: strict JSON accepts what a
//! serializer writes and refuses any duplicate key; the retry schedule stays within its
//! jitter and never gives up early; the fingerprint and the body hash change with any byte.

#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use idemgate_core::{
    BodyHash,
    idempotency::{Fingerprint, parse_key},
    json::{self, Limits},
    retry::{AttemptResult, Decision, RetryPolicy},
};
use proptest::prelude::*;
use serde_json::Value;

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-zA-Z0-9 \\\\\"é€\u{1F600}]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn strict_json_accepts_what_a_serializer_writes(value in json_value()) {
        let text = serde_json::to_vec(&value).unwrap();
        let parsed = json::parse(&text, Limits::default()).unwrap();
        prop_assert_eq!(Value::from(&parsed), value);
    }

    #[test]
    fn strict_json_refuses_a_duplicate_key_anywhere(value in json_value(), key in "[a-z]{1,6}") {
        let text = serde_json::to_string(&value).unwrap();
        let doubled = format!(r#"{{"wrap":[{text}],"{key}":1,"{key}":2}}"#);
        prop_assert!(json::parse(doubled.as_bytes(), Limits::default()).is_err());
    }

    #[test]
    fn strict_json_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = json::parse(&bytes, Limits::default());
    }

    #[test]
    fn retry_delays_stay_within_their_jitter(attempt in 1u32..10, draw in 0.0f64..1.0, status in 500u16..600) {
        let policy = RetryPolicy::default();
        let base = policy.schedule[(attempt - 1) as usize];
        match policy.decide(attempt, AttemptResult::Status { status, retry_after: None }, draw) {
            Decision::RetryAfter(delay) => {
                prop_assert!(delay >= base.mul_f64(0.8) && delay <= base.mul_f64(1.2), "{delay:?} vs {base:?}");
            }
            other => prop_assert!(false, "attempt {attempt} gave {other:?}"),
        }
    }

    #[test]
    fn a_retry_after_is_never_cut_below_itself_up_to_the_cap(wait in 0u64..100_000, draw in 0.0f64..1.0) {
        let policy = RetryPolicy::default();
        let asked = Duration::from_secs(wait);
        let result = AttemptResult::Status { status: 429, retry_after: Some(asked) };
        let Decision::RetryAfter(delay) = policy.decide(1, result, draw) else { unreachable!() };
        prop_assert!(delay >= asked.min(policy.retry_after_cap));
    }

    #[test]
    fn any_changed_byte_changes_the_fingerprint(body in prop::collection::vec(any::<u8>(), 1..64), index in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let mut other = body.clone();
        let i = index.index(body.len());
        other[i] ^= flip;
        prop_assert_ne!(Fingerprint::of("POST", "/x", "", &body), Fingerprint::of("POST", "/x", "", &other));
        prop_assert_ne!(BodyHash::of(&body), BodyHash::of(&other));
    }

    #[test]
    fn idempotency_keys_parse_or_refuse_without_panicking(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(key) = parse_key(&bytes) {
            prop_assert!(!key.is_empty() && key.len() <= 255);
        }
    }
}
