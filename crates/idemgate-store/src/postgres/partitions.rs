//! The growing tables' day partitions on PostgreSQL (docs/design/postgres-partitions.md):
//! `attempts` and `audit_log` are partitioned by ranges of their row id, `payloads` (the
//! events' bodies) by ranges of its event id, one block of ids a day; receipts, events and
//! jobs are plain tables (their unique keys and foreign keys need it). [`roll`] opens
//! today's and tomorrow's partitions and moves the sequences (attempts', the audit log's,
//! events') into today's block; [`retire`] drops a day's attempts, and a day's payloads,
//! whole once the row-by-row purge would have deleted every row in it, [`retire_audit`] a
//! day of the audit log past its retention.

use deadpool_postgres::{GenericClient, Object};
use idemgate_core::UnixTime;

use crate::{StoreError, maintenance::Retention, model::maintenance::cutoff};

/// `LEFT JOIN` of the payload, as `p` (`p.event_id`, `p.body`; NULL when purged), of the
/// event whose id is the SQL expression `$event_id`. Laterally, with a `LIMIT` that keeps
/// the planner from flattening it: each row is then one index probe in the one partition
/// its id falls in (pruned as the statement runs), whatever the sizes. A plain join may be
/// planned as a hash or merge join that reads every day of payloads.
macro_rules! payload_of {
    ($event_id:literal) => {
        concat!(
            "LEFT JOIN LATERAL (SELECT event_id, body FROM payloads WHERE event_id = ",
            $event_id,
            " LIMIT 1) p ON true"
        )
    };
}
pub(crate) use payload_of;

/// Whether the event whose id is the SQL expression `$event_id` still has its payload: a
/// subquery run per row (the `OFFSET 0` keeps the planner from turning it into a semi-join
/// that reads every day of payloads), one index probe in one partition.
macro_rules! has_payload {
    ($event_id:literal) => {
        concat!("EXISTS (SELECT 1 FROM payloads WHERE event_id = ", $event_id, " OFFSET 0)")
    };
}
pub(crate) use has_payload;

/// The partitioned tables, each with the table whose id sequence hands out its partition
/// key (a payload's key is its event's id; `events` itself is not partitioned).
const PARTITIONED: [(&str, &str); 3] = [("attempts", "attempts"), ("audit_log", "audit_log"), ("payloads", "events")];

/// A day's block holds 2^36 ids.
const BLOCK_BITS: u32 = 36;

/// The advisory lock class shared with the migrations; the second key names the schema.
const LOCK_CLASS: i32 = 0x1de6;

/// A retirement's transaction: it waits 5 s for the parent tables' lock before it gives
/// up this pass, and compiles nothing ([`NO_JIT`]).
const RETIRING: &str = "SET LOCAL lock_timeout = '5s'; SET LOCAL jit = off";

/// For retention's transactions: a statement over a year of partitions is costed high
/// enough for PostgreSQL to compile it, one function per partition, which took 1.7 s of a
/// 2.3 s selection on 20 million events in 366 days (0.4 s without); retention's
/// statements are index probes and row deletes, which compilation does not speed up.
pub(crate) const NO_JIT: &str = "SET LOCAL jit = off";

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
    for (table, _) in PARTITIONED {
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
    for (table, keyed_by) in PARTITIONED {
        if days(&tx, table).await?.contains(&today) {
            tx.execute(
                &format!("SELECT setval('{keyed_by}_id_seq', $1, false) FROM {keyed_by}_id_seq WHERE last_value < $1"),
                &[&block_start(today)],
            )
            .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}

/// Deletes the payloads of the events `ids`, one day block of ids at a time: each
/// statement names its block's range on the partition key with its ids, planned with their
/// values, so it reads one partition (where one statement over every day was planned as a
/// join that read them all: 5 s for a day's purge on a store of 8 million payloads in 366
/// days). Returns how many went.
pub(crate) async fn delete_payloads(client: &impl GenericClient, ids: &[i64]) -> Result<u64, StoreError> {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    let mut deleted = 0;
    for block in ids.chunk_by(|a, b| a >> BLOCK_BITS == b >> BLOCK_BITS) {
        let day = block[0] >> BLOCK_BITS;
        let (start, end) = (block_start(day), block_start(day.saturating_add(1)));
        deleted += client
            .execute(
                "DELETE FROM payloads WHERE event_id >= $1 AND event_id < $2 AND event_id = ANY($3)",
                &[&start, &end, &block],
            )
            .await?;
    }
    Ok(deleted)
}

/// Drops the past days the row-by-row purge at `now` would empty anyway: of `attempts`
/// ([`retire_attempts`]), then of `payloads` ([`retire_payloads`]). Adds to `payloads` the
/// payloads of the dropped days that the purge would have counted in its report, as each
/// day commits (so a later failure keeps the count of what went). Returns how many days
/// went.
pub(crate) async fn retire(
    client: &mut Object,
    now: UnixTime,
    policies: &[Retention],
    payloads: &mut usize,
) -> Result<usize, StoreError> {
    let attempts = retire_attempts(client, now, policies).await;
    let payload_days = retire_payloads(client, now, policies, payloads).await;
    Ok(attempts? + payload_days?)
}

/// The policies as the arrays the retirement statements take: `$1` the sources, `$2`
/// their receipt cutoffs, `$3` their payload cutoffs (seconds).
fn policy_arrays(now: UnixTime, policies: &[Retention]) -> (Vec<&str>, Vec<i64>, Vec<i64>) {
    let sources = policies.iter().map(|policy| policy.source.as_str()).collect();
    let receipts = policies.iter().map(|policy| cutoff(now, policy.receipts)).collect();
    let payloads = policies.iter().map(|policy| cutoff(now, policy.payloads)).collect();
    (sources, receipts, payloads)
}

/// Drops the oldest days' `attempts` partitions, each day in one transaction, while every
/// attempt in the day belongs to a job the row-by-row purge deletes at `now` (a finished
/// job of an event past its source's receipt retention, which no ordering holds) or to no
/// job any more; stops at the first day that cannot go. Attempts are not counted in a
/// purge report, so the dry run (by rows) reports the same. Returns how many days went.
async fn retire_attempts(client: &mut Object, now: UnixTime, policies: &[Retention]) -> Result<usize, StoreError> {
    let (sources, cutoffs, _) = policy_arrays(now, policies);
    let open = open_day(&*client, "attempts").await?;
    let mut retired = 0;
    for day in days(&*client, "attempts").await?.into_iter().filter(|day| *day < open) {
        let name = partition("attempts", day);
        let tx = client.transaction().await?;
        tx.batch_execute(RETIRING).await?;
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

/// Each payload of a `payloads` partition (`{day}`) with whether the row-by-row purge at
/// `now` removes it (`gone`) and whether its report counts it (`counted`), by the rules of
/// `maintenance.rs` and `outbound/message.rs`: an event whose jobs are all finished and
/// that holds no ordering version loses its payload past its source's payload retention
/// (counted) and is deleted with it past its source's receipt retention (not counted as a
/// payload); an outbound message's payload goes when the message expires (`$4`, unix ms;
/// counted unless its event went first, as the purge takes them in that order). A payload
/// of a source without retention stays. A payload whose event is gone (none should be) is
/// read by nothing: it goes, uncounted.
const PAYLOAD_FATE: &str = r#"SELECT e.id IS NULL OR by_payload OR by_receipt OR by_expiry AS gone,
           by_payload OR (by_expiry AND NOT by_receipt) AS counted
    FROM {day} x
    LEFT JOIN events e ON e.id = x.event_id
    LEFT JOIN unnest($1::text[], $2::bigint[], $3::bigint[]) AS p (source, receipts, payloads)
           ON p.source COLLATE "C" = e.source
    LEFT JOIN LATERAL (
        SELECT NOT EXISTS (SELECT 1 FROM jobs w WHERE w.event_id = e.id AND w.state IN ('pending', 'running', 'retrying'))
               AND NOT EXISTS (SELECT 1 FROM ordering_versions o WHERE o.event_id = e.id) AS free
    ) f ON true
    CROSS JOIN LATERAL (
        SELECT coalesce(f.free AND e.received_at < p.payloads, false) AS by_payload,
               coalesce(f.free AND e.received_at < p.receipts, false) AS by_receipt,
               EXISTS (SELECT 1 FROM messages m WHERE m.event_row = x.event_id AND m.expires_at <= $4) AS by_expiry
    ) fate"#;

/// Drops the oldest days' `payloads` partitions, each day in one transaction, while the
/// row-by-row purge at `now` would remove every payload in the day ([`PAYLOAD_FATE`]),
/// never the day the events' sequence hands out ids from; stops at the first day that
/// cannot go. Adds the dropped payloads the purge would have counted to `counted` (the
/// purge then finds them gone, so a dry run, by rows, and a purge report the same).
/// Returns how many days went.
async fn retire_payloads(
    client: &mut Object,
    now: UnixTime,
    policies: &[Retention],
    counted: &mut usize,
) -> Result<usize, StoreError> {
    let (sources, receipts, payloads) = policy_arrays(now, policies);
    let now_ms = now.0.saturating_mul(1000);
    let open = open_day(&*client, "events").await?;
    let mut retired = 0;
    for (i, day) in days(&*client, "payloads").await?.into_iter().filter(|day| *day < open).enumerate() {
        let name = partition("payloads", day);
        // The oldest partition may be the migration's, from MINVALUE; no payload is below it.
        let from = if i == 0 { i64::MIN } else { block_start(day) };
        let tx = client.transaction().await?;
        tx.batch_execute(RETIRING).await?;
        let fate = PAYLOAD_FATE.replace("{day}", &name);
        let row = tx
            .query_one(
                &format!(
                    "SELECT coalesce(bool_and(gone), true), count(*) FILTER (WHERE counted) FROM ({fate}) AS fates"
                ),
                &[&sources, &receipts, &payloads, &now_ms],
            )
            .await?;
        if !row.try_get::<_, bool>(0)? {
            break;
        }
        // With the parent's exclusive lock (the detach's), every transaction that read this
        // day's payloads (a replay making a job wait again) has committed: check again,
        // cheaply (the waiting and leased jobs), that no job of the day waits but those the
        // purge ends as their message expired.
        tx.batch_execute("LOCK TABLE payloads IN ACCESS EXCLUSIVE MODE").await?;
        let waiting = tx
            .query_one(
                // Through the unfinished jobs' index (`jobs_unfinished`), over the day's
                // block of event ids: a read of the queue, not of every job, while the lock
                // holds up every delivery's payload (400 ms on 2 million jobs, planned as
                // a walk of all of `jobs`, when it joined the day's payloads).
                "SELECT EXISTS (SELECT 1 FROM jobs w
                                WHERE w.state IN ('pending', 'running', 'retrying')
                                  AND w.event_id >= $2 AND w.event_id < $3
                                  AND NOT EXISTS (SELECT 1 FROM messages m
                                                  WHERE m.event_row = w.event_id AND m.expires_at <= $1))",
                &[&now_ms, &from, &block_start(day.saturating_add(1))],
            )
            .await?
            .try_get::<_, bool>(0)?;
        if waiting {
            break;
        }
        tx.batch_execute(&format!("ALTER TABLE payloads DETACH PARTITION {name}; DROP TABLE {name}")).await?;
        tx.commit().await?;
        *counted += usize::try_from(row.try_get::<_, i64>(1)?).unwrap_or(0);
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
        tx.batch_execute(RETIRING).await?;
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
