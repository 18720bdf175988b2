//! The growing tables' day partitions on PostgreSQL (docs/design/postgres-partitions.md):
//! `attempts` and `audit_log` are partitioned by ranges of their row id, one block of ids
//! a day; receipts, events and jobs are plain tables (their unique keys and foreign keys
//! need it). [`roll`] opens today's and tomorrow's partitions and moves the sequences into
//! today's block; [`retire`] drops a day's attempts whole once the row-by-row purge would
//! have deleted every row in it, [`retire_audit`] a day of the audit log past its retention.

use deadpool_postgres::{GenericClient, Object};
use idemgate_core::UnixTime;

use crate::{StoreError, maintenance::Retention, model::maintenance::cutoff};

/// The partitioned tables.
const PARTITIONED: [&str; 2] = ["attempts", "audit_log"];

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

/// Drops the oldest days' `attempts` partitions, each day in one transaction, while every
/// attempt in the day belongs to a job the row-by-row purge deletes at `now` (a finished
/// job of an event past its source's receipt retention, which no ordering holds) or to no
/// job any more; stops at the first day that cannot go. Attempts are not counted in a
/// purge report, so the dry run (by rows) reports the same. Returns how many days went.
pub(crate) async fn retire(client: &mut Object, now: UnixTime, policies: &[Retention]) -> Result<usize, StoreError> {
    let (sources, cutoffs): (Vec<&str>, Vec<i64>) =
        policies.iter().map(|policy| (policy.source.as_str(), cutoff(now, policy.receipts))).unzip();
    let open = open_day(&*client, "attempts").await?;
    let mut retired = 0;
    for day in days(&*client, "attempts").await?.into_iter().filter(|day| *day < open) {
        let name = partition("attempts", day);
        let tx = client.transaction().await?;
        tx.batch_execute(LOCK_TIMEOUT).await?;
        let kept = tx
            .query_one(
                &format!(
                    r#"SELECT EXISTS (
                         SELECT 1 FROM {name} a
                         JOIN jobs j ON j.id = a.job_id
                         JOIN events e ON e.id = j.event_id
                         LEFT JOIN unnest($1::text[], $2::bigint[]) AS p (source, cutoff) ON p.source COLLATE "C" = e.source
                         WHERE p.cutoff IS NULL OR e.received_at >= p.cutoff
                            OR EXISTS (SELECT 1 FROM jobs w WHERE w.event_id = e.id AND w.state IN ('pending', 'running', 'retrying'))
                            OR EXISTS (SELECT 1 FROM ordering_versions o WHERE o.event_id = e.id))"#
                ),
                &[&sources, &cutoffs],
            )
            .await?
            .try_get::<_, bool>(0)?;
        if kept {
            break;
        }
        // Last, so that the parent table's exclusive lock is held for the drop alone.
        tx.batch_execute(&format!("ALTER TABLE attempts DETACH PARTITION {name}; DROP TABLE {name}")).await?;
        tx.commit().await?;
        retired += 1;
    }
    Ok(retired)
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
