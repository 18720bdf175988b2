//! The ceiling for benchmarks: the same hyper accept loop as idemgate, answering every
//! request `200 {"status":"applied","result":0}` without reading a store. Whatever idemgate
//! achieves is measured against what HTTP alone allows on the same machine.
//!
//!     cargo run --release --example bare -- 127.0.0.1:18100

use std::{io::Write, net::SocketAddr, process::ExitCode};

use axum::{Json, Router, body::Bytes};
use idemgate::http::{ServeOptions, serve, termination_signal};
use serde_json::{Value, json};

async fn answer(_body: Bytes) -> Json<Value> {
    Json(json!({ "status": "applied", "result": 0 }))
}

fn main() -> ExitCode {
    let Some(Ok(listen)) = std::env::args().nth(1).map(|a| a.parse::<SocketAddr>()) else {
        eprintln!("usage: bare HOST:PORT");
        return ExitCode::from(2);
    };
    let Ok(runtime) = tokio::runtime::Runtime::new() else { return ExitCode::FAILURE };
    let served: std::io::Result<()> = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on {}", listener.local_addr()?)?;
        stdout.flush()?;
        drop(stdout);
        serve(listener, Router::new().fallback(answer), ServeOptions::default(), termination_signal()).await
    });
    if served.is_ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
