//! The delivery queue on PostgreSQL: due jobs are claimed with `FOR UPDATE SKIP LOCKED`,
//! so workers of several instances never take the same job while its lease holds, and
//! completions are fenced by `lease_token` exactly as on SQLite.
//!
//! The claim and the completion are each prepared once per connection and shaped so that
//! a plan made for a small queue stays good as it grows: a claim reads `jobs` alone
//! (events only for FIFO destinations) through the partial indexes of waiting jobs and of
//! leases, and a completion finds its jobs by id, there being no index on `state` to tempt
//! it into scanning every running job. (Planning each call for its own values instead, as
//! an unnamed statement, cost the server more CPU than it saved: see BENCHMARKS.md.)

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use deadpool_postgres::GenericClient;
use idemgate_core::{
    UnixTime,
    breaker::BreakerState,
    limit::{Bucket, Limits},
    retry::Decision,
};
use tokio_postgres::{Row, types::ToSql};

use super::{PgStore, audit, partitions::has_payload, retrying, sql_limit};
use crate::{
    StoreError,
    audit::Audit,
    jobs::{AttemptRecord, Claimed, ClaimedJob, Completion, ReplayFilter, ReplayTo, ReplayedTo},
    model::{
        jobs::{
            Breakers, ClaimPlan, FilterBindings, Recording, Shared, breaker_columns, breaker_of, closed_by_answers,
            fold_breakers, lease_until,
        },
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
const MATCHING: &str = concat!(
    "SELECT j.id FROM jobs j JOIN events e ON e.id = j.event_id
    WHERE j.state = $1 AND ",
    has_payload!("e.id"),
    "
      AND ($2::text IS NULL OR e.source = $2) AND ($3::text IS NULL OR e.identity = $3)
      AND ($4::text IS NULL OR j.destination = $4)
      AND ($5::bigint IS NULL OR e.received_at >= $5) AND ($6::bigint IS NULL OR e.received_at < $6)"
);

/// The waiting jobs a [`ReplayFilter`] selects that are not yet due at `$7` ms.
const WAITING: &str = "SELECT j.id FROM jobs j JOIN events e ON e.id = j.event_id
    WHERE j.state IN ('pending', 'retrying') AND ($1::text IS NULL OR j.state = $1)
      AND ($2::text IS NULL OR e.source = $2) AND ($3::text IS NULL OR e.identity = $3)
      AND ($4::text IS NULL OR j.destination = $4)
      AND ($5::bigint IS NULL OR e.received_at >= $5) AND ($6::bigint IS NULL OR e.received_at < $6)
      AND j.next_attempt_at_ms > $7";

/// The due jobs, by the rules of [`crate::jobs`] (`$1` now in seconds, `$3` the FIFO
/// destinations, `$5` now in ms), narrowed by `only` (a condition on `j`), the first `$2`
/// of them in due order, each locked: a job another claim holds is skipped. It is two
/// CTEs, `waiting` and `expired`, to be named in a `WITH` and read through [`DUE`].
///
/// Waiting jobs and expired leases are read apart, each through its own partial index in
/// that index's order, so that both are plain index scans: a jobs row is rewritten at
/// every state change, and a plain scan marks the index entries of the versions no one
/// can see any more as dead as it passes them, where one scan for both (a bitmap scan)
/// would walk every entry left since the last vacuum, on every claim.
fn due(only: &str) -> String {
    // The ordering rule reads events only for the FIFO destinations' jobs, so that a claim
    // without any is a scan of `jobs` alone, in its index's order.
    let rules = "NOT EXISTS (SELECT 1 FROM destinations d WHERE d.name = j.destination AND d.disabled_at IS NOT NULL)
      AND (NOT (j.destination = ANY($3::text[]))
           OR NOT EXISTS (
               SELECT 1 FROM events e
               JOIN events e2 ON e2.source = e.source AND e2.ordering_key = e.ordering_key AND e2.id < e.id
               JOIN jobs j2 ON j2.event_id = e2.id
               WHERE e.id = j.event_id AND j2.destination = j.destination
                 AND j2.state IN ('pending', 'running', 'retrying')))";
    let select = "SELECT j.id, j.next_attempt_at_ms FROM jobs j";
    format!(
        "waiting AS ({select}
            WHERE j.state IN ('pending', 'retrying') AND j.next_attempt_at_ms <= $5 AND {rules} AND {only}
            ORDER BY j.next_attempt_at_ms, j.id LIMIT $2 FOR UPDATE OF j SKIP LOCKED),
         expired AS ({select}
            WHERE j.state = 'running' AND j.lease_until <= $1 AND {rules} AND {only}
            ORDER BY j.lease_until, j.id LIMIT $2 FOR UPDATE OF j SKIP LOCKED)"
    )
}

/// The first `$2` jobs of [`due`]'s two CTEs, in due order: id and due time.
const DUE: &str = "SELECT id, next_attempt_at_ms FROM (SELECT * FROM waiting UNION ALL SELECT * FROM expired) AS due
    ORDER BY next_attempt_at_ms, id LIMIT $2";

/// Runs one of the queue's statements, prepared once per connection.
async fn queue_query(
    client: &impl GenericClient,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, StoreError> {
    let statement = client.prepare_cached(sql).await?;
    Ok(client.query(&statement, params).await?)
}

/// [`due`]'s parameters: `$1` now in seconds, `$2` the limit, `$3` the FIFO destinations,
/// `$4` what the caller narrows by (or, in a claim, the lease's end), `$5` now in ms.
fn due_params<'a>(
    now: &'a i64,
    limit: &'a i64,
    fifo: &'a &'a [String],
    fourth: &'a (dyn ToSql + Sync),
    now_ms: &'a i64,
) -> [&'a (dyn ToSql + Sync); 5] {
    [now, limit, fifo, fourth, now_ms]
}

/// Takes the jobs `chosen` names under a lease: `$1` is now in seconds, `until` the
/// parameter holding the lease's end; returns [`TAKEN`]'s columns. Not the payloads: a
/// statement that names `payloads` without its partition key plans every day's partition
/// (40 to 130 ms a claim in a year of days); [`with_bodies`] reads them after.
fn take(until: &str, chosen: &str) -> String {
    format!(
        "UPDATE jobs SET state = 'running', lease_until = {until}, lease_token = jobs.lease_token + 1,
                attempts = jobs.attempts + 1, updated_at = $1
         FROM events e
         WHERE e.id = jobs.event_id AND {chosen}
         RETURNING {TAKEN}"
    )
}

/// What a claim returns of each job it took, as [`claimed_job`] reads it (the event's id
/// where its body goes: [`with_bodies`] puts the body there).
const TAKEN: &str = "jobs.id, jobs.lease_token, jobs.attempts, jobs.destination, e.source, e.identity, e.id,
    e.content_type, e.headers, e.outgoing_id, e.event_type";

/// The claimed jobs with their events' bodies, read in one statement prepared for these
/// ids (so that PostgreSQL plans only the partitions they fall in). A purged payload, which
/// no waiting job should have, reads as an empty body, as it was stored before payloads
/// had a table of their own.
async fn with_bodies(
    client: &impl GenericClient,
    claimed: Vec<(ClaimedJob, i64)>,
) -> Result<Vec<ClaimedJob>, StoreError> {
    if claimed.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = claimed.iter().map(|(_, event)| *event).collect();
    // Not `prepare_cached`: a statement run again and again may get a generic plan, which
    // cannot leave out the partitions these ids are not in.
    let rows = client.query("SELECT event_id, body FROM payloads WHERE event_id = ANY($1::bigint[])", &[&ids]).await?;
    // One body per event, shared by its jobs (an event sent to several destinations).
    let mut bodies = HashMap::with_capacity(rows.len());
    for row in &rows {
        bodies.insert(row.try_get::<_, i64>(0)?, bytes::Bytes::from(row.try_get::<_, Vec<u8>>(1)?));
    }
    Ok(claimed
        .into_iter()
        .map(|(mut job, event)| {
            job.body = bodies.get(&event).cloned().unwrap_or_default();
            job
        })
        .collect())
}

/// A job taken by a claim, from [`TAKEN`]'s columns starting at column `at` of `row`, with
/// its event's id (its body is empty until [`with_bodies`]).
fn claimed_job(row: &Row, at: usize) -> Result<(ClaimedJob, i64), StoreError> {
    let source: String = row.try_get(at + 4)?;
    let identity: String = row.try_get(at + 5)?;
    let headers: Option<String> = row.try_get(at + 8)?;
    let attempt: i32 = row.try_get(at + 2)?;
    let job = ClaimedJob {
        id: row.try_get(at)?,
        lease_token: row.try_get(at + 1)?,
        attempt: attempt.unsigned_abs(),
        destination: row.try_get(at + 3)?,
        key: key(&source, &identity)?,
        outgoing_id: row.try_get(at + 9)?,
        event_type: row.try_get(at + 10)?,
        body: bytes::Bytes::new(),
        content_type: row.try_get(at + 7)?,
        headers: parse_headers(headers),
    };
    Ok((job, row.try_get(at + 6)?))
}

/// The breaker columns of a `destinations` row, in `BreakerColumns` order.
const BREAKER: &str = "failures, failing_since_ms, paused_at_ms, next_probe_at_ms, probe_interval_ms";

/// A row of `name` and [`BREAKER`]'s columns.
fn breaker_row(row: &Row) -> Result<(String, BreakerState), StoreError> {
    Ok((
        row.try_get(0)?,
        breaker_of((row.try_get(1)?, row.try_get(2)?, row.try_get(3)?, row.try_get(4)?, row.try_get(5)?)),
    ))
}

/// Writes the breakers of `changed` destinations.
async fn write_breakers(
    tx: &deadpool_postgres::Transaction<'_>,
    changed: &[(String, BreakerState)],
) -> Result<(), StoreError> {
    if changed.is_empty() {
        return Ok(());
    }
    let mut columns = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (name, state) in changed {
        let (failures, failing_since, paused_at, next_probe, interval) = breaker_columns(state);
        columns.0.push(name.as_str());
        columns.1.push(failures);
        columns.2.push(failing_since);
        columns.3.push(paused_at);
        columns.4.push(next_probe);
        columns.5.push(interval);
    }
    let write = tx
        .prepare_cached(&format!(
            "INSERT INTO destinations (name, {BREAKER})
             SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[])
             ON CONFLICT (name) DO UPDATE SET failures = excluded.failures, failing_since_ms = excluded.failing_since_ms,
                paused_at_ms = excluded.paused_at_ms, next_probe_at_ms = excluded.next_probe_at_ms,
                probe_interval_ms = excluded.probe_interval_ms"
        ))
        .await?;
    tx.execute(&write, &[&columns.0, &columns.1, &columns.2, &columns.3, &columns.4, &columns.5]).await?;
    Ok(())
}

/// Writes the token buckets of `spent` destinations (their rows exist: the claim locked them).
async fn write_buckets(tx: &deadpool_postgres::Transaction<'_>, spent: &[(String, Bucket)]) -> Result<(), StoreError> {
    if spent.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = spent.iter().map(|(name, _)| name.as_str()).collect();
    let levels: Vec<i64> = spent.iter().map(|(_, bucket)| bucket.level).collect();
    let times: Vec<i64> = spent.iter().map(|(_, bucket)| bucket.at_ms).collect();
    let write = tx
        .prepare_cached(
            "UPDATE destinations d SET bucket_level = u.level, bucket_at_ms = u.at_ms
             FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS u(name, level, at_ms) WHERE d.name = u.name",
        )
        .await?;
    tx.execute(&write, &[&names, &levels, &times]).await?;
    Ok(())
}

/// Records `finished`'s attempts and moves each job as its decision says if its lease is
/// current; of those current ones only, disables the destinations that answered `410` and
/// closes the breakers of the destinations in `closed`: a completion under a lease taken
/// over since keeps its attempt as history and changes nothing else. In one statement on
/// `client` (a transaction's, or a connection's on its own). Returns the (job, lease
/// token) pairs that took effect.
async fn completed(
    client: &impl GenericClient,
    finished: &[(ClaimedJob, AttemptRecord, Decision)],
    decisions: impl Iterator<Item = Decision>,
    closed: &[&str],
    now_ms: i64,
    now: UnixTime,
) -> Result<Vec<(i64, i64)>, StoreError> {
    let c = Columns::of(finished.iter().zip(decisions).map(|((job, attempt, _), d)| (job, attempt, d)), now_ms);
    let complete = "WITH finished AS (
                SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::bigint[], $5::bigint[],
                                     $6::int[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::text[],
                                     $15::text[], $13::text[], $16::text[])
                    AS f(id, token, attempt, started_at, latency_ms, status, error, response_prefix,
                         state, next_attempt_at_ms, last_error, outcome, disable, destination)
             ), attempt AS (
                INSERT INTO attempts (job_id, attempt, started_at, latency_ms, status, error, response_prefix, outcome,
                                      manual)
                SELECT id, attempt, started_at, latency_ms, status, error, response_prefix, outcome,
                       coalesce((SELECT j.manual FROM jobs j WHERE j.id = finished.id), false)
                FROM finished
             ), moved AS (
                UPDATE jobs SET state = f.state, next_attempt_at_ms = f.next_attempt_at_ms, last_error = f.last_error,
                       lease_until = NULL, updated_at = $12
                FROM finished f
                WHERE jobs.id = f.id AND jobs.lease_token = f.token AND jobs.state = 'running'
                RETURNING jobs.id, f.token, f.disable, f.destination
             ), disabled AS (
                INSERT INTO destinations (name, disabled_at, disabled_reason)
                SELECT DISTINCT disable, $12::bigint, '410 Gone' FROM moved WHERE disable IS NOT NULL
                ON CONFLICT (name) DO UPDATE
                SET disabled_at = excluded.disabled_at, disabled_reason = excluded.disabled_reason
             ), closed AS (
                UPDATE destinations SET failures = 0, failing_since_ms = NULL, paused_at_ms = NULL,
                       next_probe_at_ms = NULL, probe_interval_ms = NULL
                WHERE name = ANY($14::text[]) AND name IN (SELECT destination FROM moved)
                      AND (failures <> 0 OR failing_since_ms IS NOT NULL
                      OR paused_at_ms IS NOT NULL OR next_probe_at_ms IS NOT NULL OR probe_interval_ms IS NOT NULL)
             )
             SELECT id, token FROM moved";
    let rows = queue_query(
        client,
        complete,
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
            &closed,
            &c.outcome,
            &c.destination,
        ],
    )
    .await?;
    rows.iter().map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).collect()
}

impl PgStore {
    /// Claims up to `limit` due jobs at `now_ms` for `lease`, by the rules of
    /// [`crate::jobs`], at most `per_destination`'s number of a destination it names, and of
    /// a destination `shared` names no more than its shared limits leave room for (read and
    /// spent under its row's lock); of a paused destination none, or one when its probe is
    /// due (the probe time moves on in the same transaction, whose lock on the paused rows
    /// makes instances take turns). Jobs locked by another claim in progress are skipped,
    /// not waited for.
    pub(crate) async fn claim_jobs(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
        fifo: Vec<String>,
        per_destination: HashMap<String, usize>,
        shared: HashMap<String, Limits>,
    ) -> Result<Claimed, StoreError> {
        if per_destination.is_empty()
            && shared.is_empty()
            && let Some(jobs) = retrying(|| self.try_claim_open(now_ms, lease, limit, &fifo)).await?
        {
            return Ok(Claimed { jobs, room: HashMap::new() });
        }
        retrying(|| self.try_claim(now_ms, lease, limit, &fifo, per_destination.clone(), &shared)).await
    }

    /// The claim while no destination is paused and none is limited, the common case: one
    /// statement on its own (one round trip, one commit), whose first column counts the
    /// paused destinations. `None` when there are some: then it took nothing, and the
    /// claim that reads their breakers under a lock has to run.
    async fn try_claim_open(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
        fifo: &[String],
    ) -> Result<Option<Vec<ClaimedJob>>, StoreError> {
        let client = self.client().await?;
        let claim = format!(
            "WITH paused AS (SELECT count(*) AS n FROM destinations WHERE paused_at_ms IS NOT NULL),
             {}, due AS ({DUE}), taken AS ({})
             SELECT paused.n, taken.* FROM paused LEFT JOIN taken ON true",
            due("(SELECT n FROM paused) = 0"),
            take("$4", "jobs.id IN (SELECT id FROM due)")
        );
        let until = lease_until(now_ms, lease);
        let (now, limit) = (second_of(now_ms), sql_limit(limit));
        let params = due_params(&now, &limit, &fifo, &until, &now_ms);
        let rows = queue_query(&client, &claim, &params).await?;
        if rows.first().map(|row| row.try_get::<_, i64>(0)).transpose()?.unwrap_or(0) > 0 {
            return Ok(None);
        }
        let mut claimed = Vec::with_capacity(rows.len());
        for row in &rows {
            if row.try_get::<_, Option<i64>>(1)?.is_some() {
                claimed.push(claimed_job(row, 1)?);
            }
        }
        claimed.sort_by_key(|(job, _)| job.id);
        Ok(Some(with_bodies(&client, claimed).await?))
    }

    async fn try_claim(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
        fifo: &[String],
        mut per_destination: HashMap<String, usize>,
        limits: &HashMap<String, Limits>,
    ) -> Result<Claimed, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let now = second_of(now_ms);
        let mut shared = Shared { limits: limits.clone(), ..Shared::default() };
        let names = shared.names();
        if !names.is_empty() {
            // A row for each limited destination, so that the next statement (which sees
            // the rows another claim just made) can lock it.
            let made = tx
                .prepare_cached(
                    "INSERT INTO destinations (name) SELECT unnest($1::text[]) ORDER BY 1 ON CONFLICT (name) DO NOTHING",
                )
                .await?;
            tx.execute(&made, &[&names]).await?;
        }
        // The paused rows and the limited ones, locked in one order: claims of limited
        // destinations take turns, each reading the buckets and leases the last one left.
        let locked = tx
            .prepare_cached(&format!(
                "SELECT name, {BREAKER}, bucket_level, bucket_at_ms FROM destinations
                 WHERE paused_at_ms IS NOT NULL OR name = ANY($1::text[]) ORDER BY name FOR UPDATE"
            ))
            .await?;
        let mut paused = Vec::new();
        for row in tx.query(&locked, &[&names]).await? {
            let (name, breaker) = breaker_row(&row)?;
            let bucket: (Option<i64>, Option<i64>) = (row.try_get(6)?, row.try_get(7)?);
            if let (Some(level), Some(at_ms)) = bucket {
                shared.buckets.insert(name.clone(), Bucket { level, at_ms });
            }
            if breaker.paused.is_some() {
                paused.push((name, breaker));
            }
        }
        if !names.is_empty() {
            let leased = tx
                .prepare_cached(
                    "SELECT destination, count(*) FROM jobs
                     WHERE state = 'running' AND lease_until > $1 AND destination = ANY($2::text[])
                     GROUP BY destination",
                )
                .await?;
            for row in tx.query(&leased, &[&now, &names]).await? {
                let count: i64 = row.try_get(1)?;
                shared.in_flight.insert(row.try_get(0)?, usize::try_from(count).unwrap_or(0));
            }
        }
        let room = shared.narrow(&mut per_destination, now_ms);
        let plan = ClaimPlan::new(per_destination, paused, now_ms);
        let others = format!("WITH {} {DUE}", due("NOT (j.destination = ANY($4::text[]))"));
        let (limited, most) = (plan.limited_names(), sql_limit(limit));
        let mut chosen: Vec<(i64, i64)> = Vec::new();
        let params = due_params(&now, &most, &fifo, &limited, &now_ms);
        for row in queue_query(&tx, &others, &params).await? {
            chosen.push((row.try_get(1)?, row.try_get(0)?));
        }
        let one = format!("WITH {} {DUE}", due("j.destination = $4"));
        for (name, &most) in &plan.limits {
            if most > 0 {
                let most = sql_limit(most.min(limit));
                for row in queue_query(&tx, &one, &due_params(&now, &most, &fifo, name, &now_ms)).await? {
                    chosen.push((row.try_get(1)?, row.try_get(0)?));
                }
            }
        }
        chosen.sort_unstable();
        chosen.truncate(limit);
        let ids: Vec<i64> = chosen.into_iter().map(|(_, id)| id).collect();
        let take = tx.prepare_cached(&take("$2", "jobs.id = ANY($3::bigint[])")).await?;
        let until = lease_until(now_ms, lease);
        let rows = tx.query(&take, &[&now, &until, &ids]).await?;
        let mut claimed = rows.iter().map(|row| claimed_job(row, 0)).collect::<Result<Vec<_>, StoreError>>()?;
        claimed.sort_by_key(|(job, _)| job.id);
        let claimed = with_bodies(&tx, claimed).await?;
        let probed: Vec<_> = plan
            .probes
            .iter()
            .filter(|(name, _)| claimed.iter().any(|job| &job.destination == *name))
            .map(|(name, state)| (name.clone(), *state))
            .collect();
        write_breakers(&tx, &probed).await?;
        write_buckets(&tx, &shared.spent(&claimed, now_ms)).await?;
        tx.commit().await?;
        Ok(Claimed { jobs: claimed, room })
    }

    /// Records each finished attempt and moves its job as its decision says, if the job's
    /// lease is current. One statement for all of them: the attempts, the disabling of
    /// destinations that answered `410`, and the fenced job updates, in one round trip and
    /// one commit. Completions come back in input order. The attempts are folded into
    /// their destinations' breakers by `breakers`' policies in the same transaction.
    pub(crate) async fn complete_jobs(
        &self,
        finished: Vec<(ClaimedJob, AttemptRecord, Decision)>,
        now_ms: i64,
        breakers: Breakers,
    ) -> Result<Vec<Completion>, StoreError> {
        if finished.is_empty() {
            return Ok(Vec::new());
        }
        let now = UnixTime(second_of(now_ms));
        let recorded = retrying(|| self.try_complete(&finished, &breakers, now_ms, now)).await?;
        Ok(finished
            .iter()
            .map(
                |(job, _, _)| {
                    if recorded.contains(&(job.id, job.lease_token)) { Completion::Recorded } else { Completion::Stale }
                },
            )
            .collect())
    }

    /// Returns the (job, lease token) pairs that took effect. A group whose attempts were
    /// all answered closes its destinations' breakers whatever they were, so it is one
    /// statement on its own (one round trip, one commit); any other group reads the
    /// breakers under a row lock, folds them, and writes them back in one transaction.
    async fn try_complete(
        &self,
        finished: &[(ClaimedJob, AttemptRecord, Decision)],
        breakers: &Breakers,
        now_ms: i64,
        now: UnixTime,
    ) -> Result<Vec<(i64, i64)>, StoreError> {
        let mut client = self.client().await?;
        if let Some(closed) = closed_by_answers(finished) {
            let decisions = finished.iter().map(|(_, _, decision)| *decision);
            return completed(&client, finished, decisions, &closed, now_ms, now).await;
        }
        let tx = client.transaction().await?;
        let mut names: Vec<&str> = finished.iter().map(|(job, _, _)| job.destination.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        let states = tx
            .prepare_cached(&format!(
                "SELECT name, {BREAKER} FROM destinations WHERE name = ANY($1) ORDER BY name FOR UPDATE"
            ))
            .await?;
        let states = tx
            .query(&states, &[&names])
            .await?
            .iter()
            .map(breaker_row)
            .collect::<Result<HashMap<_, _>, StoreError>>()?;
        let ids: Vec<i64> = finished.iter().map(|(job, _, _)| job.id).collect();
        let held = tx
            .query("SELECT id, lease_token FROM jobs WHERE id = ANY($1) AND state = 'running' FOR UPDATE", &[&ids])
            .await?
            .iter()
            .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
            .collect::<Result<HashSet<(i64, i64)>, StoreError>>()?;
        let current = |job: &ClaimedJob| held.contains(&(job.id, job.lease_token));
        let counted: Vec<_> = finished.iter().filter(|(job, _, _)| current(job)).cloned().collect();
        let (decisions, changed) = fold_breakers(states, &counted, breakers, now_ms);
        let mut decisions = decisions.into_iter();
        let decisions: Vec<Decision> = finished
            .iter()
            .map(|(job, _, decision)| if current(job) { decisions.next().unwrap_or(*decision) } else { *decision })
            .collect();
        let recorded = completed(&tx, finished, decisions.into_iter(), &[], now_ms, now).await?;
        write_breakers(&tx, &changed).await?;
        tx.commit().await?;
        Ok(recorded)
    }

    /// Re-enables `destination` (disabled by a `410`, or paused by its breaker); its waiting
    /// jobs become due at once. Returns whether it was disabled or paused.
    /// Records `audit` (if any) in the same transaction.
    pub(crate) async fn enable_destination(
        &self,
        destination: String,
        now: UnixTime,
        audit: Option<Audit>,
    ) -> Result<bool, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let changed = tx
            .execute(
                "UPDATE destinations SET disabled_at = NULL, disabled_reason = NULL, failures = 0,
                        failing_since_ms = NULL, paused_at_ms = NULL, next_probe_at_ms = NULL, probe_interval_ms = NULL
                 WHERE name = $1 AND (disabled_at IS NOT NULL OR paused_at_ms IS NOT NULL)",
                &[&destination],
            )
            .await?;
        tx.execute(
            "UPDATE jobs SET next_attempt_at_ms = $2::bigint * 1000, updated_at = $2
             WHERE destination = $1 AND state = 'retrying'",
            &[&destination, &now.0],
        )
        .await?;
        audit::insert_if(&tx, audit.as_ref(), now, usize::from(changed == 1)).await?;
        tx.commit().await?;
        Ok(changed == 1)
    }

    /// Marks `destination` throttled since `since_ms` (keeping an earlier since), or not
    /// throttled when `None` (no row means not throttled, so clearing makes none).
    pub(crate) async fn mark_throttled(&self, destination: String, since_ms: Option<i64>) -> Result<(), StoreError> {
        let client = self.client().await?;
        match since_ms {
            Some(since) => {
                client
                    .execute(
                        "INSERT INTO destinations (name, throttled_since_ms) VALUES ($1, $2)
                         ON CONFLICT (name) DO UPDATE SET
                             throttled_since_ms = coalesce(destinations.throttled_since_ms, excluded.throttled_since_ms)",
                        &[&destination, &since],
                    )
                    .await?
            }
            None => {
                client
                    .execute("UPDATE destinations SET throttled_since_ms = NULL WHERE name = $1", &[&destination])
                    .await?
            }
        };
        Ok(())
    }

    /// Makes the waiting jobs matching `filter` due at `now_ms`; their attempts and errors
    /// stay as they are. Returns how many were not yet due.
    /// Records `audit` (if any) in the same transaction.
    pub(crate) async fn retry_now(
        &self,
        filter: ReplayFilter,
        now_ms: i64,
        audit: Option<Audit>,
    ) -> Result<usize, StoreError> {
        let bindings = filter.waiting_bindings()?;
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let changed = tx
            .execute(
                &format!("UPDATE jobs SET next_attempt_at_ms = $7, updated_at = $8 WHERE id IN ({WAITING})"),
                &with(&bindings, &[&now_ms, &second_of(now_ms)]),
            )
            .await?;
        let changed = usize::try_from(changed).unwrap_or(usize::MAX);
        audit::insert_if(&tx, audit.as_ref(), UnixTime(second_of(now_ms)), changed).await?;
        tx.commit().await?;
        Ok(changed)
    }

    /// How many jobs `filter` selects now.
    pub(crate) async fn count_replayable(&self, filter: ReplayFilter) -> Result<usize, StoreError> {
        let bindings = filter.bindings()?;
        let client = self.client().await?;
        let row =
            client.query_one(&format!("SELECT count(*) FROM ({MATCHING}) AS matching"), &with(&bindings, &[])).await?;
        let count: i64 = row.try_get(0)?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    /// Makes up to `limit` of the finished jobs matching `filter` `pending` again; returns
    /// how many.
    /// Records `audit` (if any) in the same transaction.
    pub(crate) async fn replay_jobs(
        &self,
        filter: ReplayFilter,
        now: UnixTime,
        limit: usize,
        audit: Option<Audit>,
    ) -> Result<usize, StoreError> {
        let bindings = filter.bindings()?;
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let changed = tx
            .execute(
                &format!(
                    "UPDATE jobs SET state = 'pending', attempts = 0, next_attempt_at_ms = $7::bigint * 1000, last_error = NULL,
                            updated_at = $7
                     WHERE id IN ({MATCHING} LIMIT $8)"
                ),
                &with(&bindings, &[&now.0, &sql_limit(limit)]),
            )
            .await?;
        let changed = usize::try_from(changed).unwrap_or(usize::MAX);
        audit::insert_if(&tx, audit.as_ref(), now, changed).await?;
        tx.commit().await?;
        Ok(changed)
    }

    /// Sends the events `to` selects to its destination: finished jobs replayed, missing
    /// ones created, in one transaction.
    /// Records `audit` (if any) in the same transaction.
    pub(crate) async fn replay_to(
        &self,
        to: ReplayTo,
        now: UnixTime,
        audit: Option<Audit>,
    ) -> Result<ReplayedTo, StoreError> {
        const SELECTED_EVENTS: &str = concat!(
            "SELECT e.id FROM events e
            WHERE ",
            has_payload!("e.id"),
            " AND ($2::text IS NULL OR e.source = $2) AND ($3::text IS NULL OR e.identity = $3)
              AND ($4::bigint IS NULL OR e.received_at >= $4) AND ($5::bigint IS NULL OR e.received_at < $5)
              AND (NOT $6::boolean OR NOT EXISTS (SELECT 1 FROM jobs u WHERE u.event_id = e.id))"
        );
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let (since, until) = (to.since.map(|t| t.0), to.until.map(|t| t.0));
        let bindings: [&(dyn tokio_postgres::types::ToSql + Sync); 7] =
            [&to.destination, &to.source, &to.identity, &since, &until, &to.unmatched_only, &now.0];
        let replayed = tx
            .execute(
                &format!(
                    "UPDATE jobs SET state = 'pending', attempts = 0, next_attempt_at_ms = $7::bigint * 1000,
                            last_error = NULL, updated_at = $7
                     WHERE destination = $1 AND state IN ('succeeded', 'dead', 'superseded')
                       AND event_id IN ({SELECTED_EVENTS})"
                ),
                &bindings,
            )
            .await?;
        let created = tx
            .execute(
                &format!(
                    "INSERT INTO jobs (event_id, destination, state, next_attempt_at_ms, created_at, updated_at)
                     SELECT id, $1, 'pending', $7::bigint * 1000, $7, $7 FROM ({SELECTED_EVENTS}) AS selected
                     ORDER BY id
                     ON CONFLICT (event_id, destination) DO NOTHING"
                ),
                &bindings,
            )
            .await?;
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let done = ReplayedTo { created: count(created), replayed: count(replayed) };
        audit::insert_if(&tx, audit.as_ref(), now, done.created + done.replayed).await?;
        tx.commit().await?;
        Ok(done)
    }

    /// The ids of the jobs `filter` selects now, in id order: a bulk replay's set, taken once.
    pub(crate) async fn replayable(&self, filter: ReplayFilter) -> Result<Vec<i64>, StoreError> {
        let bindings = filter.bindings()?;
        let client = self.client().await?;
        let rows = client.query(&format!("{MATCHING} ORDER BY j.id"), &with(&bindings, &[])).await?;
        rows.iter().map(|row| Ok(row.try_get(0)?)).collect()
    }

    /// Makes those of `ids` that `filter` still selects `pending` again; one that was
    /// replayed and has not finished since is left alone.
    pub(crate) async fn replay_selected(
        &self,
        filter: ReplayFilter,
        ids: Vec<i64>,
        now: UnixTime,
    ) -> Result<usize, StoreError> {
        let client = self.client().await?;
        replay_selected(&client, &filter, &ids, now).await
    }
}

/// Makes those of `ids` that `filter` still selects `pending` again, on `client` (a
/// connection, or the caller's transaction); returns how many.
pub(in crate::postgres) async fn replay_selected(
    client: &impl GenericClient,
    filter: &ReplayFilter,
    ids: &[i64],
    now: UnixTime,
) -> Result<usize, StoreError> {
    let bindings = filter.bindings()?;
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
    disable: Vec<Option<String>>,
    destination: Vec<String>,
    outcome: Vec<&'static str>,
}

impl Columns {
    fn of<'a>(finished: impl Iterator<Item = (&'a ClaimedJob, &'a AttemptRecord, Decision)>, now_ms: i64) -> Self {
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
            destination: Vec::new(),
            outcome: Vec::new(),
        };
        for (job, attempt, decision) in finished {
            let recording = Recording::of(attempt, decision, now_ms);
            c.disable.push(recording.disables_destination.then(|| job.destination.clone()));
            c.destination.push(job.destination.clone());
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
            c.outcome.push(recording.outcome);
        }
        c
    }
}
