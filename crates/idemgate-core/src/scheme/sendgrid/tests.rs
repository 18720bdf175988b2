#![allow(clippy::unwrap_used)]

use http::{HeaderMap, HeaderName, HeaderValue};

use super::*;

/// The official library's own test vector (`sendgrid-python`,
/// `test/unit/test_eventwebhook.py`): a signature SendGrid made, with the key it verifies
/// under. Its `s` is the high one of the pair, which the library accepts.
const VECTOR_KEY: &str = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g==";
const VECTOR_SIGNATURE: &str =
    "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM=";
const VECTOR_TIMESTAMP: &str = "1600112502";
const VECTOR_BODY: &[u8] = b"[{\"email\":\"hello@world.com\",\"event\":\"dropped\",\"reason\":\"Bounced Address\",\"sg_event_id\":\"ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA\",\"sg_message_id\":\"LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0\",\"smtp-id\":\"<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>\",\"timestamp\":1600112492}]\r\n";
const VECTOR_NOW: UnixTime = UnixTime(1_600_112_502);

fn headers(timestamp: &str, signature: &str) -> HeaderMap {
    [(TIMESTAMP_HEADER, timestamp), (SIGNATURE_HEADER, signature)]
        .into_iter()
        .map(|(n, v)| (HeaderName::from_static(n), HeaderValue::from_str(v).unwrap()))
        .collect()
}

fn verify(key: &str, headers: &HeaderMap, body: &[u8], now: UnixTime) -> Result<VerifiedDelivery, AuthError> {
    let secrets = SecretSet::new(vec![SendGrid::DEFAULT.decode_secret(key).unwrap()]).unwrap();
    SendGrid::DEFAULT.verify(&secrets, RawDelivery { headers, body }, now)
}

#[test]
fn the_librarys_vector_verifies_and_a_changed_byte_does_not() {
    let sent = headers(VECTOR_TIMESTAMP, VECTOR_SIGNATURE);
    assert_eq!(verify(VECTOR_KEY, &sent, VECTOR_BODY, VECTOR_NOW).unwrap().timestamp, Some(VECTOR_NOW));
    let mut changed = VECTOR_BODY.to_vec();
    changed[3] = b'E';
    assert_eq!(verify(VECTOR_KEY, &sent, &changed, VECTOR_NOW), Err(AuthError::SignatureMismatch));
    let trimmed = &VECTOR_BODY[..VECTOR_BODY.len() - 2];
    assert_eq!(verify(VECTOR_KEY, &sent, trimmed, VECTOR_NOW), Err(AuthError::SignatureMismatch), "the CRLF is signed");
    let other_key = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqTxd43gyp8IOEto2LdIfjRQrIbsd4SXZkLW6jDutdhXSJCWHw8REntlo7aNDthvj+y7GjUuFDb/R1NGe1OPzpA==";
    assert_eq!(verify(other_key, &sent, VECTOR_BODY, VECTOR_NOW), Err(AuthError::SignatureMismatch));
}

#[test]
fn both_s_and_n_minus_s_verify_as_in_the_library() {
    let der = STANDARD.decode(VECTOR_SIGNATURE).unwrap();
    let signature = Signature::from_der(&der).unwrap();
    let low = signature.normalize_s().expect("the vector's s is the high one");
    let low = STANDARD.encode(low.to_der().as_bytes());
    assert!(verify(VECTOR_KEY, &headers(VECTOR_TIMESTAMP, &low), VECTOR_BODY, VECTOR_NOW).is_ok());
}

#[test]
fn what_the_signer_makes_verifies_under_the_public_key_it_shows() {
    let key = Secret::new([3u8; 32].to_vec());
    let public = public_key_for(&key).unwrap();
    assert!(public.starts_with("MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"), "{public}");
    let body = br#"[{"event":"delivered","sg_event_id":"e1"}]"#;
    let signature = sign(&key, "1700000000", body).unwrap();
    let now = UnixTime(1_700_000_000);
    assert!(verify(&public, &headers("1700000000", &signature), body, now).is_ok());
    assert!(verify(&public, &headers("1700000000", &signature), body, UnixTime(1_700_086_400)).is_ok());
    assert_eq!(
        verify(&public, &headers("1700000000", &signature), body, UnixTime(1_700_086_401)),
        Err(AuthError::TimestampOutOfTolerance { tolerance_secs: 86_400 })
    );
    assert_eq!(verify(&public, &headers("1700000001", &signature), body, now), Err(AuthError::SignatureMismatch));
}

#[test]
fn refusals_name_the_header_and_keys_are_checked() {
    let now = VECTOR_NOW;
    assert_eq!(verify(VECTOR_KEY, &HeaderMap::new(), b"[]", now), Err(AuthError::MissingHeader(SIGNATURE_HEADER)));
    assert_eq!(
        verify(VECTOR_KEY, &headers(VECTOR_TIMESTAMP, "bm90IGRlcg=="), b"[]", now),
        Err(AuthError::MalformedHeader(SIGNATURE_HEADER))
    );
    assert_eq!(
        verify(VECTOR_KEY, &headers("timestamp", VECTOR_SIGNATURE), b"[]", now),
        Err(AuthError::MalformedHeader(TIMESTAMP_HEADER))
    );
    assert!(SendGrid::DEFAULT.decode_secret("not base64").is_err());
    assert!(SendGrid::DEFAULT.decode_secret(&STANDARD.encode([4u8; 65])).is_err(), "a bare point is not the DER key");
    assert!(SendGrid::DEFAULT.check_signing_key(&Secret::new(vec![0; 32])).is_err(), "zero is no scalar");
    assert!(SendGrid::DEFAULT.check_signing_key(&Secret::new(vec![1; 31])).is_err());
}
