//! The hand-over: on SQLite a job accepted while this process's worker takes hand-overs
//! is stored leased and goes to the worker once its commit is durable; everything the
//! worker could not start at once waits for a claim, as does every job on PostgreSQL.

use std::{sync::Arc, time::Duration};

use idemgate_core::{Outcome, UnixTime, retry::Decision};
use idemgate_store::{
    Store,
    jobs::{AttemptRecord, ClaimedJob, Completion},
    sqlite::handover::{Eligible, HandedOver, Handover},
};

use crate::{T0, accept_at, event, key, ms, postgres, request, sqlite};

const LEASE: Duration = Duration::from_secs(30);

/// A hand-over with room for `room` jobs, for the destination `app` only, attached to `store`.
fn hand_over(store: &Store, room: usize) -> HandedOver {
    let (handover, handed) = Handover::new(room, LEASE, Eligible::of(["app"]));
    store.hand_over_to(Some(handover));
    handed
}

async fn claim(store: &Store, at: UnixTime) -> Vec<ClaimedJob> {
    store.claim_jobs(ms(at), LEASE, 100, Vec::new()).await.unwrap()
}

fn delivered() -> AttemptRecord {
    AttemptRecord {
        started_at: T0,
        latency: Duration::from_millis(3),
        status: Some(200),
        error: None,
        response_prefix: None,
        outcome: idemgate_core::retry::Attempted::Succeeded,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_handed_over_is_leased_as_its_first_claim_would_leave_it_and_not_claimed_while_leased() {
    let t = sqlite().await;
    let mut handed = hand_over(&t, 4);
    accept_at(&t, "e1", &["app", "audit"], T0).await;
    let job = handed.try_recv().expect("the app's job is handed over once the accept has returned");
    assert!(handed.try_recv().is_none(), "audit is not a destination the worker takes at once");
    assert_eq!((job.attempt, job.lease_token, job.destination.as_str(), job.key.clone()), (1, 1, "app", key("e1")));
    assert_eq!(job.body, &b"{\"n\":\"e1\"}"[..]);
    assert_eq!(job.content_type.as_deref(), Some("application/json"));
    assert_eq!(job.event_type.as_deref(), Some("order.created"));
    assert_eq!(job.headers, [("x-trace".to_owned(), "abc".to_owned())]);
    assert_eq!(job.outgoing_id, "e1");
    let jobs = t.jobs(key("e1")).await.unwrap();
    let states: Vec<_> = jobs.iter().map(|j| (j.destination.as_str(), j.state.as_str(), j.attempts)).collect();
    assert_eq!(states, [("app", "running", 1), ("audit", "pending", 0)]);

    let claimed = claim(&t, T0).await;
    assert_eq!(claimed.iter().map(|j| j.destination.as_str()).collect::<Vec<_>>(), ["audit"]);
    assert!(claim(&t, UnixTime(T0.0 + 29)).await.is_empty(), "the hand-over's lease holds");
    let completion = t.complete_job(job, delivered(), Decision::Succeeded, ms(T0)).await.unwrap();
    assert_eq!(completion, Completion::Recorded, "the handed-over job's lease is its own");
    assert_eq!(t.jobs(key("e1")).await.unwrap()[0].state, "succeeded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jobs_handed_over_for_one_event_share_one_copy_of_its_body() {
    let t = sqlite().await;
    let (handover, mut handed) = Handover::new(4, LEASE, Eligible::of(["app", "billing"]));
    t.hand_over_to(Some(handover));
    accept_at(&t, "e1", &["app", "billing"], T0).await;
    let (first, second) = (handed.try_recv().unwrap(), handed.try_recv().unwrap());
    assert_eq!([first.body.as_ref(), second.body.as_ref()], [&b"{\"n\":\"e1\"}"[..]; 2]);
    assert_eq!(first.body.as_ptr(), second.body.as_ptr(), "one buffer for the event, not a copy per destination");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_job_whose_worker_died_is_claimed_again_when_its_lease_expires() {
    let t = sqlite().await;
    let mut handed = hand_over(&t, 4);
    accept_at(&t, "e1", &["app"], T0).await;
    let lost = handed.try_recv().unwrap();
    drop(handed);
    t.hand_over_to(None);
    assert!(claim(&t, UnixTime(T0.0 + 29)).await.is_empty());
    let again = claim(&t, UnixTime(T0.0 + 31)).await;
    assert_eq!(again.len(), 1, "nothing accepted is lost with the worker");
    assert_eq!((again[0].id, again[0].attempt, again[0].lease_token), (lost.id, 2, 2));
    let stale = t.complete_job(lost, delivered(), Decision::Succeeded, ms(T0)).await.unwrap();
    assert_eq!(stale, Completion::Stale, "the dead worker's lease is fenced off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_room_or_for_a_disabled_or_paused_destination_a_job_waits_for_its_claim() {
    let t = sqlite().await;
    let mut handed = hand_over(&t, 1);
    accept_at(&t, "e1", &["app"], T0).await;
    accept_at(&t, "e2", &["app"], T0).await;
    assert_eq!(handed.try_recv().map(|job| job.key), Some(key("e1")));
    assert!(handed.try_recv().is_none(), "there was room for one");
    assert_eq!(t.jobs(key("e2")).await.unwrap()[0].state, "pending");

    t.execute_raw("INSERT INTO destinations (name, disabled_at, disabled_reason) VALUES ('app', 1, '410 Gone')", "")
        .await;
    accept_at(&t, "e3", &["app"], T0).await;
    assert!(handed.try_recv().is_none(), "a disabled destination's job is not handed over");
    assert_eq!(t.jobs(key("e3")).await.unwrap()[0].state, "pending");

    t.execute_raw("UPDATE destinations SET disabled_at = NULL, disabled_reason = NULL, paused_at_ms = 1", "").await;
    accept_at(&t, "e4", &["app"], T0).await;
    assert!(handed.try_recv().is_none(), "a paused destination's job is not handed over");
    assert_eq!(t.jobs(key("e4")).await.unwrap()[0].state, "pending");

    handed.close();
    t.execute_raw("UPDATE destinations SET paused_at_ms = NULL", "").await;
    accept_at(&t, "e5", &["app"], T0).await;
    assert_eq!(handed.recv().await, None, "a closed hand-over takes no more offers");
    assert_eq!(t.jobs(key("e5")).await.unwrap()[0].state, "pending");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeat_a_refused_delivery_and_a_superseded_event_hand_nothing_over() {
    let t = sqlite().await;
    let mut handed = hand_over(&t, 8);
    accept_at(&t, "e1", &["app"], T0).await;
    assert!(handed.try_recv().is_some());
    let repeat = t.accept(request("e1", b"{\"n\":\"e1\"}"), event("e1", b"{\"n\":\"e1\"}", &["app"])).await;
    assert!(matches!(repeat, Outcome::Duplicate { .. }), "{repeat:?}");
    let refused = idemgate_store::inbox::IncomingEvent {
        refusal: Some("event type is not accepted by this source"),
        ..event("e2", b"{}", &["app"])
    };
    assert!(matches!(t.accept(request("e2", b"{}"), refused).await, Outcome::Refused { .. }));
    assert!(t.jobs(key("e2")).await.unwrap().is_empty());

    let newer = crate::ordered("e3", b"{}", "order-1", idemgate_store::inbox::Version::Int(2));
    assert!(matches!(t.accept(request("e3", b"{}"), newer).await, Outcome::Applied { .. }));
    assert!(handed.try_recv().is_some(), "the newer version is handed over");
    let older = crate::ordered("e4", b"{}", "order-1", idemgate_store::inbox::Version::Int(1));
    assert!(matches!(t.accept(request("e4", b"{}"), older).await, Outcome::Applied { .. }));
    assert_eq!(t.jobs(key("e4")).await.unwrap()[0].state, "superseded");
    assert!(handed.try_recv().is_none(), "a repeat, a refusal and a superseded event hand nothing over");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stores_every_job_for_a_claim_even_while_a_worker_takes_hand_overs() {
    let t = postgres().await;
    let mut handed = hand_over(&t, 4);
    accept_at(&t, "e1", &["app"], T0).await;
    assert!(handed.try_recv().is_none());
    assert_eq!(claim(&t, T0).await.len(), 1);
}

/// A SQLite store at `path`, opened as a writer process opens it.
fn open_at(path: &std::path::Path) -> Store {
    Arc::new(idemgate_store::SqliteStore::open(path, idemgate_store::StoreOptions::default()).unwrap()).into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_that_opens_the_store_alone_makes_the_leases_of_a_gone_process_due_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite3");
    let first = open_at(&path);
    let mut handed = hand_over(&first, 4);
    accept_at(&first, "e1", &["app"], T0).await;
    let lost = handed.try_recv().unwrap();

    let second = open_at(&path);
    assert!(claim(&second, T0).await.is_empty(), "while its writer is open, the lease holds");
    second.close().await;

    drop(handed);
    first.hand_over_to(None);
    first.close().await;
    let restarted = open_at(&path);
    let again = claim(&restarted, T0).await;
    assert_eq!(again.len(), 1, "due at once, not when the lease would have ended");
    assert_eq!((again[0].id, again[0].attempt, again[0].lease_token), (lost.id, 2, 2));
    let stale = restarted.complete_job(lost, delivered(), Decision::Succeeded, ms(T0)).await.unwrap();
    assert_eq!(stale, Completion::Stale, "the gone process's lease stays fenced off");
}
