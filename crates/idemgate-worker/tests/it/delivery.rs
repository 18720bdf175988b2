//! Delivery to a real HTTP destination: retries, timeouts, broken connections,
//! Retry-After, 410, dead letters and replay, all on an injected clock.

use std::{collections::HashMap, sync::Arc, time::Duration};

use idemgate_core::{
    Identity, ReceiptKey, Secret, SecretSet, SourceName, UnixTime,
    fingerprint::{BodyHash, delivery_key},
    job::JobState,
    retry::RetryPolicy,
    scheme::{RawDelivery, Scheme, StandardWebhooks},
};
use idemgate_store::{
    HandlerError, ReceiveRequest, SqliteReader, SqliteStore, Store, StoreOptions,
    jobs::ReplayFilter,
    sqlite::inbox::{NewEvent, accept_event},
};
use idemgate_testkit::{Destination, Step};
use idemgate_worker::{Clock, HttpDestination, ManualClock, Protection, Route, Worker, WorkerOptions};

pub const T0: UnixTime = UnixTime(1_800_000_000);
const SECRET: [u8; 32] = [5; 32];
pub const BODY: &[u8] = br#"{"type":"invoice.paid","id":"inv_1"}"#;

/// `at` in milliseconds, as the queue takes it.
pub fn ms(at: UnixTime) -> i64 {
    at.0 * 1000
}

pub struct Rig {
    pub store: Arc<SqliteStore>,
    pub clock: Arc<ManualClock>,
    pub worker: Worker,
    _dir: tempfile::TempDir,
}

impl Rig {
    /// The store's one door, [`Store`], over the rig's SQLite store (which the tests keep
    /// for its handlers: the outbox is a handler).
    pub fn shared(&self) -> Store {
        Store::from(Arc::clone(&self.store))
    }
}

/// A read connection to `store`'s file.
pub fn reader(store: &SqliteStore) -> SqliteReader {
    SqliteReader::open(store.path()).unwrap()
}

pub fn key(identity: &str) -> ReceiptKey {
    ReceiptKey { source: SourceName::new("src").unwrap(), identity: Identity::new(identity).unwrap() }
}

/// Stores one event `identity` with a job for destination `app`, as the gateway would.
pub async fn enqueue(store: &SqliteStore, identity: &str) {
    enqueue_as(store, identity, None).await;
}

/// [`enqueue`] with the outgoing id fixed at acceptance.
pub async fn enqueue_as(store: &SqliteStore, identity: &str, outgoing_id: Option<&'static str>) {
    let key = key(identity);
    let request =
        ReceiveRequest { key: key.clone(), body_hash: BodyHash::of(BODY), received_at: T0, dedupe_body: false };
    let outcome = store
        .receive(request, move |conn| {
            let event = NewEvent {
                key: &key,
                outgoing_id,
                event_type: None,
                content_type: Some("application/json"),
                headers: &[("x-original".into(), "kept".into())],
                body: BODY,
                ordering: None,
                received_at: T0,
            };
            accept_event(conn, &event, &["app"]).map_err(HandlerError::from)?;
            Ok(serde_json::json!(null))
        })
        .await;
    assert!(matches!(outcome, idemgate_core::Outcome::Applied { .. }), "{outcome:?}");
}

pub fn rig_with(destination: &Destination, schedule: &[u64], timeout: Duration) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("s.sqlite3"), StoreOptions::default()).unwrap());
    let http =
        HttpDestination::new(&destination.url(), Some(Secret::new(SECRET.to_vec())), Duration::from_secs(1), timeout)
            .unwrap();
    let policy = RetryPolicy {
        schedule: schedule.iter().copied().map(Duration::from_secs).collect(),
        jitter: 0.0,
        ..RetryPolicy::default()
    };
    let routes = HashMap::from([(
        "app".to_owned(),
        Route { deliver: Arc::new(http), policy, fifo: false, protection: Protection::default(), transform: None },
    )]);
    let clock = Arc::new(ManualClock::at(T0));
    let worker = Worker::new(
        Arc::clone(&store),
        routes,
        WorkerOptions { lease: Duration::from_secs(30), ..WorkerOptions::default() },
    )
    .with_clock(clock.clone())
    .with_draw(Arc::new(|| 0.5));
    Rig { store, clock, worker, _dir: dir }
}

pub fn job_state(rig: &Rig, identity: &str) -> (JobState, u32, UnixTime) {
    let jobs = reader(&rig.store).jobs(&key(identity)).unwrap();
    let job = &jobs[0];
    (job.state.parse().unwrap(), job.attempts, job.next_attempt_at)
}

pub fn attempts(rig: &Rig) -> Vec<(Option<u16>, Option<String>)> {
    let conn = rusqlite::Connection::open(rig.store.path()).unwrap();
    let mut stmt = conn.prepare("SELECT status, error FROM attempts ORDER BY id").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

#[tokio::test]
async fn fails_twice_then_succeeds_with_the_same_identity_and_a_valid_signature() {
    let destination = Destination::start(&[Step::Status(500), Step::Status(503)]);
    let rig = rig_with(&destination, &[5, 300], Duration::from_secs(2));
    enqueue(&rig.store, "evt_1").await;

    assert_eq!(rig.worker.tick().await.unwrap(), 1);
    assert_eq!(job_state(&rig, "evt_1"), (JobState::Retrying, 1, UnixTime(T0.0 + 5)));
    rig.clock.advance(4);
    assert_eq!(rig.worker.tick().await.unwrap(), 0, "not due before its time");
    rig.clock.advance(1);
    assert_eq!(rig.worker.tick().await.unwrap(), 1);
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Retrying);
    rig.clock.advance(300);
    assert_eq!(rig.worker.tick().await.unwrap(), 1);
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Succeeded);
    assert_eq!(rig.worker.tick().await.unwrap(), 0);

    let received = destination.received();
    assert_eq!(received.len(), 3);
    let expected_key = delivery_key(&key("evt_1"), "app");
    let scheme = StandardWebhooks::default();
    let secrets = SecretSet::new(vec![Secret::new(SECRET.to_vec())]).unwrap();
    for request in &received {
        assert_eq!(request.headers["webhook-id"], "evt_1");
        assert_eq!(request.headers["idempotency-key"], expected_key.as_str());
        assert_eq!(request.headers["content-type"], "application/json");
        assert_eq!(request.headers["x-original"], "kept");
        assert_eq!(&request.body[..], BODY);
        let ts: i64 = request.headers["webhook-timestamp"].to_str().unwrap().parse().unwrap();
        let verified =
            scheme.verify(&secrets, RawDelivery { headers: &request.headers, body: &request.body }, UnixTime(ts));
        assert!(verified.is_ok(), "the destination secret verifies every attempt: {verified:?}");
    }
    let statuses: Vec<_> = attempts(&rig).into_iter().map(|(s, _)| s).collect();
    assert_eq!(statuses, [Some(500), Some(503), Some(200)]);
}

#[tokio::test]
async fn the_outgoing_id_fixed_at_acceptance_is_the_signed_webhook_id_next_to_the_source_and_identity() {
    let destination = Destination::start(&[Step::Status(503)]);
    let rig = rig_with(&destination, &[5], Duration::from_secs(2));
    enqueue_as(&rig.store, "evt_1", Some("src:evt_1")).await;
    enqueue(&rig.store, "evt_2").await;
    assert_eq!(rig.worker.tick().await.unwrap(), 2);
    rig.clock.advance(5);
    assert_eq!(rig.worker.tick().await.unwrap(), 1, "the retry");

    let scheme = StandardWebhooks::default();
    let secrets = SecretSet::new(vec![Secret::new(SECRET.to_vec())]).unwrap();
    let mut seen: Vec<_> = destination
        .received()
        .iter()
        .map(|request| {
            let ts: i64 = request.headers["webhook-timestamp"].to_str().unwrap().parse().unwrap();
            let raw = RawDelivery { headers: &request.headers, body: &request.body };
            let verified = scheme.verify(&secrets, raw, UnixTime(ts)).unwrap();
            let header = |name: &str| request.headers[name].to_str().unwrap().to_owned();
            (verified.event_identity.unwrap(), header("idemgate-source"), header("idemgate-event-id"))
        })
        .collect();
    // Both go out in one tick, so either may be the one that meets the 503 and is retried.
    assert_eq!(seen.len(), 3, "two first attempts and one retry: {seen:?}");
    seen.sort();
    seen.dedup();
    let expected = [("evt_2", "src", "evt_2"), ("src:evt_1", "src", "evt_1")];
    let expected: Vec<_> =
        expected.iter().map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned())).collect();
    assert_eq!(
        seen, expected,
        "signed under the outgoing id on every attempt; an event without one keeps its identity"
    );
    for request in destination.received() {
        let identity = request.headers["idemgate-event-id"].to_str().unwrap();
        assert_eq!(request.headers["idempotency-key"], delivery_key(&key(identity), "app").as_str());
    }
}

#[tokio::test]
async fn a_timeout_and_a_closed_connection_are_retried() {
    let destination = Destination::start(&[Step::Sleep(Duration::from_secs(3)), Step::Close]);
    let rig = rig_with(&destination, &[5, 5], Duration::from_millis(300));
    enqueue(&rig.store, "evt_1").await;
    rig.worker.tick().await.unwrap();
    rig.clock.advance(5);
    rig.worker.tick().await.unwrap();
    rig.clock.advance(5);
    rig.worker.tick().await.unwrap();
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Succeeded);
    let errors: Vec<_> = attempts(&rig).into_iter().map(|(_, e)| e).collect();
    assert_eq!(errors[0].as_deref(), Some("timed out"));
    assert!(errors[1].as_deref().is_some_and(|e| e.starts_with("connection")), "{errors:?}");
    assert_eq!(errors[2], None);
}

#[tokio::test]
async fn retry_after_from_the_destination_is_honoured() {
    let destination = Destination::start(&[Step::RetryAfter(429, 120)]);
    let rig = rig_with(&destination, &[5], Duration::from_secs(2));
    enqueue(&rig.store, "evt_1").await;
    rig.worker.tick().await.unwrap();
    assert_eq!(job_state(&rig, "evt_1"), (JobState::Retrying, 1, UnixTime(T0.0 + 120)));
    rig.clock.advance(119);
    assert_eq!(rig.worker.tick().await.unwrap(), 0);
    rig.clock.advance(1);
    assert_eq!(rig.worker.tick().await.unwrap(), 1);
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Succeeded);
}

#[tokio::test]
async fn gone_disables_the_destination_until_it_is_enabled_again() {
    let destination = Destination::start(&[Step::Status(410)]);
    let rig = rig_with(&destination, &[5], Duration::from_secs(2));
    enqueue(&rig.store, "evt_1").await;
    enqueue(&rig.store, "evt_2").await;
    rig.worker.tick().await.unwrap();
    let after_gone = destination.received().len();
    assert!((1..=2).contains(&after_gone));
    for _ in 0..3 {
        rig.clock.advance(3600);
        assert_eq!(rig.worker.tick().await.unwrap(), 0, "a disabled destination gets nothing");
    }
    assert_eq!(destination.received().len(), after_gone);
    assert!(rig.shared().enable_destination("app".into(), rig.clock.now()).await.unwrap());
    rig.worker.tick().await.unwrap();
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Succeeded);
    assert_eq!(job_state(&rig, "evt_2").0, JobState::Succeeded);
}

#[tokio::test]
async fn a_destination_that_never_recovers_ends_dead_and_replay_delivers_later() {
    let destination = Destination::start(&[]);
    destination.otherwise(Step::Status(500));
    let rig = rig_with(&destination, &[5, 5], Duration::from_secs(2));
    enqueue(&rig.store, "evt_1").await;
    for _ in 0..3 {
        rig.worker.tick().await.unwrap();
        rig.clock.advance(5);
    }
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Dead);
    assert_eq!(rig.worker.tick().await.unwrap(), 0);

    destination.otherwise(Step::Status(200));
    let filter = ReplayFilter { source: Some("src".into()), ..ReplayFilter::default() };
    assert_eq!(rig.shared().replay_jobs(filter, rig.clock.now(), 100).await.unwrap(), 1);
    assert_eq!(rig.worker.tick().await.unwrap(), 1);
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Succeeded);
    let ids: Vec<_> = destination.received().iter().map(|r| r.headers["webhook-id"].clone()).collect();
    assert!(ids.iter().all(|id| id == "evt_1") && ids.len() == 4, "{ids:?}");
}

#[tokio::test]
async fn other_client_errors_are_final() {
    let destination = Destination::start(&[Step::Status(422)]);
    let rig = rig_with(&destination, &[5, 5], Duration::from_secs(2));
    enqueue(&rig.store, "evt_1").await;
    rig.worker.tick().await.unwrap();
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Dead);
    let jobs = reader(&rig.store).jobs(&key("evt_1")).unwrap();
    assert_eq!(jobs.len(), 1);
}
