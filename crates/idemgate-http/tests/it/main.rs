//! The Idempotency-Key layer in-process over real HTTP on 127.0.0.1, on an injected clock.

#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

mod admin;
mod dashboard;
mod edge;

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use axum::{Router, extract::State, routing::post};
use idemgate_clock::{ManualClock, UnixTime};
use idemgate_http::{
    ServeOptions,
    idempotency::{IdempotencyConfig, IdempotencyLayer, RefusalStyle},
    serve,
};
use idemgate_store::{SqliteStore, StoreOptions};

async fn start(clock: Arc<ManualClock>) -> (SocketAddr, Arc<AtomicU64>, Arc<SqliteStore>, tempfile::TempDir) {
    start_with(clock, IdempotencyConfig::default()).await
}

async fn start_with(
    clock: Arc<ManualClock>,
    config: IdempotencyConfig,
) -> (SocketAddr, Arc<AtomicU64>, Arc<SqliteStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("i.sqlite3"), StoreOptions::default()).unwrap());
    let (addr, calls) = start_on(Arc::clone(&store), clock, config).await;
    (addr, calls, store, dir)
}

/// A server with the layer on `store`: one instance of several when they share it.
async fn start_on(
    store: Arc<SqliteStore>,
    clock: Arc<ManualClock>,
    config: IdempotencyConfig,
) -> (SocketAddr, Arc<AtomicU64>) {
    let calls = Arc::new(AtomicU64::new(0));
    let layer = IdempotencyLayer::with_clock(store, config, clock);
    let count = |calls: Arc<AtomicU64>| calls.fetch_add(1, Ordering::SeqCst);
    let app = Router::new()
        .route("/orders", post(move |State(calls): State<Arc<AtomicU64>>| async move { count(calls).to_string() }))
        .route(
            "/invalid",
            post(move |State(calls): State<Arc<AtomicU64>>| async move {
                count(calls);
                (axum::http::StatusCode::UNPROCESSABLE_ENTITY, "invalid")
            }),
        )
        .route("/big", post(|| async { "x".repeat(2048) }))
        .with_state(Arc::clone(&calls))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, app, ServeOptions::default(), std::future::pending()));
    (addr, calls)
}

async fn post_with_key(addr: SocketAddr, key: &str) -> String {
    post_to(addr, "/orders", Some(key)).await
}

async fn post_to(addr: SocketAddr, path: &str, key: Option<&str>) -> String {
    let key = key.map(|k| format!("Idempotency-Key: {k}\r\n")).unwrap_or_default();
    let request = format!("POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{key}Content-Length: 2\r\n\r\n{{}}");
    exchange(addr, request).await
}

/// Writes `request` on a fresh connection (off the runtime's threads) and reads the answer
/// until the server closes.
async fn exchange(addr: SocketAddr, request: String) -> String {
    tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn after_the_retention_a_request_with_the_same_key_is_a_new_operation() {
    let clock = Arc::new(ManualClock::at(UnixTime(1_800_000_000)));
    let (addr, calls, store, _dir) = start(Arc::clone(&clock)).await;
    assert!(post_with_key(addr, "k").await.starts_with("HTTP/1.1 200"));
    let replay = post_with_key(addr, "k").await;
    assert!(replay.to_ascii_lowercase().contains("idempotency-replay: true"), "{replay}");
    clock.advance(3 * 3600 - 1);
    assert!(
        post_with_key(addr, "k").await.to_ascii_lowercase().contains("idempotency-replay: true"),
        "still inside 3 h"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    clock.advance(1);
    let after = post_with_key(addr, "k").await;
    assert!(!after.to_ascii_lowercase().contains("idempotency-replay"), "{after}");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    clock.advance(3 * 3600);
    assert_eq!(
        idemgate_store::Store::from(store)
            .purge_idempotency(idemgate_clock::Clock::now_ms(&*clock), 100)
            .await
            .unwrap(),
        1,
        "the purge removes expired records"
    );
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::at(UnixTime(1_800_000_000)))
}

fn replayed(answer: &str) -> bool {
    answer.to_ascii_lowercase().contains("idempotency-replay: true")
}

#[tokio::test]
async fn another_instance_on_the_same_store_replays_and_refuses_what_the_first_completed() {
    let clock = clock();
    let (first, first_calls, store, _dir) = start(Arc::clone(&clock)).await;
    let (second, second_calls) = start_on(store, Arc::clone(&clock), IdempotencyConfig::default()).await;
    assert!(post_with_key(first, "k").await.ends_with("\r\n\r\n0"));
    for _ in 0..2 {
        let replay = post_with_key(second, "k").await;
        assert!(replayed(&replay) && replay.ends_with("\r\n\r\n0"), "read from the store, then kept: {replay}");
    }
    let other =
        "POST /orders HTTP/1.1\r\nHost: x\r\nConnection: close\r\nIdempotency-Key: k\r\nContent-Length: 4\r\n\r\n{  }";
    assert!(exchange(second, other.to_owned()).await.starts_with("HTTP/1.1 422"), "another body is refused");
    assert_eq!((first_calls.load(Ordering::SeqCst), second_calls.load(Ordering::SeqCst)), (1, 0));
    clock.advance(3 * 3600);
    assert!(!replayed(&post_with_key(second, "k").await), "the kept copy expires with the record");
    assert_eq!(second_calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_repeat_is_answered_from_memory_and_the_cache_can_be_turned_off() {
    for (replay_cache_bytes, from_memory) in [(IdempotencyConfig::default().replay_cache_bytes, true), (0, false)] {
        let config = IdempotencyConfig { replay_cache_bytes, ..IdempotencyConfig::default() };
        let (addr, calls, _store, dir) = start_with(clock(), config).await;
        assert!(post_with_key(addr, "k").await.starts_with("HTTP/1.1 200"));
        // Deleting the row by hand (nothing in idemgate deletes a live completed record)
        // tells a copy in memory from a read of the store.
        let db = idemgate_store::rusqlite::Connection::open(dir.path().join("i.sqlite3")).unwrap();
        assert_eq!(db.execute("DELETE FROM idempotency_records", []).unwrap(), 1);
        let repeat = post_with_key(addr, "k").await;
        assert_eq!(replayed(&repeat), from_memory, "replay_cache_bytes = {replay_cache_bytes}: {repeat}");
        assert_eq!(calls.load(Ordering::SeqCst), if from_memory { 1 } else { 2 });
    }
}

#[tokio::test]
async fn a_route_that_requires_a_key_refuses_a_request_without_one() {
    let config = IdempotencyConfig { require_key: true, ..IdempotencyConfig::default() };
    let (addr, calls, _store, _dir) = start_with(clock(), config).await;
    let refused = post_to(addr, "/orders", None).await;
    assert!(refused.starts_with("HTTP/1.1 400"), "{refused}");
    assert!(refused.contains("application/problem+json"), "{refused}");
    assert!(post_to(addr, "/orders", Some("k")).await.starts_with("HTTP/1.1 200"));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn mounted_in_svix_style_a_key_used_for_another_request_is_a_validation_error_on_the_header() {
    let config = IdempotencyConfig { refusals: RefusalStyle::Svix, ..IdempotencyConfig::default() };
    let (addr, calls, _store, _dir) = start_with(clock(), config).await;
    assert!(post_with_key(addr, "k").await.starts_with("HTTP/1.1 200"));
    let other =
        "POST /orders HTTP/1.1\r\nHost: x\r\nConnection: close\r\nIdempotency-Key: k\r\nContent-Length: 3\r\n\r\n{ }";
    let refused = exchange(addr, other.to_owned()).await;
    assert!(refused.starts_with("HTTP/1.1 422"), "{refused}");
    let body: serde_json::Value = serde_json::from_str(refused.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["detail"][0]["loc"], serde_json::json!(["header", "idempotency-key"]), "{body}");
    assert!(!refused.contains("problem+json"), "{refused}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn client_errors_can_be_stored_like_stripe_does() {
    let config = IdempotencyConfig { store_client_errors: true, ..IdempotencyConfig::default() };
    let (addr, calls, _store, _dir) = start_with(clock(), config).await;
    assert!(post_to(addr, "/invalid", Some("k")).await.starts_with("HTTP/1.1 422"));
    let replay = post_to(addr, "/invalid", Some("k")).await;
    assert!(replay.starts_with("HTTP/1.1 422") && replay.to_ascii_lowercase().contains("idempotency-replay: true"));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_response_over_the_stored_limit_is_sent_whole_and_replayed_without_its_body() {
    let config = IdempotencyConfig { max_stored_body: 1024, ..IdempotencyConfig::default() };
    let (addr, _calls, _store, _dir) = start_with(clock(), config).await;
    let first = post_to(addr, "/big", Some("k")).await;
    assert!(first.ends_with(&"x".repeat(2048)), "the client gets the whole body");
    let replay = post_to(addr, "/big", Some("k")).await.to_ascii_lowercase();
    assert!(replay.contains("idempotency-replay-body: omitted"), "{replay}");
    assert!(!replay.contains("xxxx"));
}

/// A layer over one route whose response body is fed by the test: a first chunk bigger than
/// `max_stored_body`, then whatever the test sends until it drops the sender.
async fn start_streaming(
    max_stored_body: usize,
) -> (SocketAddr, tokio::sync::mpsc::Sender<bytes::Bytes>, Arc<AtomicU64>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("i.sqlite3"), StoreOptions::default()).unwrap());
    let config = IdempotencyConfig { max_stored_body, ..IdempotencyConfig::default() };
    let layer = IdempotencyLayer::with_clock(store, config, clock());
    let (sender, receiver) = tokio::sync::mpsc::channel::<bytes::Bytes>(4);
    let receiver = Arc::new(tokio::sync::Mutex::new(Some(receiver)));
    let calls = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&calls);
    let app = Router::new()
        .route(
            "/export",
            post(move || {
                let (counted, receiver) = (Arc::clone(&counted), Arc::clone(&receiver));
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let receiver = receiver.lock().await.take().unwrap();
                    let chunks = futures_util::stream::unfold(receiver, |mut r| async move {
                        r.recv().await.map(|chunk| (Ok::<_, std::io::Error>(chunk), r))
                    });
                    axum::body::Body::from_stream(chunks)
                }
            }),
        )
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, app, ServeOptions::default(), std::future::pending()));
    (addr, sender, calls, dir)
}

/// Reads from `stream` until `needle` has been seen (or the connection ends).
fn read_until(stream: &mut TcpStream, needle: &[u8]) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !seen.windows(needle.len()).any(|w| w == needle) {
        let n = stream.read(&mut buffer).unwrap();
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buffer[..n]);
    }
    seen
}

#[tokio::test]
async fn a_response_over_the_stored_limit_streams_before_it_ends_and_is_recorded_without_its_body() {
    let (addr, sender, calls, _dir) = start_streaming(1024).await;
    sender.send(bytes::Bytes::from(vec![b'a'; 2048])).await.unwrap();
    let request =
        "POST /export HTTP/1.1\r\nHost: x\r\nConnection: close\r\nIdempotency-Key: k\r\nContent-Length: 2\r\n\r\n{}";
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let first = tokio::task::spawn_blocking(move || {
        let seen = read_until(&mut stream, &[b'a'; 2048]);
        (stream, seen)
    });
    let (mut stream, seen) = first.await.unwrap();
    let head = String::from_utf8_lossy(&seen).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200") && seen.windows(2048).any(|w| w == [b'a'; 2048]), "{head}");

    let replay = post_to(addr, "/export", Some("k")).await.to_ascii_lowercase();
    assert!(replay.contains("idempotency-replay: true"), "recorded while still streaming: {replay}");
    assert!(replay.contains("idempotency-replay-body: omitted"), "{replay}");

    sender.send(bytes::Bytes::from_static(b"the end")).await.unwrap();
    drop(sender);
    let rest = tokio::task::spawn_blocking(move || read_until(&mut stream, b"0\r\n\r\n")).await.unwrap();
    assert!(String::from_utf8_lossy(&rest).contains("the end"), "the rest arrives whole");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_body_slower_than_the_configured_timeout_is_answered_408_and_the_handler_never_runs() {
    let config =
        IdempotencyConfig { body_timeout: std::time::Duration::from_millis(200), ..IdempotencyConfig::default() };
    let (addr, calls, _store, _dir) = start_with(clock(), config).await;
    let answer = tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
        stream
            .write_all(b"POST /orders HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nContent-Length: 10\r\n\r\n{")
            .unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("application/problem+json"), "{answer}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(post_with_key(addr, "k").await.starts_with("HTTP/1.1 200"), "the key was not taken");
}
