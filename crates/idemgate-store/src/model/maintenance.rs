//! Retention's values: how long a source's receipts and payloads are kept, and what a
//! purge removed.

use std::time::Duration;

/// How long one source's receipts and payloads are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    /// The source id.
    pub source: String,
    /// Receipts (and their events, jobs, attempts and body receipts) older than this may
    /// be purged.
    pub receipts: Duration,
    /// Payload bytes of finished events older than this are dropped.
    pub payloads: Duration,
}

/// What a purge removed (or, in a dry run, would remove).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// Receipts deleted.
    pub receipts: usize,
    /// Events deleted with their jobs and attempts.
    pub events: usize,
    /// Payloads dropped from events that stay.
    pub payloads: usize,
    /// Conflict records deleted with their receipts' age.
    pub conflicts: usize,
}
