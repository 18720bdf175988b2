//! Signing secrets. Several may be active at once so a sender can rotate without a gap;
//! none of them ever reaches a log line, a `Debug` output or an error message.

use std::fmt;

/// One secret key. `Debug` prints `Secret(<redacted>)`.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// Wraps raw key bytes.
    #[must_use]
    pub fn new(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// Decodes a hex key of exactly `len` bytes (upper or lower case digits, nothing else).
    pub fn from_hex(text: &str, len: usize) -> Result<Self, SecretError> {
        if text.len() != len * 2 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(SecretError::Hex { bytes: len });
        }
        hex::decode(text).map(Self).map_err(|_| SecretError::Hex { bytes: len })
    }

    /// The key bytes, for the MAC only.
    #[must_use]
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// The secrets currently accepted for a source; a delivery verifies if any one of them matches.
#[derive(Clone, Debug)]
pub struct SecretSet(Vec<Secret>);

impl SecretSet {
    /// At least one secret is required: a source without a secret cannot authenticate anything.
    pub fn new(secrets: Vec<Secret>) -> Result<Self, SecretError> {
        if secrets.is_empty() {
            return Err(SecretError::Empty);
        }
        Ok(Self(secrets))
    }

    /// The active secrets, newest first by convention.
    pub fn iter(&self) -> impl Iterator<Item = &Secret> {
        self.0.iter()
    }
}

/// A secret that cannot be used. The message never contains the secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// Not exactly `bytes` bytes of hex.
    #[error("secret must be exactly {} hex characters ({bytes} bytes)", bytes * 2)]
    Hex {
        /// The required key length in bytes.
        bytes: usize,
    },
    /// Not in the format the scheme expects (e.g. a `whsec_` prefix or base64).
    #[error("secret is not valid: {reason}")]
    Invalid {
        /// What is wrong, never the secret itself.
        reason: &'static str,
    },
    /// No secret configured.
    #[error("at least one secret is required")]
    Empty,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_secrets_need_the_exact_length_and_digits_only() {
        assert!(Secret::from_hex(&"aB".repeat(32), 32).is_ok());
        assert!(Secret::from_hex(&"ab".repeat(31), 32).is_err());
        assert!(Secret::from_hex(&format!(" {}", "a".repeat(63)), 32).is_err());
        assert!(Secret::from_hex(&"zz".repeat(32), 32).is_err());
    }

    #[test]
    fn debug_and_errors_never_show_the_secret() {
        let secret = Secret::from_hex(&"ab".repeat(32), 32).map(|s| format!("{s:?}"));
        assert_eq!(secret.as_deref(), Ok("Secret(<redacted>)"));
        let err = Secret::from_hex("deadbeef", 32).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| !e.contains("deadbeef")));
    }

    #[test]
    fn an_empty_set_is_refused() {
        assert_eq!(SecretSet::new(Vec::new()).err(), Some(SecretError::Empty));
    }
}
