//! The provider's own tools publish to `/api/v1` of a real `idemgate serve` (issue 37 item
//! 7): `Client::publish` and `idemgate send --api` keep one `Idempotency-Key` across their
//! retries, so an answer lost on the way back, or a repeat refused with `409` while the
//! first request is still in flight, ends with the one message; a key reused for another
//! payload is a final refusal. On SQLite and PostgreSQL; messages are counted through the
//! Svix SDK.

use std::{
    net::SocketAddr,
    process::{Command, Output},
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use idemgate_client::{Client, ClientOptions, NoAnswer, Publish, Published};
use serde_json::{Value, json};
use svix::models::ApplicationIn;
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::Notify,
};

use crate::{
    gateway_harness::{Gateway, Setup, idemgate_bin},
    outbound_api::{ADMIN_TOKEN, API, Backend, PUBLISH_TOKEN, sdk, serve_with_env},
};

/// One answer as the relay saw it: status, headers (names lowercase) and body.
#[derive(Debug, Clone)]
struct Seen {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// What a relay shares with its connections.
#[derive(Default)]
struct Log {
    /// Requests forwarded in full.
    forwarded: AtomicUsize,
    /// Answers still to be lost: read in full from the gateway, then the client's
    /// connection closed instead of the answer.
    to_lose: AtomicUsize,
    answers: Mutex<Vec<Seen>>,
    changed: Notify,
}

/// A loopback TCP relay in front of the gateway that forwards each request whole, records
/// each answer, and can lose answers: the gateway finishes the request, the client hears
/// nothing but a closed connection.
struct Relay {
    addr: SocketAddr,
    log: Arc<Log>,
}

impl Relay {
    async fn start(upstream: SocketAddr, lose: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Log { to_lose: AtomicUsize::new(lose), ..Log::default() });
        let shared = Arc::clone(&log);
        tokio::spawn(async move {
            loop {
                let (client, _) = listener.accept().await.unwrap();
                tokio::spawn(relay(client, upstream, Arc::clone(&shared)));
            }
        });
        Self { addr, log }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn answers(&self) -> Vec<Seen> {
        self.log.answers.lock().unwrap().clone()
    }

    /// Waits until `done` holds of the relay's log.
    async fn until(&self, what: &str, done: impl Fn(&Log) -> bool) {
        let waited = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let changed = self.log.changed.notified();
                if done(&self.log) {
                    return;
                }
                changed.await;
            }
        });
        waited.await.unwrap_or_else(|_| panic!("the relay never saw {what}"));
    }
}

/// One client connection: request by request, each forwarded whole and its answer read
/// whole before it is passed back (or lost).
async fn relay(mut client: TcpStream, upstream: SocketAddr, log: Arc<Log>) {
    let mut gateway = TcpStream::connect(upstream).await.unwrap();
    let (mut from_client, mut from_gateway) = (Vec::new(), Vec::new());
    while let Some(request) = message(&mut client, &mut from_client).await {
        gateway.write_all(&request).await.unwrap();
        log.forwarded.fetch_add(1, Ordering::SeqCst);
        log.changed.notify_waiters();
        let answer = message(&mut gateway, &mut from_gateway).await.expect("the gateway answers");
        log.answers.lock().unwrap().push(seen(&answer));
        log.changed.notify_waiters();
        if log.to_lose.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
            return;
        }
        client.write_all(&answer).await.unwrap();
    }
}

/// The next whole HTTP/1.1 message (head and `Content-Length` body) read from `stream`,
/// `buffer` keeping what came after it; `None` when the stream ends first.
async fn message(stream: &mut (impl AsyncRead + Unpin), buffer: &mut Vec<u8>) -> Option<Vec<u8>> {
    loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            assert!(!head.contains("transfer-encoding"), "the relay reads Content-Length bodies only: {head}");
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .map_or(0, |n| n.trim().parse::<usize>().unwrap());
            if buffer.len() >= end + 4 + length {
                let rest = buffer.split_off(end + 4 + length);
                return Some(std::mem::replace(buffer, rest));
            }
        }
        let mut chunk = [0; 8192];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

fn seen(answer: &[u8]) -> Seen {
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&answer[..end]);
    let mut lines = head.lines();
    let status = lines.next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    Seen { status, headers, body: answer[end + 4..].to_vec() }
}

/// `idemgate serve` with `[api]` on `backend` (SQLite's writer waits up to a minute for a
/// lock held by the test) and the application `shop`.
async fn serve_shop(backend: Backend) -> (Setup, Gateway, Option<String>) {
    let (setup, gateway, url) = serve_with_env(backend, API, &[("IDEMGATE_STORE__BUSY_TIMEOUT", "60s")]);
    let app = ApplicationIn { uid: Some("shop".to_owned()), ..ApplicationIn::new("Shop".to_owned()) };
    sdk(&gateway, ADMIN_TOKEN).application().create(app, None).await.unwrap();
    (setup, gateway, url)
}

/// A client that retries quickly and waits long for one answer.
fn client() -> Client {
    Client::new(ClientOptions {
        max_attempts: 40,
        base_delay: Duration::from_millis(50),
        max_delay: Duration::from_millis(500),
        timeout: Duration::from_secs(90),
    })
    .unwrap()
}

async fn publish(message: Publish) -> Result<Published, idemgate_client::PublishError> {
    client().publish(message).await
}

fn order(api_url: String, key: Option<&str>, payload: Value) -> Publish {
    Publish {
        api_url,
        token: PUBLISH_TOKEN.to_owned(),
        app: "shop".to_owned(),
        event_type: "order.paid".to_owned(),
        payload: payload.to_string().into_bytes(),
        event_id: None,
        channels: Vec::new(),
        idempotency_key: key.map(str::to_owned),
    }
}

/// The ids of `shop`'s messages, read through the SDK.
async fn message_ids(gateway: &Gateway) -> Vec<String> {
    let listed = sdk(gateway, ADMIN_TOKEN).message().list("shop".to_owned(), None).await.unwrap();
    listed.data.into_iter().map(|message| message.id).collect()
}

async fn a_lost_answer(backend: Backend) {
    let (_setup, gateway, _) = serve_shop(backend).await;
    let relay = Relay::start(gateway.addr, 1).await;
    let published = client().publish(order(relay.url(), None, json!({"order": 7, "amount": 1.10}))).await.unwrap();
    let attempts = &published.sent.attempts;
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert!(matches!(attempts[0].error, Some(NoAnswer::Lost(_))), "the first answer was lost: {attempts:?}");
    let answers = relay.answers();
    assert_eq!(answers.iter().map(|seen| seen.status).collect::<Vec<_>>(), [202, 202]);
    assert_eq!(answers[0].header("idempotency-replay"), None, "the first answer ran the request");
    assert_eq!(answers[1].header("idempotency-replay"), Some("true"), "the retry is its replay");
    assert!(published.replayed);
    assert_eq!(message_ids(&gateway).await, [published.message_id], "exactly one message");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_whose_answer_is_lost_is_retried_with_its_key_into_one_message_on_sqlite() {
    a_lost_answer(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_whose_answer_is_lost_is_retried_with_its_key_into_one_message_on_postgres() {
    a_lost_answer(Backend::Postgres).await;
}

/// A lock the test holds on the store, so that the first publish's commit waits: on
/// SQLite the database's write lock (`BEGIN IMMEDIATE`; the gateway's one writer waits for
/// it, with every write queued behind), on PostgreSQL the application's row `FOR UPDATE`
/// (a message's transaction takes it `FOR SHARE`; the key's record is written without it).
enum Hold {
    Sqlite(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>),
    Postgres(tokio_postgres::Client),
}

impl Hold {
    async fn take(backend: Backend, setup: &Setup, url: Option<&str>) -> Self {
        match backend {
            Backend::Sqlite => {
                let (taken, held) = std::sync::mpsc::channel();
                let (release, released) = std::sync::mpsc::channel();
                let db = setup.db();
                let holder = std::thread::spawn(move || {
                    let conn = rusqlite::Connection::open(db).unwrap();
                    conn.busy_timeout(Duration::from_secs(30)).unwrap();
                    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
                    taken.send(()).unwrap();
                    released.recv().unwrap();
                    conn.execute_batch("ROLLBACK").unwrap();
                });
                tokio::task::spawn_blocking(move || held.recv().unwrap()).await.unwrap();
                Self::Sqlite(release, holder)
            }
            Backend::Postgres => {
                let (client, connection) = tokio_postgres::connect(url.unwrap(), tokio_postgres::NoTls).await.unwrap();
                tokio::spawn(connection);
                client.batch_execute("BEGIN; SELECT id FROM applications WHERE uid = 'shop' FOR UPDATE").await.unwrap();
                Self::Postgres(client)
            }
        }
    }

    /// Waits until the first publish is held: on PostgreSQL until a session waits for this
    /// one's lock; on SQLite, where nothing tells, a moment after its request was relayed.
    async fn until_waited_for(&self, relay: &Relay) {
        relay.until("the first request", |log| log.forwarded.load(Ordering::SeqCst) == 1).await;
        match self {
            Self::Sqlite(..) => tokio::time::sleep(Duration::from_secs(2)).await,
            Self::Postgres(client) => {
                let blocked =
                    "SELECT count(*) FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))";
                for _ in 0..600 {
                    let count: i64 = client.query_one(blocked, &[]).await.unwrap().get(0);
                    if count > 0 {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                panic!("the first publish never waited for the test's lock");
            }
        }
    }

    async fn release(self) {
        match self {
            Self::Sqlite(release, holder) => {
                release.send(()).unwrap();
                tokio::task::spawn_blocking(move || holder.join().unwrap()).await.unwrap();
            }
            Self::Postgres(client) => client.batch_execute("ROLLBACK").await.unwrap(),
        }
    }
}

async fn a_repeat_in_flight(backend: Backend) {
    let (setup, gateway, url) = serve_shop(backend).await;
    let (first_relay, second_relay) = (Relay::start(gateway.addr, 0).await, Relay::start(gateway.addr, 0).await);
    let payload = json!({"order": 8, "amount": 20});
    let hold = Hold::take(backend, &setup, url.as_deref()).await;
    let first = tokio::spawn(publish(order(first_relay.url(), Some("order-8"), payload.clone())));
    hold.until_waited_for(&first_relay).await;
    let second = tokio::spawn(publish(order(second_relay.url(), Some("order-8"), payload)));
    match backend {
        // The first request's key is committed in flight: the repeat is answered at once.
        Backend::Postgres => {
            second_relay.until("the repeat's answer", |log| !log.answers.lock().unwrap().is_empty()).await;
        }
        // Every write waits for the lock, the repeat's key record queued behind the first's.
        Backend::Sqlite => {
            second_relay.until("the repeat", |log| log.forwarded.load(Ordering::SeqCst) == 1).await;
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
    hold.release().await;
    let (first, second): (Published, Published) = (first.await.unwrap().unwrap(), second.await.unwrap().unwrap());
    // On SQLite nothing outside tells which request reached the one writer first; on a
    // stalled machine the repeat may be the one that ran. Either way exactly one of the
    // two was refused in flight and its retry answered the other's message.
    let repeat_refused = second.sent.attempts[0].status == Some(409);
    if backend == Backend::Postgres {
        assert!(repeat_refused, "on PostgreSQL the repeat is the one refused: {:?}", second.sent.attempts);
    }
    let ((held, _), (refused, refused_relay)) = if repeat_refused {
        ((first, &first_relay), (second, &second_relay))
    } else {
        ((second, &second_relay), (first, &first_relay))
    };
    let answer = &refused_relay.answers()[0];
    assert_eq!(answer.status, 409, "the repeat was refused in flight: {answer:?}");
    assert!(answer.header("retry-after").is_some_and(|s| s.parse::<u64>().unwrap() >= 1), "{answer:?}");
    let body: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(body["code"], "idempotency_conflict");
    assert!(refused.sent.attempts.len() >= 2, "the 409 in flight was retried");
    assert_eq!(refused.message_id, held.message_id, "the retry ended with the held request's message");
    assert!(!held.replayed && refused.replayed, "{:?} / {:?}", held.replayed, refused.replayed);
    assert_eq!(held.sent.attempts.len(), 1, "the held request was answered once it committed");
    assert_eq!(message_ids(&gateway).await, [held.message_id], "exactly one message");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeat_while_the_first_is_held_in_flight_gets_409_and_its_retry_the_first_message_on_sqlite() {
    a_repeat_in_flight(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeat_while_the_first_is_held_in_flight_gets_409_and_its_retry_the_first_message_on_postgres() {
    a_repeat_in_flight(Backend::Postgres).await;
}

/// `idemgate send --api` to `gateway` with the publish token in the environment.
async fn send_cli(gateway: &Gateway, key: &str, payload: &str) -> Output {
    let (api, key, payload) = (format!("http://{}", gateway.addr), key.to_owned(), payload.to_owned());
    tokio::task::spawn_blocking(move || {
        Command::new(idemgate_bin())
            .args(["send", "--api", &api, "--app", "shop", "--event-type", "order.paid", "--token", "env:TOKEN"])
            .args(["--idempotency-key", &key, "-d", &payload, "--verbose"])
            .env("TOKEN", PUBLISH_TOKEN)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

async fn the_cli(backend: Backend) {
    let (_setup, gateway, _) = serve_shop(backend).await;
    let first = send_cli(&gateway, "order-9", r#"{"order": 9}"#).await;
    assert!(first.status.success(), "{first:?}");
    let stdout = String::from_utf8(first.stdout.clone()).unwrap();
    let (id, how) = stdout.trim_end().split_once(' ').unwrap();
    assert!(id.starts_with("msg_") && how == "published", "{stdout}");
    let again = send_cli(&gateway, "order-9", r#"{"order": 9}"#).await;
    assert!(again.status.success(), "{again:?}");
    assert_eq!(String::from_utf8_lossy(&again.stdout), format!("{id} replayed\n"));
    let other = send_cli(&gateway, "order-9", r#"{"order": 10}"#).await;
    assert_eq!(other.status.code(), Some(3), "a key reused for another payload is final: {other:?}");
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert_eq!(stderr.matches("attempt ").count(), 1, "not retried: {stderr}");
    assert!(stderr.contains("refused the message (422)"), "{stderr}");
    assert!(
        stderr.contains("header.idempotency-key: the idempotency-key was used for a different request"),
        "{stderr}"
    );
    assert!(other.stdout.is_empty(), "{other:?}");
    for output in [&first, &again, &other] {
        let all = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(!all.contains(PUBLISH_TOKEN), "the token never shows: {all}");
    }
    assert_eq!(message_ids(&gateway).await, [id], "one message");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_api_twice_with_one_key_publishes_once_and_another_payload_is_refused_on_sqlite() {
    the_cli(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_api_twice_with_one_key_publishes_once_and_another_payload_is_refused_on_postgres() {
    the_cli(Backend::Postgres).await;
}
