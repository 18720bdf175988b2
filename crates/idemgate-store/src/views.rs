//! Read-only views for operators: events with their jobs, one event's whole history, and
//! counts per source. Identities, states and bounded reasons; never payload bytes.

use idemgate_core::UnixTime;
use rusqlite::{Connection, params};

use crate::StoreError;

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
    /// Only events with a job in this state.
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

/// Events matching `filter`, newest first.
pub fn list_events(conn: &Connection, filter: &EventFilter) -> Result<Vec<EventRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT e.id, e.source, e.identity, e.event_type, e.received_at FROM events e
         WHERE (?1 IS NULL OR e.source = ?1)
           AND (?2 IS NULL OR EXISTS (SELECT 1 FROM jobs j WHERE j.event_id = e.id AND j.state = ?2
                                      AND (?3 IS NULL OR j.destination = ?3)))
           AND (?3 IS NULL OR EXISTS (SELECT 1 FROM jobs j WHERE j.event_id = e.id AND j.destination = ?3))
           AND (?4 IS NULL OR e.received_at >= ?4) AND (?5 IS NULL OR e.received_at < ?5)
           AND (?6 IS NULL OR e.id < ?6)
         ORDER BY e.id DESC LIMIT ?7",
    )?;
    let rows = stmt.query_map(
        params![
            filter.source,
            filter.state,
            filter.destination,
            filter.since.map(|t| t.0),
            filter.until.map(|t| t.0),
            filter.before_id,
            i64::try_from(filter.limit).unwrap_or(i64::MAX)
        ],
        |row| {
            Ok(EventRow {
                id: row.get(0)?,
                source: row.get(1)?,
                identity: row.get(2)?,
                event_type: row.get(3)?,
                received_at: UnixTime(row.get(4)?),
                jobs: Vec::new(),
            })
        },
    )?;
    let mut events: Vec<EventRow> = rows.collect::<Result<_, _>>()?;
    let mut jobs =
        conn.prepare_cached("SELECT destination, state FROM jobs WHERE event_id = ?1 ORDER BY destination")?;
    for event in &mut events {
        event.jobs = jobs.query_map([event.id], |row| Ok((row.get(0)?, row.get(1)?)))?.collect::<Result<_, _>>()?;
    }
    Ok(events)
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
}

/// Every attempt for the event `(source, identity)`, in order.
pub fn attempts(conn: &Connection, source: &str, identity: &str) -> Result<Vec<AttemptRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT j.destination, a.attempt, a.started_at, a.latency_ms, a.status, a.error, a.response_prefix
         FROM attempts a JOIN jobs j ON j.id = a.job_id JOIN events e ON e.id = j.event_id
         WHERE e.source = ?1 AND e.identity = ?2 ORDER BY a.id",
    )?;
    let rows = stmt.query_map(params![source, identity], |row| {
        Ok(AttemptRow {
            destination: row.get(0)?,
            attempt: row.get(1)?,
            started_at: UnixTime(row.get(2)?),
            latency_ms: row.get(3)?,
            status: row.get(4)?,
            error: row.get(5)?,
            response_prefix: row.get(6)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
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

/// The most recently updated dead jobs.
pub fn dead_jobs(conn: &Connection, limit: usize) -> Result<Vec<DeadJob>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT e.source, e.identity, j.destination, j.attempts, j.last_error FROM jobs j JOIN events e ON e.id = j.event_id
         WHERE j.state = 'dead' ORDER BY j.updated_at DESC, j.id DESC LIMIT ?1",
    )?;
    let rows = stmt.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |row| {
        Ok(DeadJob {
            source: row.get(0)?,
            identity: row.get(1)?,
            destination: row.get(2)?,
            attempts: row.get(3)?,
            reason: row.get(4)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A conflicting repeat, for the operator's attention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentConflict {
    /// The source id.
    pub source: String,
    /// The identity whose receipt the repeat contradicts.
    pub identity: String,
    /// How many deliveries carried those other bytes.
    pub seen_count: u64,
    /// The last time.
    pub last_seen_at: UnixTime,
}

/// The most recent conflicts.
pub fn recent_conflicts(conn: &Connection, limit: usize) -> Result<Vec<RecentConflict>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT source, identity, seen_count, last_seen_at FROM conflicts ORDER BY last_seen_at DESC LIMIT ?1",
    )?;
    let rows = stmt.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |row| {
        Ok(RecentConflict {
            source: row.get(0)?,
            identity: row.get(1)?,
            seen_count: row.get(2)?,
            last_seen_at: UnixTime(row.get(3)?),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A destination's health: its jobs by state, and whether a `410` disabled it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DestinationHealth {
    /// The destination's name.
    pub name: String,
    /// Jobs per state.
    pub jobs: Vec<(String, u64)>,
    /// Why it is disabled, if it is.
    pub disabled: Option<String>,
}

/// Every destination that has jobs or was disabled.
pub fn destinations(conn: &Connection) -> Result<Vec<DestinationHealth>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT name FROM (SELECT DISTINCT destination AS name FROM jobs UNION SELECT name FROM destinations) ORDER BY name",
    )?;
    let names: Vec<String> = stmt.query_map([], |row| row.get(0))?.collect::<Result<_, _>>()?;
    let mut jobs =
        conn.prepare("SELECT state, count(*) FROM jobs WHERE destination = ?1 GROUP BY state ORDER BY state")?;
    let mut disabled =
        conn.prepare("SELECT disabled_reason FROM destinations WHERE name = ?1 AND disabled_at IS NOT NULL")?;
    names
        .into_iter()
        .map(|name| {
            let counts = jobs.query_map([&name], |row| Ok((row.get(0)?, row.get(1)?)))?.collect::<Result<_, _>>()?;
            let reason: Option<Option<String>> =
                rusqlite::OptionalExtension::optional(disabled.query_row([&name], |row| row.get(0)))?;
            Ok(DestinationHealth { name, jobs: counts, disabled: reason.map(|r| r.unwrap_or_default()) })
        })
        .collect()
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

/// Counts per source of what arrived at or after `since`.
pub fn stats(conn: &Connection, since: Option<UnixTime>) -> Result<Vec<SourceStats>, StoreError> {
    let since = since.map_or(i64::MIN, |t| t.0);
    let mut sources =
        conn.prepare("SELECT source, count(*) FROM receipts WHERE received_at >= ?1 GROUP BY source ORDER BY source")?;
    let mut all: Vec<SourceStats> = sources
        .query_map([since], |row| {
            Ok(SourceStats { source: row.get(0)?, receipts: row.get(1)?, ..SourceStats::default() })
        })?
        .collect::<Result<_, _>>()?;
    let mut jobs = conn.prepare(
        "SELECT j.state, count(*) FROM jobs j JOIN events e ON e.id = j.event_id
         WHERE e.source = ?1 AND e.received_at >= ?2 GROUP BY j.state ORDER BY j.state",
    )?;
    for source in &mut all {
        source.jobs = jobs
            .query_map(params![source.source, since], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<_, _>>()?;
        source.conflicts = conn.query_row(
            "SELECT coalesce(sum(seen_count), 0) FROM conflicts WHERE source = ?1 AND last_seen_at >= ?2",
            params![source.source, since],
            |row| row.get(0),
        )?;
    }
    Ok(all)
}
