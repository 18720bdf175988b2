//! `telnyx`: Telnyx's ed25519 webhook signature
//! (<https://developers.telnyx.com/docs/messaging/messages/receiving-webhooks>, and the
//! official libraries' `verify_webhook_signature`, `telnyx` on PyPI).
//!
//! Telnyx signs `"{telnyx-timestamp}|{body}"` with its account key and sends the standard
//! base64 of the 64-byte signature in `telnyx-signature-ed25519`; the receiver holds the
//! public key shown in the Mission Control Portal as the base64 of its 32 bytes. The
//! timestamp is Unix seconds and must lie within the tolerance, five minutes by default
//! (the library's `TIMESTAMP_TOLERANCE_SECONDS`).
//!
//! The event's identity is the body's `/data/id`; every attempt's `/meta/attempt` (and
//! `/meta/delivered_to`, on a failover) changes, which the catalog leaves out of the
//! comparison.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, ed25519, ed25519::Timestamped,
};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// The scheme's configuration name.
pub const NAME: &str = "telnyx";
/// Header carrying the base64 ed25519 signature.
pub const SIGNATURE_HEADER: &str = "telnyx-signature-ed25519";
/// Header carrying the signed Unix timestamp, in seconds.
pub const TIMESTAMP_HEADER: &str = "telnyx-timestamp";
/// The headers a sender sets.
const SIGNING_HEADERS: &[&str] = &[TIMESTAMP_HEADER, SIGNATURE_HEADER];
/// What the signature covers and where it is sent.
const SIGNED: Timestamped = Timestamped {
    signature_header: SIGNATURE_HEADER,
    parse: parse_signature,
    timestamp_header: TIMESTAMP_HEADER,
    content: signed_content,
};
const KEY_REASON: &str = "expected the base64 of a 32-byte ed25519 public key";

/// Telnyx's scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Telnyx {
    /// How far the signed timestamp may be from now, in seconds, either way.
    pub tolerance_secs: u64,
}

impl Telnyx {
    /// The official libraries' five minutes.
    pub const DEFAULT: Self = Self { tolerance_secs: 300 };
}

impl Default for Telnyx {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The bytes Telnyx signs: the timestamp header's text, `|`, then the body.
fn signed_content(timestamp: &str, body: &[u8]) -> Vec<u8> {
    let mut content = format!("{timestamp}|").into_bytes();
    content.extend_from_slice(body);
    content
}

/// Signs a body the way Telnyx does, with a 32-byte private seed; returns the
/// `telnyx-signature-ed25519` value (`None` for a key that is not 32 bytes).
///
/// ```
/// # use idemgate_core::{Secret, scheme::telnyx};
/// let sig = telnyx::sign(&Secret::new(vec![1; 32]), "1700000000", b"{}").unwrap();
/// assert_eq!(sig.len(), 88);
/// ```
#[must_use]
pub fn sign(seed: &Secret, timestamp: &str, body: &[u8]) -> Option<String> {
    ed25519::sign(seed, &signed_content(timestamp, body)).map(|signature| STANDARD.encode(signature))
}

fn parse_signature(value: &str) -> Result<[u8; 64], AuthError> {
    let malformed = AuthError::MalformedHeader(SIGNATURE_HEADER);
    if value.len() != 88 {
        return Err(malformed);
    }
    STANDARD.decode(value).map_err(|_| malformed.clone())?.try_into().map_err(|_| malformed)
}

impl Scheme for Telnyx {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Body("/data/id".into())
    }

    /// The public key as the Mission Control Portal shows it: standard base64 of 32 bytes.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        let bytes = STANDARD.decode(text).map_err(|_| SecretError::Invalid { reason: KEY_REASON })?;
        ed25519::public_key(&bytes, KEY_REASON)
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        SIGNED.verify(secrets, delivery, now, self.tolerance_secs)
    }

    fn configured(&self, tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        Arc::new(Self { tolerance_secs: tolerance_secs.unwrap_or(self.tolerance_secs) })
    }

    fn envelope(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        vec![(TIMESTAMP_HEADER, message.timestamp.0.to_string())]
    }

    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        Some((SIGNATURE_HEADER, sign(key, &message.timestamp.0.to_string(), message.body)?))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        SIGNING_HEADERS
    }

    fn check_signing_key(&self, key: &Secret) -> Result<(), SecretError> {
        ed25519::check_seed(key)
    }

    /// The receiver holds the public key only.
    fn secret_signs(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use ed25519_dalek::SigningKey;
    use http::{HeaderMap, HeaderName, HeaderValue};

    use super::*;

    const NOW: UnixTime = UnixTime(1_700_000_000);
    const SEED: [u8; 32] = [5; 32];

    fn public_b64() -> String {
        STANDARD.encode(SigningKey::from_bytes(&SEED).verifying_key().as_bytes())
    }

    fn headers(timestamp: &str, signature: &str) -> HeaderMap {
        [(TIMESTAMP_HEADER, timestamp), (SIGNATURE_HEADER, signature)]
            .into_iter()
            .map(|(n, v)| (HeaderName::from_static(n), HeaderValue::from_str(v).unwrap()))
            .collect()
    }

    fn verify(scheme: &Telnyx, headers: &HeaderMap, body: &[u8]) -> Result<VerifiedDelivery, AuthError> {
        let secrets = SecretSet::new(vec![scheme.decode_secret(&public_b64()).unwrap()]).unwrap();
        scheme.verify(&secrets, RawDelivery { headers, body }, NOW)
    }

    #[test]
    fn a_signature_over_timestamp_bar_body_verifies_and_a_changed_byte_does_not() {
        let body = br#"{"data":{"id":"e1"},"meta":{"attempt":1}}"#;
        let signature = sign(&Secret::new(SEED.to_vec()), "1700000000", body).unwrap();
        let sent = headers("1700000000", &signature);
        assert_eq!(verify(&Telnyx::DEFAULT, &sent, body).unwrap().timestamp, Some(NOW));
        assert_eq!(
            verify(&Telnyx::DEFAULT, &sent, br#"{"data":{"id":"e1"},"meta":{"attempt":2}}"#),
            Err(AuthError::SignatureMismatch)
        );
        // Without the bar the same key signs other bytes.
        let unbarred = STANDARD.encode(ed25519::sign(&Secret::new(SEED.to_vec()), b"1700000000{}").unwrap());
        assert_eq!(
            verify(&Telnyx::DEFAULT, &headers("1700000000", &unbarred), b"{}"),
            Err(AuthError::SignatureMismatch)
        );
    }

    #[test]
    fn a_stale_timestamp_is_refused_unless_the_tolerance_allows_it() {
        let signature = sign(&Secret::new(SEED.to_vec()), "1700000301", b"{}").unwrap();
        let sent = headers("1700000301", &signature);
        assert_eq!(
            verify(&Telnyx::DEFAULT, &sent, b"{}"),
            Err(AuthError::TimestampOutOfTolerance { tolerance_secs: 300 })
        );
        assert!(verify(&Telnyx { tolerance_secs: 301 }, &sent, b"{}").is_ok());
    }

    #[test]
    fn refusals_name_the_header_and_keys_are_checked() {
        assert_eq!(verify(&Telnyx::DEFAULT, &HeaderMap::new(), b"{}"), Err(AuthError::MissingHeader(SIGNATURE_HEADER)));
        assert_eq!(
            verify(&Telnyx::DEFAULT, &headers("1700000000", "abc"), b"{}"),
            Err(AuthError::MalformedHeader(SIGNATURE_HEADER))
        );
        let signature = sign(&Secret::new(SEED.to_vec()), "1700000000", b"{}").unwrap();
        assert_eq!(
            verify(&Telnyx::DEFAULT, &headers("17e8", &signature), b"{}"),
            Err(AuthError::MalformedHeader(TIMESTAMP_HEADER))
        );
        assert!(Telnyx::DEFAULT.decode_secret(&STANDARD.encode([9u8; 31])).is_err());
        assert!(Telnyx::DEFAULT.decode_secret("not base64").is_err());
    }
}
