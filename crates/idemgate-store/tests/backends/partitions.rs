//! PostgreSQL's day partitions (docs/design/postgres-partitions.md): a store of the
//! unpartitioned layout migrates without losing a receipt, payload, job or attempt, its
//! attempts and audit log partitioned while events and jobs keep their unique keys and
//! foreign keys, and retention drops a past day's attempts whole while newer days keep
//! their rows.

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

/// What each table holds, as one text per table: its rows in id order.
const CONTENTS: &str = r#"SELECT
    (SELECT count(*) || ':' || md5(string_agg(concat_ws('|', source, identity, encode(body_sha256, 'hex'), result, received_at), ',' ORDER BY source, identity)) FROM receipts),
    (SELECT count(*) || ':' || md5(string_agg(concat_ws('|', id, source, identity, event_type, encode(body, 'hex'), received_at, headers, outgoing_id, payload_purged), ',' ORDER BY id)) FROM events),
    (SELECT count(*) || ':' || md5(string_agg(concat_ws('|', id, event_id, destination, state, attempts, next_attempt_at_ms, lease_token, last_error), ',' ORDER BY id)) FROM jobs),
    (SELECT count(*) || ':' || md5(string_agg(concat_ws('|', id, job_id, attempt, started_at, status, outcome), ',' ORDER BY id)) FROM attempts),
    (SELECT count(*) || ':' || md5(string_agg(concat_ws('|', id, at, token, action, target, affected), ',' ORDER BY id)) FROM audit_log)"#;

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn contents(client: &tokio_postgres::Client) -> Vec<String> {
    let row = client.query_one(CONTENTS, &[]).await.unwrap();
    (0..5).map(|i| row.get(i)).collect()
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
    let partitioned: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_class WHERE relkind = 'p' AND relnamespace = current_schema()::regnamespace AND relname IN ('attempts', 'audit_log')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(partitioned, 2);
    let unpartitioned: i64 = client
        .query_one("SELECT count(*) FROM pg_class WHERE relkind = 'r' AND relnamespace = current_schema()::regnamespace AND relname IN ('receipts', 'body_receipts', 'events', 'jobs')", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(unpartitioned, 4, "receipts, events and jobs stay plain tables");
    // The keys of before hold: a second job of one event to one destination, an attempt of
    // no job and a job of no event are refused.
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
        ("INSERT INTO attempts (job_id, attempt, started_at, latency_ms) VALUES (-1, 1, 0, 0)", "attempts_job_id_fkey"),
    ] {
        let err = client.batch_execute(statement).await.unwrap_err();
        let refused = err.as_db_error().and_then(|db| db.constraint()).map(str::to_owned);
        assert_eq!(refused.as_deref(), Some(constraint), "{err}");
    }

    // The migrated store answers from its old rows and takes new ones.
    let repeat = store.accept(request("e7", b"7"), event("e7", b"7", &["app"])).await;
    assert!(matches!(repeat, Outcome::Duplicate { .. }), "the receipt of before answers: {repeat:?}");
    assert_eq!(store.jobs(key("e3")).await.unwrap().len(), 2);
    assert_eq!(store.event(key("e500")).await.unwrap().unwrap().body_len, "{\"n\":500}".len());
    accept_at(&store, "fresh", &["app"], T0).await;
    let due = store.claim_jobs(ms(UnixTime(T0.0 + 10 * DAY)), Duration::from_secs(30), 1000, Vec::new()).await.unwrap();
    assert_eq!(due.len(), 2 * (500 / 3) + 1, "the pending jobs of before, and the new one");
    let version: i32 = client.query_one("SELECT version FROM idemgate_schema", &[]).await.unwrap().get(0);
    assert_eq!(version, 17);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_with_attempts_of_waiting_work_stays_until_the_work_is_done() {
    let t = crate::postgres().await;
    accept_at(&t, "old-done", &["app"], T0).await;
    accept_at(&t, "old-waiting", &["crm"], T0).await;
    let done = t.claim_jobs(ms(T0), Duration::from_secs(30), 100, Vec::new()).await.unwrap();
    assert_eq!(done.len(), 2);
    for job in done {
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
    let old = partition_of(&t, "attempts", "true LIMIT 1").await;
    let later = days_ahead(3);
    assert_eq!(t.purge(later, keep(10_000)).await.unwrap(), PurgeReport::default());

    let report = t.purge(later, keep(30)).await.unwrap();
    assert_eq!((report.receipts, report.events), (1, 1), "old-done goes by rows: {report:?}");
    assert_eq!(t.count_raw(&format!("SELECT count(*) FROM pg_class WHERE oid = to_regclass('{old}')")).await, 1);
    assert_eq!(t.count_raw("SELECT count(*) FROM attempts").await, 1, "the waiting job's attempt stays");
    assert!(t.receipt(key("old-waiting")).await.unwrap().is_some(), "its job still waits");

    // Its retry succeeds: the day's partition goes whole, the retry's attempt by rows.
    attempt_at(&t, later, 200, Decision::Succeeded).await;
    assert_eq!(t.count_raw("SELECT count(*) FROM attempts").await, 2);
    let report = t.purge(later, keep(30)).await.unwrap();
    assert_eq!((report.receipts, report.events), (1, 1), "old-waiting goes: {report:?}");
    assert_eq!(t.count_raw(&format!("SELECT count(*) FROM pg_class WHERE oid = to_regclass('{old}')")).await, 0);
    assert_eq!(t.count_raw("SELECT count(*) FROM attempts").await, 0);
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
    assert_eq!(t.count_raw("SELECT count(*) FROM attempts").await, 1, "the kept source's attempt stays");
    assert!(t.receipt(kept).await.unwrap().is_some(), "a source without retention keeps its receipts");
}
