//! The Idempotency-Key layer in-process over real HTTP on 127.0.0.1, on an injected clock.

#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use axum::{Router, extract::State, routing::post};
use idemgate_core::{ManualClock, UnixTime};
use idemgate_http::{
    ServeOptions,
    idempotency::{IdempotencyConfig, IdempotencyLayer},
    serve,
};
use idemgate_store::{SqliteStore, StoreOptions};

async fn start(clock: Arc<ManualClock>) -> (SocketAddr, Arc<AtomicU64>, Arc<SqliteStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(&dir.path().join("i.sqlite3"), StoreOptions::default()).unwrap());
    let calls = Arc::new(AtomicU64::new(0));
    let layer = IdempotencyLayer::with_clock(Arc::clone(&store), IdempotencyConfig::default(), clock);
    let app = Router::new()
        .route(
            "/orders",
            post(|State(calls): State<Arc<AtomicU64>>| async move { calls.fetch_add(1, Ordering::SeqCst).to_string() }),
        )
        .with_state(Arc::clone(&calls))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, app, ServeOptions::default(), std::future::pending()));
    (addr, calls, store, dir)
}

async fn post_with_key(addr: SocketAddr, key: &str) -> String {
    let request = format!(
        "POST /orders HTTP/1.1\r\nHost: x\r\nConnection: close\r\nIdempotency-Key: {key}\r\nContent-Length: 2\r\n\r\n{{}}"
    );
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
        store.purge_idempotency(idemgate_core::Clock::now_ms(&*clock), 100).await.unwrap(),
        1,
        "the purge removes expired records"
    );
}
