//! The fingerprint of a delivery's raw bytes. Duplicate and conflict are decided by
//! comparing these hashes, so a repeat is "the same" only if every byte is the same.

use sha2::{Digest, Sha256};

/// SHA-256 of the raw body bytes exactly as received.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct BodyHash(pub [u8; 32]);

impl BodyHash {
    /// Hashes `body`.
    ///
    /// ```
    /// # use idemgate_core::BodyHash;
    /// assert_ne!(BodyHash::of(b"{\"a\":1}"), BodyHash::of(b"{\"a\": 1}"));
    /// ```
    #[must_use]
    pub fn of(body: &[u8]) -> Self {
        Self(Sha256::digest(body).into())
    }

    /// Lowercase hex, for display to operators.
    #[must_use]
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

/// The `Idempotency-Key` sent with every attempt of one event to one destination: the
/// same on every retry and replay, different per destination, so the receiving app can
/// deduplicate too.
///
/// ```
/// # use idemgate_core::{Identity, ReceiptKey, SourceName, fingerprint::delivery_key};
/// let key = ReceiptKey { source: SourceName::new("s").unwrap(), identity: Identity::new("e").unwrap() };
/// assert_eq!(delivery_key(&key, "app"), delivery_key(&key, "app"));
/// assert_ne!(delivery_key(&key, "app"), delivery_key(&key, "audit"));
/// ```
#[must_use]
pub fn delivery_key(key: &crate::ReceiptKey, destination: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [key.source.as_str(), key.identity.as_str(), destination] {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    format!("idg_{}", &hex::encode(hasher.finalize())[..32])
}

impl std::fmt::Debug for BodyHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BodyHash({})", self.to_hex())
    }
}
