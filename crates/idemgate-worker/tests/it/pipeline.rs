//! One destination that is down holds up no other: with one destination blackholed (a
//! listener that accepts the connection and never answers) or refusing connections, the
//! worker starts each job of a healthy destination within a poll interval (plus a generous
//! allowance for its latency) of its accept, on SQLite (where jobs are also handed over in
//! memory) and on PostgreSQL, and every event reaches the healthy destination exactly once.
//! The destination that is down never holds more than its share of the worker's room.

use std::{
    collections::{BTreeMap, HashMap},
    net::{Shutdown, SocketAddr, TcpListener, TcpStream},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{Duration, Instant, SystemTime},
};

use idemgate_core::{BodyHash, Identity, Outcome, ReceiptKey, SourceName, UnixTime, retry::RetryPolicy};
use idemgate_store::{
    PgOptions, PgStore, ReceiveRequest, SqliteStore, Store, StoreOptions, create_schema, inbox::IncomingEvent,
};
use idemgate_testkit::Destination;
use idemgate_worker::{HttpDestination, Protection, Route, Worker, WorkerOptions};

/// The worker's poll interval.
const POLL: Duration = Duration::from_millis(200);
/// What the healthy destination may take on top of a poll interval: generous for a slow,
/// shared machine, and still a small fraction of [`HANG`].
const MARGIN: Duration = Duration::from_secs(5);
/// The down destination's timeout: far beyond the bound asserted, so that a worker that
/// waits for its attempts cannot meet the bound by luck.
const HANG: Duration = Duration::from_secs(120);
/// Events sent, each to both destinations.
const EVENTS: usize = 10;
/// The most attempts in flight at once, and one destination's share of them: fewer than
/// [`EVENTS`], so the blackholed destination fills its share and has jobs left waiting.
const ROOM: usize = 8;
const SHARE: usize = 3;

/// A destination that is down.
enum Down {
    /// Accepts every connection and never answers, until released: then it closes them,
    /// and every later one at once.
    Blackhole { addr: SocketAddr, held: Arc<Mutex<Vec<TcpStream>>>, released: Arc<AtomicBool>, most: Arc<AtomicUsize> },
    /// Nothing listens on its port: every connection is refused.
    Refusing { addr: SocketAddr },
}

impl Down {
    fn blackhole() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let held: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (released, most) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let (holding, releasing, counting) = (Arc::clone(&held), Arc::clone(&released), Arc::clone(&most));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if releasing.load(Ordering::SeqCst) {
                    continue;
                }
                let mut held = holding.lock().unwrap();
                held.push(stream);
                counting.fetch_max(held.len(), Ordering::SeqCst);
            }
        });
        Self::Blackhole { addr, held, released, most }
    }

    fn refusing() -> Self {
        let addr = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        Self::Refusing { addr }
    }

    fn url(&self) -> String {
        let (Self::Blackhole { addr, .. } | Self::Refusing { addr }) = self;
        format!("http://{addr}/hook")
    }

    /// Closes what a blackhole holds, so the attempts it hangs end now.
    fn release(&self) {
        if let Self::Blackhole { held, released, .. } = self {
            released.store(true, Ordering::SeqCst);
            for stream in held.lock().unwrap().drain(..) {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    }
}

fn key(identity: &str) -> ReceiptKey {
    ReceiptKey { source: SourceName::new("src").unwrap(), identity: Identity::new(identity).unwrap() }
}

fn body(identity: &str) -> Vec<u8> {
    format!(r#"{{"n":"{identity}"}}"#).into_bytes()
}

/// Accepts `identity` for both destinations, as the gateway would.
async fn accept(store: &Store, identity: &str) {
    accept_for(store, identity, &["down", "app"]).await;
}

fn route(url: &str, timeout: Duration) -> Route {
    let http = HttpDestination::new(url, None, Duration::from_secs(5), timeout).unwrap();
    let policy = RetryPolicy { schedule: vec![Duration::from_secs(1); 50], jitter: 0.0, ..RetryPolicy::default() };
    Route { deliver: Arc::new(http), policy, fifo: false, protection: Protection::default(), transform: None }
}

fn options() -> WorkerOptions {
    WorkerOptions {
        lease: HANG * 2,
        poll_interval: POLL,
        max_in_flight: ROOM,
        destination_max_in_flight: SHARE,
        ..WorkerOptions::default()
    }
}

/// When `app` first received `identity`'s body, waiting until `deadline` at most.
fn first_attempt(app: &Destination, identity: &str, deadline: Instant) -> Option<Instant> {
    let wanted = body(identity);
    loop {
        if let Some(received) = app.received().into_iter().find(|r| r.body == wanted) {
            return Some(received.at);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

async fn the_healthy_destination_is_not_held_up(store: Store, down: Down) {
    let app = Destination::start(&[]);
    let routes =
        HashMap::from([("down".to_owned(), route(&down.url(), HANG)), ("app".to_owned(), route(&app.url(), HANG))]);
    let worker = Worker::new(store.clone(), routes, options());
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let running = tokio::spawn({
        let worker = worker.clone();
        async move { worker.run(stopped).await }
    });

    let bound = POLL + MARGIN;
    let mut longest = Duration::ZERO;
    for n in 0..EVENTS {
        let identity = format!("evt_{n}");
        let accepted = Instant::now();
        accept(&store, &identity).await;
        let (waiting, id) = (app.clone(), identity.clone());
        let first = tokio::task::spawn_blocking(move || first_attempt(&waiting, &id, accepted + bound)).await.unwrap();
        let waited = first.map(|at| at.saturating_duration_since(accepted));
        assert!(
            waited.is_some_and(|waited| waited < bound),
            "{identity} reached the healthy destination after {waited:?} (bound {bound:?}) while the other was down"
        );
        longest = longest.max(waited.unwrap_or_default());
    }
    eprintln!("the longest time from accept to the healthy destination's attempt: {longest:?}");
    if let Down::Blackhole { held, most, .. } = &down {
        assert_eq!(held.lock().unwrap().len(), SHARE, "the blackholed destination holds its full share");
        assert_eq!(most.load(Ordering::SeqCst), SHARE, "and never more than its share");
    }

    down.release();
    let _ = stop.send(true);
    running.await.unwrap();
    let mut counts = BTreeMap::new();
    for received in app.received() {
        *counts.entry(String::from_utf8(received.body).unwrap()).or_insert(0) += 1;
    }
    let expected: BTreeMap<_, _> =
        (0..EVENTS).map(|n| (String::from_utf8(body(&format!("evt_{n}"))).unwrap(), 1)).collect();
    assert_eq!(counts, expected, "every event reached the healthy destination exactly once");
    for n in 0..EVENTS {
        let jobs = store.jobs(key(&format!("evt_{n}"))).await.unwrap();
        let state = |name: &str| jobs.iter().find(|job| job.destination == name).map(|job| job.state.clone());
        assert_eq!(state("app").as_deref(), Some("succeeded"), "evt_{n}: {jobs:?}");
        assert!(
            matches!(state("down").as_deref(), Some("pending" | "retrying")),
            "evt_{n}'s job for the destination that is down waits for its next attempt: {jobs:?}"
        );
    }
}

pub async fn sqlite() -> (Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("s.sqlite3"), StoreOptions::default()).unwrap();
    (Arc::new(store).into(), dir)
}

pub async fn postgres() -> Store {
    let base = std::env::var("IDEMGATE_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/idemgate_test".to_owned());
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().subsec_nanos();
    let schema = format!("pipeline_{}_{nanos}", std::process::id());
    let url = create_schema(&base, &schema)
        .await
        .unwrap_or_else(|err| panic!("PostgreSQL is needed at {base} (set IDEMGATE_TEST_POSTGRES): {err}"));
    let options = PgOptions { pool_size: 8, wait_timeout: Duration::from_secs(10) };
    PgStore::connect(&url, options).await.unwrap().into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blackholed_destination_holds_up_no_other_on_sqlite() {
    let (store, _dir) = sqlite().await;
    the_healthy_destination_is_not_held_up(store, Down::blackhole()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blackholed_destination_holds_up_no_other_on_postgres() {
    the_healthy_destination_is_not_held_up(postgres().await, Down::blackhole()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_destination_holds_up_no_other_on_sqlite() {
    let (store, _dir) = sqlite().await;
    the_healthy_destination_is_not_held_up(store, Down::refusing()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_destination_holds_up_no_other_on_postgres() {
    the_healthy_destination_is_not_held_up(postgres().await, Down::refusing()).await;
}

/// A job the store hands over while its destination has no room waits at most half its
/// lease. Started later, its attempt could still run when the lease expires, and a claim
/// racing for the room it frees could take the job over and send it again. Here the
/// destination's share is one and its first attempt takes three quarters of the lease, so
/// the second job, handed over behind it, is given up unsent and left to its lease: the
/// claim that takes it afterwards delivers it, and each event arrives exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_job_that_waits_for_room_past_half_its_lease_is_left_to_a_claim_and_sent_once() {
    const LEASE: Duration = Duration::from_secs(4);
    let (store, _dir) = sqlite().await;
    let slow = Destination::start(&[]);
    slow.delay(LEASE * 3 / 4);
    let routes = HashMap::from([("slow".to_owned(), route(&slow.url(), LEASE))]);
    let options = WorkerOptions {
        lease: LEASE,
        poll_interval: POLL,
        max_in_flight: ROOM,
        destination_max_in_flight: 1,
        ..WorkerOptions::default()
    };
    let worker = Worker::new(store.clone(), routes, options);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let running = tokio::spawn({
        let worker = worker.clone();
        async move { worker.run(stopped).await }
    });
    // The worker offers its hand-over as it starts: once a first event has been delivered
    // and recorded, the hand-over is in place and the destination's share is free.
    accept_for(&store, "warm-up", &["slow"]).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let jobs = store.jobs(key("warm-up")).await.unwrap();
        if jobs.iter().all(|job| job.state == "succeeded") {
            break;
        }
        assert!(Instant::now() < deadline, "the warm-up event was not delivered: {jobs:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for identity in ["first", "second"] {
        accept_for(&store, identity, &["slow"]).await;
    }
    let waiting = slow.clone();
    tokio::task::spawn_blocking(move || {
        waiting.wait_until("both events", |received| received.len() >= 3);
    })
    .await
    .unwrap();
    // Long enough for a second copy of either to arrive, had one been sent.
    tokio::time::sleep(LEASE * 2).await;
    let _ = stop.send(true);
    running.await.unwrap();
    let mut counts = BTreeMap::new();
    for received in slow.received() {
        *counts.entry(String::from_utf8(received.body).unwrap()).or_insert(0) += 1;
    }
    let expected: BTreeMap<_, _> =
        ["warm-up", "first", "second"].iter().map(|id| (String::from_utf8(body(id)).unwrap(), 1)).collect();
    assert_eq!(counts, expected, "each event reached the destination exactly once");
    let second = store.jobs(key("second")).await.unwrap();
    assert_eq!(
        second.iter().map(|job| (job.state.as_str(), job.attempts)).collect::<Vec<_>>(),
        [("succeeded", 2)],
        "the second job's hand-over was given up unsent (its lease counts as attempt 1) and the claim after \
         its lease delivered it: {second:?}"
    );
}

/// Accepts `identity` for the destinations `to`.
async fn accept_for(store: &Store, identity: &str, to: &[&str]) {
    let body = body(identity);
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    let request = ReceiveRequest {
        key: key(identity),
        body_hash: BodyHash::of(&body),
        received_at: UnixTime(i64::try_from(now).unwrap()),
        dedupe_body: false,
    };
    let event = IncomingEvent {
        result: serde_json::json!({ "event": identity }),
        outgoing_id: None,
        event_type: None,
        content_type: Some("application/json".to_owned()),
        headers: Vec::new(),
        body: body.into(),
        ordering: None,
        destinations: to.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>().into(),
        dead: Vec::new(),
        refusal: None,
    };
    let outcome = store.accept(request, event).await;
    assert!(matches!(outcome, Outcome::Applied { .. }), "{identity}: {outcome:?}");
}
