//! The delivery queue on PostgreSQL: due jobs are claimed with `FOR UPDATE SKIP LOCKED`,
//! so workers of several instances never take the same job while its lease holds, and
//! completions are fenced by `lease_token` exactly as on SQLite.

use std::time::Duration;

use idemgate_core::{UnixTime, retry::Decision};
use tokio_postgres::types::ToSql;

use super::{PgStore, retrying, sql_limit};
use crate::{
    StoreError,
    jobs::{AttemptRecord, ClaimedJob, Completion, ReplayFilter},
    model::{
        jobs::{FilterBindings, Recording, lease_until},
        key, parse_headers, second_of,
    },
};

/// A filter's six values followed by `more`, as parameters `$1`… .
fn with<'a>(bindings: &'a FilterBindings<'_>, more: &[&'a (dyn ToSql + Sync)]) -> Vec<&'a (dyn ToSql + Sync)> {
    let mut all: Vec<&(dyn ToSql + Sync)> = vec![
        &bindings.state,
        &bindings.source,
        &bindings.identity,
        &bindings.destination,
        &bindings.since,
        &bindings.until,
    ];
    all.extend_from_slice(more);
    all
}

/// The jobs a [`ReplayFilter`] selects ($1 state, $2 source, $3 identity, $4 destination,
/// $5 since, $6 until).
const MATCHING: &str = "SELECT j.id FROM jobs j JOIN events e ON e.id = j.event_id
    WHERE j.state = $1 AND NOT e.payload_purged
      AND ($2::text IS NULL OR e.source = $2) AND ($3::text IS NULL OR e.identity = $3)
      AND ($4::text IS NULL OR j.destination = $4)
      AND ($5::bigint IS NULL OR e.received_at >= $5) AND ($6::bigint IS NULL OR e.received_at < $6)";

/// The waiting jobs a [`ReplayFilter`] selects that are not yet due at `$7` ms.
const WAITING: &str = "SELECT j.id FROM jobs j JOIN events e ON e.id = j.event_id
    WHERE j.state IN ('pending', 'retrying') AND ($1::text IS NULL OR j.state = $1)
      AND ($2::text IS NULL OR e.source = $2) AND ($3::text IS NULL OR e.identity = $3)
      AND ($4::text IS NULL OR j.destination = $4)
      AND ($5::bigint IS NULL OR e.received_at >= $5) AND ($6::bigint IS NULL OR e.received_at < $6)
      AND j.next_attempt_at_ms > $7";

impl PgStore {
    /// Claims up to `limit` due jobs at `now_ms` for `lease`, by the rules of
    /// [`crate::jobs`]. Jobs locked by another claim in progress are skipped, not waited for.
    pub async fn claim_jobs(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
        fifo: Vec<String>,
    ) -> Result<Vec<ClaimedJob>, StoreError> {
        let client = self.client().await?;
        let claim = client
            .prepare_cached(
                "UPDATE jobs SET state = 'running', lease_until = $2, lease_token = jobs.lease_token + 1,
                        attempts = jobs.attempts + 1, updated_at = $1
                 FROM (SELECT j.id FROM jobs j JOIN events e ON e.id = j.event_id
                       WHERE ((j.state IN ('pending', 'retrying') AND j.next_attempt_at_ms <= $5)
                              OR (j.state = 'running' AND j.lease_until <= $1))
                         AND NOT EXISTS (SELECT 1 FROM destinations d
                                         WHERE d.name = j.destination AND d.disabled_at IS NOT NULL)
                         AND (e.ordering_key IS NULL
                              OR NOT (j.destination = ANY($4::text[]))
                              OR NOT EXISTS (
                                  SELECT 1 FROM jobs j2 JOIN events e2 ON e2.id = j2.event_id
                                  WHERE j2.destination = j.destination AND e2.source = e.source
                                    AND e2.ordering_key = e.ordering_key AND e2.id < e.id
                                    AND j2.state IN ('pending', 'running', 'retrying')))
                       ORDER BY j.next_attempt_at_ms, j.id LIMIT $3
                       FOR UPDATE OF j SKIP LOCKED) AS due,
                      events e
                 WHERE jobs.id = due.id AND e.id = jobs.event_id
                 RETURNING jobs.id, jobs.lease_token, jobs.attempts, jobs.destination,
                           e.source, e.identity, e.body, e.content_type, e.headers, e.outgoing_id,
                           e.event_type",
            )
            .await?;
        let now = second_of(now_ms);
        let until = lease_until(now_ms, lease);
        let rows = client.query(&claim, &[&now, &until, &sql_limit(limit), &fifo, &now_ms]).await?;
        let mut claimed = rows
            .iter()
            .map(|row| {
                let source: String = row.try_get(4)?;
                let identity: String = row.try_get(5)?;
                let headers: Option<String> = row.try_get(8)?;
                let attempt: i32 = row.try_get(2)?;
                Ok(ClaimedJob {
                    id: row.try_get(0)?,
                    lease_token: row.try_get(1)?,
                    attempt: attempt.unsigned_abs(),
                    destination: row.try_get(3)?,
                    key: key(&source, &identity)?,
                    outgoing_id: row.try_get(9)?,
                    event_type: row.try_get(10)?,
                    body: row.try_get(6)?,
                    content_type: row.try_get(7)?,
                    headers: parse_headers(headers),
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        claimed.sort_by_key(|job| job.id);
        Ok(claimed)
    }

    /// Records `attempt` and moves the job as `decision` says, if `job`'s lease is current:
    /// [`Self::complete_jobs`] for one.
    pub async fn complete_job(
        &self,
        job: ClaimedJob,
        attempt: AttemptRecord,
        decision: Decision,
        now_ms: i64,
    ) -> Result<Completion, StoreError> {
        Ok(self.complete_jobs(vec![(job, attempt, decision)], now_ms).await?.pop().unwrap_or(Completion::Stale))
    }

    /// Records each finished attempt and moves its job as its decision says, if the job's
    /// lease is current. One statement for all of them: the attempts, the disabling of
    /// destinations that answered `410`, and the fenced job updates, in one round trip and
    /// one commit. Completions come back in input order.
    pub async fn complete_jobs(
        &self,
        finished: Vec<(ClaimedJob, AttemptRecord, Decision)>,
        now_ms: i64,
    ) -> Result<Vec<Completion>, StoreError> {
        if finished.is_empty() {
            return Ok(Vec::new());
        }
        let columns = Columns::of(&finished, now_ms);
        let now = UnixTime(second_of(now_ms));
        let recorded = retrying(|| self.try_complete(&columns, now)).await?;
        Ok(finished
            .iter()
            .map(
                |(job, _, _)| {
                    if recorded.contains(&(job.id, job.lease_token)) { Completion::Recorded } else { Completion::Stale }
                },
            )
            .collect())
    }

    /// Returns the (job, lease token) pairs that took effect.
    async fn try_complete(&self, columns: &Columns, now: UnixTime) -> Result<Vec<(i64, i64)>, StoreError> {
        let client = self.client().await?;
        let complete = client
            .prepare_cached(
                "WITH finished AS (
                    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::bigint[], $5::bigint[],
                                         $6::int[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::text[])
                        AS f(id, token, attempt, started_at, latency_ms, status, error, response_prefix,
                             state, next_attempt_at_ms, last_error)
                 ), attempt AS (
                    INSERT INTO attempts (job_id, attempt, started_at, latency_ms, status, error, response_prefix)
                    SELECT id, attempt, started_at, latency_ms, status, error, response_prefix FROM finished
                 ), disabled AS (
                    INSERT INTO destinations (name, disabled_at, disabled_reason)
                    SELECT DISTINCT name, $12::bigint, '410 Gone' FROM unnest($13::text[]) AS name
                    ON CONFLICT (name) DO UPDATE
                    SET disabled_at = excluded.disabled_at, disabled_reason = excluded.disabled_reason
                 )
                 UPDATE jobs SET state = f.state, next_attempt_at_ms = f.next_attempt_at_ms, last_error = f.last_error,
                        lease_until = NULL, updated_at = $12
                 FROM finished f
                 WHERE jobs.id = f.id AND jobs.lease_token = f.token AND jobs.state = 'running'
                 RETURNING jobs.id, f.token",
            )
            .await?;
        let c = columns;
        let rows = client
            .query(
                &complete,
                &[
                    &c.id,
                    &c.token,
                    &c.attempt,
                    &c.started_at,
                    &c.latency_ms,
                    &c.status,
                    &c.error,
                    &c.response_prefix,
                    &c.state,
                    &c.next_attempt_at_ms,
                    &c.last_error,
                    &now.0,
                    &c.disable,
                ],
            )
            .await?;
        rows.iter().map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).collect()
    }

    /// Re-enables `destination`; its waiting jobs become due at once. Returns whether it was disabled.
    pub async fn enable_destination(&self, destination: String, now: UnixTime) -> Result<bool, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let changed = tx
            .execute(
                "UPDATE destinations SET disabled_at = NULL, disabled_reason = NULL
                 WHERE name = $1 AND disabled_at IS NOT NULL",
                &[&destination],
            )
            .await?;
        tx.execute(
            "UPDATE jobs SET next_attempt_at_ms = $2::bigint * 1000, updated_at = $2
             WHERE destination = $1 AND state = 'retrying'",
            &[&destination, &now.0],
        )
        .await?;
        tx.commit().await?;
        Ok(changed == 1)
    }

    /// Makes the waiting jobs matching `filter` due at `now_ms`; their attempts and errors
    /// stay as they are. Returns how many were not yet due.
    pub async fn retry_now(&self, filter: ReplayFilter, now_ms: i64) -> Result<usize, StoreError> {
        let bindings = filter.waiting_bindings()?;
        let client = self.client().await?;
        let changed = client
            .execute(
                &format!("UPDATE jobs SET next_attempt_at_ms = $7, updated_at = $8 WHERE id IN ({WAITING})"),
                &with(&bindings, &[&now_ms, &second_of(now_ms)]),
            )
            .await?;
        Ok(usize::try_from(changed).unwrap_or(usize::MAX))
    }

    /// How many jobs `filter` selects now.
    pub async fn count_replayable(&self, filter: ReplayFilter) -> Result<usize, StoreError> {
        let bindings = filter.bindings()?;
        let client = self.client().await?;
        let row =
            client.query_one(&format!("SELECT count(*) FROM ({MATCHING}) AS matching"), &with(&bindings, &[])).await?;
        let count: i64 = row.try_get(0)?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    /// Makes up to `limit` of the finished jobs matching `filter` `pending` again; returns
    /// how many.
    pub async fn replay_jobs(&self, filter: ReplayFilter, now: UnixTime, limit: usize) -> Result<usize, StoreError> {
        let bindings = filter.bindings()?;
        let client = self.client().await?;
        let changed = client
            .execute(
                &format!(
                    "UPDATE jobs SET state = 'pending', attempts = 0, next_attempt_at_ms = $7::bigint * 1000, last_error = NULL,
                            updated_at = $7
                     WHERE id IN ({MATCHING} LIMIT $8)"
                ),
                &with(&bindings, &[&now.0, &sql_limit(limit)]),
            )
            .await?;
        Ok(usize::try_from(changed).unwrap_or(usize::MAX))
    }

    /// The ids of the jobs `filter` selects now, in id order: a bulk replay's set, taken once.
    pub async fn replayable(&self, filter: ReplayFilter) -> Result<Vec<i64>, StoreError> {
        let bindings = filter.bindings()?;
        let client = self.client().await?;
        let rows = client.query(&format!("{MATCHING} ORDER BY j.id"), &with(&bindings, &[])).await?;
        rows.iter().map(|row| Ok(row.try_get(0)?)).collect()
    }

    /// Makes those of `ids` that `filter` still selects `pending` again; one that was
    /// replayed and has not finished since is left alone.
    pub async fn replay_selected(
        &self,
        filter: ReplayFilter,
        ids: Vec<i64>,
        now: UnixTime,
    ) -> Result<usize, StoreError> {
        let bindings = filter.bindings()?;
        let client = self.client().await?;
        let changed = client
            .execute(
                &format!(
                    "UPDATE jobs SET state = 'pending', attempts = 0, next_attempt_at_ms = $7::bigint * 1000,
                            last_error = NULL, updated_at = $7
                     WHERE id IN ({MATCHING} AND j.id = ANY($8::bigint[]))"
                ),
                &with(&bindings, &[&now.0, &ids]),
            )
            .await?;
        Ok(usize::try_from(changed).unwrap_or(usize::MAX))
    }
}

/// Finished attempts as the columns of the completion statement's `unnest`.
struct Columns {
    id: Vec<i64>,
    token: Vec<i64>,
    attempt: Vec<i32>,
    started_at: Vec<i64>,
    latency_ms: Vec<i64>,
    status: Vec<Option<i32>>,
    error: Vec<Option<String>>,
    response_prefix: Vec<Option<String>>,
    state: Vec<&'static str>,
    next_attempt_at_ms: Vec<i64>,
    last_error: Vec<Option<String>>,
    disable: Vec<String>,
}

impl Columns {
    fn of(finished: &[(ClaimedJob, AttemptRecord, Decision)], now_ms: i64) -> Self {
        let mut c = Self {
            id: Vec::new(),
            token: Vec::new(),
            attempt: Vec::new(),
            started_at: Vec::new(),
            latency_ms: Vec::new(),
            status: Vec::new(),
            error: Vec::new(),
            response_prefix: Vec::new(),
            state: Vec::new(),
            next_attempt_at_ms: Vec::new(),
            last_error: Vec::new(),
            disable: Vec::new(),
        };
        for (job, attempt, decision) in finished {
            let recording = Recording::of(attempt, *decision, now_ms);
            if recording.disables_destination {
                c.disable.push(job.destination.clone());
            }
            c.id.push(job.id);
            c.token.push(job.lease_token);
            c.attempt.push(i32::try_from(job.attempt).unwrap_or(i32::MAX));
            c.started_at.push(attempt.started_at.0);
            c.latency_ms.push(recording.latency_ms);
            c.status.push(attempt.status.map(i32::from));
            c.error.push(recording.error);
            c.response_prefix.push(recording.response_prefix);
            c.state.push(recording.state);
            c.next_attempt_at_ms.push(recording.next_attempt_at_ms);
            c.last_error.push(recording.last_error);
        }
        c
    }
}
