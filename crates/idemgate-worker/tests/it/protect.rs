//! Protecting a destination over real HTTP: the circuit breaker pauses a destination that
//! keeps failing, lets only probes through while it is down and resumes it on the first
//! answer, losing no job; the rate limit (a bucket the store keeps) bounds how many
//! attempts a tick starts, and the in-flight cap how many the destination sees at once,
//! across concurrent batches; and
//! the store shows a destination throttled while its limits hold its jobs back.

use std::{collections::HashMap, sync::Arc, time::Duration};

use idemgate_core::{breaker::BreakerPolicy, job::JobState, retry::RetryPolicy};
use idemgate_store::{SqliteStore, Store, StoreOptions};
use idemgate_testkit::{Destination, Step};
use idemgate_worker::{HttpDestination, ManualClock, Protection, RateLimit, Route, Worker, WorkerOptions};

use crate::delivery::{T0, enqueue, key};

struct Rig {
    store: Arc<SqliteStore>,
    clock: Arc<ManualClock>,
    worker: Worker,
    _dir: tempfile::TempDir,
}

fn rig(destination: &Destination, protection: Protection, events: usize) -> impl Future<Output = Rig> {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("s.sqlite3"), StoreOptions::default()).unwrap());
    let http = HttpDestination::new(&destination.url(), None, Duration::from_secs(1), Duration::from_secs(5)).unwrap();
    let policy = RetryPolicy { schedule: vec![Duration::from_secs(1)], jitter: 0.0, ..RetryPolicy::default() };
    let routes = HashMap::from([(
        "app".to_owned(),
        Route { deliver: Arc::new(http), policy, fifo: false, protection, transform: None },
    )]);
    let clock = Arc::new(ManualClock::at(T0));
    let worker = Worker::new(
        Arc::clone(&store),
        routes,
        WorkerOptions { lease: Duration::from_secs(30), ..WorkerOptions::default() },
    )
    .with_clock(clock.clone())
    .with_draw(Arc::new(|| 0.5));
    async move {
        for n in 0..events {
            enqueue(&store, &format!("evt_{n}")).await;
        }
        Rig { store, clock, worker, _dir: dir }
    }
}

fn states(rig: &Rig, events: usize) -> Vec<JobState> {
    let reader = crate::delivery::reader(&rig.store);
    (0..events).map(|n| reader.jobs(&key(&format!("evt_{n}"))).unwrap()[0].state.parse().unwrap()).collect()
}

#[tokio::test]
async fn a_failing_destination_is_paused_gets_only_probes_and_resumes_by_itself_with_every_job_delivered() {
    let destination = Destination::start(&[Step::Status(500); 5]);
    let breaker =
        BreakerPolicy { pause_after_failures: Some(2), pause_after: None, probe_interval: Duration::from_secs(30) };
    let rig = rig(&destination, Protection { breaker: Some(breaker), ..Protection::default() }, 4).await;
    let store: Store = Arc::clone(&rig.store).into();

    assert_eq!(rig.worker.tick().await.unwrap(), 4);
    assert_eq!(destination.received().len(), 4);
    let health = store.destinations().await.unwrap().remove(0);
    assert_eq!(health.breaker.paused_at, Some(T0), "four failures in a row pause it");

    rig.clock.advance(5);
    assert_eq!(rig.worker.tick().await.unwrap(), 0, "its jobs are due but it is paused");
    rig.clock.advance(25);
    assert_eq!(rig.worker.tick().await.unwrap(), 1, "one probe after the interval");
    assert_eq!(rig.worker.tick().await.unwrap(), 0, "and only one");
    assert_eq!(destination.received().len(), 5, "the probe failed (the fifth 500)");
    assert!(
        states(&rig, 4).iter().all(|s| *s == JobState::Retrying),
        "no job died while it was down, though a schedule of one retry is used up"
    );

    rig.clock.advance(29);
    assert_eq!(rig.worker.tick().await.unwrap(), 0);
    rig.clock.advance(1);
    assert_eq!(rig.worker.tick().await.unwrap(), 1, "the next probe, which succeeds");
    assert_eq!(store.destinations().await.unwrap()[0].breaker, Default::default(), "resumed by itself");
    assert_eq!(rig.worker.tick().await.unwrap(), 3, "the waiting jobs go at once");
    assert_eq!(states(&rig, 4), [JobState::Succeeded; 4], "no job lost");
    assert_eq!(destination.received().len(), 9, "4 attempts, 2 probes, then 1 for each of the 3 other jobs");
}

#[tokio::test]
async fn a_tick_starts_no_more_attempts_than_the_rate_limit_allows() {
    let destination = Destination::start(&[]);
    let rate = RateLimit { per_second: 2.0, burst: 2 };
    let rig = rig(&destination, Protection { rate_limit: Some(rate), ..Protection::default() }, 7).await;

    assert_eq!(rig.worker.tick().await.unwrap(), 2, "the burst");
    assert_eq!(rig.worker.throttled(), ["app"]);
    assert_eq!(rig.worker.tick().await.unwrap(), 0, "no token left at the same instant");
    rig.clock.advance_ms(500);
    assert_eq!(rig.worker.tick().await.unwrap(), 1, "one token per half second");
    rig.clock.advance(1);
    assert_eq!(rig.worker.tick().await.unwrap(), 2);
    rig.clock.advance(10);
    assert_eq!(rig.worker.tick().await.unwrap(), 2, "after a quiet spell, no more than the burst");
    assert_eq!(destination.received().len(), 7);
    assert_eq!(states(&rig, 7), [JobState::Succeeded; 7], "every job was claimed only when it could start");
    rig.clock.advance(10);
    assert_eq!(rig.worker.tick().await.unwrap(), 0);
    assert!(rig.worker.throttled().is_empty(), "the last claim found fewer than it could take");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_destination_never_sees_more_attempts_at_once_than_the_cap_even_from_concurrent_batches() {
    let destination = Destination::start(&[]);
    destination.delay(Duration::from_millis(150));
    let rig = rig(&destination, Protection { max_in_flight: Some(2), ..Protection::default() }, 8).await;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let loops: Vec<_> = (0..3)
        .map(|_| {
            let (worker, stopped) = (rig.worker.clone(), stopped.clone());
            tokio::spawn(async move { worker.run(stopped).await })
        })
        .collect();
    let waiting = destination.clone();
    tokio::task::spawn_blocking(move || waiting.wait_until("every job delivered", |r| r.len() >= 8)).await.unwrap();
    let _ = stop.send(true);
    for run in loops {
        run.await.unwrap();
    }
    assert_eq!(destination.most_in_flight(), 2, "the cap, reached and never passed");
    assert_eq!(states(&rig, 8), [JobState::Succeeded; 8]);
    assert_eq!(destination.received().len(), 8, "each job delivered once");
}

#[tokio::test]
async fn the_bucket_outlives_a_reload_and_a_changed_limit_refills_it_at_its_own_pace() {
    let destination = Destination::start(&[]);
    let rate = RateLimit { per_second: 1.0, burst: 2 };
    let rig = rig(&destination, Protection { rate_limit: Some(rate), ..Protection::default() }, 8).await;
    assert_eq!(rig.worker.tick().await.unwrap(), 2);
    let reloaded = |rate: RateLimit| {
        let http =
            HttpDestination::new(&destination.url(), None, Duration::from_secs(1), Duration::from_secs(5)).unwrap();
        let route = Route {
            deliver: Arc::new(http),
            policy: RetryPolicy::default(),
            fifo: false,
            protection: Protection { rate_limit: Some(rate), ..Protection::default() },
            transform: None,
        };
        HashMap::from([("app".to_owned(), route)])
    };
    rig.worker.routes().replace(reloaded(rate));
    assert_eq!(rig.worker.tick().await.unwrap(), 0, "the same limit after a reload: its tokens are still spent");
    rig.worker.routes().replace(reloaded(RateLimit { per_second: 1.0, burst: 3 }));
    assert_eq!(rig.worker.tick().await.unwrap(), 0, "another limit is no fresh burst: the bucket is the store's");
    rig.clock.advance(10);
    assert_eq!(rig.worker.tick().await.unwrap(), 3, "the new burst, once the bucket refilled");
}

async fn throttled_since(rig: &Rig) -> Option<idemgate_core::UnixTime> {
    Store::from(Arc::clone(&rig.store))
        .destinations()
        .await
        .unwrap()
        .into_iter()
        .find(|d| d.name == "app")
        .and_then(|d| d.throttled_since)
}

#[tokio::test]
async fn the_store_shows_a_destination_throttled_from_its_first_held_back_claim_until_it_no_longer_is() {
    let destination = Destination::start(&[]);
    let rate = RateLimit { per_second: 1.0, burst: 1 };
    let rig = rig(&destination, Protection { rate_limit: Some(rate), ..Protection::default() }, 4).await;
    assert_eq!(rig.worker.tick().await.unwrap(), 1);
    assert_eq!(throttled_since(&rig).await, Some(T0), "recorded for the other processes");
    rig.clock.advance(1);
    assert_eq!(rig.worker.tick().await.unwrap(), 1);
    assert_eq!(throttled_since(&rig).await, Some(T0), "still throttled since the first held-back claim");
    rig.clock.advance(1);
    assert_eq!(rig.worker.tick().await.unwrap(), 1);
    rig.clock.advance(1);
    assert_eq!(rig.worker.tick().await.unwrap(), 1, "the last job");
    rig.clock.advance(1);
    assert_eq!(rig.worker.tick().await.unwrap(), 0);
    assert_eq!(throttled_since(&rig).await, None, "the claim found fewer than it could take");
    assert_eq!(states(&rig, 4), [JobState::Succeeded; 4]);
}

#[tokio::test]
async fn removing_a_destinations_limits_clears_its_throttled_mark() {
    let destination = Destination::start(&[]);
    let rate = RateLimit { per_second: 1.0, burst: 1 };
    let rig = rig(&destination, Protection { rate_limit: Some(rate), ..Protection::default() }, 3).await;
    assert_eq!(rig.worker.tick().await.unwrap(), 1);
    assert!(throttled_since(&rig).await.is_some());
    let http = HttpDestination::new(&destination.url(), None, Duration::from_secs(1), Duration::from_secs(5)).unwrap();
    let route = Route {
        deliver: Arc::new(http),
        policy: RetryPolicy::default(),
        fifo: false,
        protection: Protection::default(),
        transform: None,
    };
    rig.worker.routes().replace(HashMap::from([("app".to_owned(), route)]));
    assert_eq!(rig.worker.tick().await.unwrap(), 2, "no limit any more");
    assert_eq!(throttled_since(&rig).await, None, "the dropped throttle is cleared in the store");
}

/// Two workers with throttles of their own on one store, as two processes would be.
#[tokio::test]
async fn two_workers_on_one_store_share_one_rate_limit_and_the_one_given_no_room_keeps_the_mark() {
    let destination = Destination::start(&[]);
    let rate = RateLimit { per_second: 1.0, burst: 1 };
    let protection = Protection { rate_limit: Some(rate), ..Protection::default() };
    let rig = rig(&destination, protection, 4).await;
    let http = HttpDestination::new(&destination.url(), None, Duration::from_secs(1), Duration::from_secs(5)).unwrap();
    let route =
        Route { deliver: Arc::new(http), policy: RetryPolicy::default(), fifo: false, protection, transform: None };
    let other = Worker::new(
        Arc::clone(&rig.store),
        HashMap::from([("app".to_owned(), route)]),
        WorkerOptions { lease: Duration::from_secs(30), ..WorkerOptions::default() },
    )
    .with_clock(rig.clock.clone());

    assert_eq!(rig.worker.tick().await.unwrap(), 1, "the burst");
    assert_eq!(other.tick().await.unwrap(), 0, "spent by the first worker");
    assert_eq!(throttled_since(&rig).await, Some(T0), "a worker given no room does not clear the mark");
    rig.clock.advance(1);
    assert_eq!(other.tick().await.unwrap(), 1, "the next token, whichever worker takes it");
    assert_eq!(rig.worker.tick().await.unwrap(), 0);
    rig.clock.advance(1);
    assert_eq!(rig.worker.tick().await.unwrap(), 1);
    assert_eq!(destination.received().len(), 3, "one a second over both workers");
}
