//! The delivery queue on SQLite: claiming due jobs under a lease, completing them with
//! fencing, replaying finished ones, hurrying waiting ones, and disabling destinations that answered `410 Gone`,
//! by the rules of [`crate::jobs`]. Claims and completions run on the writer, so no two
//! claims in this process overlap; across processes, `BEGIN IMMEDIATE` serialises them.

use std::{collections::HashMap, time::Duration};

use idemgate_core::{
    UnixTime,
    breaker::BreakerState,
    limit::{Bucket, Limits},
    retry::Decision,
};
use rusqlite::{Connection, params};

use super::{SqliteStore, audit};
use crate::{
    StoreError,
    audit::Audit,
    jobs::{AttemptRecord, Claimed, ClaimedJob, Completion, ReplayFilter, ReplayTo, ReplayedTo},
    model::{
        jobs::{
            Breakers, ClaimPlan, FilterBindings, Recording, Shared, breaker_columns, breaker_of, fold_breakers,
            lease_until,
        },
        key, parse_headers, second_of,
    },
};

/// The due jobs, by the rules of [`crate::jobs`] (`?1` now in ms, `?3` the FIFO
/// destinations as JSON, `?4` now in seconds), to be narrowed by destination (`?5`), ordered
/// and limited (`?2`).
const DUE: &str = "SELECT j.id, j.next_attempt_at_ms FROM jobs j JOIN events e ON e.id = j.event_id
     WHERE ((j.state IN ('pending', 'retrying') AND j.next_attempt_at_ms <= ?1)
            OR (j.state = 'running' AND j.lease_until <= ?4))
       AND NOT EXISTS (SELECT 1 FROM destinations d WHERE d.name = j.destination AND d.disabled_at IS NOT NULL)
       AND (e.ordering_key IS NULL
            OR j.destination NOT IN (SELECT value FROM json_each(?3))
            OR NOT EXISTS (
                SELECT 1 FROM jobs j2 JOIN events e2 ON e2.id = j2.event_id
                WHERE j2.destination = j.destination AND e2.source = e.source
                  AND e2.ordering_key = e.ordering_key AND e2.id < e.id
                  AND j2.state IN ('pending', 'running', 'retrying')))";

/// The breaker columns of a `destinations` row, in [`BreakerColumns`] order.
const BREAKER: &str = "failures, failing_since_ms, paused_at_ms, next_probe_at_ms, probe_interval_ms";

/// Claims up to `limit` due jobs at `now_ms` for `lease`. A job is due when it is pending or
/// retrying and its time (kept in milliseconds) has come, or running with an expired lease. Jobs of disabled
/// destinations wait; for destinations in `fifo`, only the oldest unfinished job of each
/// ordering key is due. At most `per_destination`'s number of a destination it names is
/// taken, and of a destination `limits` names no more than its shared limits leave room
/// for (its bucket, spent by the jobs taken, and its jobs leased now: the claims of every
/// process on the file run one at a time, each in its write); of a paused destination
/// none, or one when its probe is due (and then the probe time moves on).
pub fn claim(
    conn: &Connection,
    now_ms: i64,
    lease: Duration,
    limit: usize,
    fifo: &[String],
    mut per_destination: HashMap<String, usize>,
    limits: &HashMap<String, Limits>,
) -> Result<Claimed, rusqlite::Error> {
    let shared = shared(conn, limits, now_ms)?;
    let room = shared.narrow(&mut per_destination, now_ms);
    let plan = ClaimPlan::new(per_destination, paused(conn)?, now_ms);
    let fifo = serde_json::json!(fifo).to_string();
    let sql_limit = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let mut due: Vec<(i64, i64)> = Vec::new();
    let mut others =
        conn.prepare_cached(&format!("{DUE} AND j.destination NOT IN (SELECT value FROM json_each(?5)) {ORDER}"))?;
    let limited = serde_json::json!(plan.limited_names()).to_string();
    for row in others.query_map(params![now_ms, sql_limit(limit), fifo, second_of(now_ms), limited], due_row)? {
        due.push(row?);
    }
    let mut one = conn.prepare_cached(&format!("{DUE} AND j.destination = ?5 {ORDER}"))?;
    for (name, &most) in &plan.limits {
        if most > 0 {
            for row in
                one.query_map(params![now_ms, sql_limit(most.min(limit)), fifo, second_of(now_ms), name], due_row)?
            {
                due.push(row?);
            }
        }
    }
    due.sort_unstable();
    due.truncate(limit);
    let claimed = due.into_iter().map(|(_, id)| take(conn, id, now_ms, lease)).collect::<Result<Vec<_>, _>>()?;
    for (name, after) in &plan.probes {
        if claimed.iter().any(|job| &job.destination == name) {
            write_breaker(conn, name, after)?;
        }
    }
    for (name, bucket) in shared.spent(&claimed, now_ms) {
        conn.prepare_cached(
            "INSERT INTO destinations (name, bucket_level, bucket_at_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (name) DO UPDATE SET bucket_level = excluded.bucket_level, bucket_at_ms = excluded.bucket_at_ms",
        )?
        .execute(params![name, bucket.level, bucket.at_ms])?;
    }
    Ok(Claimed { jobs: claimed, room })
}

/// What a claim reads of the destinations `limits` names: their buckets, and their jobs
/// leased at `now_ms`.
fn shared(conn: &Connection, limits: &HashMap<String, Limits>, now_ms: i64) -> Result<Shared, rusqlite::Error> {
    let mut shared = Shared { limits: limits.clone(), ..Shared::default() };
    if limits.is_empty() {
        return Ok(shared);
    }
    let names = serde_json::json!(shared.names()).to_string();
    let mut buckets = conn.prepare_cached(
        "SELECT name, bucket_level, bucket_at_ms FROM destinations
         WHERE name IN (SELECT value FROM json_each(?1)) AND bucket_level IS NOT NULL AND bucket_at_ms IS NOT NULL",
    )?;
    for row in
        buckets.query_map([&names], |row| Ok((row.get(0)?, Bucket { level: row.get(1)?, at_ms: row.get(2)? })))?
    {
        let (name, bucket): (String, Bucket) = row?;
        shared.buckets.insert(name, bucket);
    }
    let mut leased = conn.prepare_cached(
        "SELECT destination, count(*) FROM jobs
         WHERE state = 'running' AND lease_until > ?1 AND destination IN (SELECT value FROM json_each(?2))
         GROUP BY destination",
    )?;
    for row in leased.query_map(params![second_of(now_ms), names], |row| Ok((row.get(0)?, row.get(1)?)))? {
        let (name, count): (String, i64) = row?;
        shared.in_flight.insert(name, usize::try_from(count).unwrap_or(0));
    }
    Ok(shared)
}

/// Makes every leased job due at once, keeping its lease token (so a completion of the old
/// lease stays fenced off); returns how many. Only for a writer that holds the writers'
/// lock alone (`lock.rs`): then no live worker holds any of these leases.
pub(crate) fn expire_leases(conn: &Connection) -> Result<usize, rusqlite::Error> {
    conn.execute("UPDATE jobs SET lease_until = 0 WHERE state = 'running' AND lease_until > 0", [])
}

/// How [`DUE`] is ordered and limited.
const ORDER: &str = "ORDER BY j.next_attempt_at_ms, j.id LIMIT ?2";

fn due_row(row: &rusqlite::Row<'_>) -> Result<(i64, i64), rusqlite::Error> {
    Ok((row.get(1)?, row.get(0)?))
}

/// The paused destinations and their breakers.
fn paused(conn: &Connection) -> Result<Vec<(String, BreakerState)>, rusqlite::Error> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT name, {BREAKER} FROM destinations WHERE paused_at_ms IS NOT NULL"))?;
    let rows = stmt.query_map([], |row| {
        Ok((row.get(0)?, breaker_of((row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))))
    })?;
    rows.collect()
}

/// The breakers of `names` that have a row.
fn breakers_of(conn: &Connection, names: &[&str]) -> Result<HashMap<String, BreakerState>, rusqlite::Error> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT name, {BREAKER} FROM destinations WHERE name IN (SELECT value FROM json_each(?1))"
    ))?;
    let rows = stmt.query_map([serde_json::json!(names).to_string()], |row| {
        Ok((row.get(0)?, breaker_of((row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))))
    })?;
    rows.collect()
}

/// Writes `destination`'s breaker.
fn write_breaker(conn: &Connection, destination: &str, state: &BreakerState) -> Result<(), rusqlite::Error> {
    let (failures, failing_since, paused_at, next_probe, interval) = breaker_columns(state);
    conn.prepare_cached(&format!(
        "INSERT INTO destinations (name, {BREAKER}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (name) DO UPDATE SET failures = excluded.failures, failing_since_ms = excluded.failing_since_ms,
            paused_at_ms = excluded.paused_at_ms, next_probe_at_ms = excluded.next_probe_at_ms,
            probe_interval_ms = excluded.probe_interval_ms"
    ))?
    .execute(params![destination, failures, failing_since, paused_at, next_probe, interval])?;
    Ok(())
}

/// Records each of `finished` as [`complete`] does, after folding the attempts whose lease
/// is current into their destinations' breakers by `breakers` (which may pause a
/// destination, and while it is paused keeps its jobs from dying; a stale one counts for
/// nothing); the breakers are written in the same write.
pub fn complete_all(
    conn: &Connection,
    finished: &[(ClaimedJob, AttemptRecord, Decision)],
    now_ms: i64,
    breakers: &Breakers,
) -> Result<Vec<Completion>, rusqlite::Error> {
    let mut names: Vec<&str> = finished.iter().map(|(job, _, _)| job.destination.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let current = finished.iter().map(|(job, _, _)| holds_lease(conn, job)).collect::<Result<Vec<_>, _>>()?;
    let counted: Vec<_> =
        finished.iter().zip(&current).filter(|(_, held)| **held).map(|(one, _)| one.clone()).collect();
    let (decisions, changed) = fold_breakers(breakers_of(conn, &names)?, &counted, breakers, now_ms);
    let mut decisions = decisions.into_iter();
    let completions = finished
        .iter()
        .zip(current)
        .map(|((job, attempt, decision), held)| {
            let decision = if held { decisions.next().unwrap_or(*decision) } else { *decision };
            complete(conn, job, attempt, decision, now_ms)
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (name, state) in &changed {
        write_breaker(conn, name, state)?;
    }
    Ok(completions)
}

fn take(conn: &Connection, id: i64, now_ms: i64, lease: Duration) -> Result<ClaimedJob, rusqlite::Error> {
    let (lease_token, attempt): (i64, u32) = conn
        .prepare_cached(
            "UPDATE jobs SET state = 'running', lease_until = ?2, lease_token = lease_token + 1,
                attempts = attempts + 1, updated_at = ?3
         WHERE id = ?1 RETURNING lease_token, attempts",
        )?
        .query_row(params![id, lease_until(now_ms, lease), second_of(now_ms)], |row| Ok((row.get(0)?, row.get(1)?)))?;
    conn.prepare_cached(
        "SELECT j.destination, e.source, e.identity, e.body, e.content_type, e.headers, e.outgoing_id,
                e.event_type
         FROM jobs j JOIN events e ON e.id = j.event_id WHERE j.id = ?1",
    )?
    .query_row(params![id], |row| {
        let source: String = row.get(1)?;
        let identity: String = row.get(2)?;
        let headers: Option<String> = row.get(5)?;
        Ok(ClaimedJob {
            id,
            lease_token,
            attempt,
            destination: row.get(0)?,
            key: key(&source, &identity).map_err(|_| rusqlite::Error::InvalidQuery)?,
            outgoing_id: row.get(6)?,
            event_type: row.get(7)?,
            body: bytes::Bytes::from(row.get::<_, Vec<u8>>(3)?),
            content_type: row.get(4)?,
            headers: parse_headers(headers),
        })
    })
}

/// Records `attempt`, and if `job`'s lease is current moves the job as `decision` says
/// (disabling its destination on a `410`); under a stale lease the attempt is kept as
/// history and nothing else changes. A retry is due `now_ms` plus its delay, to the
/// millisecond.
pub fn complete(
    conn: &Connection,
    job: &ClaimedJob,
    attempt: &AttemptRecord,
    decision: Decision,
    now_ms: i64,
) -> Result<Completion, rusqlite::Error> {
    let now = UnixTime(second_of(now_ms));
    let recording = Recording::of(attempt, decision, now_ms);
    conn.prepare_cached(
        "INSERT INTO attempts (job_id, attempt, started_at, latency_ms, status, error, response_prefix, outcome, manual)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, coalesce((SELECT manual FROM jobs WHERE id = ?1), 0))",
    )?
    .execute(params![
        job.id,
        job.attempt,
        attempt.started_at.0,
        recording.latency_ms,
        attempt.status,
        recording.error,
        recording.response_prefix,
        recording.outcome,
    ])?;
    let changed = conn
        .prepare_cached(
            "UPDATE jobs SET state = ?3, next_attempt_at_ms = ?4, last_error = ?5, lease_until = NULL, updated_at = ?6
         WHERE id = ?1 AND lease_token = ?2 AND state = 'running'",
        )?
        .execute(params![
            job.id,
            job.lease_token,
            recording.state,
            recording.next_attempt_at_ms,
            recording.last_error,
            now.0
        ])?;
    if changed != 1 {
        return Ok(Completion::Stale);
    }
    if recording.disables_destination {
        disable_destination(conn, &job.destination, "410 Gone", now)?;
    }
    Ok(Completion::Recorded)
}

/// Whether `job`'s lease is still the current one: a completion under a lease taken over
/// since records its attempt as history and changes nothing else (neither the job, nor
/// its destination: no disabling, no breaker count).
fn holds_lease(conn: &Connection, job: &ClaimedJob) -> Result<bool, rusqlite::Error> {
    conn.prepare_cached("SELECT count(*) FROM jobs WHERE id = ?1 AND lease_token = ?2 AND state = 'running'")?
        .query_row(params![job.id, job.lease_token], |row| row.get::<_, i64>(0))
        .map(|n| n == 1)
}

/// Marks `destination` disabled: none of its jobs is claimed until it is enabled again.
pub fn disable_destination(
    conn: &Connection,
    destination: &str,
    reason: &str,
    now: UnixTime,
) -> Result<(), rusqlite::Error> {
    conn.execute(
        "INSERT INTO destinations (name, disabled_at, disabled_reason) VALUES (?1, ?2, ?3)
         ON CONFLICT (name) DO UPDATE SET disabled_at = excluded.disabled_at, disabled_reason = excluded.disabled_reason",
        params![destination, now.0, reason],
    )?;
    Ok(())
}

/// Re-enables `destination` (disabled by a `410`, or paused by its breaker); its waiting
/// jobs become due at once. Returns whether it was disabled or paused.
pub fn enable_destination(conn: &Connection, destination: &str, now: UnixTime) -> Result<bool, rusqlite::Error> {
    let changed = conn.execute(
        "UPDATE destinations SET disabled_at = NULL, disabled_reason = NULL, failures = 0, failing_since_ms = NULL,
            paused_at_ms = NULL, next_probe_at_ms = NULL, probe_interval_ms = NULL
         WHERE name = ?1 AND (disabled_at IS NOT NULL OR paused_at_ms IS NOT NULL)",
        params![destination],
    )?;
    conn.execute(
        "UPDATE jobs SET next_attempt_at_ms = ?2 * 1000, updated_at = ?2 WHERE destination = ?1 AND state = 'retrying'",
        params![destination, now.0],
    )?;
    Ok(changed == 1)
}

/// Marks `destination` throttled since `since_ms` (keeping an earlier since), or not
/// throttled when `None`.
///
/// No row means not throttled, so clearing makes none.
pub fn mark_throttled(conn: &Connection, destination: &str, since_ms: Option<i64>) -> Result<(), rusqlite::Error> {
    match since_ms {
        Some(since) => conn.execute(
            "INSERT INTO destinations (name, throttled_since_ms) VALUES (?1, ?2)
             ON CONFLICT (name) DO UPDATE SET
                 throttled_since_ms = coalesce(destinations.throttled_since_ms, excluded.throttled_since_ms)",
            params![destination, since],
        )?,
        None => conn.execute("UPDATE destinations SET throttled_since_ms = NULL WHERE name = ?1", [destination])?,
    };
    Ok(())
}

/// The jobs a [`ReplayFilter`] selects.
const MATCHING: &str = "SELECT j.id FROM jobs j JOIN events e ON e.id = j.event_id
    WHERE j.state = ?1 AND e.payload_purged = 0 AND (?2 IS NULL OR e.source = ?2) AND (?3 IS NULL OR e.identity = ?3)
      AND (?4 IS NULL OR j.destination = ?4)
      AND (?5 IS NULL OR e.received_at >= ?5) AND (?6 IS NULL OR e.received_at < ?6)";

/// The waiting jobs a [`ReplayFilter`] selects that are not yet due at `?7` ms.
const WAITING: &str = "SELECT j.id FROM jobs j JOIN events e ON e.id = j.event_id
    WHERE j.state IN ('pending', 'retrying') AND (?1 IS NULL OR j.state = ?1)
      AND (?2 IS NULL OR e.source = ?2) AND (?3 IS NULL OR e.identity = ?3) AND (?4 IS NULL OR j.destination = ?4)
      AND (?5 IS NULL OR e.received_at >= ?5) AND (?6 IS NULL OR e.received_at < ?6)
      AND j.next_attempt_at_ms > ?7";

impl FilterBindings<'_> {
    /// The six values followed by `more`, as SQLite parameters `?1`… .
    fn with<'b>(&'b self, more: &[&'b dyn rusqlite::ToSql]) -> Vec<&'b dyn rusqlite::ToSql> {
        let mut all: Vec<&dyn rusqlite::ToSql> =
            vec![&self.state, &self.source, &self.identity, &self.destination, &self.since, &self.until];
        all.extend_from_slice(more);
        all
    }
}

/// How many jobs `filter` selects now.
pub fn count_replayable(conn: &Connection, filter: &ReplayFilter) -> Result<usize, StoreError> {
    let bindings = filter.bindings()?;
    let count: i64 =
        conn.query_row(&format!("SELECT count(*) FROM ({MATCHING})"), &*bindings.with(&[]), |row| row.get(0))?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// Makes up to `limit` of the finished jobs matching `filter` `pending` again with a fresh
/// schedule; the event, its identity and so its `webhook-id` stay the same. Returns how
/// many; a replayed job no longer matches, so calling again continues with the rest.
pub fn replay(conn: &Connection, filter: &ReplayFilter, now: UnixTime, limit: usize) -> Result<usize, StoreError> {
    let bindings = filter.bindings()?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let changed = conn.execute(
        &format!(
            "UPDATE jobs SET state = 'pending', attempts = 0, next_attempt_at_ms = ?7 * 1000, last_error = NULL, updated_at = ?7
             WHERE id IN ({MATCHING} LIMIT ?8)"
        ),
        &*bindings.with(&[&now.0, &limit]),
    )?;
    Ok(changed)
}

/// The ids of the jobs `filter` selects now, in id order: a bulk replay's set, taken once.
pub fn replayable(conn: &Connection, filter: &ReplayFilter) -> Result<Vec<i64>, StoreError> {
    let bindings = filter.bindings()?;
    let mut stmt = conn.prepare(&format!("{MATCHING} ORDER BY j.id"))?;
    let ids = stmt.query_map(&*bindings.with(&[]), |row| row.get(0))?.collect::<Result<_, _>>()?;
    Ok(ids)
}

/// Makes those of `ids` that `filter` still selects `pending` again, as [`replay`] does;
/// one that was replayed and has not finished since is left alone.
pub fn replay_selected(
    conn: &Connection,
    filter: &ReplayFilter,
    ids: &[i64],
    now: UnixTime,
) -> Result<usize, StoreError> {
    let bindings = filter.bindings()?;
    let ids = serde_json::json!(ids).to_string();
    let changed = conn.execute(
        &format!(
            "UPDATE jobs SET state = 'pending', attempts = 0, next_attempt_at_ms = ?7 * 1000, last_error = NULL, updated_at = ?7
             WHERE id IN ({MATCHING} AND j.id IN (SELECT value FROM json_each(?8)))"
        ),
        &*bindings.with(&[&now.0, &ids]),
    )?;
    Ok(changed)
}

/// Makes the waiting jobs matching `filter` due at `now_ms`; their attempts and errors
/// stay as they are. Returns how many were not yet due.
pub fn retry_now(conn: &Connection, filter: &ReplayFilter, now_ms: i64) -> Result<usize, StoreError> {
    let bindings = filter.waiting_bindings()?;
    let changed = conn.execute(
        &format!("UPDATE jobs SET next_attempt_at_ms = ?7, updated_at = ?8 WHERE id IN ({WAITING})"),
        &*bindings.with(&[&now_ms, &second_of(now_ms)]),
    )?;
    Ok(changed)
}

/// The events a [`ReplayTo`] selects (?1 destination, ?2 source, ?3 identity, ?4 since,
/// ?5 until, ?6 unmatched only), payload kept.
const SELECTED_EVENTS: &str = "SELECT e.id FROM events e
    WHERE e.payload_purged = 0 AND (?2 IS NULL OR e.source = ?2) AND (?3 IS NULL OR e.identity = ?3)
      AND (?4 IS NULL OR e.received_at >= ?4) AND (?5 IS NULL OR e.received_at < ?5)
      AND (?6 = 0 OR NOT EXISTS (SELECT 1 FROM jobs u WHERE u.event_id = e.id))";

/// Sends the events `to` selects to its destination: finished jobs replayed, missing ones
/// created, in one transaction.
pub fn replay_to(conn: &Connection, to: &ReplayTo, now: UnixTime) -> Result<ReplayedTo, StoreError> {
    let bindings = params![
        to.destination,
        to.source,
        to.identity,
        to.since.map(|t| t.0),
        to.until.map(|t| t.0),
        to.unmatched_only,
        now.0
    ];
    let replayed = conn.execute(
        &format!(
            "UPDATE jobs SET state = 'pending', attempts = 0, next_attempt_at_ms = ?7 * 1000, last_error = NULL, updated_at = ?7
             WHERE destination = ?1 AND state IN ('succeeded', 'dead', 'superseded') AND event_id IN ({SELECTED_EVENTS})"
        ),
        bindings,
    )?;
    let created = conn.execute(
        &format!(
            "INSERT INTO jobs (event_id, destination, state, next_attempt_at_ms, created_at, updated_at)
             SELECT id, ?1, 'pending', ?7 * 1000, ?7, ?7 FROM ({SELECTED_EVENTS}) AS selected
             WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.event_id = selected.id AND j.destination = ?1)
             ORDER BY id"
        ),
        bindings,
    )?;
    Ok(ReplayedTo { created, replayed })
}

impl SqliteStore {
    /// [`replay_to`] on the writer, recording `audit` (if any) in the same transaction.
    pub(crate) async fn replay_to(
        &self,
        to: ReplayTo,
        now: UnixTime,
        audit: Option<Audit>,
    ) -> Result<ReplayedTo, StoreError> {
        self.write(move |conn| {
            let done = replay_to(conn, &to, now)?;
            audit::insert_if(conn, audit.as_ref(), now, done.created + done.replayed)?;
            Ok::<_, StoreError>(done)
        })
        .await
    }

    /// [`claim`] on the writer, with limits per destination (none when empty) and shared
    /// limits.
    pub(crate) async fn claim_jobs(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
        fifo: Vec<String>,
        per_destination: HashMap<String, usize>,
        limits: HashMap<String, Limits>,
    ) -> Result<Claimed, StoreError> {
        self.write(move |conn| claim(conn, now_ms, lease, limit, &fifo, per_destination, &limits)).await
    }

    /// [`complete_all`] in one write on the writer, folding the attempts into the breakers
    /// by `breakers`' policies.
    pub(crate) async fn complete_jobs(
        &self,
        finished: Vec<(ClaimedJob, AttemptRecord, Decision)>,
        now_ms: i64,
        breakers: Breakers,
    ) -> Result<Vec<Completion>, StoreError> {
        self.write(move |conn| complete_all(conn, &finished, now_ms, &breakers)).await
    }

    /// [`replay`] on the writer, for up to `limit` jobs, recording `audit` (if any) in the
    /// same transaction.
    pub(crate) async fn replay_jobs(
        &self,
        filter: ReplayFilter,
        now: UnixTime,
        limit: usize,
        audit: Option<Audit>,
    ) -> Result<usize, StoreError> {
        self.write(move |conn| {
            let replayed = replay(conn, &filter, now, limit)?;
            audit::insert_if(conn, audit.as_ref(), now, replayed)?;
            Ok::<_, StoreError>(replayed)
        })
        .await
    }

    /// [`replayable`] on a read connection.
    pub(crate) async fn replayable(&self, filter: ReplayFilter) -> Result<Vec<i64>, StoreError> {
        self.read(move |r| replayable(r.connection(), &filter)).await
    }

    /// [`count_replayable`] on a read connection.
    pub(crate) async fn count_replayable(&self, filter: ReplayFilter) -> Result<usize, StoreError> {
        self.read(move |r| count_replayable(r.connection(), &filter)).await
    }

    /// [`replay_selected`] on the writer.
    pub(crate) async fn replay_selected(
        &self,
        filter: ReplayFilter,
        ids: Vec<i64>,
        now: UnixTime,
    ) -> Result<usize, StoreError> {
        self.write(move |conn| replay_selected(conn, &filter, &ids, now)).await
    }

    /// [`retry_now`] on the writer, recording `audit` (if any) in the same transaction.
    pub(crate) async fn retry_now(
        &self,
        filter: ReplayFilter,
        now_ms: i64,
        audit: Option<Audit>,
    ) -> Result<usize, StoreError> {
        self.write(move |conn| {
            let retried = retry_now(conn, &filter, now_ms)?;
            audit::insert_if(conn, audit.as_ref(), UnixTime(second_of(now_ms)), retried)?;
            Ok::<_, StoreError>(retried)
        })
        .await
    }

    /// [`enable_destination`] on the writer, recording `audit` (if any) in the same
    /// transaction.
    pub(crate) async fn enable_destination(
        &self,
        destination: String,
        now: UnixTime,
        audit: Option<Audit>,
    ) -> Result<bool, StoreError> {
        self.write(move |conn| {
            let was_disabled = enable_destination(conn, &destination, now)?;
            audit::insert_if(conn, audit.as_ref(), now, usize::from(was_disabled))?;
            Ok::<_, StoreError>(was_disabled)
        })
        .await
    }

    /// [`mark_throttled`] on the writer.
    pub(crate) async fn mark_throttled(&self, destination: String, since_ms: Option<i64>) -> Result<(), StoreError> {
        self.write(move |conn| mark_throttled(conn, &destination, since_ms)).await
    }
}
