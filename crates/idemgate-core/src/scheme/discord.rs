//! `discord`: Discord's request signature on interactions and webhook events
//! (<https://docs.discord.com/developers/interactions/overview#setting-up-an-endpoint>,
//! <https://docs.discord.com/developers/events/webhook-events>).
//!
//! Discord signs the `X-Signature-Timestamp` header's text followed by the raw body with
//! the application's ed25519 key and sends the signature as lowercase hex in
//! `X-Signature-Ed25519`; the receiver holds the application's public key, shown in the
//! Developer Portal as 64 hex digits. The timestamp is Unix seconds and must lie within the
//! tolerance. Its default is Discord's retry window, ten minutes ("Discord will retry
//! sending it several times using exponential backoff for up to 10 minutes"): Discord does
//! not document that a retry is signed at its own time, and its own `verify_key` checks no
//! window, so a shorter default could refuse a genuine retry. A source may narrow it.
//!
//! Discord's webhook event bodies (`version`, `application_id`, `type`, `event`) carry no
//! event id, so the scheme names none of its own: a source says where its identity is.

use std::sync::Arc;

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, ed25519, ed25519::Timestamped,
};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// The scheme's configuration name.
pub const NAME: &str = "discord";
/// Header carrying the lowercase hex ed25519 signature.
pub const SIGNATURE_HEADER: &str = "x-signature-ed25519";
/// Header carrying the signed Unix timestamp, in seconds.
pub const TIMESTAMP_HEADER: &str = "x-signature-timestamp";
/// The headers a sender sets.
const SIGNING_HEADERS: &[&str] = &[TIMESTAMP_HEADER, SIGNATURE_HEADER];
/// What the signature covers and where it is sent.
const SIGNED: Timestamped = Timestamped {
    signature_header: SIGNATURE_HEADER,
    parse: parse_signature,
    timestamp_header: TIMESTAMP_HEADER,
    content: signed_content,
};
const KEY_REASON: &str = "expected the application's public key: 64 hex digits";

/// Discord's scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Discord {
    /// How far the signed timestamp may be from now, in seconds, either way.
    pub tolerance_secs: u64,
}

impl Discord {
    /// Discord's retry window, ten minutes (see the module).
    pub const DEFAULT: Self = Self { tolerance_secs: 10 * 60 };
}

impl Default for Discord {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The bytes Discord signs: the timestamp header's text, then the body.
fn signed_content(timestamp: &str, body: &[u8]) -> Vec<u8> {
    let mut content = timestamp.as_bytes().to_vec();
    content.extend_from_slice(body);
    content
}

/// Signs a body the way Discord does, with the application's 32-byte private seed; returns
/// the `X-Signature-Ed25519` value (`None` for a key that is not 32 bytes).
///
/// ```
/// # use idemgate_core::{Secret, scheme::discord};
/// let sig = discord::sign(&Secret::new(vec![1; 32]), "1700000000", b"{}").unwrap();
/// assert_eq!(sig.len(), 128);
/// ```
#[must_use]
pub fn sign(seed: &Secret, timestamp: &str, body: &[u8]) -> Option<String> {
    ed25519::sign(seed, &signed_content(timestamp, body)).map(hex::encode)
}

/// 128 hex digits (either case, as PyNaCl's and tweetnacl's hex decoders take them).
fn parse_signature(value: &str) -> Result<[u8; 64], AuthError> {
    let mut out = [0u8; 64];
    hex::decode_to_slice(value, &mut out).map_err(|_| AuthError::MalformedHeader(SIGNATURE_HEADER))?;
    Ok(out)
}

impl Scheme for Discord {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Interactions carry their id at `/id`; webhook events carry none (see the module).
    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Body("/id".into())
    }

    /// A webhook event carries no event id: a source names one (see the catalog entry).
    fn carries_identity(&self) -> bool {
        false
    }

    /// The application's public key as the Developer Portal shows it: 64 hex digits.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        if text.len() != 64 {
            return Err(SecretError::Invalid { reason: KEY_REASON });
        }
        let bytes = hex::decode(text).map_err(|_| SecretError::Invalid { reason: KEY_REASON })?;
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
    const SEED: [u8; 32] = [7; 32];

    fn public_hex() -> String {
        hex::encode(SigningKey::from_bytes(&SEED).verifying_key().as_bytes())
    }

    fn headers(timestamp: &str, signature: &str) -> HeaderMap {
        [(TIMESTAMP_HEADER, timestamp), (SIGNATURE_HEADER, signature)]
            .into_iter()
            .map(|(n, v)| (HeaderName::from_static(n), HeaderValue::from_str(v).unwrap()))
            .collect()
    }

    fn verify(scheme: &Discord, headers: &HeaderMap, body: &[u8]) -> Result<VerifiedDelivery, AuthError> {
        let secrets = SecretSet::new(vec![scheme.decode_secret(&public_hex()).unwrap()]).unwrap();
        scheme.verify(&secrets, RawDelivery { headers, body }, NOW)
    }

    #[test]
    fn a_signature_over_timestamp_and_body_verifies_and_a_changed_byte_does_not() {
        let body = br#"{"type":1,"id":"1","application_id":"2"}"#;
        let signature = sign(&Secret::new(SEED.to_vec()), "1700000000", body).unwrap();
        let sent = headers("1700000000", &signature);
        assert_eq!(verify(&Discord::DEFAULT, &sent, body).unwrap().timestamp, Some(NOW));
        assert!(verify(&Discord::DEFAULT, &headers("1700000000", &signature.to_uppercase()), body).is_ok());
        assert_eq!(
            verify(&Discord::DEFAULT, &sent, br#"{"type":2,"id":"1","application_id":"2"}"#),
            Err(AuthError::SignatureMismatch)
        );
        assert_eq!(
            verify(&Discord::DEFAULT, &headers("1700000001", &signature), body),
            Err(AuthError::SignatureMismatch)
        );
    }

    #[test]
    fn a_stale_timestamp_is_refused_unless_the_tolerance_allows_it() {
        let signature = sign(&Secret::new(SEED.to_vec()), "1699999399", b"{}").unwrap();
        let sent = headers("1699999399", &signature);
        assert_eq!(
            verify(&Discord::DEFAULT, &sent, b"{}"),
            Err(AuthError::TimestampOutOfTolerance { tolerance_secs: 600 })
        );
        assert!(verify(&Discord { tolerance_secs: 601 }, &sent, b"{}").is_ok());
    }

    #[test]
    fn refusals_name_the_header_and_keys_are_checked() {
        let signature = sign(&Secret::new(SEED.to_vec()), "1700000000", b"{}").unwrap();
        assert_eq!(
            verify(&Discord::DEFAULT, &HeaderMap::new(), b"{}"),
            Err(AuthError::MissingHeader(SIGNATURE_HEADER))
        );
        assert_eq!(
            verify(&Discord::DEFAULT, &headers("1700000000", "zz"), b"{}"),
            Err(AuthError::MalformedHeader(SIGNATURE_HEADER))
        );
        assert_eq!(
            verify(&Discord::DEFAULT, &headers("01700000000", &signature), b"{}"),
            Err(AuthError::MalformedHeader(TIMESTAMP_HEADER))
        );
        assert!(Discord::DEFAULT.decode_secret(&public_hex()[..62]).is_err());
        assert!(Discord::DEFAULT.decode_secret(&"0".repeat(64)).is_err(), "a small-order key is refused");
        let err = Discord::DEFAULT.decode_secret(&"g".repeat(64)).unwrap_err();
        assert!(!err.to_string().contains("ggg"), "{err}");
    }
}
