//! What the store keeps about senders and identities: the outgoing id fixed when an event
//! is accepted (and filled for events stored before it existed).

use std::{sync::Arc, time::Duration};

use idemgate_core::{UnixTime, job::JobState, retry::Decision};
use idemgate_store::{
    PgOptions, PgStore, SqliteStore, Store, StoreOptions, create_schema,
    inbox::{IncomingEvent, Version},
    jobs::{AttemptRecord, ClaimedJob, ReplayFilter},
};

use crate::{T0, TestStore, event, on_both, ordered, postgres_url, request, unique_schema};

const LEASE: Duration = Duration::from_secs(30);

async fn claim(store: &Store, at: UnixTime) -> Vec<ClaimedJob> {
    store.claim_jobs(at, LEASE, 100, Vec::new()).await.unwrap()
}

fn outgoing(claimed: &[ClaimedJob]) -> Vec<(String, String)> {
    let mut ids: Vec<_> = claimed.iter().map(|j| (j.key.identity.to_string(), j.outgoing_id.clone())).collect();
    ids.sort();
    ids
}

fn with_id(event: IncomingEvent, id: &str) -> IncomingEvent {
    IncomingEvent { outgoing_id: Some(id.to_owned()), ..event }
}

fn succeeded() -> AttemptRecord {
    AttemptRecord {
        started_at: T0,
        latency: Duration::from_millis(1),
        status: Some(200),
        error: None,
        response_prefix: None,
    }
}

on_both! {
    async fn the_outgoing_id_is_fixed_at_acceptance_and_kept_by_every_claim_and_replay(t: TestStore) {
        let plain = event("e1", b"{}", &["app"]);
        let prefixed = with_id(event("e2", b"{}", &["app"]), "test:e2");
        let guarded = with_id(ordered("e3", b"{}", "k", Version::Int(1)), "test:e3");
        for (identity, event) in [("e1", plain), ("e2", prefixed), ("e3", guarded)] {
            assert!(matches!(t.accept(request(identity, b"{}"), event).await, idemgate_core::Outcome::Applied { .. }));
        }
        let expected = [("e1", "e1"), ("e2", "test:e2"), ("e3", "test:e3")].map(|(a, b)| (a.to_owned(), b.to_owned()));
        let claimed = claim(&t, T0).await;
        assert_eq!(outgoing(&claimed), expected, "an event offered without one keeps its identity");
        for job in claimed {
            t.complete_job(job, succeeded(), Decision::Succeeded, T0).await.unwrap();
        }
        let all = ReplayFilter { state: Some(JobState::Succeeded), ..ReplayFilter::default() };
        assert_eq!(t.replay_jobs(all, UnixTime(T0.0 + 1), 100).await.unwrap(), 3);
        assert_eq!(outgoing(&claim(&t, UnixTime(T0.0 + 1)).await), expected, "a replay sends the same id");
    }
}

/// Accepts `e_old` with the current schema, then takes the schema back to before the
/// outgoing id existed (the column and the body receipts dropped, the version lowered).
const SQLITE_VERSION_BEFORE: u32 = 5;
const POSTGRES_VERSION_BEFORE: i32 = 1;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_events_stored_before_the_outgoing_id_keep_their_identity_as_their_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.sqlite3");
    let store: Store = Arc::new(SqliteStore::open(&path, StoreOptions::default()).unwrap()).into();
    store.accept(request("e_old", b"{}"), with_id(event("e_old", b"{}", &["app"]), "ignored")).await;
    store.close().await;
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(&format!(
        "DROP TABLE body_receipts; ALTER TABLE events DROP COLUMN outgoing_id; PRAGMA user_version = {SQLITE_VERSION_BEFORE};"
    ))
    .unwrap();
    drop(conn);
    let store: Store = Arc::new(SqliteStore::open(&path, StoreOptions::default()).unwrap()).into();
    assert_eq!(outgoing(&claim(&store, T0).await), [("e_old".to_owned(), "e_old".to_owned())]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_events_stored_before_the_outgoing_id_keep_their_identity_as_their_id() {
    let url = create_schema(&postgres_url(), &unique_schema("old")).await.unwrap();
    let options = PgOptions { pool_size: 2, ..PgOptions::default() };
    let store: Store = PgStore::connect(&url, options).await.unwrap().into();
    store.accept(request("e_old", b"{}"), with_id(event("e_old", b"{}", &["app"]), "ignored")).await;
    store.close().await;
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "DROP TABLE body_receipts; ALTER TABLE events DROP COLUMN outgoing_id;
             UPDATE idemgate_schema SET version = {POSTGRES_VERSION_BEFORE};"
        ))
        .await
        .unwrap();
    let store: Store = PgStore::connect(&url, options).await.unwrap().into();
    assert_eq!(outgoing(&claim(&store, T0).await), [("e_old".to_owned(), "e_old".to_owned())]);
}
