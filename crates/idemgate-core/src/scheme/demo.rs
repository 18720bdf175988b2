//! `demo-webhook-v1`: the seed's teaching scheme (not a provider's).
//!
//! HMAC-SHA256 over `"demo-webhook-v1\n" + delivery_id + "\n" + timestamp + "\n" + body`,
//! sent as 64 lowercase hex characters in `Demo-Signature`, with the delivery id in
//! `Demo-Delivery-Id` and unix seconds in `Demo-Timestamp`. The event identity lives in the
//! body (`event_id`), so this scheme reports none.

use std::sync::Arc;

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, any_tag_matches, check_tolerance,
    hmac_sha256, single_header,
};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// The scheme's configuration name.
pub const NAME: &str = "demo-webhook-v1";
/// Header carrying the per-attempt delivery id, `[a-z0-9-]{1,64}`.
pub const DELIVERY_ID_HEADER: &str = "demo-delivery-id";
/// Header carrying the signed unix timestamp, exactly ten digits.
pub const TIMESTAMP_HEADER: &str = "demo-timestamp";
/// Header carrying the lowercase hex HMAC-SHA256.
pub const SIGNATURE_HEADER: &str = "demo-signature";
/// The purpose label that starts the signed material.
const PURPOSE: &[u8] = b"demo-webhook-v1\n";
/// The headers a sender sets.
const SIGNING_HEADERS: &[&str] = &[DELIVERY_ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER];

/// The seed's scheme with its timestamp tolerance (300 s in the seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoV1 {
    /// How far the signed timestamp may be from now, in seconds, either way.
    pub tolerance_secs: u64,
}

impl DemoV1 {
    /// The seed's five minutes.
    pub const DEFAULT: Self = Self { tolerance_secs: 300 };
}

impl Default for DemoV1 {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Signs a delivery the way a demo sender does; returns the `Demo-Signature` value.
///
/// ```
/// # use idemgate_core::{Secret, scheme::demo};
/// let sig = demo::sign(&Secret::new(vec![7; 32]), "d-1", "1700000000", b"{}");
/// assert_eq!(sig.len(), 64);
/// ```
#[must_use]
pub fn sign(secret: &Secret, delivery_id: &str, timestamp: &str, body: &[u8]) -> String {
    hex::encode(tag(secret, delivery_id, timestamp, body))
}

/// Attempt `attempt` of message `id` gets its own delivery id, `[a-z0-9-]{1,64}`: the id
/// lowercased, stripped to letters, digits and `-`, cut to 48 characters, then `-attempt`.
fn delivery_id(message: &Outgoing<'_>) -> String {
    let safe: String =
        message.id.to_ascii_lowercase().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').take(48).collect();
    format!("{safe}-{}", message.attempt)
}

fn tag(secret: &Secret, delivery_id: &str, timestamp: &str, body: &[u8]) -> [u8; 32] {
    hmac_sha256(secret, &[PURPOSE, delivery_id.as_bytes(), b"\n", timestamp.as_bytes(), b"\n", body])
}

fn parse_delivery_id(value: &str) -> Result<&str, AuthError> {
    let valid = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    if (1..=64).contains(&value.len()) && value.bytes().all(valid) {
        Ok(value)
    } else {
        Err(AuthError::MalformedHeader(DELIVERY_ID_HEADER))
    }
}

fn parse_timestamp(value: &str) -> Result<UnixTime, AuthError> {
    if value.len() == 10 && value.bytes().all(|b| b.is_ascii_digit()) {
        value.parse().map(UnixTime).map_err(|_| AuthError::MalformedHeader(TIMESTAMP_HEADER))
    } else {
        Err(AuthError::MalformedHeader(TIMESTAMP_HEADER))
    }
}

fn parse_signature(value: &str) -> Result<[u8; 32], AuthError> {
    let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    let mut out = [0u8; 32];
    if value.len() != 64 || !value.bytes().all(lower_hex) {
        return Err(AuthError::MalformedHeader(SIGNATURE_HEADER));
    }
    hex::decode_to_slice(value, &mut out).map_err(|_| AuthError::MalformedHeader(SIGNATURE_HEADER))?;
    Ok(out)
}

impl Scheme for DemoV1 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Body("/event_id".into())
    }

    /// 32 bytes as 64 hex characters.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        Secret::from_hex(text, 32)
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let delivery_id = parse_delivery_id(single_header(delivery.headers, DELIVERY_ID_HEADER)?)?;
        let timestamp_text = single_header(delivery.headers, TIMESTAMP_HEADER)?;
        let timestamp = parse_timestamp(timestamp_text)?;
        let given = parse_signature(single_header(delivery.headers, SIGNATURE_HEADER)?)?;
        check_tolerance(timestamp, now, self.tolerance_secs)?;
        if !any_tag_matches(secrets, &[given], |secret| tag(secret, delivery_id, timestamp_text, delivery.body)) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(VerifiedDelivery {
            delivery_id: Some(delivery_id.to_owned()),
            event_identity: None,
            timestamp: Some(timestamp),
        })
    }

    fn configured(&self, tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        Arc::new(Self { tolerance_secs: tolerance_secs.unwrap_or(self.tolerance_secs) })
    }

    fn envelope(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        vec![(DELIVERY_ID_HEADER, delivery_id(message)), (TIMESTAMP_HEADER, message.timestamp.0.to_string())]
    }

    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        let timestamp = message.timestamp.0.to_string();
        Some((SIGNATURE_HEADER, sign(key, &delivery_id(message), &timestamp, message.body)))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        SIGNING_HEADERS
    }
}

#[cfg(test)]
mod tests {
    use http::{HeaderMap, HeaderValue};

    use super::*;

    const NOW: UnixTime = UnixTime(1_700_000_000);

    fn secret(byte: u8) -> Secret {
        Secret::new(vec![byte; 32])
    }

    fn headers(delivery_id: &str, timestamp: &str, signature: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in
            [(DELIVERY_ID_HEADER, delivery_id), (TIMESTAMP_HEADER, timestamp), (SIGNATURE_HEADER, signature)]
        {
            headers.insert(name, HeaderValue::from_str(value).unwrap_or_else(|_| unreachable!()));
        }
        headers
    }

    fn signed(key: &Secret, timestamp: &str, body: &[u8]) -> HeaderMap {
        headers("d-1", timestamp, &sign(key, "d-1", timestamp, body))
    }

    fn verify(secrets: &[Secret], headers: &HeaderMap, body: &[u8]) -> Result<VerifiedDelivery, AuthError> {
        let set = SecretSet::new(secrets.to_vec()).unwrap_or_else(|_| unreachable!());
        DemoV1::default().verify(&set, RawDelivery { headers, body }, NOW)
    }

    #[test]
    fn matches_an_independent_hmac_of_the_documented_material() {
        // Computed with Python's hmac module:
        // hmac.new(bytes([7]) * 32, b"demo-webhook-v1\nd-1\n1700000000\n{}", hashlib.sha256).hexdigest()
        let expected = "660d3565ddb44200d4d0fffdb69e3a612fd3e191c5859f064f6f32e56679429a";
        assert_eq!(sign(&secret(7), "d-1", "1700000000", b"{}"), expected);
    }

    #[test]
    fn a_correct_signature_verifies_and_reports_the_delivery() {
        let body = br#"{"event_id":"evt-a","kind":"increment","value":3}"#;
        let ok = verify(&[secret(1)], &signed(&secret(1), "1700000000", body), body);
        assert_eq!(
            ok,
            Ok(VerifiedDelivery { delivery_id: Some("d-1".into()), event_identity: None, timestamp: Some(NOW) })
        );
    }

    #[test]
    fn any_active_secret_verifies_during_rotation() {
        let body = b"{}";
        let by_old = signed(&secret(1), "1700000000", body);
        let by_new = signed(&secret(2), "1700000000", body);
        assert!(verify(&[secret(2), secret(1)], &by_old, body).is_ok());
        assert!(verify(&[secret(2), secret(1)], &by_new, body).is_ok());
        assert_eq!(verify(&[secret(3)], &by_new, body), Err(AuthError::SignatureMismatch));
    }

    #[test]
    fn a_changed_body_byte_fails() {
        let headers = signed(&secret(1), "1700000000", b"{\"a\":1}");
        assert_eq!(verify(&[secret(1)], &headers, b"{\"a\": 1}"), Err(AuthError::SignatureMismatch));
    }

    #[test]
    fn the_timestamp_must_be_within_tolerance_both_ways() {
        for (ts, ok) in [("1699999700", true), ("1699999699", false), ("1700000300", true), ("1700000301", false)] {
            let result = verify(&[secret(1)], &signed(&secret(1), ts, b"{}"), b"{}");
            assert_eq!(result.is_ok(), ok, "timestamp {ts}");
        }
    }

    #[test]
    fn malformed_headers_are_refused_before_any_mac() {
        let good = sign(&secret(1), "d-1", "1700000000", b"{}");
        let upper = good.to_uppercase();
        let cases = [
            headers("D-1", "1700000000", &good),
            headers(&"a".repeat(65), "1700000000", &good),
            headers("d-1", "170000000", &good),
            headers("d-1", "17000000000", &good),
            headers("d-1", "1700000000", &upper),
            headers("d-1", "1700000000", &good[..63]),
        ];
        for headers in cases {
            assert!(matches!(verify(&[secret(1)], &headers, b"{}"), Err(AuthError::MalformedHeader(_))));
        }
    }

    #[test]
    fn missing_and_repeated_headers_are_refused() {
        let mut headers = signed(&secret(1), "1700000000", b"{}");
        headers.append(SIGNATURE_HEADER, HeaderValue::from_static("00"));
        assert_eq!(verify(&[secret(1)], &headers, b"{}"), Err(AuthError::MalformedHeader(SIGNATURE_HEADER)));
        headers.remove(SIGNATURE_HEADER);
        assert_eq!(verify(&[secret(1)], &headers, b"{}"), Err(AuthError::MissingHeader(SIGNATURE_HEADER)));
    }
}
