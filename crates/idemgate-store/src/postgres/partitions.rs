//! The growing tables' day partitions on PostgreSQL (docs/design/postgres-partitions.md):
//! `events`, `jobs`, `attempts` and `audit_log` are partitioned by ranges of their row id,
//! one block of ids a day; receipts are not partitioned. [`roll`] opens today's and
//! tomorrow's partitions and moves the sequences into today's block; [`retire`] drops a
//! day's partitions whole once the row-by-row purge would have deleted every row in them.

use std::collections::HashMap;

use deadpool_postgres::{GenericClient, Object};
use idemgate_core::UnixTime;

use crate::{StoreError, maintenance::Retention, model::maintenance::cutoff};

/// The partitioned tables, in the order their sequences move forward: a row's block is
/// then never earlier than that of the row it refers to (an event is written before its
/// jobs, a job before its attempts).
const PARTITIONED: [&str; 4] = ["attempts", "jobs", "events", "audit_log"];

/// A day's block holds 2^36 ids.
const BLOCK_BITS: u32 = 36;

/// The advisory lock class shared with the migrations; the second key names the schema.
const LOCK_CLASS: i32 = 0x1de6;

/// How long a retirement waits for the parent tables' lock before it gives up this pass.
const LOCK_TIMEOUT: &str = "SET LOCAL lock_timeout = '5s'";

/// The day (UTC, from the epoch) of `at`.
pub(crate) fn day_of(at: UnixTime) -> i64 {
    at.0.div_euclid(86_400)
}

/// The first id of `day`'s block.
fn block_start(day: i64) -> i64 {
    day << BLOCK_BITS
}

/// The name of `table`'s partition of `day`.
fn partition(table: &str, day: i64) -> String {
    format!("{table}_d{day}")
}

/// The days of `table`'s partitions, oldest first.
async fn days(client: &impl GenericClient, table: &str) -> Result<Vec<i64>, StoreError> {
    let rows = client
        .query(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = to_regclass($1)",
            &[&table],
        )
        .await?;
    let prefix = format!("{table}_d");
    let mut days: Vec<i64> = rows
        .iter()
        .filter_map(|row| row.try_get::<_, String>(0).ok())
        .filter_map(|name| name.strip_prefix(&prefix).and_then(|day| day.parse().ok()))
        .collect();
    days.sort_unstable();
    Ok(days)
}

/// The day of the block `table`'s sequence hands out ids from now.
async fn open_day(client: &impl GenericClient, table: &str) -> Result<i64, StoreError> {
    let row = client.query_one(&format!("SELECT last_value FROM {table}_id_seq"), &[]).await?;
    Ok(row.try_get::<_, i64>(0)? >> BLOCK_BITS)
}

/// Opens today's and tomorrow's partitions of each table (days after the newest one
/// only), then moves each sequence forward to today's block if it is behind. Idempotent,
/// and serialised between instances by an advisory lock.
pub(crate) async fn roll(client: &mut Object, now: UnixTime) -> Result<(), StoreError> {
    let today = day_of(now);
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1, hashtext(current_schema() || '/partitions'))", &[&LOCK_CLASS]).await?;
    for table in PARTITIONED {
        let newest = days(&tx, table).await?.last().copied().unwrap_or(i64::MIN);
        for day in [today, today + 1].into_iter().filter(|day| *day > newest) {
            tx.batch_execute(&format!(
                "CREATE TABLE {} PARTITION OF {table} FOR VALUES FROM ({}) TO ({})",
                partition(table, day),
                block_start(day),
                block_start(day + 1)
            ))
            .await?;
        }
    }
    for table in PARTITIONED {
        if days(&tx, table).await?.contains(&today) {
            tx.execute(
                &format!("SELECT setval('{table}_id_seq', $1, false) FROM {table}_id_seq WHERE last_value < $1"),
                &[&block_start(today)],
            )
            .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}

/// Drops the oldest days' `events`, `jobs` and `attempts` partitions, each day in one
/// transaction, while a day's every row is past retention for its source and owes no
/// work; stops at the first day that cannot go. Returns how many events (and as many
/// receipts) went.
pub(crate) async fn retire(client: &mut Object, now: UnixTime, policies: &[Retention]) -> Result<Retired, StoreError> {
    let cutoffs: HashMap<&str, (i64, i64)> = policies
        .iter()
        .map(|policy| (policy.source.as_str(), (cutoff(now, policy.receipts), cutoff(now, policy.payloads))))
        .collect();
    let mut open = i64::MAX;
    for table in ["attempts", "jobs", "events"] {
        open = open.min(open_day(&*client, table).await?);
    }
    let mut retired = Retired::default();
    for day in days(&*client, "events").await?.into_iter().filter(|day| *day < open) {
        match retire_day(client, day, &cutoffs).await? {
            Some(day) => {
                retired.events += day.events;
                retired.payloads += day.payloads;
            }
            None => break,
        }
    }
    Ok(retired)
}

/// What [`retire`] dropped: events (each with its receipt), and of them those whose
/// payload the row-by-row purge would have emptied first (so that a dry run, which counts
/// by rows, reports the same).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Retired {
    pub(crate) events: usize,
    pub(crate) payloads: usize,
}

/// Retires `day` when it can go (see [`retire`]): `None` when it cannot.
async fn retire_day(
    client: &mut Object,
    day: i64,
    cutoffs: &HashMap<&str, (i64, i64)>,
) -> Result<Option<Retired>, StoreError> {
    let end = block_start(day + 1);
    let (events, jobs, attempts) = (partition("events", day), partition("jobs", day), partition("attempts", day));
    let tx = client.transaction().await?;
    tx.batch_execute(LOCK_TIMEOUT).await?;
    let (sources, payload_cutoffs): (Vec<&str>, Vec<i64>) =
        cutoffs.iter().map(|(source, (_, payloads))| (*source, *payloads)).unzip();
    let mut payloads = 0;
    for row in tx
        .query(
            &format!(
                r#"SELECT e.source, max(e.received_at),
                          count(*) FILTER (WHERE NOT e.payload_purged AND e.received_at < p.cutoff)
                   FROM {events} e
                   LEFT JOIN unnest($1::text[], $2::bigint[]) AS p (source, cutoff) ON p.source COLLATE "C" = e.source
                   GROUP BY e.source"#
            ),
            &[&sources, &payload_cutoffs],
        )
        .await?
    {
        let (source, newest, emptied): (String, i64, i64) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
        if cutoffs.get(source.as_str()).is_none_or(|(receipts, _)| newest >= *receipts) {
            return Ok(None);
        }
        payloads += usize::try_from(emptied).unwrap_or(0);
    }
    let owed = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM jobs WHERE event_id < $1 AND state IN ('pending', 'running', 'retrying'))
                 OR EXISTS (SELECT 1 FROM ordering_versions WHERE event_id < $1)",
            &[&end],
        )
        .await?
        .try_get::<_, bool>(0)?;
    if owed {
        return Ok(None);
    }
    let (has_jobs, has_attempts) = (exists(&tx, &jobs).await?, exists(&tx, &attempts).await?);
    let later = format!(
        "SELECT {} OR {}",
        if has_jobs { format!("EXISTS (SELECT 1 FROM {jobs} WHERE event_id >= $1)") } else { "false".into() },
        if has_attempts { format!("EXISTS (SELECT 1 FROM {attempts} WHERE job_id >= $1)") } else { "false".into() },
    );
    if tx.query_one(&later, &[&end]).await?.try_get::<_, bool>(0)? {
        return Ok(None);
    }
    tx.execute(
        &format!("DELETE FROM body_receipts b USING {events} e WHERE b.source = e.source AND b.identity = e.identity"),
        &[],
    )
    .await?;
    let receipts = tx
        .execute(
            &format!("DELETE FROM receipts r USING {events} e WHERE r.source = e.source AND r.identity = e.identity"),
            &[],
        )
        .await?;
    // The few rows of later days that belong to this day's events: jobs made by a replay,
    // attempts made by a retry after midnight.
    tx.execute("DELETE FROM attempts WHERE job_id < $1 AND id >= $1", &[&end]).await?;
    tx.execute("DELETE FROM jobs WHERE event_id < $1 AND id >= $1", &[&end]).await?;
    // Last, so that the parent tables' exclusive lock is held for the drop alone.
    for (table, name, present) in
        [("attempts", &attempts, has_attempts), ("jobs", &jobs, has_jobs), ("events", &events, true)]
    {
        if present {
            tx.batch_execute(&format!("ALTER TABLE {table} DETACH PARTITION {name}; DROP TABLE {name}")).await?;
        }
    }
    tx.commit().await?;
    Ok(Some(Retired { events: usize::try_from(receipts).unwrap_or(usize::MAX), payloads }))
}

/// Drops the oldest days' audit log partitions whose newest record is before `before`;
/// returns how many records went.
pub(crate) async fn retire_audit(client: &mut Object, before: i64) -> Result<usize, StoreError> {
    let open = open_day(&*client, "audit_log").await?;
    let mut retired = 0;
    for day in days(&*client, "audit_log").await?.into_iter().filter(|day| *day < open) {
        let name = partition("audit_log", day);
        let tx = client.transaction().await?;
        tx.batch_execute(LOCK_TIMEOUT).await?;
        let row = tx.query_one(&format!("SELECT max(at), count(*) FROM {name}"), &[]).await?;
        if row.try_get::<_, Option<i64>>(0)?.is_some_and(|newest| newest >= before) {
            break;
        }
        retired += usize::try_from(row.try_get::<_, i64>(1)?).unwrap_or(0);
        tx.batch_execute(&format!("ALTER TABLE audit_log DETACH PARTITION {name}; DROP TABLE {name}")).await?;
        tx.commit().await?;
    }
    Ok(retired)
}

/// Whether the table `name` exists.
async fn exists(client: &impl GenericClient, name: &str) -> Result<bool, StoreError> {
    Ok(client.query_one("SELECT to_regclass($1) IS NOT NULL", &[&name]).await?.try_get(0)?)
}
