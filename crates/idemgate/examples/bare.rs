//! The ceiling for benchmarks: the same hyper accept loop as idemgate, answering every
//! request `200 {"status":"applied","result":0}` without reading a store. Whatever idemgate
//! achieves is measured against what HTTP alone allows on the same machine. As the
//! gateway benchmark's sink, `GET /count` tells how many requests it has answered; as the
//! outbound benchmark's endpoint, `POST /ids` answers the same and keeps each request's
//! `webhook-id`, and `GET /ids` tells how many distinct ones it has seen (only that route
//! keeps them, so the bare answer costs what it always did).
//!
//!     cargo run --release --example bare -- 127.0.0.1:18100

use std::{
    collections::HashSet,
    io::Write,
    net::SocketAddr,
    process::ExitCode,
    sync::{
        LazyLock, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use axum::{Json, Router, body::Bytes, http::HeaderMap, routing::get};
use idemgate::http::{ServeOptions, serve, termination_signal};
use serde_json::{Value, json};

static ANSWERED: AtomicU64 = AtomicU64::new(0);

async fn answer(_body: Bytes) -> Json<Value> {
    ANSWERED.fetch_add(1, Ordering::Relaxed);
    Json(json!({ "status": "applied", "result": 0 }))
}

async fn count() -> String {
    ANSWERED.load(Ordering::Relaxed).to_string()
}

/// The distinct `webhook-id`s `POST /ids` has seen.
static IDS: LazyLock<Mutex<HashSet<Box<str>>>> = LazyLock::new(Mutex::default);

async fn keep_id(headers: HeaderMap, body: Bytes) -> Json<Value> {
    if let Some(id) = headers.get("webhook-id").and_then(|id| id.to_str().ok()) {
        IDS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id.into());
    }
    answer(body).await
}

async fn distinct_ids() -> String {
    IDS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len().to_string()
}

fn main() -> ExitCode {
    let Some(Ok(listen)) = std::env::args().nth(1).map(|a| a.parse::<SocketAddr>()) else {
        eprintln!("usage: bare HOST:PORT");
        return ExitCode::from(2);
    };
    let Ok(runtime) = tokio::runtime::Runtime::new() else { return ExitCode::FAILURE };
    let served: std::io::Result<()> = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let shutdown = termination_signal();
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on {}", listener.local_addr()?)?;
        stdout.flush()?;
        drop(stdout);
        let routes =
            Router::new().route("/count", get(count)).route("/ids", get(distinct_ids).post(keep_id)).fallback(answer);
        serve(listener, routes, ServeOptions::default(), shutdown).await
    });
    if served.is_ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
