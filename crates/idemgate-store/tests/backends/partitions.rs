//! PostgreSQL's day partitions (docs/design/postgres-partitions.md): a store of the
//! unpartitioned layout migrates without losing a receipt, payload, job or attempt, its
//! attempts, audit log and payloads partitioned while events and jobs keep their unique
//! keys and foreign keys, and retention drops a past day's attempts and payloads whole
//! while newer days, and days holding what is kept longer, keep their rows.

use std::time::Duration;

use idemgate_core::{Outcome, UnixTime, retry::Decision};
use idemgate_store::{
    PgOptions, PgStore, Store, create_schema,
    jobs::AttemptRecord,
    maintenance::{PurgeReport, Retention},
    migrate_schema_to,
};

use crate::{T0, TestStore, accept_at, event, key, ms, postgres_url, request, request_at, unique_schema};

const DAY: i64 = 86_400;

/// The last schema version of the unpartitioned layout.
const POSTGRES_VERSION_BEFORE: u32 = 16;

/// The last schema version with the payloads in `events` (attempts and the audit log
/// partitioned already).
const POSTGRES_VERSION_BEFORE_PAYLOADS: u32 = 17;

/// The attempts that are of a job (a purged job's attempts are of none until their day goes).
const JOINED_ATTEMPTS: &str = "SELECT count(*) FROM attempts a JOIN jobs j ON j.id = a.job_id";

/// The schema version this build writes.
const POSTGRES_VERSION: i32 = 20;

/// What each table holds, as one text per table: its rows in id order; `{events}` is the
/// events' rows with their payload (`-` when purged), as the layout holds them.
const CONTENTS: &str = r#"SELECT
    (SELECT count(*) || ':' || md5(string_agg(concat_ws('|', source, identity, encode(body_sha256, 'hex'), result, received_at), ',' ORDER BY source, identity)) FROM receipts),
    (SELECT count(*) || ':' || count(*) FILTER (WHERE body IS NOT NULL) || ':' || md5(string_agg(concat_ws('|', id, source, identity, event_type, coalesce(encode(body, 'hex'), '-'), received_at, headers, outgoing_id), ',' ORDER BY id)) FROM ({events}) AS e),
    (SELECT count(*) || ':' || md5(string_agg(concat_ws('|', id, event_id, destination, state, attempts, next_attempt_at_ms, lease_token, last_error), ',' ORDER BY id)) FROM jobs),
    (SELECT count(*) || ':' || md5(string_agg(concat_ws('|', id, job_id, attempt, started_at, status, outcome), ',' ORDER BY id)) FROM attempts),
    (SELECT count(*) || ':' || md5(string_agg(concat_ws('|', id, at, token, action, target, affected), ',' ORDER BY id)) FROM audit_log)"#;

/// The events with their payload before the payloads' table (emptied and flagged when purged).
const EVENTS_WITH_BODIES: &str =
    "SELECT id, source, identity, event_type, CASE WHEN NOT payload_purged THEN body END AS body,
    received_at, headers, outgoing_id FROM events";

/// The events with their payload from the payloads' table (none when purged).
const EVENTS_AND_PAYLOADS: &str =
    "SELECT e.id, e.source, e.identity, e.event_type, p.body, e.received_at, e.headers, e.outgoing_id
    FROM events e LEFT JOIN payloads p ON p.event_id = e.id";

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn contents(client: &tokio_postgres::Client) -> Vec<String> {
    let layout: Option<String> = client.query_one("SELECT to_regclass('payloads')::text", &[]).await.unwrap().get(0);
    let events = if layout.is_some() { EVENTS_AND_PAYLOADS } else { EVENTS_WITH_BODIES };
    let row = client.query_one(&CONTENTS.replace("{events}", events), &[]).await.unwrap();
    (0..5).map(|i| row.get::<_, Option<String>>(i).unwrap_or_else(|| "empty".to_owned())).collect()
}

/// Whether `relation` is a partitioned table of the schema.
async fn partitioned(client: &tokio_postgres::Client, relation: &str) -> bool {
    client
        .query_one(
            "SELECT count(*) = 1 FROM pg_class WHERE relkind = 'p' AND relnamespace = current_schema()::regnamespace AND relname = $1",
            &[&relation],
        )
        .await
        .unwrap()
        .get(0)
}

/// Today, as the database counts days (UTC, from the epoch).
async fn database_today(client: &tokio_postgres::Client) -> i64 {
    client.query_one("SELECT floor(extract(epoch FROM now()) / 86400)::bigint", &[]).await.unwrap().get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_of_the_unpartitioned_layout_migrates_with_every_receipt_payload_and_job() {
    let url = create_schema(&postgres_url(), &unique_schema("layout")).await.unwrap();
    migrate_schema_to(&url, POSTGRES_VERSION_BEFORE).await.unwrap();
    let client = connect(&url).await;
    client
        .batch_execute(
            "INSERT INTO receipts (source, identity, body_sha256, outcome, result, received_at)
             SELECT 'test', 'e' || n, sha256(n::text::bytea), 'applied', '{\"event\":\"e' || n || '\"}', 1700000000 + n
             FROM generate_series(1, 500) n;
             INSERT INTO events (source, identity, event_type, content_type, body, received_at, headers, outgoing_id)
             SELECT 'test', 'e' || n, 'order.created', 'application/json', convert_to('{\"n\":' || n || '}', 'UTF8'),
                    1700000000 + n, '[]', 'e' || n
             FROM generate_series(1, 500) n;
             INSERT INTO jobs (event_id, destination, state, next_attempt_at_ms, created_at, updated_at, attempts)
             SELECT id, d, CASE WHEN id % 3 = 0 THEN 'pending' ELSE 'succeeded' END, received_at * 1000,
                    received_at, received_at, CASE WHEN id % 3 = 0 THEN 0 ELSE 1 END
             FROM events, unnest(ARRAY['app', 'crm']) d;
             INSERT INTO attempts (job_id, attempt, started_at, latency_ms, status, outcome)
             SELECT id, 1, created_at, 12, 200, 'succeeded' FROM jobs WHERE state = 'succeeded';
             INSERT INTO audit_log (at, token, action, target, affected)
             SELECT 1700000000 + n, 'ops', 'replay', 'app', n FROM generate_series(1, 20) n;",
        )
        .await
        .unwrap();
    let before = contents(&client).await;
    assert!(before[0].starts_with("500:") && before[2].starts_with("1000:"), "{before:?}");

    let store: Store = PgStore::connect(&url, PgOptions { pool_size: 2, ..PgOptions::default() }).await.unwrap().into();
    assert_eq!(contents(&client).await, before, "every row, ids included, is where it was");
    let tables: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_class WHERE relkind = 'p' AND relnamespace = current_schema()::regnamespace AND relname IN ('attempts', 'audit_log')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(tables, 2);
    assert!(partitioned(&client, "payloads").await);
    let unpartitioned: i64 = client
        .query_one("SELECT count(*) FROM pg_class WHERE relkind = 'r' AND relnamespace = current_schema()::regnamespace AND relname IN ('receipts', 'body_receipts', 'events', 'jobs')", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(unpartitioned, 4, "receipts, events and jobs stay plain tables");
    // The keys of before hold: a second job of one event to one destination and a job of no
    // event are refused. Attempts keep no key to their job (a deleted job would make
    // PostgreSQL search every day of attempts).
    for (statement, constraint) in [
        (
            "INSERT INTO jobs (event_id, destination, state, next_attempt_at_ms, created_at, updated_at)
             SELECT event_id, destination, 'pending', 0, 0, 0 FROM jobs ORDER BY id LIMIT 1",
            "jobs_event_id_destination_key",
        ),
        (
            "INSERT INTO jobs (event_id, destination, state, next_attempt_at_ms, created_at, updated_at)
             VALUES (-1, 'app', 'pending', 0, 0, 0)",
            "jobs_event_id_fkey",
        ),
    ] {
        let err = client.batch_execute(statement).await.unwrap_err();
        let refused = err.as_db_error().and_then(|db| db.constraint()).map(str::to_owned);
        assert_eq!(refused.as_deref(), Some(constraint), "{err}");
    }
    let attempt_keys: i64 = client
        .query_one("SELECT count(*) FROM pg_constraint WHERE conrelid = 'attempts'::regclass AND contype = 'f'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(attempt_keys, 0, "attempts have no foreign key");

    // The migrated store answers from its old rows and takes new ones.
    let repeat = store.accept(request("e7", b"7"), event("e7", b"7", &["app"])).await;
    assert!(matches!(repeat, Outcome::Duplicate { .. }), "the receipt of before answers: {repeat:?}");
    assert_eq!(store.jobs(key("e3")).await.unwrap().len(), 2);
    assert_eq!(store.event(key("e500")).await.unwrap().unwrap().body_len, "{\"n\":500}".len());
    accept_at(&store, "fresh", &["app"], T0).await;
    let due = store.claim_jobs(ms(UnixTime(T0.0 + 10 * DAY)), Duration::from_secs(30), 1000, Vec::new()).await.unwrap();
    assert_eq!(due.len(), 2 * (500 / 3) + 1, "the pending jobs of before, and the new one");
    let version: i32 = client.query_one("SELECT version FROM idemgate_schema", &[]).await.unwrap().get(0);
    assert_eq!(version, POSTGRES_VERSION);
}

fn keep(days: i64) -> Vec<Retention> {
    vec![Retention {
        source: "test".to_owned(),
        receipts: Duration::from_secs((days * DAY).unsigned_abs()),
        payloads: Duration::from_secs((days * DAY).unsigned_abs()),
    }]
}

/// A day later than the database's today, so that its partitions are opened ahead.
fn days_ahead(days: i64) -> UnixTime {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    UnixTime(i64::try_from(now).unwrap() + days * DAY)
}

/// The partition of `table` that holds the row the query finds.
async fn partition_of(t: &TestStore, table: &str, condition: &str) -> String {
    let url = t.url().unwrap();
    let client = connect(url).await;
    client
        .query_one(&format!("SELECT tableoid::regclass::text FROM {table} WHERE {condition}"), &[])
        .await
        .unwrap()
        .get(0)
}

async fn finish_all(t: &TestStore, at: UnixTime) {
    for job in t.claim_jobs(ms(at), Duration::from_secs(30), 100, Vec::new()).await.unwrap() {
        let attempt = AttemptRecord {
            started_at: at,
            latency: Duration::ZERO,
            status: Some(200),
            error: None,
            response_prefix: None,
            outcome: idemgate_core::retry::Attempted::Succeeded,
        };
        t.complete_job(job, attempt, Decision::Succeeded, ms(at)).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_drops_a_past_days_attempts_whole_and_newer_days_keep_their_rows() {
    let t = crate::postgres().await;
    accept_at(&t, "old-1", &["app"], T0).await;
    accept_at(&t, "old-2", &["app", "crm"], T0).await;
    finish_all(&t, T0).await;
    let old = partition_of(&t, "attempts", "true LIMIT 1").await;
    assert_ne!(old, "attempts", "an attempt is in a day's partition");
    let old_payloads = payload_partition(&t, "old-1").await.unwrap();
    // A pass days later opens that day's partitions; a retention of 10 000 days keeps all.
    let later = days_ahead(3);
    assert_eq!(t.purge(later, keep(10_000)).await.unwrap(), PurgeReport::default());
    assert_eq!(t.count_raw(&format!("SELECT count(*) FROM pg_class WHERE oid = to_regclass('{old}')")).await, 1);
    accept_at(&t, "new-1", &["app"], later).await;
    accept_at(&t, "new-2", &["app"], later).await;
    finish_all(&t, later).await;
    accept_at(&t, "new-waiting", &["app"], later).await;
    let newer = partition_of(&t, "attempts", "job_id = (SELECT max(job_id) FROM attempts)").await;
    assert_ne!(newer, old);

    let preview = t.purge_dry_run(later, keep(30)).await.unwrap();
    let report = t.purge(later, keep(30)).await.unwrap();
    assert_eq!((report.receipts, report.events, report.payloads), (2, 2, 2), "{report:?}");
    assert_eq!(preview, report, "a dry run counts what the purge removed");
    assert_eq!(t.count_raw(&format!("SELECT count(*) FROM pg_class WHERE oid = to_regclass('{old}')")).await, 0);
    assert!(!exists(&t, &old_payloads).await, "the day's payloads went whole, counted in the report");
    assert_eq!(t.receipt(key("old-1")).await.unwrap(), None);
    assert_eq!(t.count_raw("SELECT count(*) FROM jobs WHERE destination = 'crm'").await, 0, "old jobs go by rows");
    assert_eq!(t.count_raw(&format!("SELECT count(*) FROM pg_class WHERE oid = to_regclass('{newer}')")).await, 1);
    for identity in ["new-1", "new-2", "new-waiting"] {
        assert!(t.receipt(key(identity)).await.unwrap().is_some(), "{identity}");
        assert_eq!(t.jobs(key(identity)).await.unwrap().len(), 1, "{identity}");
    }
    assert_eq!(t.count_raw("SELECT count(*) FROM attempts").await, 2, "the newer day's attempts");
    let repeat = t
        .accept(request_at("new-1", b"{\"n\":\"new-1\"}", later), event("new-1", b"{\"n\":\"new-1\"}", &["app"]))
        .await;
    assert!(matches!(repeat, Outcome::Duplicate { .. }), "{repeat:?}");
}

async fn attempt_at(t: &TestStore, at: UnixTime, status: u16, decision: Decision) {
    for job in t.claim_jobs(ms(at), Duration::from_secs(30), 100, Vec::new()).await.unwrap() {
        let outcome = if status == 200 {
            idemgate_core::retry::Attempted::Succeeded
        } else {
            idemgate_core::retry::Attempted::Failed
        };
        let attempt = AttemptRecord {
            started_at: at,
            latency: Duration::ZERO,
            status: Some(status),
            error: None,
            response_prefix: None,
            outcome,
        };
        t.complete_job(job, attempt, decision, ms(at)).await.unwrap();
    }
}

/// Claims the two jobs waiting at `T0` and completes them: the one to `app` delivered,
/// the one to `crm` failed with a retry in 60 s (so it waits again).
async fn deliver_app_and_fail_crm(t: &TestStore) {
    let taken = t.claim_jobs(ms(T0), Duration::from_secs(30), 100, Vec::new()).await.unwrap();
    assert_eq!(taken.len(), 2);
    for job in taken {
        let failed = job.destination == "crm";
        let attempt = AttemptRecord {
            started_at: T0,
            latency: Duration::ZERO,
            status: Some(if failed { 500 } else { 200 }),
            error: None,
            response_prefix: None,
            outcome: if failed {
                idemgate_core::retry::Attempted::Failed
            } else {
                idemgate_core::retry::Attempted::Succeeded
            },
        };
        let decision = if failed { Decision::RetryAfter(Duration::from_secs(60)) } else { Decision::Succeeded };
        t.complete_job(job, attempt, decision, ms(T0)).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_with_attempts_of_waiting_work_stays_until_the_work_is_done() {
    let t = crate::postgres().await;
    accept_at(&t, "old-done", &["app"], T0).await;
    accept_at(&t, "old-waiting", &["crm"], T0).await;
    deliver_app_and_fail_crm(&t).await;
    let old = partition_of(&t, "attempts", "true LIMIT 1").await;
    let later = days_ahead(3);
    assert_eq!(t.purge(later, keep(10_000)).await.unwrap(), PurgeReport::default());

    let report = t.purge(later, keep(30)).await.unwrap();
    assert_eq!((report.receipts, report.events), (1, 1), "old-done goes by rows: {report:?}");
    assert_eq!(t.count_raw(&format!("SELECT count(*) FROM pg_class WHERE oid = to_regclass('{old}')")).await, 1);
    assert_eq!(t.count_raw(JOINED_ATTEMPTS).await, 1, "the waiting job's attempt stays");
    assert_eq!(t.count_raw("SELECT count(*) FROM attempts").await, 2, "old-done's, of no job, waits for its day");
    assert!(t.receipt(key("old-waiting")).await.unwrap().is_some(), "its job still waits");

    // Its retry succeeds: the day's partition goes whole; the retry's attempt, in the open
    // day, is of no job once the job goes, read by nothing, and goes with its own day.
    attempt_at(&t, later, 200, Decision::Succeeded).await;
    assert_eq!(t.count_raw(JOINED_ATTEMPTS).await, 2);
    let report = t.purge(later, keep(30)).await.unwrap();
    assert_eq!((report.receipts, report.events), (1, 1), "old-waiting goes: {report:?}");
    assert_eq!(t.count_raw(&format!("SELECT count(*) FROM pg_class WHERE oid = to_regclass('{old}')")).await, 0);
    assert_eq!(t.count_raw(JOINED_ATTEMPTS).await, 0);
    assert_eq!(t.count_raw("SELECT count(*) FROM attempts").await, 1, "the retry's, of no job");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_with_attempts_of_a_source_kept_longer_stays() {
    let t = crate::postgres().await;
    accept_at(&t, "old-done", &["app"], T0).await;
    let kept = idemgate_core::ReceiptKey {
        source: idemgate_core::SourceName::new("kept").unwrap(),
        identity: idemgate_core::Identity::new("forever").unwrap(),
    };
    let mut forever = request_at("forever", b"{}", T0);
    forever.key = kept.clone();
    assert!(matches!(t.accept(forever, event("forever", b"{}", &["app"])).await, Outcome::Applied { .. }));
    attempt_at(&t, T0, 200, Decision::Succeeded).await;
    let old = partition_of(&t, "attempts", "true LIMIT 1").await;
    let later = days_ahead(3);
    assert_eq!(t.purge(later, keep(10_000)).await.unwrap(), PurgeReport::default());

    let report = t.purge(later, keep(30)).await.unwrap();
    assert_eq!((report.receipts, report.events), (1, 1), "old-done goes by rows: {report:?}");
    assert_eq!(t.count_raw(&format!("SELECT count(*) FROM pg_class WHERE oid = to_regclass('{old}')")).await, 1);
    assert_eq!(t.count_raw(JOINED_ATTEMPTS).await, 1, "the kept source's attempt stays");
    assert_eq!(t.count_raw("SELECT count(*) FROM payloads").await, 1, "and its payload");
    assert!(t.receipt(kept).await.unwrap().is_some(), "a source without retention keeps its receipts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_with_payloads_in_its_events_migrates_with_every_body_and_every_purge() {
    let url = create_schema(&postgres_url(), &unique_schema("payloads")).await.unwrap();
    migrate_schema_to(&url, POSTGRES_VERSION_BEFORE_PAYLOADS).await.unwrap();
    let client = connect(&url).await;
    // 300 events: every fifth purged (emptied and flagged, as retention left it), e7 stored
    // with an empty body (not purged), a third with a pending job.
    client
        .batch_execute(
            "INSERT INTO receipts (source, identity, body_sha256, outcome, result, received_at)
             SELECT 'test', 'e' || n, sha256(n::text::bytea), 'applied', '{\"event\":\"e' || n || '\"}', 1700000000 + n
             FROM generate_series(1, 300) n;
             INSERT INTO events (source, identity, event_type, content_type, body, received_at, headers, outgoing_id, payload_purged)
             SELECT 'test', 'e' || n, 'order.created', 'application/json',
                    CASE WHEN n % 5 = 0 OR n = 7 THEN ''::bytea ELSE convert_to('{\"n\":' || n || '}', 'UTF8') END,
                    1700000000 + n, '[]', 'e' || n, n % 5 = 0
             FROM generate_series(1, 300) n;
             INSERT INTO jobs (event_id, destination, state, next_attempt_at_ms, created_at, updated_at, attempts)
             SELECT id, 'app', CASE WHEN id % 3 = 0 AND id % 5 <> 0 THEN 'pending' ELSE 'succeeded' END,
                    received_at * 1000, received_at, received_at, 1
             FROM events;",
        )
        .await
        .unwrap();
    let before = contents(&client).await;
    assert!(before[1].starts_with("300:240:"), "300 events, 240 payloads: {before:?}");

    let store: Store = PgStore::connect(&url, PgOptions { pool_size: 2, ..PgOptions::default() }).await.unwrap().into();
    assert_eq!(contents(&client).await, before, "every receipt, event, body and purge is where it was");
    let version: i32 = client.query_one("SELECT version FROM idemgate_schema", &[]).await.unwrap().get(0);
    assert_eq!(version, POSTGRES_VERSION);
    assert!(partitioned(&client, "payloads").await);
    assert!(!partitioned(&client, "events").await, "events stays a plain table");
    let columns: i64 = client
        .query_one(
            "SELECT count(*) FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name = 'events' AND column_name IN ('body', 'payload_purged')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(columns, 0, "the bytes left events");
    let today = database_today(&client).await;
    let first: String =
        client.query_one("SELECT DISTINCT tableoid::regclass::text FROM payloads", &[]).await.unwrap().get(0);
    assert_eq!(first, format!("payloads_d{}", today - 1), "the bodies of before in the first partition");
    let tomorrow: Option<String> =
        client.query_one("SELECT to_regclass($1)::text", &[&format!("payloads_d{}", today + 1)]).await.unwrap().get(0);
    assert!(tomorrow.is_some(), "tomorrow's partition is open");

    // Through the store: a body, an empty body and a purged one read as they did.
    assert_eq!(store.event_body(key("e1")).await.unwrap().as_deref(), Some(&b"{\"n\":1}"[..]));
    assert_eq!(store.event_body(key("e7")).await.unwrap().as_deref(), Some(&b""[..]), "empty, not purged");
    assert_eq!(store.event_body(key("e5")).await.unwrap(), None, "purged");
    assert_eq!(store.event(key("e5")).await.unwrap().unwrap().body_len, 0);
    let purged = store.event(key("e5")).await.unwrap().unwrap().id;
    assert_eq!(store.event_payload(purged).await.unwrap().unwrap().body, None);
    let replay = idemgate_store::jobs::ReplayFilter {
        state: Some(idemgate_core::job::JobState::Succeeded),
        ..idemgate_store::jobs::ReplayFilter::default()
    };
    assert_eq!(
        store.count_replayable(replay).await.unwrap(),
        300 - 60 - 80,
        "the succeeded jobs of events with a payload"
    );
    let due = store.claim_jobs(ms(UnixTime(T0.0 + 10 * DAY)), Duration::from_secs(30), 1000, Vec::new()).await.unwrap();
    assert_eq!(due.len(), 80, "the pending jobs of before");
    for job in &due {
        let n = job.key.identity.as_str().trim_start_matches('e');
        assert_eq!(job.body, format!("{{\"n\":{n}}}").as_bytes(), "{n}");
    }

    // A new event's id is in today's block, its payload in today's partition.
    accept_at(&store, "fresh", &["app"], T0).await;
    let fresh: (i64, String) = {
        let row = client
            .query_one(
                "SELECT e.id, p.tableoid::regclass::text FROM events e JOIN payloads p ON p.event_id = e.id WHERE e.identity = 'fresh'",
                &[],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!(fresh.0 >> 36, today);
    assert_eq!(fresh.1, format!("payloads_d{today}"));
}

/// The partition of `payloads` holding the payload of `identity`'s event, if any.
async fn payload_partition(t: &TestStore, identity: &str) -> Option<String> {
    let client = connect(t.url().unwrap()).await;
    client
        .query_opt(
            "SELECT p.tableoid::regclass::text FROM events e JOIN payloads p ON p.event_id = e.id WHERE e.identity = $1",
            &[&identity],
        )
        .await
        .unwrap()
        .map(|row| row.get(0))
}

async fn exists(t: &TestStore, relation: &str) -> bool {
    t.count_raw(&format!("SELECT count(*) FROM pg_class WHERE oid = to_regclass('{relation}')")).await == 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payload_partitions_are_rolled_with_the_events_ids() {
    let t = crate::postgres().await;
    let client = connect(t.url().unwrap()).await;
    let today = database_today(&client).await;
    accept_at(&t, "now", &["app"], T0).await;
    assert_eq!(payload_partition(&t, "now").await, Some(format!("payloads_d{today}")));
    let later = days_ahead(3);
    t.purge(later, keep(10_000)).await.unwrap();
    for day in [today + 3, today + 4] {
        assert!(exists(&t, &format!("payloads_d{day}")).await, "{day}");
    }
    accept_at(&t, "later", &["app"], T0).await;
    assert_eq!(payload_partition(&t, "later").await, Some(format!("payloads_d{}", today + 3)));
    let id = t.event(key("later")).await.unwrap().unwrap().id;
    assert_eq!(id >> 36, today + 3, "the event's id is in the day's block");
}

fn keep_payloads(receipt_days: i64, payload_days: i64) -> Vec<Retention> {
    vec![Retention {
        source: "test".to_owned(),
        receipts: Duration::from_secs((receipt_days * DAY).unsigned_abs()),
        payloads: Duration::from_secs((payload_days * DAY).unsigned_abs()),
    }]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_drops_a_past_days_payloads_whole_and_their_events_read_as_purged() {
    let t = crate::postgres().await;
    accept_at(&t, "old-1", &["app"], T0).await;
    accept_at(&t, "old-2", &["app", "crm"], T0).await;
    finish_all(&t, T0).await;
    let old = payload_partition(&t, "old-1").await.unwrap();
    let later = days_ahead(3);
    assert_eq!(t.purge(later, keep(10_000)).await.unwrap(), PurgeReport::default());
    // An event of the open day as old as those (received at T0), purged by rows; one newer.
    accept_at(&t, "by-rows", &["app"], T0).await;
    accept_at(&t, "new", &["app"], later).await;
    finish_all(&t, later).await;
    let newer = payload_partition(&t, "by-rows").await.unwrap();
    assert_ne!(newer, old);

    // Receipts kept 10 000 days, payloads 30: the old day's payloads go whole, by-rows' by rows.
    let policy = keep_payloads(10_000, 30);
    let preview = t.purge_dry_run(later, policy.clone()).await.unwrap();
    let report = t.purge(later, policy.clone()).await.unwrap();
    assert_eq!(report, PurgeReport { payloads: 3, ..PurgeReport::default() });
    assert_eq!(preview, report, "a dry run counts what the purge removed");
    assert!(!exists(&t, &old).await, "the old day's payloads were dropped whole");
    assert!(exists(&t, &newer).await, "the open day stays");
    assert_eq!(t.count_raw(&format!("SELECT count(*) FROM {newer}")).await, 1, "new's payload");
    for identity in ["old-1", "old-2", "by-rows"] {
        assert!(t.receipt(key(identity)).await.unwrap().is_some(), "{identity}'s receipt stays");
        assert!(!t.jobs(key(identity)).await.unwrap().is_empty(), "{identity}'s jobs stay");
        assert_eq!(t.event_body(key(identity)).await.unwrap(), None, "{identity} reads as purged");
        let event = t.event(key(identity)).await.unwrap().unwrap();
        assert_eq!(event.body_len, 0);
        let payload = t.event_payload(event.id).await.unwrap().unwrap();
        assert_eq!((payload.body, payload.headers.len()), (None, 1), "{identity}: no body, its headers");
    }
    assert_eq!(t.event_body(key("new")).await.unwrap().as_deref(), Some(&b"{\"n\":\"new\"}"[..]));

    // A replay of an event whose day was dropped does what one purged by rows does: nothing.
    for identity in ["old-1", "by-rows"] {
        let filter = idemgate_store::jobs::ReplayFilter {
            identity: Some(identity.to_owned()),
            state: Some(idemgate_core::job::JobState::Succeeded),
            ..idemgate_store::jobs::ReplayFilter::default()
        };
        assert_eq!(t.count_replayable(filter.clone()).await.unwrap(), 0, "{identity}");
        assert_eq!(t.replay_jobs(filter, later, 100).await.unwrap(), 0, "{identity}");
        let to = idemgate_store::jobs::ReplayTo {
            destination: "crm".to_owned(),
            identity: Some(identity.to_owned()),
            ..idemgate_store::jobs::ReplayTo::default()
        };
        assert_eq!(t.replay_to(to, later).await.unwrap(), idemgate_store::jobs::ReplayedTo::default(), "{identity}");
    }
    let new = idemgate_store::jobs::ReplayFilter {
        identity: Some("new".to_owned()),
        state: Some(idemgate_core::job::JobState::Succeeded),
        ..idemgate_store::jobs::ReplayFilter::default()
    };
    assert_eq!(t.replay_jobs(new, later, 100).await.unwrap(), 1, "an event with its payload replays");
    let claimed = t.claim_jobs(ms(later), Duration::from_secs(30), 100, Vec::new()).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(&claimed[0].body[..], b"{\"n\":\"new\"}");
    assert_eq!(t.purge(later, policy).await.unwrap(), PurgeReport::default(), "nothing more to purge");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_with_a_payload_of_a_source_kept_longer_keeps_its_payloads() {
    let t = crate::postgres().await;
    accept_at(&t, "old-done", &["app"], T0).await;
    let kept = idemgate_core::ReceiptKey {
        source: idemgate_core::SourceName::new("kept").unwrap(),
        identity: idemgate_core::Identity::new("forever").unwrap(),
    };
    let mut forever = request_at("forever", b"{}", T0);
    forever.key = kept.clone();
    assert!(matches!(t.accept(forever, event("forever", b"{}", &["app"])).await, Outcome::Applied { .. }));
    finish_all(&t, T0).await;
    let old = payload_partition(&t, "old-done").await.unwrap();
    let later = days_ahead(3);
    assert_eq!(t.purge(later, keep(10_000)).await.unwrap(), PurgeReport::default());

    let policy = keep_payloads(10_000, 30);
    let preview = t.purge_dry_run(later, policy.clone()).await.unwrap();
    let report = t.purge(later, policy).await.unwrap();
    assert_eq!(report, PurgeReport { payloads: 1, ..PurgeReport::default() }, "old-done's payload, by rows");
    assert_eq!(preview, report);
    assert!(exists(&t, &old).await, "the day holds a payload of a source without retention");
    assert_eq!(t.event_body(kept).await.unwrap().as_deref(), Some(&b"{}"[..]));
    assert_eq!(t.event_body(key("old-done")).await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_with_a_payload_of_waiting_work_keeps_its_payloads_until_the_work_is_done() {
    let t = crate::postgres().await;
    accept_at(&t, "old-done", &["app"], T0).await;
    accept_at(&t, "old-waiting", &["crm"], T0).await;
    deliver_app_and_fail_crm(&t).await;
    let old = payload_partition(&t, "old-waiting").await.unwrap();
    let later = days_ahead(3);
    assert_eq!(t.purge(later, keep(10_000)).await.unwrap(), PurgeReport::default());

    let report = t.purge(later, keep_payloads(10_000, 30)).await.unwrap();
    assert_eq!(report.payloads, 1, "old-done's, by rows: {report:?}");
    assert!(exists(&t, &old).await);
    assert_eq!(t.event_body(key("old-waiting")).await.unwrap().as_deref(), Some(&b"{\"n\":\"old-waiting\"}"[..]));
    let retry = t.claim_jobs(ms(later), Duration::from_secs(30), 100, Vec::new()).await.unwrap();
    assert_eq!(retry.len(), 1);
    assert_eq!(&retry[0].body[..], b"{\"n\":\"old-waiting\"}", "the retry sends the payload");
    let attempt = AttemptRecord {
        started_at: later,
        latency: Duration::ZERO,
        status: Some(200),
        error: None,
        response_prefix: None,
        outcome: idemgate_core::retry::Attempted::Succeeded,
    };
    t.complete_job(retry.into_iter().next().unwrap(), attempt, Decision::Succeeded, ms(later)).await.unwrap();

    let preview = t.purge_dry_run(later, keep_payloads(10_000, 30)).await.unwrap();
    let report = t.purge(later, keep_payloads(10_000, 30)).await.unwrap();
    assert_eq!(report, PurgeReport { payloads: 1, ..PurgeReport::default() }, "old-waiting's, with its day");
    assert_eq!(preview, report);
    assert!(!exists(&t, &old).await);
    assert_eq!(t.event_body(key("old-waiting")).await.unwrap(), None);
}

/// The plan of `query` run as a prepared statement's generic plan with `id`, as executed:
/// the partitions of `payloads` it read.
async fn payload_partitions_read(client: &tokio_postgres::Client, query: &str, id: i64) -> Vec<String> {
    client
        .batch_execute(&format!(
            "SET plan_cache_mode = force_generic_plan; DEALLOCATE ALL; PREPARE q (bigint) AS {query}"
        ))
        .await
        .unwrap();
    let plan = client
        .query(&format!("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE q ({id})"), &[])
        .await
        .unwrap();
    let lines: Vec<String> = plan.iter().map(|row| row.get(0)).collect();
    let read: Vec<String> = lines
        .iter()
        .filter(|line| line.contains(" on payloads_d") && !line.contains("never executed"))
        .map(|line| line.trim().to_owned())
        .collect();
    assert!(!read.is_empty(), "{}", lines.join("\n"));
    read
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_by_one_event_id_reads_one_payload_partition() {
    let t = crate::postgres().await;
    accept_at(&t, "d0", &["app"], T0).await;
    for (n, identity) in [(1, "d1"), (2, "d2")] {
        t.purge(days_ahead(n), keep(10_000)).await.unwrap();
        accept_at(&t, identity, &["app"], T0).await;
    }
    let client = connect(t.url().unwrap()).await;
    client.batch_execute("ANALYZE").await.unwrap();
    let id = t.event(key("d1")).await.unwrap().unwrap().id;
    let payload = "SELECT e.source, e.identity, e.content_type, e.headers, p.body
                   FROM events e LEFT JOIN payloads p ON p.event_id = e.id WHERE e.id = $1";
    let message =
        "SELECT p.body, p.event_id IS NULL FROM events e LEFT JOIN payloads p ON p.event_id = e.id WHERE e.id = $1";
    for query in [payload, message] {
        let read = payload_partitions_read(&client, query, id).await;
        assert_eq!(read.len(), 1, "{read:?}");
        assert!(read[0].contains(&format!("payloads_d{}", id >> 36)), "{read:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_of_outbound_messages_goes_whole_once_every_message_expired() {
    use idemgate_store::outbound::{
        Lookup,
        message::{Accepted, MessageIn},
    };
    let t = crate::postgres().await;
    let now_ms = days_ahead(0).0 * 1000;
    t.create_application(crate::outbound_applications::app_in("acme", Some("acme")), &crate::ops(), now_ms)
        .await
        .unwrap();
    let hook = crate::outbound_endpoints::new_endpoint("https://acme.example.com/hook", Some("hook"), now_ms);
    t.create_endpoint(Lookup::application("acme"), hook, &crate::ops(), now_ms).await.unwrap();
    for (uid, days) in [("short", 1), ("long", 60)] {
        let input = MessageIn {
            event_id: Some(uid.to_owned()),
            event_type: "a.b".to_owned(),
            channels: None,
            payload: bytes::Bytes::from(format!("{{\"m\":\"{uid}\"}}")),
            expires_at_ms: Some(now_ms + days * DAY * 1000),
            operation: None,
        };
        let accepted = t.accept_message(Lookup::application("acme"), input, now_ms).await.unwrap();
        assert!(matches!(accepted, Accepted::Created(_)), "{accepted:?}");
    }
    let old = payload_partition(&t, "long").await.unwrap();
    assert_eq!(payload_partition(&t, "short").await.as_ref(), Some(&old));
    let payload = |uid: &'static str| {
        let t = &t;
        async move { t.message(Lookup::application("acme"), Lookup::message(uid)).await.unwrap().unwrap().payload }
    };

    // Three days on, "short" has expired (by rows: "long" holds the day; its delivery waits).
    let report = t.purge(days_ahead(3), Vec::new()).await.unwrap();
    assert_eq!(report, PurgeReport { payloads: 1, ..PurgeReport::default() });
    assert!(exists(&t, &old).await);
    assert_eq!(payload("short").await, None);
    assert_eq!(payload("long").await.as_deref(), Some(&b"{\"m\":\"long\"}"[..]));

    // Past "long"'s expiry the day goes whole, its waiting delivery ended, counted as by rows.
    let preview = t.purge_dry_run(days_ahead(61), Vec::new()).await.unwrap();
    let report = t.purge(days_ahead(61), Vec::new()).await.unwrap();
    assert_eq!(report, PurgeReport { payloads: 1, ..PurgeReport::default() });
    assert_eq!(preview, report);
    assert!(!exists(&t, &old).await, "the day's payloads were dropped whole");
    assert_eq!(payload("long").await, None, "the message stays, without its payload");
    let dead = t.dead_jobs(10).await.unwrap();
    assert_eq!(dead.len(), 2, "both deliveries ended: {dead:?}");
}
