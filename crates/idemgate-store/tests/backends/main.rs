//! One store suite, two backends: every behaviour here runs against SQLite (a fresh file)
//! and against PostgreSQL (a fresh schema) from the same test code, through [`Store`].
//!
//! PostgreSQL is found at `IDEMGATE_TEST_POSTGRES` (default
//! `postgres://postgres@127.0.0.1:5432/idemgate_test`, which `.ci/run` creates). A
//! PostgreSQL test that cannot connect fails; it never skips.

#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

mod alerts;
mod audit;
mod breaker;
mod errors;
mod handover;
mod idempotency;
mod jobs;
mod limits;
mod maintenance;
mod outbound_access;
mod outbound_applications;
mod outbound_attempts;
mod outbound_content;
mod outbound_endpoints;
mod outbound_event_types;
mod outbound_messages;
mod outbound_redelivery;
mod outcome;
mod partitions;
mod receive;
mod replication;
mod routing;
mod senders;
mod sessions;
mod views;

use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use idemgate_core::{BodyHash, Identity, Outcome, ReceiptKey, SourceName, UnixTime};
use idemgate_store::{
    PgOptions, PgStore, ReceiveRequest, SqliteStore, Store, StoreOptions, create_schema,
    inbox::{IncomingEvent, Ordering as EventOrdering},
};
use serde_json::json;

/// The time most tests run at.
pub const T0: UnixTime = UnixTime(1_700_000_000);

/// Who the outbound tests' changes are made by (a configured API token's name).
pub fn ops() -> idemgate_store::audit::Actor {
    idemgate_store::audit::Actor::token("ops")
}

/// `at` in milliseconds, as the queue takes it.
pub fn ms(at: UnixTime) -> i64 {
    at.0 * 1000
}

/// A fresh store; dropping it removes the SQLite file (PostgreSQL schemas go with the
/// test database, which `.ci/run` recreates).
pub struct TestStore {
    pub store: Store,
    /// The PostgreSQL schema's URL (none on SQLite).
    url: Option<String>,
    /// The SQLite file's folder (none on PostgreSQL).
    dir: Option<tempfile::TempDir>,
}

impl TestStore {
    /// Runs raw SQL on the backend's own tables, from a connection of its own (to set up
    /// a fault): `sqlite` on SQLite, `postgres` on PostgreSQL.
    pub async fn execute_raw(&self, sqlite: &str, postgres: &str) {
        match &self.url {
            None => {
                let path = sqlite_file(self.dir.as_ref().unwrap());
                rusqlite::Connection::open(path).unwrap().execute_batch(sqlite).unwrap();
            }
            Some(url) => {
                let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
                tokio::spawn(connection);
                client.batch_execute(postgres).await.unwrap();
            }
        }
    }
}

impl TestStore {
    /// Another store on the same file or schema, as another process (an instance) opens it.
    pub async fn another(&self) -> Store {
        match &self.url {
            None => {
                let path = sqlite_file(self.dir.as_ref().unwrap());
                Arc::new(SqliteStore::open(&path, StoreOptions::default()).unwrap()).into()
            }
            Some(url) => PgStore::connect(url, PgOptions { pool_size: 8, wait_timeout: Duration::from_secs(10) })
                .await
                .unwrap()
                .into(),
        }
    }

    /// The PostgreSQL schema's URL (none on SQLite).
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }

    /// The one number `query` returns, read from a PostgreSQL store's schema.
    pub async fn count_raw(&self, query: &str) -> i64 {
        let url = self.url.as_ref().expect("count_raw reads a PostgreSQL store");
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client.query_one(query, &[]).await.unwrap().get(0)
    }
}

impl std::ops::Deref for TestStore {
    type Target = Store;
    fn deref(&self) -> &Store {
        &self.store
    }
}

pub fn postgres_url() -> String {
    std::env::var("IDEMGATE_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/idemgate_test".to_owned())
}

/// A schema name no other test (or earlier run) uses.
pub fn unique_schema(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}_{}_{}_{nanos}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

fn sqlite_file(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("store.sqlite3")
}

pub async fn sqlite() -> TestStore {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&sqlite_file(&dir), StoreOptions::default()).unwrap();
    TestStore { store: Arc::new(store).into(), url: None, dir: Some(dir) }
}

pub async fn postgres() -> TestStore {
    let base = postgres_url();
    let url = create_schema(&base, &unique_schema("t")).await.unwrap_or_else(|err| {
        panic!("PostgreSQL is needed at {base} (set IDEMGATE_TEST_POSTGRES; .ci/run starts it): {err}")
    });
    let store = PgStore::connect(&url, PgOptions { pool_size: 8, wait_timeout: Duration::from_secs(10) })
        .await
        .unwrap_or_else(|err| panic!("cannot open the PostgreSQL store: {err}"));
    TestStore { store: store.into(), url: Some(url), dir: None }
}

/// Runs each test body once on SQLite and once on PostgreSQL: `mod name { sqlite, postgres }`.
#[macro_export]
macro_rules! on_both {
    ($(async fn $name:ident($store:ident: $ty:ty) $body:block)*) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn body($store: $ty) $body

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                body($crate::sqlite().await).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                body($crate::postgres().await).await
            }
        }
    )*};
}

pub fn source() -> SourceName {
    SourceName::new("test").unwrap()
}

pub fn key(identity: &str) -> ReceiptKey {
    ReceiptKey { source: source(), identity: Identity::new(identity).unwrap() }
}

pub fn request_at(identity: &str, body: &[u8], at: UnixTime) -> ReceiveRequest {
    ReceiveRequest { key: key(identity), body_hash: BodyHash::of(body), received_at: at, dedupe_body: false }
}

pub fn request(identity: &str, body: &[u8]) -> ReceiveRequest {
    request_at(identity, body, T0)
}

pub fn event(identity: &str, body: &[u8], destinations: &[&str]) -> IncomingEvent {
    IncomingEvent {
        result: json!({ "event": identity }),
        outgoing_id: None,
        event_type: Some("order.created".to_owned()),
        content_type: Some("application/json".to_owned()),
        headers: vec![("x-trace".to_owned(), "abc".to_owned())],
        body: Bytes::copy_from_slice(body),
        ordering: None,
        destinations: destinations.iter().map(|d| (*d).to_owned()).collect::<Vec<_>>().into(),
        dead: Vec::new(),
        refusal: None,
    }
}

pub fn ordered(
    identity: &str,
    body: &[u8],
    ordering_key: &str,
    version: idemgate_store::inbox::Version,
) -> IncomingEvent {
    IncomingEvent {
        ordering: Some(EventOrdering { key: ordering_key.to_owned(), version }),
        ..event(identity, body, &["app"])
    }
}

/// Accepts `identity` (body `{"n":identity}`) for `destinations` at `at`; asserts it applied.
pub async fn accept_at(store: &Store, identity: &str, destinations: &[&str], at: UnixTime) {
    let body = format!("{{\"n\":\"{identity}\"}}");
    let outcome =
        store.accept(request_at(identity, body.as_bytes(), at), event(identity, body.as_bytes(), destinations)).await;
    assert!(matches!(outcome, Outcome::Applied { .. }), "{identity}: {outcome:?}");
}
