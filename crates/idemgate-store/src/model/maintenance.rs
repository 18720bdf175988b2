//! Retention: how long a source's receipts and payloads are kept, and what a purge removed.
//!
//! A receipt is what makes a late redelivery a harmless duplicate, so it is kept at least
//! as long as its source can redeliver, and never while its event still has work to do.
//! Payloads may go sooner: the receipt (identity and hash) stays, the event can no longer
//! be replayed. An event that holds the newest version of an ordering key is kept, or an
//! older event of that key could be delivered after it.

use std::time::Duration;

use idemgate_core::UnixTime;

use super::secs;

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

/// The time `keep` before `now`, in seconds: what is older goes.
pub(crate) fn cutoff(now: UnixTime, keep: Duration) -> i64 {
    now.0.saturating_sub(secs(keep))
}
