//! The operator's views of what was stored, in the one shape the admin API answers with and
//! `idemgate events list | show | stats --json` and `idemgate destination list --json` print: an event listing page, one event's
//! history (with the conflicting bodies seen for it), conflicts, counts per source, destinations. Each view is read from the store's view rows here, once, so
//! a field has one name wherever an operator or a tool reads it.

use std::collections::BTreeMap;

use idemgate_core::{BodyHash, Identity, ReceiptKey, SourceName, UnixTime};
use idemgate_store::{
    Store, StoreError,
    audit::{AuditFilter, AuditRecord},
    views::{ConflictCursor, ConflictFilter, ConflictRow, EventFilter},
};
use serde::Serialize;
use utoipa::ToSchema;

/// One event in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct EventSummary {
    /// The event's id, also the listing's cursor.
    pub id: i64,
    /// The source it arrived from.
    pub source: String,
    /// Its identity within the source.
    pub identity: String,
    /// Its type, when the source names where to find one.
    pub event_type: Option<String>,
    /// When its receipt was recorded (unix seconds).
    pub received_at: i64,
    /// Destination to job state.
    pub jobs: BTreeMap<String, String>,
    /// True when the event has no job: no destination's subscription matched it (it can be
    /// replayed to a named destination).
    pub unmatched: bool,
}

/// One page of events, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct EventsPage {
    /// The events on this page.
    pub events: Vec<EventSummary>,
    /// Pass as `before` for the next page; absent on the last one.
    pub next_before: Option<i64>,
}

/// One job of an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct JobView {
    /// Where the job delivers.
    pub destination: String,
    /// Its state (`pending`, `running`, `retrying`, `succeeded`, `dead`, …).
    pub state: String,
    /// Attempts made so far.
    pub attempts: u32,
    /// When it is due next (unix seconds); for a finished job, when it finished.
    pub next_attempt_at: i64,
    /// The last attempt's error while it retries, or why it is dead.
    pub last_error: Option<String>,
}

/// One delivery attempt of an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct AttemptView {
    /// Where it was sent.
    pub destination: String,
    /// Its number for that destination, from 1.
    pub attempt: u32,
    /// When it started (unix seconds).
    pub started_at: i64,
    /// How long it took.
    pub latency_ms: u64,
    /// The destination's status, if it answered.
    pub status: Option<u16>,
    /// What went wrong, if anything: `status 501`, `timed out`, `connection refused`, …
    pub error: Option<String>,
    /// The start of the destination's response body, as recorded (at most 256 bytes,
    /// invalid UTF-8 replaced).
    pub response_prefix: Option<String>,
    /// `succeeded` (a 2xx, a broker's confirm, a smarthost's `250`) or `failed`.
    pub outcome: String,
}

/// One event: its receipt, its jobs and every attempt.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct EventDetail {
    /// The source it arrived from.
    pub source: String,
    /// Its identity within the source.
    pub identity: String,
    /// SHA-256 of the body bytes its receipt was recorded with, in hex.
    pub body_sha256: String,
    /// The receipt's outcome.
    pub outcome: String,
    /// The result stored with the receipt, answered to every repeat.
    #[schema(value_type = Object)]
    pub result: serde_json::Value,
    /// When its receipt was recorded (unix seconds).
    pub received_at: i64,
    /// Its jobs, by destination.
    pub jobs: Vec<JobView>,
    /// True when it has no job: no destination's subscription matched it.
    pub unmatched: bool,
    /// Every delivery attempt, in order.
    pub attempts: Vec<AttemptView>,
    /// The other bodies deliveries carried under its identity (each refused `409`), newest
    /// first seen first (at most [`EVENT_CONFLICTS`]); empty when none was seen.
    pub conflicts: Vec<ConflictView>,
}

/// How many conflicting bodies one event's view lists.
pub const EVENT_CONFLICTS: usize = 100;

/// A conflicting body recorded for an event: deliveries carried it under the identity of a
/// receipt recorded with other bytes, and each was refused `409`. Only its hash is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ConflictView {
    /// The source it arrived from.
    pub source: String,
    /// The identity whose receipt it contradicts.
    pub identity: String,
    /// That event's id (the dashboard's `/admin/events/<id>`), while it is stored.
    pub event_id: Option<i64>,
    /// SHA-256 of the conflicting body, in hex (the body itself is never stored).
    pub body_sha256: String,
    /// When a delivery first carried it (unix seconds).
    pub first_seen_at: i64,
    /// When one last did (unix seconds).
    pub last_seen_at: i64,
    /// How many deliveries carried it.
    pub seen_count: u64,
}

impl From<ConflictRow> for ConflictView {
    fn from(c: ConflictRow) -> Self {
        Self {
            source: c.source,
            identity: c.identity,
            event_id: c.event_id,
            body_sha256: c.body_hash.to_hex(),
            first_seen_at: c.first_seen_at.0,
            last_seen_at: c.last_seen_at.0,
            seen_count: c.seen_count,
        }
    }
}

/// One page of conflicting bodies, newest first seen first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ConflictsPage {
    /// The conflicts on this page.
    pub conflicts: Vec<ConflictView>,
    /// Pass as `after` for the next page; absent on the last one.
    pub next_after: Option<String>,
}

/// A conflict listing's cursor as text: `FIRST_SEEN.HASH.SOURCE.IDENTITY` (a source name
/// has no `.`, and the identity comes last, so it may).
#[must_use]
pub fn conflict_cursor_text(cursor: &ConflictCursor) -> String {
    format!("{}.{}.{}.{}", cursor.first_seen_at.0, cursor.body_hash.to_hex(), cursor.source, cursor.identity)
}

/// The cursor [`conflict_cursor_text`] wrote, or `None` for any other text.
#[must_use]
pub fn parse_conflict_cursor(text: &str) -> Option<ConflictCursor> {
    let mut parts = text.splitn(4, '.');
    let first_seen_at = UnixTime(parts.next()?.parse().ok()?);
    let hash: [u8; 32] = hex::decode(parts.next()?).ok()?.try_into().ok()?;
    let (source, identity) = (parts.next()?, parts.next()?);
    Some(ConflictCursor {
        first_seen_at,
        source: source.to_owned(),
        identity: identity.to_owned(),
        body_hash: BodyHash(hash),
    })
}

/// The page of conflicts `filter` selects; `next_after` is set when the page is full.
pub async fn conflicts_page(store: &Store, filter: ConflictFilter) -> Result<ConflictsPage, StoreError> {
    let limit = filter.limit;
    let rows = store.list_conflicts(filter).await?;
    let next_after = rows.last().filter(|_| rows.len() == limit).map(|c| conflict_cursor_text(&c.cursor()));
    Ok(ConflictsPage { conflicts: rows.into_iter().map(ConflictView::from).collect(), next_after })
}

/// Counts for one source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct SourceCounts {
    /// The source.
    pub source: String,
    /// Receipts recorded.
    pub receipts: u64,
    /// Conflicting repeats seen.
    pub conflicts: u64,
    /// Job state to count.
    pub jobs: BTreeMap<String, u64>,
}

/// The page of events `filter` selects; `next_before` is set when the page is full.
pub async fn events_page(store: &Store, filter: EventFilter) -> Result<EventsPage, StoreError> {
    let limit = filter.limit;
    let rows = store.list_events(filter).await?;
    let next_before = rows.last().filter(|_| rows.len() == limit).map(|e| e.id);
    let events = rows
        .into_iter()
        .map(|e| EventSummary {
            id: e.id,
            source: e.source,
            identity: e.identity,
            event_type: e.event_type,
            received_at: e.received_at.0,
            unmatched: e.jobs.is_empty(),
            jobs: e.jobs.into_iter().collect(),
        })
        .collect();
    Ok(EventsPage { events, next_before })
}

/// The event `identity` of `source`, or `None` when there is no such receipt (a source or
/// identity that is not even well-formed included).
pub async fn event_detail(store: &Store, source: &str, identity: &str) -> Result<Option<EventDetail>, StoreError> {
    let (Ok(source_name), Ok(id)) = (SourceName::new(source), Identity::new(identity)) else { return Ok(None) };
    let key = ReceiptKey { source: source_name, identity: id };
    let Some(receipt) = store.receipt(key.clone()).await? else { return Ok(None) };
    let jobs: Vec<JobView> = store
        .jobs(key)
        .await?
        .into_iter()
        .map(|j| JobView {
            destination: j.destination,
            state: j.state,
            attempts: j.attempts,
            next_attempt_at: j.next_attempt_at.0,
            last_error: j.last_error,
        })
        .collect();
    let attempts = store
        .attempts(source.to_owned(), identity.to_owned())
        .await?
        .into_iter()
        .map(|a| AttemptView {
            destination: a.destination,
            attempt: a.attempt,
            started_at: a.started_at.0,
            latency_ms: a.latency_ms,
            status: a.status,
            error: a.error,
            response_prefix: a.response_prefix,
            outcome: a.outcome.as_str().to_owned(),
        })
        .collect();
    let only_this = ConflictFilter {
        source: Some(source.to_owned()),
        identity: Some(identity.to_owned()),
        limit: EVENT_CONFLICTS,
        ..ConflictFilter::default()
    };
    let conflicts = store.list_conflicts(only_this).await?.into_iter().map(ConflictView::from).collect();
    Ok(Some(EventDetail {
        source: source.to_owned(),
        identity: identity.to_owned(),
        body_sha256: receipt.body_hash.to_hex(),
        outcome: receipt.outcome,
        result: receipt.result,
        received_at: receipt.received_at.0,
        unmatched: jobs.is_empty(),
        jobs,
        attempts,
        conflicts,
    }))
}

/// One stored header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct HeaderView {
    /// Its name, as stored (lowercase).
    pub name: String,
    /// Its value.
    pub value: String,
}

/// One event's payload: its headers from the source's allowlist as stored, and its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct EventPayloadView {
    /// The event's id (the listing's cursor, the dashboard's `/admin/events/<id>`).
    pub id: i64,
    /// The original `Content-Type`.
    pub content_type: Option<String>,
    /// The allowlisted headers, as stored.
    pub headers: Vec<HeaderView>,
    /// True once retention purged the payload: `body` is then null, the receipt stays.
    pub purged: bool,
    /// The body as received, as text (invalid UTF-8 replaced); null once purged.
    pub body: Option<String>,
}

/// The payload of the event `identity` of `source`, or `None` when there is no such event.
pub async fn event_payload(
    store: &Store,
    source: &str,
    identity: &str,
) -> Result<Option<EventPayloadView>, StoreError> {
    let (Ok(source_name), Ok(id)) = (SourceName::new(source), Identity::new(identity)) else { return Ok(None) };
    let Some(event) = store.event(ReceiptKey { source: source_name, identity: id }).await? else { return Ok(None) };
    let Some(payload) = store.event_payload(event.id).await? else { return Ok(None) };
    Ok(Some(EventPayloadView {
        id: payload.id,
        content_type: payload.content_type,
        headers: payload.headers.into_iter().map(|(name, value)| HeaderView { name, value }).collect(),
        purged: payload.body.is_none(),
        body: payload.body.map(|body| String::from_utf8_lossy(&body).into_owned()),
    }))
}

/// Counts per source, of what arrived at or after `since` when given.
pub async fn source_counts(store: &Store, since: Option<UnixTime>) -> Result<Vec<SourceCounts>, StoreError> {
    Ok(store
        .stats(since)
        .await?
        .into_iter()
        .map(|s| SourceCounts {
            source: s.source,
            receipts: s.receipts,
            conflicts: s.conflicts,
            jobs: s.jobs.into_iter().collect(),
        })
        .collect())
}

/// How far back a destination's attempts count for its health: one that has not been
/// tried for longer has no recent attempts, whatever its last one was.
pub const RECENT: i64 = 3600;

/// A destination as an operator sees it: enabled, disabled (since when, why), paused or
/// throttled, its jobs by state, its latest success and failure, its health from recent
/// attempts, and its circuit breaker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct DestinationView {
    /// The destination's name.
    pub name: String,
    /// `enabled`; `disabled` (by a `410 Gone`; `idemgate destination enable` resumes it);
    /// or `paused` (by its circuit breaker: its jobs wait but for one probe per interval,
    /// and the first attempt it answers resumes it, as does `idemgate destination enable`);
    /// or `throttled` (neither disabled nor paused, but its `rate_limit` or `max_in_flight`
    /// holds its jobs back: they wait for their turn, nothing fails).
    pub state: String,
    /// Since when its rate limit or in-flight cap holds its jobs back (unix seconds, like
    /// the breaker's times), as its workers last recorded it; null when not throttled.
    pub throttled_since: Option<i64>,
    /// Since when it is disabled (unix seconds).
    pub disabled_at: Option<i64>,
    /// Why it is disabled.
    pub disabled_reason: Option<String>,
    /// Job state to count.
    pub jobs: BTreeMap<String, u64>,
    /// When its latest successful attempt (a 2xx, a broker's confirm, a smarthost's `250`)
    /// started (unix seconds).
    pub last_success_at: Option<i64>,
    /// Its latest failed attempt.
    pub last_failure: Option<FailureView>,
    /// From its latest attempt of the last hour: `ok` (it succeeded), `failing` (it did
    /// not) or `no recent attempts`.
    pub health: String,
    /// Its circuit breaker, as every instance shares it.
    pub breaker: BreakerStateView,
}

/// A destination's circuit breaker: its count of failures and whether it is paused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct BreakerStateView {
    /// Whether it is paused.
    pub paused: bool,
    /// Consecutive failed attempts.
    pub failures: u32,
    /// Since when its attempts have failed without a break (unix seconds).
    pub failing_since: Option<i64>,
    /// Since when it is paused (unix seconds).
    pub paused_at: Option<i64>,
    /// When its next probe may start, while paused (unix seconds).
    pub next_probe_at: Option<i64>,
}

/// A failed attempt: when, and the status or what went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FailureView {
    /// When it started (unix seconds).
    pub at: i64,
    /// The destination's status, if it answered.
    pub status: Option<u16>,
    /// What went wrong.
    pub error: Option<String>,
}

/// A destination's health at `now`: its latest attempt within [`RECENT`] decides.
#[must_use]
pub fn health(last_success: Option<UnixTime>, last_failure: Option<UnixTime>, now: UnixTime) -> &'static str {
    let recent = |at: Option<UnixTime>| at.filter(|at| now.0.saturating_sub(at.0) <= RECENT);
    match (recent(last_success), recent(last_failure)) {
        (None, None) => "no recent attempts",
        (Some(ok), Some(failed)) if failed.0 > ok.0 => "failing",
        (None, Some(_)) => "failing",
        _ => "ok",
    }
}

/// A destination's state: being disabled outranks being paused, which outranks being
/// throttled (a paused destination's jobs wait for the breaker, not the limits).
#[must_use]
pub fn state(disabled: bool, paused: bool, throttled: bool) -> &'static str {
    match (disabled, paused, throttled) {
        (true, _, _) => "disabled",
        (false, true, _) => "paused",
        (false, false, true) => "throttled",
        (false, false, false) => "enabled",
    }
}

/// Every destination that has jobs or was disabled, with its health at `now`.
pub async fn destinations(store: &Store, now: UnixTime) -> Result<Vec<DestinationView>, StoreError> {
    Ok(store
        .destinations()
        .await?
        .into_iter()
        .map(|d| DestinationView {
            health: health(d.last_success, d.last_failure.as_ref().map(|f| f.at), now).to_owned(),
            state: state(d.disabled_at.is_some(), d.breaker.paused_at.is_some(), d.throttled_since.is_some())
                .to_owned(),
            throttled_since: d.throttled_since.map(|t| t.0),
            breaker: BreakerStateView {
                paused: d.breaker.paused_at.is_some(),
                failures: d.breaker.failures,
                failing_since: d.breaker.failing_since.map(|t| t.0),
                paused_at: d.breaker.paused_at.map(|t| t.0),
                next_probe_at: d.breaker.next_probe_at.map(|t| t.0),
            },
            name: d.name,
            disabled_at: d.disabled_at.map(|t| t.0),
            disabled_reason: d.disabled,
            jobs: d.jobs.into_iter().collect(),
            last_success_at: d.last_success.map(|t| t.0),
            last_failure: d.last_failure.map(|f| FailureView { at: f.at.0, status: f.status, error: f.error }),
        })
        .collect())
}

/// A span of time a series covers, up to now: its length and its bucket width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Window {
    /// The last hour, in minutes.
    Hour,
    /// The last day, in half hours.
    Day,
}

impl Window {
    /// Its length and bucket width, in seconds.
    #[must_use]
    pub fn span(self) -> (i64, i64) {
        match self {
            Self::Hour => (3600, 60),
            Self::Day => (86_400, 1800),
        }
    }

    /// Its time axis's two ends, as a chart labels them.
    #[must_use]
    pub fn axis(self) -> [&'static str; 2] {
        match self {
            Self::Hour => ["1 h ago", "now"],
            Self::Day => ["1 d ago", "now"],
        }
    }

    /// How many buckets it has.
    #[must_use]
    pub fn buckets(self) -> usize {
        let (length, width) = self.span();
        usize::try_from(length / width).unwrap_or(0)
    }

    /// Where it starts, ending at `now`.
    #[must_use]
    pub fn since(self, now: UnixTime) -> UnixTime {
        UnixTime(now.0 - self.span().0)
    }
}

/// One bucket of a destination's attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct AttemptBucketView {
    /// Where the bucket starts (unix seconds).
    pub start: i64,
    /// Attempts that succeeded: a 2xx, a broker's confirm, a smarthost's `250`.
    pub succeeded: u64,
    /// Attempts that failed: another status, a refusal, or no answer.
    pub failed: u64,
    /// Their mean latency, rounded down.
    pub mean_latency_ms: u64,
    /// Their longest latency.
    pub max_latency_ms: u64,
}

/// A destination's attempts over a window, in buckets of `width` seconds from `since`;
/// buckets without attempts are left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct AttemptSeries {
    /// The destination.
    pub destination: String,
    /// Where the first bucket starts (unix seconds).
    pub since: i64,
    /// Each bucket's width in seconds.
    pub width: i64,
    /// The buckets with attempts, in time order.
    pub buckets: Vec<AttemptBucketView>,
}

/// Every destination's attempts over `window` up to `now`, by destination name; a
/// destination without attempts in it is left out.
pub async fn attempt_series(store: &Store, window: Window, now: UnixTime) -> Result<Vec<AttemptSeries>, StoreError> {
    let since = window.since(now);
    let width = window.span().1;
    let mut all: Vec<AttemptSeries> = Vec::new();
    for b in store.attempt_series(since, width).await? {
        let bucket = AttemptBucketView {
            start: b.start.0,
            succeeded: b.succeeded,
            failed: b.failed,
            mean_latency_ms: b.mean_latency_ms,
            max_latency_ms: b.max_latency_ms,
        };
        match all.last_mut() {
            Some(series) if series.destination == b.destination => series.buckets.push(bucket),
            _ => all.push(AttemptSeries { destination: b.destination, since: since.0, width, buckets: vec![bucket] }),
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use idemgate_core::UnixTime;

    use super::{RECENT, health, state};

    #[test]
    fn disabled_outranks_paused_which_outranks_throttled() {
        assert_eq!(state(false, false, false), "enabled");
        assert_eq!(state(false, false, true), "throttled");
        assert_eq!(state(false, true, true), "paused");
        assert_eq!(state(true, true, true), "disabled");
        assert_eq!(state(true, false, false), "disabled");
    }

    #[test]
    fn health_comes_from_the_latest_recent_attempt() {
        let now = UnixTime(10_000);
        let ago = |secs: i64| Some(UnixTime(now.0 - secs));
        assert_eq!(health(None, None, now), "no recent attempts");
        assert_eq!(health(ago(10), None, now), "ok");
        assert_eq!(health(ago(10), ago(20), now), "ok", "it recovered");
        assert_eq!(health(ago(20), ago(10), now), "failing");
        assert_eq!(health(None, ago(RECENT), now), "failing");
        assert_eq!(health(ago(RECENT + 1), ago(RECENT + 2), now), "no recent attempts", "every job dead long ago");
        assert_eq!(health(ago(RECENT + 1), ago(5), now), "failing");
    }
}

/// One action of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct AuditEntry {
    /// Its place in the log (later actions have higher ids).
    pub id: i64,
    /// When it was done (unix seconds).
    pub at: i64,
    /// The admin token's name, or `cli` for the command line.
    pub token: String,
    /// `replay`, `replay_to`, `retry` or `enable`.
    pub action: String,
    /// What it was done to: `event SOURCE/IDENTITY`, `destination NAME`, `filter KEY=VALUE…`
    /// or `to NAME …`.
    pub target: String,
    /// How many jobs it changed (for `enable`: 1 when the destination was disabled or paused).
    pub affected: u64,
}

impl From<AuditRecord> for AuditEntry {
    fn from(r: AuditRecord) -> Self {
        Self { id: r.id, at: r.at.0, token: r.token, action: r.action, target: r.target, affected: r.affected }
    }
}

/// The audit log's entries `filter` selects, newest first.
pub async fn audit(store: &Store, filter: AuditFilter) -> Result<Vec<AuditEntry>, StoreError> {
    Ok(store.audit_log(filter).await?.into_iter().map(AuditEntry::from).collect())
}
