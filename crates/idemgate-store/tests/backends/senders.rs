//! What the store keeps about senders and identities: the body receipt that makes the
//! same signed bytes under another identity a duplicate, and the outgoing id fixed when an
//! event is accepted (and filled for events stored before it existed).

use std::{sync::Arc, time::Duration};

use idemgate_core::{Outcome, UnixTime, job::JobState, retry::Decision};
use idemgate_store::{
    PgOptions, PgStore, ReceiveRequest, SqliteStore, Store, StoreOptions, create_schema,
    inbox::{IncomingEvent, Version},
    jobs::{AttemptRecord, ClaimedJob, ReplayFilter},
    maintenance::Retention,
};
use serde_json::json;

use crate::{
    T0, TestStore, event, key, ms, on_both, ordered, outcome::DROP_OUTBOUND, postgres_url, request, source,
    unique_schema,
};

/// A delivery of a source whose identity the signature does not cover.
fn unsigned_identity(identity: &str, body: &[u8]) -> ReceiveRequest {
    ReceiveRequest { dedupe_body: true, ..request(identity, body) }
}

async fn identities(store: &Store) -> Vec<String> {
    store.receipts(source()).await.unwrap().into_iter().map(|r| r.key.identity.to_string()).collect()
}

const LEASE: Duration = Duration::from_secs(30);

async fn claim(store: &Store, at: UnixTime) -> Vec<ClaimedJob> {
    store.claim_jobs(ms(at), LEASE, 100, Vec::new()).await.unwrap()
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
        outcome: idemgate_core::retry::Attempted::Succeeded,
    }
}

on_both! {
    async fn the_same_body_under_a_new_identity_is_a_duplicate_of_the_original_and_stores_nothing(t: TestStore) {
        let body = br#"{"action":"opened"}"#;
        let first = t.accept(unsigned_identity("d1", body), event("d1", body, &["app"])).await;
        assert_eq!(first, Outcome::Applied { result: json!({"event": "d1"}) });
        let resent = t.accept(unsigned_identity("d2", body), event("d2", body, &["app"])).await;
        assert_eq!(resent, Outcome::Duplicate { result: json!({"event": "d1"}) }, "the original's result");
        assert_eq!(identities(&t).await, ["d1"]);
        assert!(t.event(key("d2")).await.unwrap().is_none());
        assert_eq!(claim(&t, T0).await.len(), 1, "one job: the original's");
        let again = t.accept(unsigned_identity("d1", body), event("d1", body, &["app"])).await;
        assert_eq!(again, Outcome::Duplicate { result: json!({"event": "d1"}) }, "the original's own redelivery");
        let other = t.accept(unsigned_identity("d3", b"{}"), event("d3", b"{}", &["app"])).await;
        assert!(matches!(other, Outcome::Applied { .. }), "other bytes are another event: {other:?}");
    }

    async fn without_body_receipts_the_same_body_under_a_new_identity_is_a_new_event(t: TestStore) {
        assert!(matches!(t.accept(request("s1", b"{}"), event("s1", b"{}", &["app"])).await, Outcome::Applied { .. }));
        assert!(matches!(t.accept(request("s2", b"{}"), event("s2", b"{}", &["app"])).await, Outcome::Applied { .. }));
        let later = t.accept(unsigned_identity("s3", b"{}"), event("s3", b"{}", &["app"])).await;
        assert!(matches!(later, Outcome::Applied { .. }), "only body receipts count, not receipts: {later:?}");
    }

    async fn a_refused_or_guarded_first_delivery_keeps_no_body_receipt_and_the_rule_holds_on_every_path(t: TestStore) {
        let refused = IncomingEvent { refusal: Some("type not accepted"), ..event("r1", b"{}", &["app"]) };
        assert_eq!(t.accept(unsigned_identity("r1", b"{}"), refused).await, Outcome::Refused { reason: "type not accepted" });
        let accepted = t.accept(unsigned_identity("r2", b"{}"), event("r2", b"{}", &["app"])).await;
        assert!(matches!(accepted, Outcome::Applied { .. }), "{accepted:?}");
        let refused_repeat = IncomingEvent { refusal: Some("type not accepted"), ..event("r3", b"{}", &["app"]) };
        assert_eq!(
            t.accept(unsigned_identity("r3", b"{}"), refused_repeat).await,
            Outcome::Duplicate { result: json!({"event": "r2"}) },
            "a repeat of bytes accepted earlier stays a duplicate under a stricter allowlist"
        );
        let body = br#"{"v":1}"#;
        let guarded = ordered("o1", body, "k", Version::Int(1));
        assert!(matches!(t.accept(unsigned_identity("o1", body), guarded).await, Outcome::Applied { .. }));
        let guarded_again = ordered("o2", body, "k", Version::Int(1));
        assert_eq!(t.accept(unsigned_identity("o2", body), guarded_again).await, Outcome::Duplicate { result: json!({"event": "o1"}) });
        assert_eq!(identities(&t).await, ["o1", "r2"]);
    }

    async fn concurrent_deliveries_of_one_body_under_many_identities_apply_once(t: TestStore) {
        let store = t.store.clone();
        let body = br#"{"race":true}"#;
        let racers: Vec<_> = (0..16)
            .map(|i| {
                let store = store.clone();
                let identity = format!("c{i:02}");
                tokio::spawn(async move {
                    let outcome = store.accept(unsigned_identity(&identity, body), event(&identity, body, &["app"])).await;
                    (identity, outcome)
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for racer in racers {
            outcomes.push(racer.await.unwrap());
        }
        let applied: Vec<_> = outcomes.iter().filter(|(_, o)| matches!(o, Outcome::Applied { .. })).collect();
        assert_eq!(applied.len(), 1, "{outcomes:?}");
        let winner = json!({ "event": applied[0].0 });
        for (identity, outcome) in &outcomes {
            if identity != &applied[0].0 {
                assert_eq!(outcome, &Outcome::Duplicate { result: winner.clone() }, "{identity}");
            }
        }
        assert_eq!(identities(&t).await, [applied[0].0.clone()]);
        assert_eq!(claim(&t, T0).await.len(), 1);
    }

    async fn a_body_receipt_is_purged_with_its_receipt(t: TestStore) {
        assert!(matches!(t.accept(unsigned_identity("p1", b"{}"), event("p1", b"{}", &[])).await, Outcome::Applied { .. }));
        let later = UnixTime(T0.0 + 10);
        let policy = vec![Retention { source: "test".to_owned(), receipts: Duration::from_secs(5), payloads: Duration::from_secs(5) }];
        assert_eq!(t.purge(later, policy).await.unwrap().receipts, 1);
        let after = t.accept(unsigned_identity("p2", b"{}"), event("p2", b"{}", &[])).await;
        assert!(matches!(after, Outcome::Applied { .. }), "forgotten with its receipt: {after:?}");
    }

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
            t.complete_job(job, succeeded(), Decision::Succeeded, ms(T0)).await.unwrap();
        }
        let all = ReplayFilter { state: Some(JobState::Succeeded), ..ReplayFilter::default() };
        assert_eq!(t.replay_jobs(all, UnixTime(T0.0 + 1), 100).await.unwrap(), 3);
        assert_eq!(outgoing(&claim(&t, UnixTime(T0.0 + 1)).await), expected, "a replay sends the same id");
    }
}

/// Accepts `e_old` with the current schema, then takes the schema back to before the
/// outgoing id existed (the column, the body receipts and what came later dropped, due times back in
/// seconds as they were then, the version lowered).
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
        "{DROP_OUTBOUND} ALTER TABLE attempts DROP COLUMN outcome; DROP TABLE audit_log; DROP TABLE alerts; DROP INDEX jobs_dead_at;
         DROP TABLE body_receipts; ALTER TABLE events DROP COLUMN outgoing_id;
         ALTER TABLE destinations DROP COLUMN failures; ALTER TABLE destinations DROP COLUMN failing_since_ms;
         ALTER TABLE destinations DROP COLUMN paused_at_ms; ALTER TABLE destinations DROP COLUMN next_probe_at_ms;
         ALTER TABLE destinations DROP COLUMN probe_interval_ms; ALTER TABLE destinations DROP COLUMN throttled_since_ms;
         ALTER TABLE jobs RENAME COLUMN next_attempt_at_ms TO next_attempt_at;
         UPDATE jobs SET next_attempt_at = next_attempt_at / 1000;
         PRAGMA user_version = {SQLITE_VERSION_BEFORE};"
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
            "{DROP_OUTBOUND} ALTER TABLE attempts DROP COLUMN outcome;
             DROP INDEX jobs_waiting; DROP INDEX jobs_leased; CREATE INDEX jobs_due ON jobs (state, next_attempt_at_ms);
             DROP TABLE audit_log; DROP TABLE alerts; DROP INDEX jobs_dead_at;
             DROP TABLE body_receipts; ALTER TABLE events DROP COLUMN outgoing_id;
             ALTER TABLE destinations DROP COLUMN failures; ALTER TABLE destinations DROP COLUMN failing_since_ms;
             ALTER TABLE destinations DROP COLUMN paused_at_ms; ALTER TABLE destinations DROP COLUMN next_probe_at_ms;
             ALTER TABLE destinations DROP COLUMN probe_interval_ms; ALTER TABLE destinations DROP COLUMN throttled_since_ms;
             ALTER TABLE jobs RENAME COLUMN next_attempt_at_ms TO next_attempt_at;
             UPDATE jobs SET next_attempt_at = next_attempt_at / 1000;
             UPDATE idemgate_schema SET version = {POSTGRES_VERSION_BEFORE};"
        ))
        .await
        .unwrap();
    let store: Store = PgStore::connect(&url, options).await.unwrap().into();
    assert_eq!(outgoing(&claim(&store, T0).await), [("e_old".to_owned(), "e_old".to_owned())]);
}
