//! The ceiling for benchmarks: the same hyper accept loop as idemgate, answering every
//! request `200 {"status":"applied","result":0}` without reading a store. Whatever idemgate
//! achieves is measured against what HTTP alone allows on the same machine. As the
//! gateway benchmark's sink, `GET /count` tells how many requests it has answered.
//!
//!     cargo run --release --example bare -- 127.0.0.1:18100

use std::{
    io::Write,
    net::SocketAddr,
    process::ExitCode,
    sync::atomic::{AtomicU64, Ordering},
};

use axum::{Json, Router, body::Bytes, routing::get};
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
        serve(listener, Router::new().route("/count", get(count)).fallback(answer), ServeOptions::default(), shutdown)
            .await
    });
    if served.is_ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
