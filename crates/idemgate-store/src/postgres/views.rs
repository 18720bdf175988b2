//! Reads on PostgreSQL: receipts, events and jobs as the operator, the admin API and the
//! tests see them. The same queries as SQLite's, returning the types of [`crate::views`].

use idemgate_core::{BodyHash, ReceiptKey, SourceName, UnixTime};
use tokio_postgres::Row;

use super::{PgStore, partitions::payload_of, sql_limit};
use crate::{
    ConflictRecord, Receipt, StoreError,
    inbox::{JobRecord, StoredEvent},
    model::{
        body_hash,
        jobs::{attempted, breaker_of},
        key, parse_headers,
        receive::parse_result,
    },
    views::{
        AttemptBucket, AttemptRow, BreakerView, ConflictBucket, ConflictFilter, ConflictRow, DeadJob,
        DestinationHealth, EventFilter, EventPayload, EventRow, FailedAttempt, RecentConflict, SourceStats,
        WaitingQueue,
    },
};

fn unsigned(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn key_from_row(row: &Row) -> Result<ReceiptKey, StoreError> {
    key(&row.try_get::<_, String>(0)?, &row.try_get::<_, String>(1)?)
}

fn hash_from_row(row: &Row, index: usize) -> Result<BodyHash, StoreError> {
    body_hash(row.try_get(index)?)
}

fn receipt_from_row(row: &Row) -> Result<Receipt, StoreError> {
    Ok(Receipt {
        key: key_from_row(row)?,
        body_hash: hash_from_row(row, 2)?,
        outcome: row.try_get(3)?,
        result: parse_result(&row.try_get::<_, String>(4)?)?,
        received_at: UnixTime(row.try_get(5)?),
    })
}

fn counts(rows: &[Row]) -> Result<Vec<(String, u64)>, StoreError> {
    rows.iter().map(|row| Ok((row.try_get(0)?, unsigned(row.try_get(1)?)))).collect()
}

/// A destination's (`$1`) attempts, to be narrowed and ordered by [`NEWEST`].
const LATEST_ATTEMPT: &str = "SELECT a.started_at, a.status, a.error FROM attempts a JOIN jobs j ON j.id = a.job_id
    WHERE j.destination = $1";
/// The newest of them: attempts are recorded in order, so the highest id.
const NEWEST: &str = "ORDER BY a.id DESC LIMIT 1";

impl PgStore {
    /// The receipt for `key`, if any.
    pub(crate) async fn receipt(&self, key: ReceiptKey) -> Result<Option<Receipt>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT source, identity, body_sha256, outcome, result, received_at
                 FROM receipts WHERE source = $1 AND identity = $2",
                &[&key.source.as_str(), &key.identity.as_str()],
            )
            .await?;
        row.as_ref().map(receipt_from_row).transpose()
    }

    /// Every receipt of `source`, ordered by identity.
    pub(crate) async fn receipts(&self, source: SourceName) -> Result<Vec<Receipt>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT source, identity, body_sha256, outcome, result, received_at
                 FROM receipts WHERE source = $1 ORDER BY identity",
                &[&source.as_str()],
            )
            .await?;
        rows.iter().map(receipt_from_row).collect()
    }

    /// Every recorded conflict of `source`, ordered by identity.
    pub(crate) async fn conflicts(&self, source: SourceName) -> Result<Vec<ConflictRecord>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT source, identity, body_sha256, first_seen_at, last_seen_at, seen_count
                 FROM conflicts WHERE source = $1 ORDER BY identity, first_seen_at",
                &[&source.as_str()],
            )
            .await?;
        rows.iter()
            .map(|row| {
                Ok(ConflictRecord {
                    key: key_from_row(row)?,
                    body_hash: hash_from_row(row, 2)?,
                    first_seen_at: UnixTime(row.try_get(3)?),
                    last_seen_at: UnixTime(row.try_get(4)?),
                    seen_count: unsigned(row.try_get(5)?),
                })
            })
            .collect()
    }

    /// The body of the event stored under `key`, unless its payload was purged.
    pub(crate) async fn event_body(&self, key: ReceiptKey) -> Result<Option<Vec<u8>>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                concat!(
                    "SELECT p.body FROM events e ",
                    payload_of!("e.id"),
                    " WHERE e.source = $1 AND e.identity = $2 AND p.event_id IS NOT NULL"
                ),
                &[&key.source.as_str(), &key.identity.as_str()],
            )
            .await?;
        row.map(|row| row.try_get(0)).transpose().map_err(StoreError::from)
    }

    /// The event stored under `key`, if any.
    pub(crate) async fn event(&self, key: ReceiptKey) -> Result<Option<StoredEvent>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                concat!(
                    "SELECT e.id, e.event_type, e.content_type, coalesce(octet_length(p.body), 0), e.received_at
                 FROM events e ",
                    payload_of!("e.id"),
                    " WHERE e.source = $1 AND e.identity = $2"
                ),
                &[&key.source.as_str(), &key.identity.as_str()],
            )
            .await?;
        row.map(|row| {
            let len: i32 = row.try_get(3)?;
            Ok(StoredEvent {
                id: row.try_get(0)?,
                event_type: row.try_get(1)?,
                content_type: row.try_get(2)?,
                body_len: usize::try_from(len).unwrap_or(0),
                received_at: UnixTime(row.try_get(4)?),
            })
        })
        .transpose()
    }

    /// The jobs of the event stored under `key`, by destination.
    pub(crate) async fn jobs(&self, key: ReceiptKey) -> Result<Vec<JobRecord>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT j.id, j.destination, j.state, j.attempts, j.next_attempt_at_ms / 1000, j.last_error
                 FROM jobs j JOIN events e ON e.id = j.event_id
                 WHERE e.source = $1 AND e.identity = $2 ORDER BY j.destination",
                &[&key.source.as_str(), &key.identity.as_str()],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let attempts: i32 = row.try_get(3)?;
                Ok(JobRecord {
                    id: row.try_get(0)?,
                    destination: row.try_get(1)?,
                    state: row.try_get(2)?,
                    attempts: attempts.unsigned_abs(),
                    next_attempt_at: UnixTime(row.try_get(4)?),
                    last_error: row.try_get(5)?,
                })
            })
            .collect()
    }

    /// How many jobs are in each state.
    pub(crate) async fn job_states(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let client = self.client().await?;
        counts(&client.query("SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state", &[]).await?)
    }

    /// How many jobs are waiting, running and dead ([`crate::Store::queue_states`]), each
    /// through its partial index (`jobs_waiting`, `jobs_leased`: a running job always has a
    /// lease, `jobs_dead_at`), in state order.
    pub(crate) async fn queue_states(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT state, n FROM (
                   SELECT state, count(*) AS n FROM jobs WHERE state IN ('pending', 'retrying') GROUP BY state
                   UNION ALL SELECT 'running', count(*) FROM jobs WHERE lease_until IS NOT NULL AND state = 'running'
                   UNION ALL SELECT 'dead', count(*) FROM jobs WHERE state = 'dead'
                 ) AS queue WHERE n > 0 ORDER BY state",
                &[],
            )
            .await?;
        counts(&rows)
    }

    /// When the oldest job still waiting to be delivered was created.
    pub(crate) async fn oldest_waiting_job(&self) -> Result<Option<UnixTime>, StoreError> {
        let client = self.client().await?;
        let row =
            client.query_one("SELECT min(created_at) FROM jobs WHERE state IN ('pending', 'retrying')", &[]).await?;
        Ok(row.try_get::<_, Option<i64>>(0)?.map(UnixTime))
    }

    /// Events matching `filter`, newest first.
    pub(crate) async fn list_events(&self, filter: EventFilter) -> Result<Vec<EventRow>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT e.id, e.source, e.identity, e.event_type, e.received_at,
                        coalesce(jobs.destinations, '{}'), coalesce(jobs.states, '{}')
                 FROM events e
                 LEFT JOIN LATERAL (SELECT array_agg(j.destination ORDER BY j.destination) AS destinations,
                                           array_agg(j.state ORDER BY j.destination) AS states
                                    FROM jobs j WHERE j.event_id = e.id) jobs ON true
                 WHERE ($1::text IS NULL OR e.source = $1)
                   AND (CASE WHEN $2::text = 'unmatched'
                        THEN NOT EXISTS (SELECT 1 FROM jobs j WHERE j.event_id = e.id
                                         AND ($3::text IS NULL OR j.destination = $3))
                        ELSE ($2::text IS NULL OR EXISTS (SELECT 1 FROM jobs j WHERE j.event_id = e.id AND j.state = $2
                                                          AND ($3::text IS NULL OR j.destination = $3)))
                         AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM jobs j
                                                          WHERE j.event_id = e.id AND j.destination = $3))
                        END)
                   AND ($4::bigint IS NULL OR e.received_at >= $4) AND ($5::bigint IS NULL OR e.received_at < $5)
                   AND ($6::bigint IS NULL OR e.id < $6)
                   AND ($8::text IS NULL OR left(e.identity, length($8)) = $8)
                   AND ($9::text IS NULL OR e.event_type = $9)
                 ORDER BY e.id DESC LIMIT $7",
                &[
                    &filter.source,
                    &filter.state,
                    &filter.destination,
                    &filter.since.map(|t| t.0),
                    &filter.until.map(|t| t.0),
                    &filter.before_id,
                    &sql_limit(filter.limit),
                    &filter.identity_prefix,
                    &filter.event_type,
                ],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let destinations: Vec<String> = row.try_get(5)?;
                let states: Vec<String> = row.try_get(6)?;
                Ok(EventRow {
                    id: row.try_get(0)?,
                    source: row.try_get(1)?,
                    identity: row.try_get(2)?,
                    event_type: row.try_get(3)?,
                    received_at: UnixTime(row.try_get(4)?),
                    jobs: destinations.into_iter().zip(states).collect(),
                })
            })
            .collect()
    }

    /// Every attempt for the event `(source, identity)`, in order.
    pub(crate) async fn attempts(&self, source: String, identity: String) -> Result<Vec<AttemptRow>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT j.destination, a.attempt, a.started_at, a.latency_ms, a.status, a.error, a.response_prefix,
                        a.outcome
                 FROM attempts a JOIN jobs j ON j.id = a.job_id JOIN events e ON e.id = j.event_id
                 WHERE e.source = $1 AND e.identity = $2 ORDER BY a.id",
                &[&source, &identity],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let attempt: i32 = row.try_get(1)?;
                let status: Option<i32> = row.try_get(4)?;
                Ok(AttemptRow {
                    destination: row.try_get(0)?,
                    attempt: attempt.unsigned_abs(),
                    started_at: UnixTime(row.try_get(2)?),
                    latency_ms: unsigned(row.try_get(3)?),
                    status: status.and_then(|s| u16::try_from(s).ok()),
                    error: row.try_get(5)?,
                    response_prefix: row.try_get(6)?,
                    outcome: attempted(row.try_get(7)?),
                })
            })
            .collect()
    }

    /// The most recently updated dead jobs.
    pub(crate) async fn dead_jobs(&self, limit: usize) -> Result<Vec<DeadJob>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT e.source, e.identity, j.destination, j.attempts, j.last_error
                 FROM jobs j JOIN events e ON e.id = j.event_id
                 WHERE j.state = 'dead' ORDER BY j.updated_at DESC, j.id DESC LIMIT $1",
                &[&sql_limit(limit)],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let attempts: i32 = row.try_get(3)?;
                Ok(DeadJob {
                    source: row.try_get(0)?,
                    identity: row.try_get(1)?,
                    destination: row.try_get(2)?,
                    attempts: attempts.unsigned_abs(),
                    reason: row.try_get(4)?,
                })
            })
            .collect()
    }

    /// The most recent conflicts.
    pub(crate) async fn recent_conflicts(&self, limit: usize) -> Result<Vec<RecentConflict>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT c.source, c.identity, c.seen_count, c.last_seen_at, e.id FROM conflicts c
                 LEFT JOIN events e ON e.source = c.source AND e.identity = c.identity
                 ORDER BY c.last_seen_at DESC LIMIT $1",
                &[&sql_limit(limit)],
            )
            .await?;
        rows.iter()
            .map(|row| {
                Ok(RecentConflict {
                    source: row.try_get(0)?,
                    identity: row.try_get(1)?,
                    seen_count: unsigned(row.try_get(2)?),
                    last_seen_at: UnixTime(row.try_get(3)?),
                    event_id: row.try_get(4)?,
                })
            })
            .collect()
    }

    /// The conflicting bodies `filter` selects, newest first seen first (see
    /// [`crate::views::ConflictCursor`]).
    pub(crate) async fn list_conflicts(&self, filter: ConflictFilter) -> Result<Vec<ConflictRow>, StoreError> {
        let client = self.client().await?;
        let after = filter.after.as_ref();
        let rows = client
            .query(
                "SELECT c.source, c.identity, e.id, c.body_sha256, c.first_seen_at, c.last_seen_at, c.seen_count
                 FROM conflicts c LEFT JOIN events e ON e.source = c.source AND e.identity = c.identity
                 WHERE ($1::text IS NULL OR c.source = $1) AND ($2::text IS NULL OR c.identity = $2)
                   AND ($3::bigint IS NULL OR c.last_seen_at >= $3) AND ($4::bigint IS NULL OR c.first_seen_at < $4)
                   AND ($5::bigint IS NULL
                        OR (c.first_seen_at, c.source, c.identity, c.body_sha256) < ($5, $6::text, $7::text, $8::bytea))
                 ORDER BY c.first_seen_at DESC, c.source DESC, c.identity DESC, c.body_sha256 DESC LIMIT $9",
                &[
                    &filter.source,
                    &filter.identity,
                    &filter.since.map(|t| t.0),
                    &filter.until.map(|t| t.0),
                    &after.map(|a| a.first_seen_at.0),
                    &after.map(|a| a.source.as_str()),
                    &after.map(|a| a.identity.as_str()),
                    &after.map(|a| a.body_hash.0.to_vec()),
                    &sql_limit(filter.limit),
                ],
            )
            .await?;
        rows.iter()
            .map(|row| {
                Ok(ConflictRow {
                    source: row.try_get(0)?,
                    identity: row.try_get(1)?,
                    event_id: row.try_get(2)?,
                    body_hash: hash_from_row(row, 3)?,
                    first_seen_at: UnixTime(row.try_get(4)?),
                    last_seen_at: UnixTime(row.try_get(5)?),
                    seen_count: unsigned(row.try_get(6)?),
                })
            })
            .collect()
    }

    /// Every destination that has jobs or was disabled.
    pub(crate) async fn destinations(&self) -> Result<Vec<DestinationHealth>, StoreError> {
        let client = self.client().await?;
        let names = client
            .query(
                "SELECT name FROM (SELECT DISTINCT destination AS name FROM jobs UNION SELECT name FROM destinations) n
                 ORDER BY name",
                &[],
            )
            .await?;
        let mut all = Vec::with_capacity(names.len());
        for row in names {
            let name: String = row.try_get(0)?;
            let jobs = counts(
                &client
                    .query(
                        "SELECT state, count(*) FROM jobs WHERE destination = $1 GROUP BY state ORDER BY state",
                        &[&name],
                    )
                    .await?,
            )?;
            let off = client
                .query_opt(
                    "SELECT disabled_reason, disabled_at FROM destinations WHERE name = $1 AND disabled_at IS NOT NULL",
                    &[&name],
                )
                .await?
                .map(|row| Ok::<_, StoreError>((row.try_get::<_, Option<String>>(0)?, row.try_get::<_, i64>(1)?)))
                .transpose()?;
            let last_success = client
                .query_opt(&format!("{LATEST_ATTEMPT} AND a.outcome = 'succeeded' {NEWEST}"), &[&name])
                .await?
                .map(|row| row.try_get::<_, i64>(0).map(UnixTime))
                .transpose()?;
            let last_failure = client
                .query_opt(&format!("{LATEST_ATTEMPT} AND a.outcome = 'failed' {NEWEST}"), &[&name])
                .await?
                .map(|row| {
                    Ok::<_, StoreError>(FailedAttempt {
                        at: UnixTime(row.try_get(0)?),
                        status: row.try_get::<_, Option<i32>>(1)?.and_then(|s| u16::try_from(s).ok()),
                        error: row.try_get(2)?,
                    })
                })
                .transpose()?;
            let (breaker, throttled_since) = client
                .query_opt(
                    "SELECT failures, failing_since_ms, paused_at_ms, next_probe_at_ms, probe_interval_ms,
                            throttled_since_ms
                     FROM destinations WHERE name = $1",
                    &[&name],
                )
                .await?
                .map(|row| {
                    let columns = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?, row.try_get(4)?);
                    let throttled: Option<i64> = row.try_get(5)?;
                    Ok::<_, StoreError>((
                        BreakerView::of(&breaker_of(columns)),
                        throttled.map(|ms| UnixTime(crate::model::second_of(ms))),
                    ))
                })
                .transpose()?
                .unwrap_or_default();
            all.push(DestinationHealth {
                breaker,
                throttled_since,
                name,
                jobs,
                disabled: off.as_ref().map(|(reason, _)| reason.clone().unwrap_or_default()),
                disabled_at: off.map(|(_, at)| UnixTime(at)),
                last_success,
                last_failure,
            });
        }
        Ok(all)
    }

    /// Every stored breaker, by destination name.
    pub(crate) async fn breakers(&self) -> Result<Vec<(String, BreakerView)>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT name, failures, failing_since_ms, paused_at_ms, next_probe_at_ms, probe_interval_ms
                 FROM destinations ORDER BY name",
                &[],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let columns = (row.try_get(1)?, row.try_get(2)?, row.try_get(3)?, row.try_get(4)?, row.try_get(5)?);
                Ok((row.try_get(0)?, BreakerView::of(&breaker_of(columns))))
            })
            .collect()
    }

    /// Counts per source of what arrived at or after `since`.
    pub(crate) async fn source_stats(&self, since: Option<UnixTime>) -> Result<Vec<SourceStats>, StoreError> {
        let since = since.map_or(i64::MIN, |t| t.0);
        let client = self.client().await?;
        let sources = client
            .query(
                "SELECT source, count(*) FROM receipts WHERE received_at >= $1 GROUP BY source ORDER BY source",
                &[&since],
            )
            .await?;
        let mut all = Vec::with_capacity(sources.len());
        for row in sources {
            let source: String = row.try_get(0)?;
            let jobs = counts(
                &client
                    .query(
                        "SELECT j.state, count(*) FROM jobs j JOIN events e ON e.id = j.event_id
                         WHERE e.source = $1 AND e.received_at >= $2 GROUP BY j.state ORDER BY j.state",
                        &[&source, &since],
                    )
                    .await?,
            )?;
            let conflicts: i64 = client
                .query_one(
                    "SELECT coalesce(sum(seen_count), 0)::bigint FROM conflicts WHERE source = $1 AND last_seen_at >= $2",
                    &[&source, &since],
                )
                .await?
                .try_get(0)?;
            all.push(SourceStats { receipts: unsigned(row.try_get(1)?), conflicts: unsigned(conflicts), jobs, source });
        }
        Ok(all)
    }

    /// The event with row id `id`: its key, headers, and body unless its payload was purged.
    pub(crate) async fn event_payload(&self, id: i64) -> Result<Option<EventPayload>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                concat!(
                    "SELECT e.source, e.identity, e.content_type, e.headers, p.body FROM events e ",
                    payload_of!("e.id"),
                    " WHERE e.id = $1"
                ),
                &[&id],
            )
            .await?;
        row.map(|row| {
            Ok(EventPayload {
                id,
                source: row.try_get(0)?,
                identity: row.try_get(1)?,
                content_type: row.try_get(2)?,
                headers: parse_headers(row.try_get(3)?),
                body: row.try_get(4)?,
            })
        })
        .transpose()
    }

    /// Every destination's attempts that started at or after `since`, counted in buckets
    /// of `width` seconds; by destination, then time. Buckets without attempts are left out.
    pub(crate) async fn attempt_series(&self, since: UnixTime, width: i64) -> Result<Vec<AttemptBucket>, StoreError> {
        let width = width.max(1);
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT j.destination, (a.started_at - $1) / $2 AS bucket,
                        count(*) FILTER (WHERE a.outcome = 'succeeded'),
                        count(*) FILTER (WHERE a.outcome <> 'succeeded'),
                        floor(avg(a.latency_ms))::bigint, max(a.latency_ms)
                 FROM attempts a JOIN jobs j ON j.id = a.job_id
                 WHERE a.started_at >= $1 GROUP BY j.destination, bucket ORDER BY j.destination, bucket",
                &[&since.0, &width],
            )
            .await?;
        rows.iter()
            .map(|row| {
                Ok(AttemptBucket {
                    destination: row.try_get(0)?,
                    start: UnixTime(since.0 + row.try_get::<_, i64>(1)? * width),
                    succeeded: unsigned(row.try_get(2)?),
                    failed: unsigned(row.try_get(3)?),
                    mean_latency_ms: unsigned(row.try_get(4)?),
                    max_latency_ms: unsigned(row.try_get(5)?),
                })
            })
            .collect()
    }

    /// Every destination with jobs waiting (pending or retrying): how many, and since when.
    pub(crate) async fn waiting_queues(&self) -> Result<Vec<WaitingQueue>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT destination, count(*), min(created_at) FROM jobs
                 WHERE state IN ('pending', 'retrying') GROUP BY destination ORDER BY destination",
                &[],
            )
            .await?;
        rows.iter()
            .map(|row| {
                Ok(WaitingQueue {
                    destination: row.try_get(0)?,
                    depth: unsigned(row.try_get(1)?),
                    oldest: UnixTime(row.try_get(2)?),
                })
            })
            .collect()
    }

    /// Conflicting bodies first seen at or after `since`, per source and bucket of `width`
    /// seconds; by source, then time.
    pub(crate) async fn conflict_series(&self, since: UnixTime, width: i64) -> Result<Vec<ConflictBucket>, StoreError> {
        let width = width.max(1);
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT source, (first_seen_at - $1) / $2 AS bucket, count(*) FROM conflicts
                 WHERE first_seen_at >= $1 GROUP BY source, bucket ORDER BY source, bucket",
                &[&since.0, &width],
            )
            .await?;
        rows.iter()
            .map(|row| {
                Ok(ConflictBucket {
                    source: row.try_get(0)?,
                    start: UnixTime(since.0 + row.try_get::<_, i64>(1)? * width),
                    conflicts: unsigned(row.try_get(2)?),
                })
            })
            .collect()
    }
}
