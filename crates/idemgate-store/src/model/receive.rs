//! A delivery as offered to the store, and the receipts and conflicts it leaves behind;
//! below them, what both backends do with a receipt found for a repeat.

use idemgate_core::{BodyHash, Outcome, ReceiptKey, UnixTime, outcome::Repeat};
use serde_json::Value;

use crate::StoreError;

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

/// A receipt's stored result.
pub(crate) fn parse_result(text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|_| StoreError::Malformed("receipt result is not json"))
}

/// A repeat's answer when its bytes are those of the receipt found (`stored_hash`, with
/// `stored_result`): a duplicate with the stored result. `None`: other bytes, a conflict.
pub(crate) fn duplicate_of(
    stored_hash: &[u8],
    stored_result: &str,
    offered: &BodyHash,
) -> Result<Option<Outcome>, StoreError> {
    if Repeat::judge(stored_hash, offered) == Repeat::Duplicate {
        return Ok(Some(Outcome::Duplicate { result: parse_result(stored_result)? }));
    }
    Ok(None)
}

/// Tells the operator of a conflicting repeat, once its record was written (or not).
///
/// Failing to record it does not change the answer, on either backend: the conflict is a
/// fact of the stored receipt, which is untouched, and nothing was applied. A `503` instead
/// would have the sender retry the same refused bytes for as long as the record fails,
/// then give up (or disable the endpoint) without ever learning they conflict; the
/// operator learns of it from an error log line and `idemgate_conflicts_unrecorded_total`.
pub(crate) fn conflict_refused<T, E: std::fmt::Display>(key: &ReceiptKey, recorded: Result<T, E>) {
    match recorded {
        Ok(_) => tracing::warn!(source = %key.source, identity = %key.identity, "conflicting repeat refused"),
        Err(err) => conflict_not_recorded(key, &err),
    }
}

/// What either backend does when a conflict could not be recorded: it is still answered
/// as a conflict, and the operator is told here.
pub(crate) fn conflict_not_recorded(key: &ReceiptKey, err: &dyn std::fmt::Display) {
    // An application's messages have a source per application: never a label of its own.
    let source = idemgate_core::outbound::label::source(key.source.as_str()).to_owned();
    metrics::counter!("idemgate_conflicts_unrecorded_total", "source" => source).increment(1);
    tracing::error!(source = %key.source, identity = %key.identity, error = %err, "conflicting repeat refused, but could not be recorded");
}
