//! Vectors, by source (repository `standard-webhooks/standard-webhooks` unless noted):
//! - PY: `libraries/python/tests/test_webhooks.py` (main, b2fa7b8); its `sign` vector is
//!   also in `libraries/javascript/src/webhook.test.ts` and `libraries/go/webhook_test.go`.
//! - RS: `libraries/rust/src/lib.rs` tests (main, b2fa7b8); the same vector and lists are
//!   in `svix/svix-webhooks` `rust/src/webhooks.rs`.
//! - JS: `libraries/javascript/src/webhook.test.ts` (main).
//! - JS-v1a: `libraries/javascript/src/webhook.test.ts` at commit 659f674 (pull request
//!   #308, not merged): seed `[1; 32]`.
//! - GO-v1a: `libraries/go/webhook_asymmetric_test.go` at commit f50a00a (pull request
//!   #253, not merged): seed = base64 `VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=`.
//!
//! The spec itself has no v1a vector with a key. Both v1a vectors, the `whpk_` keys
//! below and the two HMAC vectors were recomputed independently with Python's `hmac` and
//! `cryptography` (OpenSSL) `Ed25519PrivateKey.from_private_bytes(seed)`.

use http::{HeaderMap, HeaderValue};

use super::*;

const PY_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const PY_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const PY_TS: i64 = 1_614_265_330;
const PY_BODY: &[u8] = br#"{"test": 2432232314}"#;
const PY_SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
const RS_SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
const RS_ID: &str = "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk";
const RS_TS: i64 = 1_649_367_553;
const RS_BODY: &[u8] = br#"{"email":"test@example.com","username":"test_user"}"#;
const RS_SIG: &str = "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=";
/// The public key of seed `[1; 32]` (JS-v1a), and its signature of the PY message.
const ONES_PUBLIC: &str = "whpk_iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w=";
const ONES_SIG: &str = "v1a,Ykcu7AtGZGmZxFEH1Gaa2Nd7feY/CTuruoL4fqgnKwfbHU4DhemoVHZdvGfIvKvn4BIgwktLGGPGIr/i9nK7AA==";
/// The public key of seed `[2; 32]`, JS-v1a's "other" key pair.
const TWOS_PUBLIC: &str = "whpk_gTl3Dqh9F19Wo1Rmw0x+zMuNipG07jeiXfYPW4/Js5Q=";
/// GO-v1a's seed, its public key and its signature of the PY message.
const GO_SEED: &[u8; 32] = b"TESTSIGNINGKEYDONOTUSETHISFORANY";
const GO_PUBLIC: &str = "whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g=";
const GO_SIG: &str = "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==";
/// A wrong `v1` signature used by PY, JS, GO and the multi-signature lists.
const CEO5: &str = "Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=";
const NOW: UnixTime = UnixTime(PY_TS);

fn hmac_key(text: &str) -> Secret {
    StandardWebhooks::default().decode_secret(text).unwrap_or_else(|_| unreachable!())
}

fn public_key(text: &str) -> Secret {
    StandardWebhooksEd25519::default().decode_secret(text).unwrap_or_else(|_| unreachable!())
}

fn headers_named(names: [&'static str; 3], values: [&str; 3]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in names.into_iter().zip(values) {
        let value = HeaderValue::from_str(value).unwrap_or_else(|_| unreachable!());
        headers.insert(name, value);
    }
    headers
}

fn headers(id: &str, timestamp: &str, signature: &str) -> HeaderMap {
    let names = [ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER];
    headers_named(names, [id, timestamp, signature])
}

fn py_headers(signature: &str) -> HeaderMap {
    headers(PY_ID, &PY_TS.to_string(), signature)
}

fn check(
    scheme: &dyn Scheme,
    secrets: &[Secret],
    headers: &HeaderMap,
    body: &[u8],
    now: UnixTime,
) -> Result<VerifiedDelivery, AuthError> {
    let set = SecretSet::new(secrets.to_vec()).unwrap_or_else(|_| unreachable!());
    scheme.verify(&set, RawDelivery { headers, body }, now)
}

fn verify(headers: &HeaderMap, body: &[u8]) -> Result<VerifiedDelivery, AuthError> {
    let scheme = StandardWebhooks::default();
    check(&scheme, &[hmac_key(PY_SECRET)], headers, body, NOW)
}

fn verify_ed(keys: &[&str], headers: &HeaderMap) -> Result<VerifiedDelivery, AuthError> {
    let keys: Vec<Secret> = keys.iter().map(|key| public_key(key)).collect();
    let scheme = StandardWebhooksEd25519::default();
    check(&scheme, &keys, headers, PY_BODY, NOW)
}

fn delivery(id: &str, timestamp: i64) -> VerifiedDelivery {
    VerifiedDelivery {
        delivery_id: Some(id.into()),
        event_identity: Some(id.into()),
        timestamp: Some(UnixTime(timestamp)),
    }
}

#[test]
fn sign_reproduces_the_official_vectors() {
    // PY test_sign_function (and JS, GO); RS test_sign.
    assert_eq!(sign(&hmac_key(PY_SECRET), PY_ID, PY_TS, PY_BODY), PY_SIG);
    assert_eq!(sign(&hmac_key(RS_SECRET), RS_ID, RS_TS, RS_BODY), RS_SIG);
}

#[test]
fn the_official_vectors_verify_and_report_the_message_id() {
    assert_eq!(verify(&py_headers(PY_SIG), PY_BODY), Ok(delivery(PY_ID, PY_TS)));
    let rs = headers(RS_ID, &RS_TS.to_string(), RS_SIG);
    let scheme = StandardWebhooks::default();
    let result = check(&scheme, &[hmac_key(RS_SECRET)], &rs, RS_BODY, UnixTime(RS_TS));
    assert_eq!(result, Ok(delivery(RS_ID, RS_TS)));
}

#[test]
fn the_libraries_invalid_and_partial_signatures_fail() {
    for signature in [
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=", // PY invalid_signature
        "v1,R3PTzyfHASBKHH98a7yexTwaJ4yNIcGhFQc1yuN+BPU=", // RS test_no_verify
        "v1,dawfeoifkpqwoekfpqoekf",                       // JS invalid signature
        &format!("v1,{CEO5}"),                             // GO invalid signature
        "v1,",                                             // JS, GO, RS partial
        &PY_SIG[..8],                                      // JS, RS first 8 chars
    ] {
        let result = verify(&py_headers(signature), PY_BODY);
        assert_eq!(result, Err(AuthError::SignatureMismatch), "{signature}");
    }
}

#[test]
fn a_changed_body_byte_fails() {
    let result = verify(&py_headers(PY_SIG), br#"{"test": 2432232315}"#);
    assert_eq!(result, Err(AuthError::SignatureMismatch));
}

#[test]
fn one_valid_entry_among_several_verifies() {
    // PY/JS/GO test_multi_sig_payload_is_valid.
    let py = [&format!("v1,{CEO5}"), &format!("v2,{CEO5}"), PY_SIG, &format!("v1,{CEO5}")];
    assert!(verify(&py_headers(&py.join(" ")), PY_BODY).is_ok());
    // RS test_verify_with_multiple_signatures and test_no_verify_with_multiple_signatures.
    let wrong = [
        "v1,tFtCZ5RDCPxzWQRWXWPgrCgE2frDBe9gjpbWQxnVfsQ=",
        "v1,Mm7xgUVICxZfQ3bgf0h0Dof65L/IFx+PnZvnDWPCX6Q=",
        "v1,9DfC1c3eeOrXB6w/5dIDydLNQaEyww5KalE5jLBZucE=",
    ];
    let with_valid = [wrong[0], wrong[1], PY_SIG, wrong[2]].join(" ");
    assert!(verify(&py_headers(&with_valid), PY_BODY).is_ok());
    let result = verify(&py_headers(&wrong.join(" ")), PY_BODY);
    assert_eq!(result, Err(AuthError::SignatureMismatch));
}

#[test]
fn other_versions_are_ignored() {
    let valid = &PY_SIG[3..];
    for version in ["v2", "v1a", "V1", "v1 "] {
        let result = verify(&py_headers(&format!("{version},{valid}")), PY_BODY);
        assert_eq!(result, Err(AuthError::SignatureMismatch), "{version}");
    }
}

#[test]
fn malformed_entries_are_skipped_not_fatal() {
    let list = format!("garbage v1 v1,!!!! {PY_SIG},x v1,{}  {PY_SIG}", &PY_SIG[3..40]);
    assert!(verify(&py_headers(&list), PY_BODY).is_ok());
    let empty = verify(&py_headers(""), PY_BODY);
    assert_eq!(empty, Err(AuthError::SignatureMismatch));
}

#[test]
fn missing_headers_are_refused() {
    // PY/JS/GO/RS missing id, timestamp and signature.
    for name in [ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER] {
        let mut headers = py_headers(PY_SIG);
        headers.remove(name);
        assert_eq!(verify(&headers, PY_BODY), Err(AuthError::MissingHeader(name)));
    }
    let none = verify(&HeaderMap::new(), PY_BODY);
    assert_eq!(none, Err(AuthError::MissingHeader(ID_HEADER)));
}

#[test]
fn repeated_headers_are_refused() {
    for name in [ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER] {
        let mut headers = py_headers(PY_SIG);
        headers.append(name, HeaderValue::from_static("1"));
        assert_eq!(verify(&headers, PY_BODY), Err(AuthError::MalformedHeader(name)));
    }
}

#[test]
fn the_timestamp_must_be_within_tolerance_both_ways() {
    // PY/JS/GO/RS old and new timestamps: five minutes and one second either way fail.
    let key = hmac_key(PY_SECRET);
    for (offset, ok) in [(-300, true), (-301, false), (300, true), (301, false)] {
        let ts = PY_TS + offset;
        let headers = py_headers_at(ts, &sign(&key, PY_ID, ts, PY_BODY));
        let result = verify(&headers, PY_BODY);
        assert_eq!(result.is_ok(), ok, "offset {offset}");
        if !ok {
            assert_eq!(result, Err(AuthError::TimestampOutOfTolerance { tolerance_secs: 300 }));
        }
    }
}

fn py_headers_at(timestamp: i64, signature: &str) -> HeaderMap {
    headers(PY_ID, &timestamp.to_string(), signature)
}

#[test]
fn malformed_timestamps_and_ids_are_refused() {
    // "hello" is PY/JS invalid timestamp; the rest are non-canonical forms.
    for ts in ["hello", "+1614265330", "01614265330", "1614265330.0", "-1", "", "1e9"] {
        let result = verify(&headers(PY_ID, ts, PY_SIG), PY_BODY);
        assert_eq!(result, Err(AuthError::MalformedHeader(TIMESTAMP_HEADER)), "{ts}");
    }
    let long = "m".repeat(MAX_ID_LEN + 1);
    for id in ["", "msg.1", "msg 1", long.as_str()] {
        let result = verify(&headers(id, "1614265330", PY_SIG), PY_BODY);
        assert_eq!(result, Err(AuthError::MalformedHeader(ID_HEADER)), "{id}");
    }
}

#[test]
fn oversized_signature_lists_are_refused() {
    let too_many = vec![PY_SIG; MAX_SIGNATURE_ENTRIES + 1].join(" ");
    let at_limit = vec![PY_SIG; MAX_SIGNATURE_ENTRIES].join(" ");
    let too_long = format!("{PY_SIG} v9,{}", "A".repeat(MAX_SIGNATURE_HEADER_LEN));
    for (list, ok) in [(too_many, false), (at_limit, true), (too_long, false)] {
        let result = verify(&py_headers(&list), PY_BODY);
        let expected = Err(AuthError::MalformedHeader(SIGNATURE_HEADER));
        assert_eq!(result.is_ok(), ok);
        assert!(ok || result == expected);
    }
}

#[test]
fn svix_headers_verify() {
    // svix/svix-webhooks rust/src/webhooks.rs test_verify: svix-* headers, same signature.
    let names = [SVIX_ID_HEADER, SVIX_TIMESTAMP_HEADER, SVIX_SIGNATURE_HEADER];
    let svix = headers_named(names, [PY_ID, "1614265330", PY_SIG]);
    assert_eq!(verify(&svix, PY_BODY), Ok(delivery(PY_ID, PY_TS)));
    let event = crate::json::Json::Null;
    let verified = verify(&svix, PY_BODY).unwrap_or_else(|_| unreachable!());
    for configured in [ID_HEADER, SVIX_ID_HEADER, "Webhook-Id"] {
        let identity = IdentityLocation::Header(configured.into())
            .resolve(&StandardWebhooks::default(), &svix, &verified, &event)
            .map(|identity| identity.as_str().to_owned());
        assert_eq!(identity.as_deref(), Ok(PY_ID), "{configured}: the identity is the svix-id it verified");
    }
    let mut broken = svix;
    broken.remove(SVIX_TIMESTAMP_HEADER);
    let result = verify(&broken, PY_BODY);
    assert_eq!(result, Err(AuthError::MissingHeader(SVIX_TIMESTAMP_HEADER)));
}

#[test]
fn the_two_header_spellings_are_never_mixed() {
    let names = [ID_HEADER, SVIX_TIMESTAMP_HEADER, SVIX_SIGNATURE_HEADER];
    let mixed = headers_named(names, [PY_ID, "1614265330", PY_SIG]);
    let result = verify(&mixed, PY_BODY);
    assert_eq!(result, Err(AuthError::MissingHeader(TIMESTAMP_HEADER)));
    // With both complete sets the webhook-* one is used, here with a wrong signature.
    let mut both = py_headers(&format!("v1,{CEO5}"));
    both.extend(headers_named(
        [SVIX_ID_HEADER, SVIX_TIMESTAMP_HEADER, SVIX_SIGNATURE_HEADER],
        [PY_ID, "1614265330", PY_SIG],
    ));
    assert_eq!(verify(&both, PY_BODY), Err(AuthError::SignatureMismatch));
}

#[test]
fn any_active_secret_verifies_during_rotation() {
    let scheme = StandardWebhooks::default();
    let (py, rs) = (hmac_key(PY_SECRET), hmac_key(RS_SECRET));
    let by_rs = py_headers(&sign(&rs, PY_ID, PY_TS, PY_BODY));
    for signed in [py_headers(PY_SIG), by_rs.clone()] {
        let both = [rs.clone(), py.clone()];
        assert!(check(&scheme, &both, &signed, PY_BODY, NOW).is_ok());
    }
    let result = check(&scheme, &[py], &by_rs, PY_BODY, NOW);
    assert_eq!(result, Err(AuthError::SignatureMismatch));
}

#[test]
fn sign_output_verifies_even_for_empty_and_binary_bodies() {
    // JS "empty payload returns undefined": an empty body is signed as "id.ts.".
    let key = hmac_key(PY_SECRET);
    for body in [&b""[..], &[0xff, 0x00, 0xfe][..]] {
        let headers = py_headers(&sign(&key, PY_ID, PY_TS, body));
        assert_eq!(verify(&headers, body), Ok(delivery(PY_ID, PY_TS)));
    }
}

#[test]
fn decode_secret_accepts_whsec_with_or_without_prefix_and_padding() {
    // PY test_signature_verification_with_and_without_prefix and
    // test_signature_verification_with_unpadded_secret (its 25-byte key; its 23-byte
    // key is below the spec's 24-byte minimum and refused below).
    let scheme = StandardWebhooks::default();
    let bare = scheme.decode_secret(&PY_SECRET[6..]).map(|s| s.expose().to_vec());
    assert_eq!(bare, Ok(hmac_key(PY_SECRET).expose().to_vec()));
    let padded = hmac_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwBr==");
    for unpadded in ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwBr", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwBr"] {
        assert_eq!(hmac_key(unpadded).expose(), padded.expose());
    }
    assert_eq!(padded.expose().len(), 25);
}

#[test]
fn decode_secret_refuses_garbage_without_echoing_it() {
    let scheme = StandardWebhooks::default();
    // PY/JS/GO empty secrets, then non-base64, a too-short key and an ed25519 key.
    for text in ["", "whsec_", "whsec_not*base64!", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS=", ONES_PUBLIC] {
        let err = scheme.decode_secret(text).err();
        assert!(matches!(err, Some(SecretError::Invalid { .. })), "{text}");
        let message = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(text.len() <= 6 || !message.contains(&text[6..]), "{message}");
    }
    let long = format!("whsec_{}", STANDARD.encode([7u8; 65]));
    assert!(matches!(scheme.decode_secret(&long), Err(SecretError::Invalid { .. })));
}

#[test]
fn sign_ed25519_reproduces_the_v1a_vectors() {
    // JS-v1a "v1a: sign function works"; GO-v1a TestAsymmetricWebhookSign.
    assert_eq!(sign_ed25519(&[1; 32], PY_ID, PY_TS, PY_BODY), ONES_SIG);
    assert_eq!(sign_ed25519(GO_SEED, PY_ID, PY_TS, PY_BODY), GO_SIG);
}

#[test]
fn a_v1a_signature_by_a_configured_key_verifies() {
    let expected = Ok(delivery(PY_ID, PY_TS));
    assert_eq!(verify_ed(&[ONES_PUBLIC], &py_headers(ONES_SIG)), expected);
    assert_eq!(verify_ed(&[GO_PUBLIC], &py_headers(GO_SIG)), expected);
    let names = [SVIX_ID_HEADER, SVIX_TIMESTAMP_HEADER, SVIX_SIGNATURE_HEADER];
    let svix = headers_named(names, [PY_ID, "1614265330", ONES_SIG]);
    assert_eq!(verify_ed(&[ONES_PUBLIC], &svix), expected);
}

#[test]
fn a_wrong_key_or_a_changed_body_fails() {
    // JS-v1a "v1a: tampered signature throws error": signed by seed [2; 32].
    let by_twos = sign_ed25519(&[2; 32], PY_ID, PY_TS, PY_BODY);
    let mismatch = Err(AuthError::SignatureMismatch);
    assert_eq!(verify_ed(&[ONES_PUBLIC], &py_headers(&by_twos)), mismatch);
    assert_eq!(verify_ed(&[TWOS_PUBLIC], &py_headers(ONES_SIG)), mismatch);
    let scheme = StandardWebhooksEd25519::default();
    let keys = [public_key(ONES_PUBLIC)];
    let changed = check(&scheme, &keys, &py_headers(ONES_SIG), b"{}", NOW);
    assert_eq!(changed, mismatch);
}

#[test]
fn invalid_v1a_formats_fail() {
    let zeros = format!("v1a,{}", STANDARD.encode([0u8; 64]));
    for signature in [
        &format!("v1a,{CEO5}"),          // GO-v1a invalid signature (32 bytes)
        "v1a,",                          // GO-v1a partial signature
        "v1a,dawfeoifkpqwoekfpqoekf",    // JS-v1a invalid signature
        &ONES_SIG[..20],                 // truncated
        &ONES_SIG.replace("AA==", "AA"), // unpadded
        &zeros,
    ] {
        let result = verify_ed(&[ONES_PUBLIC], &py_headers(signature));
        assert_eq!(result, Err(AuthError::SignatureMismatch), "{signature}");
    }
}

#[test]
fn one_valid_v1a_entry_among_several_verifies() {
    // JS-v1a mixed v1/v1a header; GO-v1a "valid multi sig is valid".
    let mixed = format!("v1,{CEO5} {ONES_SIG}");
    assert!(verify_ed(&[ONES_PUBLIC], &py_headers(&mixed)).is_ok());
    let go = format!("v1,{CEO5} v2,{CEO5} {GO_SIG} v1,{CEO5}");
    assert!(verify_ed(&[GO_PUBLIC], &py_headers(&go)).is_ok());
}

#[test]
fn v1_and_v1a_do_not_satisfy_each_other() {
    // JS-v1a "a v1-keyed instance ignores v1a signatures and vice versa".
    let result = verify_ed(&[ONES_PUBLIC], &py_headers(PY_SIG));
    assert_eq!(result, Err(AuthError::SignatureMismatch));
    assert_eq!(verify(&py_headers(ONES_SIG), PY_BODY), Err(AuthError::SignatureMismatch));
    // The same bytes relabelled as the other version do not pass either.
    let relabelled = ONES_SIG.replacen("v1a,", "v1,", 1);
    let result = verify(&py_headers(&relabelled), PY_BODY);
    assert_eq!(result, Err(AuthError::SignatureMismatch));
}

#[test]
fn any_configured_public_key_verifies_during_rotation() {
    for signed in [ONES_SIG, GO_SIG] {
        let result = verify_ed(&[TWOS_PUBLIC, GO_PUBLIC, ONES_PUBLIC], &py_headers(signed));
        assert!(result.is_ok());
    }
}

#[test]
fn the_ed25519_scheme_checks_headers_and_tolerance() {
    let mut missing = py_headers(ONES_SIG);
    missing.remove(ID_HEADER);
    assert_eq!(verify_ed(&[ONES_PUBLIC], &missing), Err(AuthError::MissingHeader(ID_HEADER)));
    let late = sign_ed25519(&[1; 32], PY_ID, PY_TS - 301, PY_BODY);
    let result = verify_ed(&[ONES_PUBLIC], &py_headers_at(PY_TS - 301, &late));
    assert_eq!(result, Err(AuthError::TimestampOutOfTolerance { tolerance_secs: 300 }));
    let too_many = vec![ONES_SIG; MAX_SIGNATURE_ENTRIES + 1].join(" ");
    let result = verify_ed(&[ONES_PUBLIC], &py_headers(&too_many));
    assert_eq!(result, Err(AuthError::MalformedHeader(SIGNATURE_HEADER)));
}

#[test]
fn decode_public_key_accepts_whpk_only() {
    let scheme = StandardWebhooksEd25519::default();
    assert_eq!(public_key(ONES_PUBLIC).expose().len(), 32);
    let weak = format!("whpk_{}", STANDARD.encode([1u8].iter().chain(&[0; 31]).copied().collect::<Vec<_>>()));
    let private = format!("whsk_{}", STANDARD.encode([1u8; 32]));
    let refused = [
        ONES_PUBLIC[5..].to_owned(),                    // bare base64
        private,                                        // a private key
        PY_SECRET.to_owned(),                           // an HMAC secret
        format!("whpk_{}", STANDARD.encode([1u8; 31])), // wrong length
        "whpk_".to_owned(),                             // JS-v1a empty key
        "whpk_not*base64!".to_owned(),
        weak, // small-order point
    ];
    for text in refused {
        let err = scheme.decode_secret(&text).err();
        assert!(matches!(err, Some(SecretError::Invalid { .. })), "{text}");
        let message = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(text.len() <= 5 || !message.contains(&text[5..]), "{message}");
    }
}

#[test]
fn names_and_identity() {
    assert_eq!(StandardWebhooks::default().name(), "standard-webhooks");
    assert_eq!(StandardWebhooksEd25519::default().name(), "standard-webhooks-ed25519");
    let identity = IdentityLocation::Header(ID_HEADER.into());
    assert_eq!(StandardWebhooks::default().default_identity(), identity);
    assert_eq!(StandardWebhooksEd25519::default().default_identity(), identity);
    assert!(identity.is_signed_by(&StandardWebhooks::default()));
    assert!(IdentityLocation::Header(SVIX_ID_HEADER.into()).is_signed_by(&StandardWebhooksEd25519::default()));
    assert!(!IdentityLocation::Header("x-request-id".into()).is_signed_by(&StandardWebhooks::default()));
}
