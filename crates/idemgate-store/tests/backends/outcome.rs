//! Each attempt's stored outcome is what the views read: an attempt a broker confirmed or
//! a smarthost took (no status, maybe no error) counts as a success in health, last
//! success and failure, and series; attempts stored before the outcome existed get one
//! from their status and their job.

use std::{sync::Arc, time::Duration};

use idemgate_core::{
    UnixTime,
    retry::{Attempted, DeadReason, Decision},
};
use idemgate_store::{
    PgOptions, PgStore, SqliteStore, Store, StoreOptions, create_schema,
    jobs::{AttemptRecord, ClaimedJob},
    views::AttemptBucket,
};

use crate::{T0, TestStore, accept_at, ms, on_both, postgres_url, unique_schema};

const LEASE: Duration = Duration::from_secs(30);

fn record(secs: i64, status: Option<u16>, error: Option<&str>, outcome: Attempted) -> AttemptRecord {
    AttemptRecord {
        started_at: UnixTime(T0.0 + secs),
        latency: Duration::from_millis(2),
        status,
        error: error.map(str::to_owned),
        response_prefix: None,
        outcome,
    }
}

async fn claim(store: &Store, secs: i64) -> Vec<ClaimedJob> {
    let mut jobs = store.claim_jobs(ms(UnixTime(T0.0 + secs)), LEASE, 100, Vec::new()).await.unwrap();
    jobs.sort_by_key(|j| j.id);
    jobs
}

async fn outcomes(store: &Store, identity: &str) -> Vec<Attempted> {
    store.attempts("test".to_owned(), identity.to_owned()).await.unwrap().into_iter().map(|a| a.outcome).collect()
}

on_both! {
    async fn an_attempt_recorded_as_succeeded_without_a_status_counts_as_a_success(t: TestStore) {
        accept_at(&t, "confirmed", &["queue"], T0).await;
        accept_at(&t, "mailed", &["queue"], T0).await;
        let jobs = claim(&t, 0).await;
        let confirmed = record(1, None, None, Attempted::Succeeded);
        t.complete_job(jobs[0].clone(), confirmed, Decision::Succeeded, ms(UnixTime(T0.0 + 1))).await.unwrap();
        // A mail the smarthost took for some recipients keeps the refused ones as its error.
        let partly = record(2, None, Some("recipients refused: 550 no such user"), Attempted::Succeeded);
        t.complete_job(jobs[1].clone(), partly, Decision::Succeeded, ms(UnixTime(T0.0 + 2))).await.unwrap();

        let queue = t.destinations().await.unwrap().into_iter().find(|d| d.name == "queue").unwrap();
        assert_eq!(queue.last_success, Some(UnixTime(T0.0 + 2)));
        assert_eq!(queue.last_failure, None, "no attempt failed");
        let all_succeeded = AttemptBucket {
            destination: "queue".to_owned(),
            start: T0,
            succeeded: 2,
            failed: 0,
            mean_latency_ms: 2,
            max_latency_ms: 2,
        };
        assert_eq!(t.attempt_series(T0, 60).await.unwrap(), [all_succeeded]);
        assert_eq!(outcomes(&t, "confirmed").await, [Attempted::Succeeded]);
        assert_eq!(outcomes(&t, "mailed").await, [Attempted::Succeeded]);
    }

    async fn an_attempt_recorded_as_failed_counts_as_a_failure_whatever_its_status(t: TestStore) {
        accept_at(&t, "odd", &["app"], T0).await;
        let job = claim(&t, 0).await.remove(0);
        let failed = record(1, Some(204), None, Attempted::Failed);
        t.complete_job(job, failed, Decision::RetryAfter(Duration::from_secs(60)), ms(UnixTime(T0.0 + 1))).await.unwrap();
        let app = t.destinations().await.unwrap().into_iter().find(|d| d.name == "app").unwrap();
        assert_eq!((app.last_success, app.last_failure.map(|f| f.at)), (None, Some(UnixTime(T0.0 + 1))));
        assert_eq!(t.attempt_series(T0, 60).await.unwrap()[0].failed, 1);
    }
}

/// Records, through the store, one event per kind of attempt stored before the outcome
/// existed; [`assert_outcomes_filled`] checks what the migration makes of them.
async fn record_every_kind(store: &Store) {
    for (identity, destination) in
        [("http", "hook"), ("broker", "broker"), ("mail", "mail"), ("down", "down"), ("nack", "nack")]
    {
        accept_at(store, identity, &[destination], T0).await;
    }
    for job in claim(store, 0).await {
        let (attempt, decision) = match job.destination.as_str() {
            "hook" => (record(1, Some(200), None, Attempted::Succeeded), Decision::Succeeded),
            "broker" => (record(1, None, Some("timed out"), Attempted::Failed), Decision::RetryAfter(Duration::ZERO)),
            "mail" => (record(1, None, Some("recipients refused: 550 x"), Attempted::Succeeded), Decision::Succeeded),
            "down" => (
                record(1, None, Some("connection refused"), Attempted::Failed),
                Decision::RetryAfter(Duration::from_secs(600)),
            ),
            _ => (record(1, None, Some("nack"), Attempted::Failed), Decision::Dead(DeadReason::Refused)),
        };
        store.complete_job(job, attempt, decision, ms(UnixTime(T0.0 + 1))).await.unwrap();
    }
    let retried = claim(store, 2).await.remove(0);
    assert_eq!(retried.destination, "broker");
    let confirmed = record(2, None, None, Attempted::Succeeded);
    store.complete_job(retried, confirmed, Decision::Succeeded, ms(UnixTime(T0.0 + 2))).await.unwrap();
}

async fn assert_outcomes_filled(store: &Store) {
    use Attempted::{Failed, Succeeded};
    assert_eq!(outcomes(store, "http").await, [Succeeded], "a 2xx");
    assert_eq!(outcomes(store, "broker").await, [Failed, Succeeded], "a timeout, then a confirm");
    assert_eq!(outcomes(store, "mail").await, [Succeeded], "taken for some recipients");
    assert_eq!(outcomes(store, "down").await, [Failed]);
    assert_eq!(outcomes(store, "nack").await, [Failed]);
    let broker = store.destinations().await.unwrap().into_iter().find(|d| d.name == "broker").unwrap();
    assert_eq!(broker.last_success, Some(UnixTime(T0.0 + 2)));
    assert_eq!(broker.last_failure.map(|f| f.at), Some(UnixTime(T0.0 + 1)));
}

/// The schema versions before the attempts' outcome.
const SQLITE_VERSION_BEFORE: u32 = 11;
const POSTGRES_VERSION_BEFORE: i32 = 8;
/// What the migrations after the attempts' outcome added (the outbound API's tables, the
/// jobs' and attempts' trigger, the sessions and portal logins).
pub const DROP_OUTBOUND: &str = "DROP TABLE sessions; DROP TABLE portal_logins; DROP TABLE endpoint_secrets; DROP TABLE messages; DROP TABLE endpoints; DROP TABLE applications; DROP TABLE event_types; DROP TABLE outbound_version; DROP TABLE api_tokens; ALTER TABLE attempts DROP COLUMN manual; ALTER TABLE jobs DROP COLUMN manual; ALTER TABLE destinations DROP COLUMN bucket_level; ALTER TABLE destinations DROP COLUMN bucket_at_ms;";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_attempts_stored_before_their_outcome_get_it_from_their_status_and_job() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite3");
    let store: Store = Arc::new(SqliteStore::open(&path, StoreOptions::default()).unwrap()).into();
    record_every_kind(&store).await;
    store.close().await;
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(&format!(
            "{DROP_OUTBOUND} ALTER TABLE attempts DROP COLUMN outcome; PRAGMA user_version = {SQLITE_VERSION_BEFORE};"
        ))
        .unwrap();
    let store: Store = Arc::new(SqliteStore::open(&path, StoreOptions::default()).unwrap()).into();
    assert_outcomes_filled(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_attempts_stored_before_their_outcome_get_it_from_their_status_and_job() {
    let url = create_schema(&postgres_url(), &unique_schema("outcome")).await.unwrap();
    let options = PgOptions { pool_size: 2, ..PgOptions::default() };
    let store: Store = PgStore::connect(&url, options).await.unwrap().into();
    record_every_kind(&store).await;
    store.close().await;
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "{DROP_OUTBOUND} ALTER TABLE attempts DROP COLUMN outcome; UPDATE idemgate_schema SET version = {POSTGRES_VERSION_BEFORE};"
        ))
        .await
        .unwrap();
    let store: Store = PgStore::connect(&url, options).await.unwrap().into();
    assert_outcomes_filled(&store).await;
}
