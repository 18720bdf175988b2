//! The counter example (its interface: `docs/counter-contract.md`), built on idemgate.
//!
//! A fictional counter that a signed `demo-webhook-v1` delivery increments. The increment
//! and the receipt commit in one transaction; a repeat gets its original total back; the
//! same `event_id` with other bytes gets 409. Everything but the event contract, the
//! counter table and the fault points is the library's.

use std::{
    collections::HashSet,
    io::Write,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::ExitCode,
    sync::{Arc, Mutex},
};

use axum::{
    Router,
    body::Body,
    extract::State,
    response::{IntoResponse, Response},
    routing::post,
};
use clap::{Parser, Subcommand};
use idemgate::{
    clock::{Clock, SystemClock},
    core::{
        Identity, Rejection, Secret, SecretSet, SourceName,
        form::BodyFormat,
        json::{Json, Limits, MAX_DEPTH_CEILING},
        scheme::DemoV1,
    },
    http::{
        Accepted, AnswerStyle, Checked, CloseWithoutResponse, Delivered, DeliveryAnswer, Inbound, ServeOptions,
        answer::{CodeOnly, method_not_allowed, not_found},
        body::BODY_TIMEOUT,
        serve, termination_signal,
    },
    store::{Connection, Handler, HandlerError, SqliteReader, SqliteStore, StoreError, StoreOptions, receipts},
};
use serde_json::{Value, json};

/// The source this route is bound to: chosen here, never read from a request.
const SOURCE: &str = "demo-source";
const BODY_LIMIT: usize = 8192;

#[derive(Parser)]
#[command(about = "The seed's counter receiver on idemgate")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Receive signed increments on POST /webhook.
    Serve {
        /// Address to listen on; port 0 picks a free one.
        #[arg(long)]
        listen: SocketAddr,
        /// SQLite file; created if missing.
        #[arg(long)]
        db: PathBuf,
    },
    /// Print the counter total and every receipt as one JSON line.
    State {
        /// SQLite file written by `serve`.
        #[arg(long)]
        db: PathBuf,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("COUNTER_LOG"))
        .init();
    let result = match Cli::parse().command {
        Command::Serve { listen, db } => serve_counter(listen, &db),
        Command::State { db } => print_state(&db),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { code, message }) => {
            eprintln!("counter: {message}");
            ExitCode::from(code)
        }
    }
}

/// A one-line error and the exit code it ends the process with.
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn usage(message: impl Into<String>) -> Self {
        Self { code: 2, message: message.into() }
    }

    fn runtime(message: impl std::fmt::Display) -> Self {
        Self { code: 1, message: message.to_string() }
    }
}

fn serve_counter(listen: SocketAddr, db: &Path) -> Result<(), Failure> {
    let secret = load_secret()?;
    let faults = Faults::parse(std::env::var("COUNTER_FAULTS").ok().as_deref().unwrap_or(""))?;
    let runtime = tokio::runtime::Runtime::new().map_err(Failure::runtime)?;
    runtime.block_on(async move {
        let store = Arc::new(SqliteStore::open(db, StoreOptions::default()).map_err(Failure::runtime)?);
        store.write(create_counter).await.map_err(Failure::runtime)?;
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|err| Failure::runtime(format!("cannot listen on {listen}: {err}")))?;
        let address = listener.local_addr().map_err(Failure::runtime)?;
        // Behind one Arc: axum hands every request its own copy of the state.
        let app = Arc::new(App {
            inbound: inbound(secret, Arc::clone(&store))?,
            faults: Arc::new(faults),
            clock: Arc::new(SystemClock),
        });
        let router = Router::new()
            .route("/webhook", post(webhook).fallback(method_not_allowed))
            .fallback(not_found)
            .with_state(app);
        let shutdown = termination_signal();
        announce(address)?;
        serve(listener, router, ServeOptions::default(), shutdown).await.map_err(Failure::runtime)?;
        // Every connection has finished, so this is the last handle: let the writer finish.
        if let Some(store) = Arc::into_inner(store) {
            store.close().await;
        }
        Ok(())
    })
}

fn announce(address: SocketAddr) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {address}").and_then(|()| stdout.flush()).map_err(Failure::runtime)
}

fn load_secret() -> Result<Secret, Failure> {
    let text = std::env::var("COUNTER_SECRET")
        .map_err(|_| Failure::usage("COUNTER_SECRET is not set (64 hex characters = 32 bytes)"))?;
    Secret::from_hex(&text, 32).map_err(|err| Failure::usage(format!("COUNTER_SECRET: {err}")))
}

fn inbound(secret: Secret, store: Arc<SqliteStore>) -> Result<Inbound<Arc<SqliteStore>>, Failure> {
    Ok(Inbound {
        source: SourceName::new(SOURCE).map_err(Failure::runtime)?,
        scheme: Arc::new(DemoV1::default()),
        secrets: SecretSet::new(vec![secret]).map_err(Failure::runtime)?,
        body_limit: BODY_LIMIT,
        body_timeout: BODY_TIMEOUT,
        // The identity is in the signed body.
        dedupe_body: false,
        answers: AnswerStyle::Settled,
        rejections: Arc::default(),
        // The contract names no depth limit, so allow the deepest nesting the parser ever
        // accepts; only a body nested deeper than that is refused as invalid JSON.
        json_limits: Limits { max_depth: MAX_DEPTH_CEILING },
        body_format: BodyFormat::Json,
        // The demo sender resends the same bytes: every byte is compared.
        per_attempt: Arc::new([]),
        store,
    })
}

fn create_counter(conn: &Connection) -> Result<(), idemgate::store::rusqlite::Error> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY CHECK (id = 1), total INTEGER NOT NULL);
         INSERT OR IGNORE INTO counter VALUES (1, 0);",
    )
}

struct App {
    inbound: Inbound<Arc<SqliteStore>>,
    faults: Arc<Faults>,
    /// Where a delivery's time is read (its signature's tolerance window).
    clock: Arc<dyn Clock>,
}

async fn webhook(State(app): State<Arc<App>>, request: axum::extract::Request) -> Response {
    let (parts, body): (_, Body) = request.into_parts();
    let faults = Arc::clone(&app.faults);
    let contract = |checked: Checked<'_>| {
        let (identity, value) = increment_contract(checked.event)?;
        let event_id = identity.clone();
        let fail = move || faults.take(&faults.fail_before_commit, &event_id);
        let effect: Handler = Box::new(move |conn: &Connection| increment(conn, value, fail));
        Ok(Accepted { identity, effect })
    };
    let now = app.clock.now();
    let Delivered { answer, identity } = match app.inbound.verify(&parts.headers, body, now).await {
        Err(rejected) => rejected,
        Ok(verified) => match contract(verified.checked(&parts.headers)) {
            Ok(accepted) => app.inbound.commit(&verified, accepted).await,
            Err(rejection) => app.inbound.reject(rejection, now),
        },
    };
    let applied = matches!(answer, DeliveryAnswer::Settled(idemgate::core::Outcome::Applied { .. }));
    if let Some(identity) = identity.filter(|_| applied)
        && app.faults.take(&app.faults.drop_after_commit, &identity)
    {
        let mut response = ().into_response();
        response.extensions_mut().insert(CloseWithoutResponse);
        return response;
    }
    // The counter's interface (docs/counter-contract.md) predates refusals that say why.
    CodeOnly(answer).into_response()
}

/// Exactly `{"event_id": "evt-…", "kind": "increment", "value": 1..=100}`.
fn increment_contract(event: &Json) -> Result<(Identity, i64), Rejection> {
    let refuse = |reason| Rejection::Contract { reason, field: None };
    let object = event.as_object().ok_or(refuse("body is not an object"))?;
    if object.len() != 3 {
        return Err(refuse("body must have exactly event_id, kind and value"));
    }
    let event_id = object.get("event_id").and_then(Json::as_str).ok_or(refuse("event_id must be a string"))?;
    let well_formed = event_id.strip_prefix("evt-").is_some_and(|rest| {
        (1..=40).contains(&rest.len())
            && rest.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    });
    if !well_formed {
        return Err(refuse("event_id must match evt-[a-z0-9-]{1,40}"));
    }
    if object.get("kind").and_then(Json::as_str) != Some("increment") {
        return Err(refuse("kind must be \"increment\""));
    }
    let value = object.get("value").and_then(Json::as_i64).ok_or(refuse("value must be an integer"))?;
    if !(1..=100).contains(&value) {
        return Err(refuse("value must be between 1 and 100"));
    }
    let identity = Identity::new(event_id).map_err(|_| refuse("event_id is not a valid identity"))?;
    Ok((identity, value))
}

/// The effect: add `value`, report the new total. Runs inside the receipt's transaction,
/// so `fail_before_commit` (the fault point, checked after the update) rolls it back.
fn increment(conn: &Connection, value: i64, fail_before_commit: impl FnOnce() -> bool) -> Result<Value, HandlerError> {
    let total: i64 = conn
        .prepare_cached("UPDATE counter SET total = total + ?1 WHERE id = 1 RETURNING total")?
        .query_row([value], |row| row.get(0))?;

    if fail_before_commit() {
        return Err(HandlerError::new("fault point fail-before-commit"));
    }
    Ok(json!(total))
}

/// Test-only fault points from `COUNTER_FAULTS` (the trusted start-up environment).
#[derive(Default)]
struct Faults {
    fail_before_commit: Mutex<HashSet<String>>,
    drop_after_commit: Mutex<HashSet<String>>,
}

impl Faults {
    fn parse(spec: &str) -> Result<Self, Failure> {
        let faults = Self::default();
        for item in spec.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            let Some((point, event_id)) = item.split_once('=').filter(|(_, id)| !id.is_empty()) else {
                return Err(Failure::usage(format!("COUNTER_FAULTS: entry {item:?} is not POINT=EVENT_ID")));
            };
            let set = match point {
                "fail-before-commit" => &faults.fail_before_commit,
                "drop-after-commit" => &faults.drop_after_commit,
                other => {
                    return Err(Failure::usage(format!("COUNTER_FAULTS: unknown fault point {other:?}")));
                }
            };
            set.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(event_id.to_owned());
        }
        Ok(faults)
    }

    /// True the first time only: a fault point fires once per event.
    fn take(&self, set: &Mutex<HashSet<String>>, identity: &Identity) -> bool {
        set.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(identity.as_str())
    }
}

fn print_state(db: &Path) -> Result<(), Failure> {
    if !db.exists() {
        return Err(Failure::runtime(format!("no database at {}", db.display())));
    }
    let source = SourceName::new(SOURCE).map_err(Failure::runtime)?;
    let mut reader = SqliteReader::open(db).map_err(Failure::runtime)?;
    let state = reader
        .snapshot(|conn| {
            let total: i64 = conn
                .query_row("SELECT total FROM counter WHERE id = 1", [], |row| row.get(0))
                .map_err(StoreError::from)?;
            let receipts = receipts(conn, &source)?
                .into_iter()
                .map(|receipt| (receipt.key.identity.to_string(), receipt.result))
                .collect::<serde_json::Map<_, _>>();
            Ok(json!({ "total": total, "receipts": receipts }))
        })
        .map_err(Failure::runtime)?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{state}").and_then(|()| stdout.flush()).map_err(Failure::runtime)
}
