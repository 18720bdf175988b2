//! A delivery as offered to the store, and the receipts and conflicts it leaves behind.

use idemgate_core::{BodyHash, ReceiptKey, UnixTime};
use serde_json::Value;

/// One authenticated, parsed delivery offered to the store.
#[derive(Debug, Clone)]
pub struct ReceiveRequest {
    /// (source, identity): what the receipt is unique on.
    pub key: ReceiptKey,
    /// SHA-256 of the raw body bytes.
    pub body_hash: BodyHash,
    /// When the delivery arrived.
    pub received_at: UnixTime,
    /// Also keep a receipt on (source, body hash), so that the same bytes under another
    /// identity are a duplicate of the first event: for schemes whose signature does not
    /// cover the identity, where a captured delivery can be re-sent under a new one.
    pub dedupe_body: bool,
}

/// A stored receipt: the durable record that an event was processed.
#[derive(Debug, Clone, PartialEq)]
pub struct Receipt {
    /// (source, identity).
    pub key: ReceiptKey,
    /// SHA-256 of the raw bytes first applied.
    pub body_hash: BodyHash,
    /// The outcome recorded with it (`applied`).
    pub outcome: String,
    /// The result the handler produced the first time.
    pub result: Value,
    /// When the first delivery arrived.
    pub received_at: UnixTime,
}

/// A conflicting repeat: same identity as a receipt, other bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictRecord {
    /// (source, identity) of the receipt it contradicts.
    pub key: ReceiptKey,
    /// SHA-256 of the conflicting bytes.
    pub body_hash: BodyHash,
    /// First and last time these bytes were seen.
    pub first_seen_at: UnixTime,
    /// See `first_seen_at`.
    pub last_seen_at: UnixTime,
    /// How many deliveries carried these bytes.
    pub seen_count: u64,
}
