//! The queue's own guarantees: fencing of late completions, outbox handlers in Rust.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use idemgate_core::{UnixTime, job::JobState, retry::Decision};
use idemgate_store::jobs::{AttemptRecord, Completion};
use idemgate_testkit::Destination;
use idemgate_worker::{AttemptOutcome, Deliver, Route, Worker, WorkerOptions, deliver::BoxFuture};

use crate::delivery::{T0, enqueue, job_state, ms, rig_with};

fn record() -> AttemptRecord {
    AttemptRecord {
        started_at: T0,
        latency: Duration::from_millis(1),
        status: Some(200),
        error: None,
        response_prefix: None,
    }
}

#[tokio::test]
async fn a_completion_after_its_lease_was_taken_over_changes_nothing() {
    let destination = Destination::start(&[]);
    let rig = rig_with(&destination, &[5], Duration::from_secs(1));
    enqueue(&rig.store, "evt_1").await;
    let first = rig.store.claim_jobs(ms(T0), Duration::from_secs(10), 10, vec![]).await.unwrap();
    assert_eq!(first.len(), 1);
    let not_yet = rig.store.claim_jobs(ms(UnixTime(T0.0 + 9)), Duration::from_secs(10), 10, vec![]).await.unwrap();
    assert!(not_yet.is_empty(), "the lease still holds");
    let second = rig.store.claim_jobs(ms(UnixTime(T0.0 + 10)), Duration::from_secs(10), 10, vec![]).await.unwrap();
    assert_eq!(second.len(), 1, "an expired lease is taken over");
    assert_eq!(second[0].attempt, 2);

    let newer = rig.store.complete_job(second[0].clone(), record(), Decision::Succeeded, ms(UnixTime(T0.0 + 11))).await;
    assert_eq!(newer.unwrap(), Completion::Recorded);
    let late = rig
        .store
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
    let routes = HashMap::from([("app".to_owned(), Route { deliver: recorder.clone(), policy, fifo: false })]);
    let worker = Worker::new(Arc::clone(&rig.store), routes, WorkerOptions::default()).with_clock(rig.clock.clone());
    worker.tick().await.unwrap();
    rig.clock.advance(10);
    worker.tick().await.unwrap();
    assert_eq!(*recorder.0.lock().unwrap(), ["evt_1", "evt_1"]);
    assert_eq!(job_state(&rig, "evt_1").0, JobState::Succeeded);
    assert!(destination.received().is_empty());
}
