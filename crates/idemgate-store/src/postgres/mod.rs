//! The PostgreSQL store: the same operations as the SQLite store, for several gateway
//! instances sharing one database.
//!
//! Where SQLite relies on its single writer, PostgreSQL relies on constraints and row
//! locks, so that any number of processes can write at once:
//! - a receipt is `INSERT ... ON CONFLICT DO NOTHING` on its primary key; a racing repeat
//!   waits on the first one's row lock and then reads its committed receipt (no polling);
//! - jobs are claimed with `FOR UPDATE SKIP LOCKED` and fenced by `lease_token`;
//! - an `Idempotency-Key` record is inserted the same way, and taken over under `FOR UPDATE`.
//!
//! Of [`PgStore`] only [`PgStore::connect`] (and [`create_schema`]) are meant to be
//! public: every operation, one form each, is `pub(crate)` and reached through
//! [`crate::Store`] (`Store::from(PgStore)`).
//!
//! Each operation is one transaction on a pooled connection, except that deliveries
//! arriving together share one (`group.rs`, group commit). `synchronous_commit` must be
//! on (checked at start-up): an answer leaves only after PostgreSQL made the commit durable.

mod alerts;
mod audit;
mod error;
mod group;
mod idempotency;
mod jobs;
mod maintenance;
mod migrations;
mod outbound;
mod partitions;
mod receipt;
mod receive;
mod replication;
mod session;
mod views;

use std::{future::Future, str::FromStr, sync::Arc, time::Duration};

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

pub use self::error::PgError;
use crate::{ErrorKind, StoreError};

/// How the pool behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgOptions {
    /// Most connections this process opens. Every instance opens its own pool, so the
    /// sum over instances must stay below the server's `max_connections`.
    pub pool_size: usize,
    /// How long an operation waits for a free connection (or a new one) before it fails
    /// as unavailable.
    pub wait_timeout: Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self { pool_size: 16, wait_timeout: Duration::from_secs(5) }
    }
}

/// The PostgreSQL store. Cheap to clone: clones share the pool and the group commit.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    group: Arc<group::Group>,
}

impl std::fmt::Debug for PgStore {
    // The pool's configuration holds the password; it is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("pool_size", &self.pool.status().max_size).finish_non_exhaustive()
    }
}

/// How many times an operation that lost a race (deadlock, serialization failure) runs again.
const RETRIES: usize = 3;

impl PgStore {
    /// Connects to `url` (a `postgres://` URL or a `key=value` string), checks that
    /// commits are durable and applies migrations; several processes may do this at once.
    pub async fn connect(url: &str, options: PgOptions) -> Result<Self, StoreError> {
        // The parser's message could quote the URL, password included; it is not passed on.
        let mut config = tokio_postgres::Config::from_str(url)
            .map_err(|_| StoreError::Config("the PostgreSQL URL cannot be parsed"))?;
        if config.get_application_name().is_none() {
            // So that an operator finds idemgate's sessions in pg_stat_activity.
            config.application_name("idemgate");
        }
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .wait_timeout(Some(options.wait_timeout))
            .create_timeout(Some(options.wait_timeout))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|_| StoreError::Config("the PostgreSQL pool cannot be built"))?;
        let store = Self { group: group::Group::new(pool.clone()), pool };
        let mut client = store.client().await?;
        check_durable(&client).await?;
        migrations::migrate(&mut client).await?;
        let now = client.query_one("SELECT floor(extract(epoch FROM now()))::bigint", &[]).await?.try_get(0)?;
        partitions::roll(&mut client, idemgate_core::UnixTime(now)).await?;
        Ok(store)
    }

    async fn client(&self) -> Result<Object, StoreError> {
        Ok(self.pool.get().await?)
    }

    /// Whether a connection can be had and answers now. Used by readiness checks.
    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        self.client().await?.simple_query("SELECT 1").await?;
        Ok(())
    }

    /// Closes the pool: connections are dropped as they are returned.
    pub(crate) fn close(&self) {
        self.pool.close();
    }
}

/// Creates the schema `name` (letters, digits and `_` only) on the database at `url`,
/// and the database itself if the server does not have it yet, and returns a URL whose
/// connections use that schema: one database can hold many independent stores, as tests
/// and benchmarks need (each its own fresh store).
pub async fn create_schema(url: &str, name: &str) -> Result<String, StoreError> {
    let identifier = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !identifier(name) {
        return Err(StoreError::Config("a schema name is letters, digits and _"));
    }
    let mut config =
        tokio_postgres::Config::from_str(url).map_err(|_| StoreError::Config("the PostgreSQL URL cannot be parsed"))?;
    let client = match execute_once(&config, &format!("CREATE SCHEMA IF NOT EXISTS {name}")).await {
        Err(err) if err.code() == Some(&tokio_postgres::error::SqlState::INVALID_CATALOG_NAME) => {
            let database = config.get_dbname().unwrap_or_default().to_owned();
            if !identifier(&database) {
                return Err(err.into());
            }
            create_database(config.dbname("postgres"), &database).await?;
            execute_once(config.dbname(&database), &format!("CREATE SCHEMA IF NOT EXISTS {name}")).await
        }
        other => other,
    };
    client?;
    let separator = if url.contains('?') { '&' } else { '?' };
    Ok(format!("{url}{separator}options=-csearch_path%3D{name}"))
}

/// Creates `database` unless it exists. Callers starting together (a test suite's first
/// run) race: PostgreSQL refuses a `CREATE DATABASE` while another one copies the template
/// (`object_in_use`), and the loser of a race on the name gets `unique_violation`, so those
/// two are tried again for a few seconds before the error stands.
async fn create_database(config: &tokio_postgres::Config, database: &str) -> Result<(), tokio_postgres::Error> {
    use tokio_postgres::error::SqlState;
    let mut attempts = 50;
    loop {
        match execute_once(config, &format!("CREATE DATABASE {database}")).await {
            Err(err) if err.code() == Some(&SqlState::DUPLICATE_DATABASE) => return Ok(()),
            Err(err)
                if attempts > 0
                    && matches!(err.code(), Some(code) if *code == SqlState::OBJECT_IN_USE || *code == SqlState::UNIQUE_VIOLATION) =>
            {
                attempts -= 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            done => return done,
        }
    }
}

/// Runs one statement on a connection of its own.
async fn execute_once(config: &tokio_postgres::Config, statement: &str) -> Result<(), tokio_postgres::Error> {
    let (client, connection) = config.connect(NoTls).await?;
    let driver = tokio::spawn(connection);
    let done = client.batch_execute(statement).await;
    drop(client);
    let _ = driver.await;
    done
}

/// Brings the schema at `url` to `version` and no further, as an older build would have
/// left it: for tests of the migrations (a store opened later migrates it the rest of the way).
#[doc(hidden)]
pub async fn migrate_schema_to(url: &str, version: u32) -> Result<(), StoreError> {
    let config =
        tokio_postgres::Config::from_str(url).map_err(|_| StoreError::Config("the PostgreSQL URL cannot be parsed"))?;
    let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    let pool = Pool::builder(manager)
        .max_size(1)
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|_| StoreError::Config("the PostgreSQL pool cannot be built"))?;
    let mut client = pool.get().await?;
    migrations::migrate_to(&mut client, i32::try_from(version).unwrap_or(i32::MAX)).await
}

/// Refuses a server that would acknowledge commits before they are durable.
async fn check_durable(client: &Object) -> Result<(), StoreError> {
    let row = client.query_one("SELECT current_setting('synchronous_commit'), current_setting('fsync')", &[]).await?;
    let synchronous_commit: String = row.try_get(0)?;
    let fsync: String = row.try_get(1)?;
    if synchronous_commit == "off" {
        return Err(StoreError::Config("PostgreSQL has synchronous_commit=off: an acknowledged commit could be lost"));
    }
    if fsync == "off" {
        tracing::warn!(
            "PostgreSQL runs with fsync=off: a crash of the database server can lose acknowledged deliveries"
        );
    }
    Ok(())
}

/// Runs `attempt` again when it lost a race; anything else is returned as it is.
async fn retrying<T, F, Fut>(mut attempt: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut tries = 0;
    loop {
        match attempt().await {
            Err(err) if err.kind() == ErrorKind::SerializationFailure && tries < RETRIES => tries += 1,
            other => return other,
        }
    }
}

/// `limit` as a SQL `LIMIT`.
fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// The first column of `rows` (ids, identities, …).
fn first_column<T: for<'a> tokio_postgres::types::FromSql<'a>>(
    rows: &[tokio_postgres::Row],
) -> Result<Vec<T>, tokio_postgres::Error> {
    rows.iter().map(|row| row.try_get(0)).collect()
}
