//! `sendgrid`: the signed Event Webhook of Twilio SendGrid
//! (<https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features>),
//! as the official library checks it (`sendgrid` on PyPI, `EventWebhook.verify_signature`).
//!
//! SendGrid signs the `X-Twilio-Email-Event-Webhook-Timestamp` header's text followed by
//! the raw body with ECDSA over P-256 and SHA-256, and sends the standard base64 of the
//! DER-encoded signature in `X-Twilio-Email-Event-Webhook-Signature`. The receiver holds the
//! verification key SendGrid shows under Mail Settings: the base64 of the public key's DER
//! `SubjectPublicKeyInfo` (what the library wraps in a PEM armour). As the library does,
//! both `s` and `n - s` verify: ECDSA's malleability changes nothing here, since no
//! identity is taken from the signature. The timestamp is Unix seconds and must lie within
//! the tolerance. Its default is SendGrid's retry window, 24 hours ("All events are retried
//! at increasing intervals for up to 24 hours after the event occurs"): SendGrid does not
//! document that a retried POST is signed at its own time, and its library checks no window
//! at all, so a shorter default could refuse a genuine retry. A source may narrow it.
//!
//! A body is a JSON array of events, each with its own `sg_event_id`; SendGrid documents no
//! identity of the POST as a whole (see the catalog entry).

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use p256::PublicKey;
use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use p256::pkcs8::DecodePublicKey;

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, canonical_seconds, check_tolerance,
    single_header,
};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// The scheme's configuration name.
pub const NAME: &str = "sendgrid";
/// Header carrying the base64 of the DER ECDSA signature.
pub const SIGNATURE_HEADER: &str = "x-twilio-email-event-webhook-signature";
/// Header carrying the signed Unix timestamp, in seconds.
pub const TIMESTAMP_HEADER: &str = "x-twilio-email-event-webhook-timestamp";
/// The headers a sender sets.
const SIGNING_HEADERS: &[&str] = &[TIMESTAMP_HEADER, SIGNATURE_HEADER];
/// A DER P-256 signature is at most 72 bytes, 96 base64 characters.
const MAX_SIGNATURE_LEN: usize = 96;
const KEY_REASON: &str = "expected the verification key SendGrid shows: the base64 of a P-256 public key (DER)";

/// SendGrid's Event Webhook scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendGrid {
    /// How far the signed timestamp may be from now, in seconds, either way.
    pub tolerance_secs: u64,
}

impl SendGrid {
    /// SendGrid's retry window, 24 hours (see the module).
    pub const DEFAULT: Self = Self { tolerance_secs: 24 * 60 * 60 };
}

impl Default for SendGrid {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The bytes SendGrid signs: the timestamp header's text, then the body.
fn signed_content(timestamp: &str, body: &[u8]) -> Vec<u8> {
    let mut content = timestamp.as_bytes().to_vec();
    content.extend_from_slice(body);
    content
}

/// Signs a body the way SendGrid does, with the 32-byte private scalar of a P-256 key
/// (deterministic nonces, RFC 6979); returns the signature header's value, or `None` for a
/// key that is not a valid scalar.
///
/// ```
/// # use idemgate_core::{Secret, scheme::sendgrid};
/// let sig = sendgrid::sign(&Secret::new(vec![1; 32]), "1700000000", b"[]").unwrap();
/// assert!(sig.starts_with("MEU") || sig.starts_with("MEQ"));
/// ```
#[must_use]
pub fn sign(key: &Secret, timestamp: &str, body: &[u8]) -> Option<String> {
    let key = signing_key(key)?;
    let signature: Signature = key.sign(&signed_content(timestamp, body));
    Some(STANDARD.encode(signature.to_der().as_bytes()))
}

/// The verification key SendGrid would show for the private scalar `key`: the base64 of
/// its DER `SubjectPublicKeyInfo`. For tests and senders.
#[must_use]
pub fn public_key_for(key: &Secret) -> Option<String> {
    let key = signing_key(key)?;
    let mut der = SPKI_PREFIX.to_vec();
    der.extend_from_slice(key.verifying_key().to_encoded_point(false).as_bytes());
    Some(STANDARD.encode(der))
}

/// The DER `SubjectPublicKeyInfo` of a P-256 key up to its uncompressed point: SEQUENCE,
/// AlgorithmIdentifier (id-ecPublicKey, prime256v1), BIT STRING of 66 bytes.
const SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
    0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The signing key whose private scalar is exactly these 32 bytes (big-endian, nonzero,
/// below the group order).
fn signing_key(key: &Secret) -> Option<SigningKey> {
    let bytes: [u8; 32] = key.expose().try_into().ok()?;
    SigningKey::from_bytes(&bytes.into()).ok()
}

fn parse_signature(value: &str) -> Result<Signature, AuthError> {
    let malformed = AuthError::MalformedHeader(SIGNATURE_HEADER);
    if value.len() > MAX_SIGNATURE_LEN {
        return Err(malformed);
    }
    let der = STANDARD.decode(value).map_err(|_| malformed.clone())?;
    Signature::from_der(&der).map_err(|_| malformed)
}

/// Whether `signature` is valid for `message` under the public key `secret` (its SEC1
/// encoding, as [`SendGrid::decode_secret`] stores it).
fn matches(secret: &Secret, message: &[u8], signature: &Signature) -> bool {
    let Ok(key) = VerifyingKey::from_sec1_bytes(secret.expose()) else {
        return false;
    };
    key.verify(message, signature).is_ok()
}

impl Scheme for SendGrid {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Not in effect: a source must name its identity ([`Scheme::carries_identity`]). The
    /// first event's `sg_event_id` is what the catalog entry suggests, with its caveat.
    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Body("/0/sg_event_id".into())
    }

    /// A POST carries a batch of events and SendGrid documents no identity of the batch:
    /// a source names one (see the catalog entry).
    fn carries_identity(&self) -> bool {
        false
    }

    /// The verification key as SendGrid shows it: base64 of the DER public key. Stored as
    /// its SEC1 point, which `verify` reads back.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        let der = STANDARD.decode(text.trim()).map_err(|_| SecretError::Invalid { reason: KEY_REASON })?;
        let key = PublicKey::from_public_key_der(&der).map_err(|_| SecretError::Invalid { reason: KEY_REASON })?;
        Ok(Secret::new(key.to_sec1_bytes().to_vec()))
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let signature = parse_signature(single_header(delivery.headers, SIGNATURE_HEADER)?)?;
        let text = single_header(delivery.headers, TIMESTAMP_HEADER)?;
        let timestamp = canonical_seconds(text, TIMESTAMP_HEADER)?;
        check_tolerance(timestamp, now, self.tolerance_secs)?;
        // Public keys are not secret, so stopping at the first match leaks nothing.
        let message = signed_content(text, delivery.body);
        if !secrets.iter().any(|key| matches(key, &message, &signature)) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: Some(timestamp) })
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

    /// The sender's key is the 32-byte private scalar of a P-256 key.
    fn check_signing_key(&self, key: &Secret) -> Result<(), SecretError> {
        signing_key(key)
            .map(|_| ())
            .ok_or(SecretError::Invalid { reason: "a P-256 signing key is its 32-byte private scalar" })
    }

    /// The receiver holds the public key only.
    fn secret_signs(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
