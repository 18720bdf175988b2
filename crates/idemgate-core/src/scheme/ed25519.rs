//! What the ed25519 provider schemes (`discord`, `telnyx`) share: the public key a source
//! holds and the sender's 32-byte seed. The signature itself is
//! checked with `verify_strict`, as Standard Webhooks `v1a` checks it (see
//! [`super::standard`]).

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};

use crate::{Secret, secret::SecretError};

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
