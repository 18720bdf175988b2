//! A small orders API that counts how often its handlers run, with or without idemgate's
//! `Idempotency-Key` layer in front: the library's layer in use, and the upstream the
//! gateway's proxy mode is tested against.
//!
//!     cargo run --example orders -- serve --listen 127.0.0.1:7000 --idempotent --db api.sqlite3
//!
//! - `POST /orders` with `{"qty": N}`: 201 with `{"order": ID, "qty": N, "calls": C}` and a
//!   `Location`; `qty` 0 is a validation error (422).
//! - `POST /flaky`: 500 on its first call, 201 afterwards.
//! - `POST /slow?ms=N`: waits N ms, then 201.
//! - `GET /calls`: how many times each handler ran, as JSON.

use std::{
    collections::BTreeMap,
    io::Write,
    net::SocketAddr,
    path::PathBuf,
    process::ExitCode,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Json, Router,
    extract::{Query, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use clap::Parser;
use idemgate::{
    http::{
        ServeOptions,
        idempotency::{IdempotencyConfig, IdempotencyLayer, WhenUnavailable},
        serve, termination_signal,
    },
    store::{SqliteStore, StoreOptions},
};
use serde_json::{Value, json};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Serve the API.
    Serve(Args),
}

#[derive(clap::Args)]
struct Args {
    /// Address to listen on; port 0 picks a free one.
    #[arg(long)]
    listen: SocketAddr,
    /// Put the Idempotency-Key layer in front (needs --db).
    #[arg(long)]
    idempotent: bool,
    /// SQLite file for idempotency records.
    #[arg(long)]
    db: Option<PathBuf>,
    /// How long an in-flight key is locked.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    lock: Duration,
    /// How long a lock on the store's file may be waited for.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    busy_timeout: Duration,
    /// Let requests through unprotected when the store is unavailable (default: refuse).
    #[arg(long)]
    pass_through: bool,
}

#[derive(Default)]
struct Calls(Mutex<BTreeMap<&'static str, u64>>);

impl Calls {
    fn count(&self, handler: &'static str) -> u64 {
        let mut calls = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = calls.entry(handler).or_default();
        *count += 1;
        *count
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("ORDERS_LOG"))
        .init();
    let Command::Serve(args) = Cli::parse().command;
    match tokio::runtime::Runtime::new().map_err(|e| e.to_string()).and_then(|rt| rt.block_on(run(args))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("orders: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    let mut app = Router::new()
        .route("/orders", post(create_order))
        .route("/flaky", post(flaky))
        .route("/slow", post(slow))
        .route("/calls", get(calls))
        .with_state(Arc::new(Calls::default()));
    if args.idempotent {
        let db = args.db.ok_or("--idempotent needs --db")?;
        let options = StoreOptions { busy_timeout: args.busy_timeout, ..StoreOptions::default() };
        let store = Arc::new(SqliteStore::open(&db, options).map_err(|e| e.to_string())?);
        let config = IdempotencyConfig {
            lock: args.lock,
            when_unavailable: if args.pass_through { WhenUnavailable::PassThrough } else { WhenUnavailable::Refuse },
            ..IdempotencyConfig::default()
        };
        let layer = IdempotencyLayer::new(store, config);
        tokio::spawn(layer.purge_expired_every(Duration::from_secs(60)));
        app = app.layer(layer);
    }
    let listener = tokio::net::TcpListener::bind(args.listen).await.map_err(|e| e.to_string())?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let shutdown = termination_signal();
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {address}").and_then(|()| stdout.flush()).map_err(|e| e.to_string())?;
    drop(stdout);
    serve(listener, app, ServeOptions::default(), shutdown).await.map_err(|e| e.to_string())
}

async fn create_order(State(calls): State<Arc<Calls>>, Json(order): Json<Value>) -> Response {
    let count = calls.count("orders");
    let qty = order["qty"].as_u64().unwrap_or(0);
    if qty == 0 {
        return (StatusCode::UNPROCESSABLE_ENTITY, Json(json!({ "error": "qty must be at least 1", "calls": count })))
            .into_response();
    }
    let location = format!("/orders/{count}");
    (StatusCode::CREATED, [(header::LOCATION, location)], Json(json!({ "order": count, "qty": qty, "calls": count })))
        .into_response()
}

async fn flaky(State(calls): State<Arc<Calls>>) -> Response {
    match calls.count("flaky") {
        1 => (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({ "error": "try again" }))).into_response(),
        count => (StatusCode::CREATED, Json(json!({ "calls": count }))).into_response(),
    }
}

async fn slow(State(calls): State<Arc<Calls>>, Query(query): Query<BTreeMap<String, u64>>) -> Response {
    let count = calls.count("slow");
    tokio::time::sleep(Duration::from_millis(query.get("ms").copied().unwrap_or(0))).await;
    (StatusCode::CREATED, Json(json!({ "calls": count }))).into_response()
}

async fn calls(State(calls): State<Arc<Calls>>) -> Json<Value> {
    let calls = calls.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    Json(json!(*calls))
}
