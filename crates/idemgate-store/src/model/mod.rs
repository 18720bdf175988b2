//! The backend-neutral root: the values the store takes and returns, one module per
//! concept (public through the crate root as `idemgate_store::jobs`, `::inbox`, …), and
//! what both backends share below their SQL, next to the values it concerns: turning
//! stored values back into domain values, bounding what is kept, the values a completion
//! or a purge writes, and reading an idempotency record or a repeated receipt for core's
//! decision. Each backend imports this root, never the other backend's modules.

pub(crate) mod alerts;
pub mod audit;
pub mod idempotency;
pub mod inbox;
pub mod jobs;
pub mod maintenance;
pub mod outbound;
pub(crate) mod receive;
pub mod replication;
pub mod session;
pub mod views;

use std::time::Duration;

use idemgate_core::{BodyHash, Identity, ReceiptKey, SourceName};

use crate::StoreError;

/// Whole seconds, saturating.
pub(crate) fn secs(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

/// Milliseconds, saturating.
pub(crate) fn ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// The whole second `now_ms` falls in, for the second-granular columns (leases, `updated_at`).
pub(crate) fn second_of(now_ms: i64) -> i64 {
    now_ms.div_euclid(1000)
}

/// A stored (source, identity) as a receipt key.
pub(crate) fn key(source: &str, identity: &str) -> Result<ReceiptKey, StoreError> {
    Ok(ReceiptKey {
        source: SourceName::new(source).map_err(|_| StoreError::Malformed("source name"))?,
        identity: Identity::new(identity).map_err(|_| StoreError::Malformed("identity"))?,
    })
}

/// A stored SHA-256 of a body.
pub(crate) fn body_hash(bytes: Vec<u8>) -> Result<BodyHash, StoreError> {
    Ok(BodyHash(bytes.try_into().map_err(|_| StoreError::Malformed("body hash"))?))
}

/// Header pairs as their stored JSON text.
pub(crate) fn headers_text(headers: &[(String, String)]) -> String {
    serde_json::json!(headers).to_string()
}

/// Stored header pairs; none when there is no text or it is not a list of pairs.
pub(crate) fn parse_headers(text: Option<String>) -> Vec<(String, String)> {
    text.and_then(|text| serde_json::from_str(&text).ok()).unwrap_or_default()
}
