//! The operator's read-only views on SQLite, on a read connection: events with their jobs,
//! one event's whole history and payload, attempt series, and counts per source.

use idemgate_core::{BodyHash, UnixTime};
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteStore;
use crate::{
    StoreError,
    model::{
        body_hash,
        jobs::{attempted, breaker_of},
    },
    views::{
        AttemptBucket, AttemptRow, BreakerView, ConflictBucket, ConflictFilter, ConflictRow, DeadJob,
        DestinationHealth, EventFilter, EventPayload, EventRow, FailedAttempt, RecentConflict, SourceStats,
        WaitingQueue,
    },
};

/// Events matching `filter`, newest first.
pub fn list_events(conn: &Connection, filter: &EventFilter) -> Result<Vec<EventRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT e.id, e.source, e.identity, e.event_type, e.received_at FROM events e
         WHERE (?1 IS NULL OR e.source = ?1)
           AND (CASE WHEN ?2 = 'unmatched'
                THEN NOT EXISTS (SELECT 1 FROM jobs j WHERE j.event_id = e.id AND (?3 IS NULL OR j.destination = ?3))
                ELSE (?2 IS NULL OR EXISTS (SELECT 1 FROM jobs j WHERE j.event_id = e.id AND j.state = ?2
                                            AND (?3 IS NULL OR j.destination = ?3)))
                 AND (?3 IS NULL OR EXISTS (SELECT 1 FROM jobs j WHERE j.event_id = e.id AND j.destination = ?3))
                END)
           AND (?4 IS NULL OR e.received_at >= ?4) AND (?5 IS NULL OR e.received_at < ?5)
           AND (?6 IS NULL OR e.id < ?6)
           AND (?8 IS NULL OR substr(e.identity, 1, length(?8)) = ?8)
           AND (?9 IS NULL OR e.event_type = ?9)
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
            i64::try_from(filter.limit).unwrap_or(i64::MAX),
            filter.identity_prefix,
            filter.event_type
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

/// Every attempt for the event `(source, identity)`, in order.
pub fn attempts(conn: &Connection, source: &str, identity: &str) -> Result<Vec<AttemptRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT j.destination, a.attempt, a.started_at, a.latency_ms, a.status, a.error, a.response_prefix, a.outcome
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
            outcome: attempted(&row.get::<_, String>(7)?),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
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

/// The most recent conflicts.
pub fn recent_conflicts(conn: &Connection, limit: usize) -> Result<Vec<RecentConflict>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT c.source, c.identity, c.seen_count, c.last_seen_at, e.id FROM conflicts c
         LEFT JOIN events e ON e.source = c.source AND e.identity = c.identity
         ORDER BY c.last_seen_at DESC LIMIT ?1",
    )?;
    let rows = stmt.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |row| {
        Ok(RecentConflict {
            source: row.get(0)?,
            identity: row.get(1)?,
            seen_count: row.get(2)?,
            last_seen_at: UnixTime(row.get(3)?),
            event_id: row.get(4)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The conflicting bodies `filter` selects, newest first seen first (see
/// [`crate::views::ConflictCursor`]).
pub fn list_conflicts(conn: &Connection, filter: &ConflictFilter) -> Result<Vec<ConflictRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT c.source, c.identity, e.id, c.body_sha256, c.first_seen_at, c.last_seen_at, c.seen_count
         FROM conflicts c LEFT JOIN events e ON e.source = c.source AND e.identity = c.identity
         WHERE (?1 IS NULL OR c.source = ?1) AND (?2 IS NULL OR c.identity = ?2)
           AND (?3 IS NULL OR c.last_seen_at >= ?3) AND (?4 IS NULL OR c.first_seen_at < ?4)
           AND (?5 IS NULL OR (c.first_seen_at, c.source, c.identity, c.body_sha256) < (?5, ?6, ?7, ?8))
         ORDER BY c.first_seen_at DESC, c.source DESC, c.identity DESC, c.body_sha256 DESC LIMIT ?9",
    )?;
    let after = filter.after.as_ref();
    let rows = stmt.query_map(
        params![
            filter.source,
            filter.identity,
            filter.since.map(|t| t.0),
            filter.until.map(|t| t.0),
            after.map(|a| a.first_seen_at.0),
            after.map(|a| a.source.as_str()),
            after.map(|a| a.identity.as_str()),
            after.map(|a| a.body_hash.0.to_vec()),
            i64::try_from(filter.limit).unwrap_or(i64::MAX),
        ],
        |row| {
            Ok((
                ConflictRow {
                    source: row.get(0)?,
                    identity: row.get(1)?,
                    event_id: row.get(2)?,
                    body_hash: BodyHash([0; 32]),
                    first_seen_at: UnixTime(row.get(4)?),
                    last_seen_at: UnixTime(row.get(5)?),
                    seen_count: row.get(6)?,
                },
                row.get::<_, Vec<u8>>(3)?,
            ))
        },
    )?;
    rows.map(|row| {
        let (conflict, hash) = row?;
        Ok(ConflictRow { body_hash: body_hash(hash)?, ..conflict })
    })
    .collect()
}

/// Every destination that has jobs or was disabled.
pub fn destinations(conn: &Connection) -> Result<Vec<DestinationHealth>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT name FROM (SELECT DISTINCT destination AS name FROM jobs UNION SELECT name FROM destinations) ORDER BY name",
    )?;
    let names: Vec<String> = stmt.query_map([], |row| row.get(0))?.collect::<Result<_, _>>()?;
    let mut jobs =
        conn.prepare("SELECT state, count(*) FROM jobs WHERE destination = ?1 GROUP BY state ORDER BY state")?;
    let mut disabled = conn
        .prepare("SELECT disabled_reason, disabled_at FROM destinations WHERE name = ?1 AND disabled_at IS NOT NULL")?;
    let mut breaker = conn.prepare(
        "SELECT failures, failing_since_ms, paused_at_ms, next_probe_at_ms, probe_interval_ms, throttled_since_ms
         FROM destinations WHERE name = ?1",
    )?;
    let mut succeeded = conn.prepare(&format!("{LATEST_ATTEMPT} AND a.outcome = 'succeeded' {NEWEST}"))?;
    let mut failed = conn.prepare(&format!("{LATEST_ATTEMPT} AND a.outcome = 'failed' {NEWEST}"))?;
    names
        .into_iter()
        .map(|name| {
            let counts = jobs.query_map([&name], |row| Ok((row.get(0)?, row.get(1)?)))?.collect::<Result<_, _>>()?;
            let off: Option<(Option<String>, i64)> =
                disabled.query_row([&name], |row| Ok((row.get(0)?, row.get(1)?))).optional()?;
            let last_success = succeeded.query_row([&name], |row| row.get(0)).optional()?.map(UnixTime);
            let last_failure = failed
                .query_row([&name], |row| {
                    Ok(FailedAttempt { at: UnixTime(row.get(0)?), status: row.get(1)?, error: row.get(2)? })
                })
                .optional()?;
            let (breaker, throttled_since) = breaker
                .query_row([&name], |row| {
                    let columns = (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?);
                    Ok((columns, row.get::<_, Option<i64>>(5)?))
                })
                .optional()?
                .map(|(columns, throttled)| {
                    (BreakerView::of(&breaker_of(columns)), throttled.map(|ms| UnixTime(crate::model::second_of(ms))))
                })
                .unwrap_or_default();
            Ok(DestinationHealth {
                breaker,
                throttled_since,
                name,
                jobs: counts,
                disabled: off.as_ref().map(|(reason, _)| reason.clone().unwrap_or_default()),
                disabled_at: off.map(|(_, at)| UnixTime(at)),
                last_success,
                last_failure,
            })
        })
        .collect()
}

/// Every stored breaker, by destination name.
pub fn breakers(conn: &Connection) -> Result<Vec<(String, BreakerView)>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT name, failures, failing_since_ms, paused_at_ms, next_probe_at_ms, probe_interval_ms
         FROM destinations ORDER BY name",
    )?;
    let rows = stmt.query_map([], |row| {
        let columns = (row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?);
        Ok((row.get(0)?, BreakerView::of(&breaker_of(columns))))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A destination's (`?1`) attempts, to be narrowed and ordered by [`NEWEST`].
const LATEST_ATTEMPT: &str = "SELECT a.started_at, a.status, a.error FROM attempts a JOIN jobs j ON j.id = a.job_id
    WHERE j.destination = ?1";
/// The newest of them: attempts are recorded in order, so the highest id.
const NEWEST: &str = "ORDER BY a.id DESC LIMIT 1";

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

/// The event with row id `id`: its key, headers, and body unless its payload was purged.
pub fn event_payload(conn: &Connection, id: i64) -> Result<Option<EventPayload>, StoreError> {
    let row = conn
        .query_row(
            "SELECT source, identity, content_type, headers, CASE WHEN payload_purged = 0 THEN body END
             FROM events WHERE id = ?1",
            [id],
            |row| {
                Ok(EventPayload {
                    id,
                    source: row.get(0)?,
                    identity: row.get(1)?,
                    content_type: row.get(2)?,
                    headers: crate::model::parse_headers(row.get(3)?),
                    body: row.get(4)?,
                })
            },
        )
        .optional()?;
    Ok(row)
}

/// Every destination's attempts that started at or after `since`, counted in buckets of
/// `width` seconds; by destination, then time. Buckets without attempts are left out.
pub fn attempt_series(conn: &Connection, since: UnixTime, width: i64) -> Result<Vec<AttemptBucket>, StoreError> {
    let width = width.max(1);
    let mut stmt = conn.prepare(
        "SELECT j.destination, (a.started_at - ?1) / ?2 AS bucket,
                sum(CASE WHEN a.outcome = 'succeeded' THEN 1 ELSE 0 END),
                sum(CASE WHEN a.outcome = 'succeeded' THEN 0 ELSE 1 END),
                CAST(avg(a.latency_ms) AS INTEGER), max(a.latency_ms)
         FROM attempts a JOIN jobs j ON j.id = a.job_id
         WHERE a.started_at >= ?1 GROUP BY j.destination, bucket ORDER BY j.destination, bucket",
    )?;
    let rows = stmt.query_map(params![since.0, width], |row| {
        Ok(AttemptBucket {
            destination: row.get(0)?,
            start: UnixTime(since.0 + row.get::<_, i64>(1)? * width),
            succeeded: row.get(2)?,
            failed: row.get(3)?,
            mean_latency_ms: row.get(4)?,
            max_latency_ms: row.get(5)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Every destination with jobs waiting (pending or retrying): how many, and since when.
pub fn waiting_queues(conn: &Connection) -> Result<Vec<WaitingQueue>, StoreError> {
    let mut stmt = conn.prepare(WAITING_QUEUES)?;
    let rows = stmt.query_map([], |row| {
        Ok(WaitingQueue { destination: row.get(0)?, depth: row.get(1)?, oldest: UnixTime(row.get(2)?) })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The query of [`waiting_queues`].
const WAITING_QUEUES: &str = "SELECT destination, count(*), min(created_at) FROM jobs
    WHERE state IN ('pending', 'retrying') GROUP BY destination ORDER BY destination";

/// Conflicting bodies first seen at or after `since`, per source and bucket of `width`
/// seconds; by source, then time.
pub fn conflict_series(conn: &Connection, since: UnixTime, width: i64) -> Result<Vec<ConflictBucket>, StoreError> {
    let width = width.max(1);
    let mut stmt = conn.prepare(
        "SELECT source, (first_seen_at - ?1) / ?2 AS bucket, count(*) FROM conflicts
         WHERE first_seen_at >= ?1 GROUP BY source, bucket ORDER BY source, bucket",
    )?;
    let rows = stmt.query_map(params![since.0, width], |row| {
        Ok(ConflictBucket {
            source: row.get(0)?,
            start: UnixTime(since.0 + row.get::<_, i64>(1)? * width),
            conflicts: row.get(2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The views of [`crate::Store`], each on a fresh read connection off the async threads.
impl SqliteStore {
    /// [`list_events`] on a read connection.
    pub(crate) async fn list_events(&self, filter: EventFilter) -> Result<Vec<EventRow>, StoreError> {
        self.read(move |r| list_events(r.connection(), &filter)).await
    }

    /// [`attempts`] on a read connection.
    pub(crate) async fn attempts(&self, source: String, identity: String) -> Result<Vec<AttemptRow>, StoreError> {
        self.read(move |r| attempts(r.connection(), &source, &identity)).await
    }

    /// [`dead_jobs`] on a read connection.
    pub(crate) async fn dead_jobs(&self, limit: usize) -> Result<Vec<DeadJob>, StoreError> {
        self.read(move |r| dead_jobs(r.connection(), limit)).await
    }

    /// [`recent_conflicts`] on a read connection.
    pub(crate) async fn recent_conflicts(&self, limit: usize) -> Result<Vec<RecentConflict>, StoreError> {
        self.read(move |r| recent_conflicts(r.connection(), limit)).await
    }

    /// [`list_conflicts`] on a read connection.
    pub(crate) async fn list_conflicts(&self, filter: ConflictFilter) -> Result<Vec<ConflictRow>, StoreError> {
        self.read(move |r| list_conflicts(r.connection(), &filter)).await
    }

    /// [`destinations`] on a read connection.
    pub(crate) async fn destinations(&self) -> Result<Vec<DestinationHealth>, StoreError> {
        self.read(|r| destinations(r.connection())).await
    }

    /// [`breakers`] on a read connection.
    pub(crate) async fn breakers(&self) -> Result<Vec<(String, BreakerView)>, StoreError> {
        self.read(|r| breakers(r.connection())).await
    }

    /// [`stats`] on a read connection.
    pub(crate) async fn source_stats(&self, since: Option<UnixTime>) -> Result<Vec<SourceStats>, StoreError> {
        self.read(move |r| stats(r.connection(), since)).await
    }

    /// [`event_payload`] on a read connection.
    pub(crate) async fn event_payload(&self, id: i64) -> Result<Option<EventPayload>, StoreError> {
        self.read(move |r| event_payload(r.connection(), id)).await
    }

    /// [`attempt_series`] on a read connection.
    pub(crate) async fn attempt_series(&self, since: UnixTime, width: i64) -> Result<Vec<AttemptBucket>, StoreError> {
        self.read(move |r| attempt_series(r.connection(), since, width)).await
    }

    /// [`waiting_queues`] on a read connection.
    pub(crate) async fn waiting_queues(&self) -> Result<Vec<WaitingQueue>, StoreError> {
        self.read(|r| waiting_queues(r.connection())).await
    }

    /// [`conflict_series`] on a read connection.
    pub(crate) async fn conflict_series(&self, since: UnixTime, width: i64) -> Result<Vec<ConflictBucket>, StoreError> {
        self.read(move |r| conflict_series(r.connection(), since, width)).await
    }
}
