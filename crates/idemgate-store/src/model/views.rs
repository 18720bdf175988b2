//! What the operator's read-only views return: event listings and their filter, one
//! event's attempts, dead jobs, recent conflicts, destination health, attempt series and
//! counts per source. Identities, states and bounded reasons; payload bytes only in
//! [`EventPayload`], for the one event an operator opened.

use idemgate_core::{BodyHash, UnixTime, retry::Attempted};

/// The state an event with no job is shown in: no destination's subscription matched it.
pub const UNMATCHED: &str = "unmatched";

/// One row of an event listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    /// The event's row id, also the listing's cursor.
    pub id: i64,
    /// The source id.
    pub source: String,
    /// The event identity.
    pub identity: String,
    /// The event type, if known.
    pub event_type: Option<String>,
    /// When it arrived.
    pub received_at: UnixTime,
    /// `destination=state` for each of its jobs.
    pub jobs: Vec<(String, String)>,
}

/// Which events a listing shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    /// Only this source.
    pub source: Option<String>,
    /// Only identities starting with this (the whole identity matches itself).
    pub identity_prefix: Option<String>,
    /// Only this event type.
    pub event_type: Option<String>,
    /// Only events with a job in this state; [`UNMATCHED`]: only events with no job (for
    /// `destination`, when given: none for it).
    pub state: Option<String>,
    /// Only events with a job for this destination.
    pub destination: Option<String>,
    /// Received at or after.
    pub since: Option<UnixTime>,
    /// Received before.
    pub until: Option<UnixTime>,
    /// Only events with a row id below this (the previous page's last id).
    pub before_id: Option<i64>,
    /// At most this many (newest first).
    pub limit: usize,
}

/// One recorded delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRow {
    /// The job's destination.
    pub destination: String,
    /// Attempt number.
    pub attempt: u32,
    /// When it started.
    pub started_at: UnixTime,
    /// How long it took.
    pub latency_ms: u64,
    /// The destination's status, if it answered.
    pub status: Option<u16>,
    /// A bounded error text.
    pub error: Option<String>,
    /// A bounded prefix of the response body, as recorded.
    pub response_prefix: Option<String>,
    /// Whether the destination took the event.
    pub outcome: Attempted,
}

/// A job that gave up, for the operator's attention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadJob {
    /// The source id.
    pub source: String,
    /// The event identity.
    pub identity: String,
    /// The destination.
    pub destination: String,
    /// Attempts made.
    pub attempts: u32,
    /// Why it is dead (bounded).
    pub reason: Option<String>,
}

/// A conflicting repeat, for the operator's attention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentConflict {
    /// The source id.
    pub source: String,
    /// The identity whose receipt the repeat contradicts.
    pub identity: String,
    /// The row id of that receipt's event, while it is stored (for a link to it).
    pub event_id: Option<i64>,
    /// How many deliveries carried those other bytes.
    pub seen_count: u64,
    /// The last time.
    pub last_seen_at: UnixTime,
}

/// One conflicting body recorded for an event: what a conflict listing shows. The bytes
/// themselves are never stored, only their hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictRow {
    /// The source id.
    pub source: String,
    /// The identity whose receipt the other body contradicts.
    pub identity: String,
    /// The row id of that receipt's event, while it is stored.
    pub event_id: Option<i64>,
    /// SHA-256 of the other body.
    pub body_hash: BodyHash,
    /// When a delivery first carried it.
    pub first_seen_at: UnixTime,
    /// When one last did.
    pub last_seen_at: UnixTime,
    /// How many deliveries carried it.
    pub seen_count: u64,
}

/// Where a conflict listing's page ends: the last row's sort key. A listing is ordered by
/// first seen (newest first), then source, identity and body hash, all descending; the
/// next page starts below this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictCursor {
    /// The last row's first seen time.
    pub first_seen_at: UnixTime,
    /// Its source.
    pub source: String,
    /// Its identity.
    pub identity: String,
    /// Its body hash.
    pub body_hash: BodyHash,
}

impl ConflictRow {
    /// The cursor for the page after this row.
    #[must_use]
    pub fn cursor(&self) -> ConflictCursor {
        ConflictCursor {
            first_seen_at: self.first_seen_at,
            source: self.source.clone(),
            identity: self.identity.clone(),
            body_hash: self.body_hash,
        }
    }
}

/// Which conflicts a listing shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConflictFilter {
    /// Only this source.
    pub source: Option<String>,
    /// Only this identity (exactly).
    pub identity: Option<String>,
    /// Only bodies last seen at or after this.
    pub since: Option<UnixTime>,
    /// Only bodies first seen before this.
    pub until: Option<UnixTime>,
    /// Only rows after this one (the previous page's last).
    pub after: Option<ConflictCursor>,
    /// At most this many.
    pub limit: usize,
}

/// A destination's state: its jobs by state, whether a `410` disabled it and since when,
/// its latest successful and failed attempts, its circuit breaker, and whether it is
/// throttled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DestinationHealth {
    /// The destination's name.
    pub name: String,
    /// Jobs per state.
    pub jobs: Vec<(String, u64)>,
    /// Why it is disabled, if it is.
    pub disabled: Option<String>,
    /// Since when it is disabled, if it is.
    pub disabled_at: Option<UnixTime>,
    /// When its latest succeeded attempt started.
    pub last_success: Option<UnixTime>,
    /// Its latest failed attempt.
    pub last_failure: Option<FailedAttempt>,
    /// Its circuit breaker's state (shared by every instance).
    pub breaker: BreakerView,
    /// Since when its rate limit or in-flight cap (shared by every instance) holds its jobs
    /// back, as the workers' claims last recorded it.
    pub throttled_since: Option<UnixTime>,
}

/// A destination's circuit breaker as the operator sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BreakerView {
    /// Consecutive failed attempts.
    pub failures: u32,
    /// Since when its attempts have failed without a break.
    pub failing_since: Option<UnixTime>,
    /// Since when it is paused, if it is: its jobs wait, but for one probe per interval.
    pub paused_at: Option<UnixTime>,
    /// When the next probe may be claimed, while paused.
    pub next_probe_at: Option<UnixTime>,
}

impl BreakerView {
    /// The view of a stored breaker.
    pub(crate) fn of(state: &idemgate_core::breaker::BreakerState) -> Self {
        let second = |ms: i64| UnixTime(super::second_of(ms));
        Self {
            failures: state.failures,
            failing_since: state.failing_since_ms.map(second),
            paused_at: state.paused.map(|p| second(p.at_ms)),
            next_probe_at: state.paused.map(|p| second(p.next_probe_at_ms)),
        }
    }
}

/// An attempt that failed: when it started, and the status or what went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedAttempt {
    /// When it started.
    pub at: UnixTime,
    /// The destination's status, if it answered.
    pub status: Option<u16>,
    /// What went wrong, bounded, when it did not answer (or the status's text).
    pub error: Option<String>,
}

/// Counts for one source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// The source id.
    pub source: String,
    /// Receipts kept.
    pub receipts: u64,
    /// Conflicting repeats seen.
    pub conflicts: u64,
    /// Jobs per state.
    pub jobs: Vec<(String, u64)>,
}

/// One stored event by its row id, for the dashboard's event page: its key, its headers
/// from the source's allowlist as stored, and its body unless retention purged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPayload {
    /// The event's row id.
    pub id: i64,
    /// The source id.
    pub source: String,
    /// The event identity.
    pub identity: String,
    /// The original content type.
    pub content_type: Option<String>,
    /// The allowlisted headers, as stored.
    pub headers: Vec<(String, String)>,
    /// The body bytes as received; `None` once retention purged the payload.
    pub body: Option<Vec<u8>>,
}

/// One destination's attempts that started within one time bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptBucket {
    /// The destination.
    pub destination: String,
    /// The bucket's start: the series' `since` plus a whole number of bucket widths.
    pub start: UnixTime,
    /// Attempts that succeeded (a 2xx, a broker's confirm, a smarthost's `250`).
    pub succeeded: u64,
    /// The attempts that failed.
    pub failed: u64,
    /// Their mean latency, rounded down.
    pub mean_latency_ms: u64,
    /// Their longest latency.
    pub max_latency_ms: u64,
}

/// One destination's queue: its jobs waiting to be delivered (pending or retrying) and when
/// the oldest of them was created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingQueue {
    /// The destination.
    pub destination: String,
    /// Jobs pending or retrying.
    pub depth: u64,
    /// When the oldest of them was created.
    pub oldest: UnixTime,
}

/// The conflicting bodies first seen within one time bucket, per source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictBucket {
    /// The source id.
    pub source: String,
    /// The bucket's start: the series' `since` plus a whole number of bucket widths.
    pub start: UnixTime,
    /// Identities whose receipt met another body for the first time then.
    pub conflicts: u64,
}
