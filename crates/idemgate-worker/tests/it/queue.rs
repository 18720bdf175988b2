//! The queue's own guarantees: fencing of late completions, outbox handlers in Rust.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use idemgate_core::{UnixTime, job::JobState, retry::Decision};
use idemgate_store::jobs::{AttemptRecord, Completion};
use idemgate_testkit::Destination;
use idemgate_worker::{AttemptOutcome, Deliver, Protection, Route, Worker, WorkerOptions, deliver::BoxFuture};

use crate::delivery::{T0, attempts, enqueue, job_state, ms, rig_with};

fn record() -> AttemptRecord {
    AttemptRecord {
        started_at: T0,
        latency: Duration::from_millis(1),
        status: Some(200),
        error: None,
        response_prefix: None,
        outcome: idemgate_core::retry::Attempted::Succeeded,
    }
}

#[tokio::test]
async fn a_completion_after_its_lease_was_taken_over_changes_nothing() {
    let destination = Destination::start(&[]);
    let rig = rig_with(&destination, &[5], Duration::from_secs(1));
    enqueue(&rig.store, "evt_1").await;
    let first = rig.shared().claim_jobs(ms(T0), Duration::from_secs(10), 10, vec![]).await.unwrap();
    assert_eq!(first.len(), 1);
    let not_yet = rig.shared().claim_jobs(ms(UnixTime(T0.0 + 9)), Duration::from_secs(10), 10, vec![]).await.unwrap();
    assert!(not_yet.is_empty(), "the lease still holds");
    let second = rig.shared().claim_jobs(ms(UnixTime(T0.0 + 10)), Duration::from_secs(10), 10, vec![]).await.unwrap();
    assert_eq!(second.len(), 1, "an expired lease is taken over");
    assert_eq!(second[0].attempt, 2);

    let newer =
        rig.shared().complete_job(second[0].clone(), record(), Decision::Succeeded, ms(UnixTime(T0.0 + 11))).await;
    assert_eq!(newer.unwrap(), Completion::Recorded);
    let late = rig
        .shared()
        .complete_job(
            first[0].clone(),
            record(),
            Decision::Dead(idemgate_core::retry::DeadReason::FinalStatus(400)),
            ms(UnixTime(T0.0 + 12)),
        )
        .await;
    assert_eq!(late.unwrap(), Completion::Stale);
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Succeeded);
}

/// A Rust job handler: the outbox for an application's own side effects.
#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<String>>);

impl Deliver for Recorder {
    fn deliver<'a>(
        &'a self,
        job: &'a idemgate_store::jobs::ClaimedJob,
        _now: UnixTime,
    ) -> BoxFuture<'a, AttemptOutcome> {
        Box::pin(async move {
            let mut seen = self.0.lock().unwrap();
            seen.push(job.key.identity.to_string());
            if seen.len() == 1 { AttemptOutcome::failed("first call fails") } else { AttemptOutcome::succeeded() }
        })
    }
}

#[tokio::test]
async fn a_rust_handler_registered_for_a_destination_gets_its_jobs_with_retries() {
    let destination = Destination::start(&[]);
    let rig = rig_with(&destination, &[5], Duration::from_secs(1));
    enqueue(&rig.store, "evt_1").await;
    let recorder = Arc::new(Recorder::default());
    let policy =
        idemgate_core::retry::RetryPolicy { schedule: vec![Duration::from_secs(5)], jitter: 0.0, ..Default::default() };
    let routes = HashMap::from([(
        "app".to_owned(),
        Route { deliver: recorder.clone(), policy, fifo: false, protection: Protection::default(), transform: None },
    )]);
    let worker = Worker::new(Arc::clone(&rig.store), routes, WorkerOptions::default()).with_clock(rig.clock.clone());
    worker.tick().await.unwrap();
    rig.clock.advance(10);
    worker.tick().await.unwrap();
    assert_eq!(*recorder.0.lock().unwrap(), ["evt_1", "evt_1"]);
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Succeeded);
    assert!(destination.received().is_empty());
}

#[tokio::test]
async fn a_rust_handlers_attempts_are_recorded_as_taken_or_refused_without_an_http_status() {
    let destination = Destination::start(&[]);
    let rig = rig_with(&destination, &[5], Duration::from_secs(1));
    enqueue(&rig.store, "evt_1").await;
    let policy =
        idemgate_core::retry::RetryPolicy { schedule: vec![Duration::from_secs(5)], jitter: 0.0, ..Default::default() };
    let routes = HashMap::from([(
        "app".to_owned(),
        Route {
            deliver: Arc::new(Recorder::default()),
            policy,
            fifo: false,
            protection: Protection::default(),
            transform: None,
        },
    )]);
    let worker = Worker::new(Arc::clone(&rig.store), routes, WorkerOptions::default()).with_clock(rig.clock.clone());
    worker.tick().await.unwrap();
    rig.clock.advance(10);
    worker.tick().await.unwrap();
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Succeeded);
    assert_eq!(attempts(&rig), [(None, Some("first call fails".to_owned())), (None, None)], "a handler is not HTTP");
}

/// A handler that says when an attempt started and finishes it only when told to.
#[derive(Debug)]
struct Held {
    name: &'static str,
    calls: Arc<Mutex<Vec<&'static str>>>,
    started: tokio::sync::Notify,
    release: tokio::sync::Semaphore,
}

impl Held {
    fn new(name: &'static str, calls: &Arc<Mutex<Vec<&'static str>>>, released: bool) -> Arc<Self> {
        let permits = if released { tokio::sync::Semaphore::MAX_PERMITS } else { 0 };
        Arc::new(Self {
            name,
            calls: Arc::clone(calls),
            started: tokio::sync::Notify::new(),
            release: tokio::sync::Semaphore::new(permits),
        })
    }
}

impl Deliver for Held {
    fn deliver<'a>(
        &'a self,
        _job: &'a idemgate_store::jobs::ClaimedJob,
        _now: UnixTime,
    ) -> BoxFuture<'a, AttemptOutcome> {
        Box::pin(async move {
            self.calls.lock().unwrap().push(self.name);
            self.started.notify_one();
            let _ = self.release.acquire().await;
            if self.name == "old" { AttemptOutcome::failed("old fails") } else { AttemptOutcome::succeeded() }
        })
    }
}

#[tokio::test]
async fn an_attempt_in_flight_when_the_routes_are_replaced_finishes_on_its_own_route() {
    let destination = Destination::start(&[]);
    let rig = rig_with(&destination, &[5], Duration::from_secs(1));
    enqueue(&rig.store, "evt_1").await;
    let calls = Arc::new(Mutex::new(Vec::new()));
    let (old, new) = (Held::new("old", &calls, false), Held::new("new", &calls, true));
    let retry_once =
        idemgate_core::retry::RetryPolicy { schedule: vec![Duration::from_secs(5)], jitter: 0.0, ..Default::default() };
    let route = |deliver: Arc<Held>, policy| {
        HashMap::from([(
            "app".to_owned(),
            Route { deliver, policy, fifo: false, protection: Protection::default(), transform: None },
        )])
    };
    let worker = Worker::new(Arc::clone(&rig.store), route(old.clone(), retry_once), WorkerOptions::default())
        .with_clock(rig.clock.clone());
    let ticking = tokio::spawn({
        let worker = worker.clone();
        async move { worker.tick().await.unwrap() }
    });
    old.started.notified().await;
    // The new route gives up after one attempt: were it applied to the attempt in flight,
    // the job would be dead instead of retrying.
    let give_up = idemgate_core::retry::RetryPolicy { schedule: vec![], ..Default::default() };
    worker.routes().replace(route(new.clone(), give_up));
    old.release.add_permits(1);
    assert_eq!(ticking.await.unwrap(), 1);
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Retrying, "decided by the old route's policy");
    rig.clock.advance(10);
    assert_eq!(worker.tick().await.unwrap(), 1);
    assert_eq!(*calls.lock().unwrap(), ["old", "new"]);
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Succeeded);
}
