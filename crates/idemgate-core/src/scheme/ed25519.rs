//! What the ed25519 provider schemes (`discord`, `telnyx`) share: the public key a source
//! holds and the sender's 32-byte seed. The signature itself is
//! checked with `verify_strict`, as Standard Webhooks `v1a` checks it (see
//! [`super::standard`]).

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};

use super::{AuthError, RawDelivery, VerifiedDelivery, canonical_seconds, check_tolerance, single_header};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// How one provider sends an ed25519 signature over a timestamp header and the body.
pub(super) struct Timestamped {
    /// The header carrying the signature.
    pub(super) signature_header: &'static str,
    /// Reads that header's value into the 64 signature bytes.
    pub(super) parse: fn(&str) -> Result<[u8; 64], AuthError>,
    /// The header carrying the signed timestamp, decimal Unix seconds.
    pub(super) timestamp_header: &'static str,
    /// The bytes signed, from the timestamp header's text and the body.
    pub(super) content: fn(&str, &[u8]) -> Vec<u8>,
}

impl Timestamped {
    /// Verifies `delivery` against any of the public keys in `secrets` at `now`.
    pub(super) fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        now: UnixTime,
        tolerance_secs: u64,
    ) -> Result<VerifiedDelivery, AuthError> {
        let given = (self.parse)(single_header(delivery.headers, self.signature_header)?)?;
        let text = single_header(delivery.headers, self.timestamp_header)?;
        let timestamp = canonical_seconds(text, self.timestamp_header)?;
        check_tolerance(timestamp, now, tolerance_secs)?;
        // Public keys are not secret, so stopping at the first match leaks nothing.
        let message = (self.content)(text, delivery.body);
        if !secrets.iter().any(|key| matches(key, &message, &[given])) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: Some(timestamp) })
    }
}

pub(super) use super::standard::ed25519_matches as matches;

/// A 32-byte ed25519 public key that is a valid, not small-order, curve point.
pub(super) fn public_key(bytes: &[u8], reason: &'static str) -> Result<Secret, SecretError> {
    let bytes: [u8; 32] = bytes.try_into().map_err(|_| SecretError::Invalid { reason })?;
    match VerifyingKey::from_bytes(&bytes) {
        Ok(key) if !key.is_weak() => Ok(Secret::new(bytes.to_vec())),
        _ => Err(SecretError::Invalid { reason: "not a usable ed25519 public key" }),
    }
}

/// The signature of `message` under the sender's 32-byte seed; `None` for any other key.
pub(super) fn sign(seed: &Secret, message: &[u8]) -> Option<[u8; 64]> {
    let seed: &[u8; 32] = seed.expose().try_into().ok()?;
    Some(SigningKey::from_bytes(seed).sign(message).to_bytes())
}

/// The signer's key is its 32-byte private seed; the reason never contains the key.
pub(super) fn check_seed(key: &Secret) -> Result<(), SecretError> {
    match key.expose().len() {
        32 => Ok(()),
        _ => Err(SecretError::Invalid { reason: "an ed25519 signing key is its 32-byte private seed" }),
    }
}
