//! The store's availability at start-up. A gateway that exits because its database is
//! down at the moment it starts turns a passing outage into a lasting one, so `serve` (and
//! `worker`) start on [`Store::unavailable`] instead, and a background task opens the store
//! with backoff until it can: from then on every clone of the store works, without a
//! restart. Until then deliveries are answered 503 with `Retry-After`, `/readyz` is 503,
//! each `[[proxy]]` follows its `when_unavailable`, and the worker waits. Only a failure
//! that waiting cannot fix (a configuration the store refuses, a schema from a newer
//! idemgate) stops start-up.

use std::{os::unix::fs::DirBuilderExt, path::PathBuf, sync::Arc, time::Duration};

use idemgate_store::{PgStore, SqliteStore, Store, StoreError, StoreOptions, replication::FAILOVER_WARNING};
use tokio::sync::watch;

use crate::{config::StoreConfig, errors::one_line};

/// The first pause between two attempts to open the store; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Why the store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The SQLite file's folder could not be created.
    #[error("cannot create the store's folder {path}: {source}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The store itself refused.
    #[error("cannot open the store: {0}")]
    Store(#[from] StoreError),
}

impl OpenError {
    /// Whether waiting cannot help: the configuration or the schema must change first.
    #[must_use]
    pub fn is_lasting(&self) -> bool {
        matches!(self, Self::Store(StoreError::Config(_) | StoreError::NewerSchema { .. }))
    }

    /// Whether it is a configuration the store refuses (the process exits with 2).
    #[must_use]
    pub fn is_config(&self) -> bool {
        matches!(self, Self::Store(StoreError::Config(_)))
    }
}

/// Opens the configured store once: PostgreSQL when `store.url` is set, else the SQLite
/// file (its folder created if missing, 0700).
pub async fn open(config: &StoreConfig) -> Result<Store, OpenError> {
    if let Some(postgres) = &config.postgres {
        return Ok(PgStore::connect(&postgres.url, postgres.options).await?.into());
    }
    let path = config.path.clone();
    let options = StoreOptions { busy_timeout: config.busy_timeout, ..StoreOptions::default() };
    let opened = tokio::task::spawn_blocking(move || {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            // 0700: the store in it holds payloads. A folder that exists keeps its mode.
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|source| OpenError::Folder { path: parent.to_owned(), source })?;
        }
        Ok::<_, OpenError>(SqliteStore::open(&path, options)?)
    })
    .await
    .map_err(|_| StoreError::Unavailable)??;
    Ok(Arc::new(opened).into())
}

/// The store of a long-running command, open or still being opened in the background.
#[derive(Debug)]
pub struct Availability {
    /// The store; until it is open every operation on it fails as unavailable.
    pub store: Store,
    opened: watch::Receiver<bool>,
}

impl Availability {
    /// Opens the store, or, when that fails in a way that may pass, starts without it and
    /// keeps opening it in the background until it is open or `stop` turns true. A lasting
    /// failure is returned.
    pub async fn open(config: &StoreConfig, stop: watch::Receiver<bool>) -> Result<Self, OpenError> {
        let (opening, opened) = watch::channel(false);
        match open(config).await {
            Ok(store) => {
                warn_of_failover_risk(&store).await;
                let _ = opening.send(true);
                Ok(Self { store, opened })
            }
            Err(err) if err.is_lasting() => Err(err),
            Err(err) => {
                tracing::error!(error = %one_line(&err), "the store is unavailable; serving without it and retrying");
                let store = Store::unavailable();
                tokio::spawn(keep_opening(config.clone(), store.clone(), one_line(&err), opening, stop));
                Ok(Self { store, opened })
            }
        }
    }

    /// Waits until the store is open: `true`, or `false` when `stop` turned true first.
    pub async fn until_open(&self, mut stop: watch::Receiver<bool>) -> bool {
        let mut opened = self.opened.clone();
        tokio::select! {
            opened = opened.wait_for(|open| *open) => opened.is_ok(),
            _ = stop.wait_for(|stop| *stop) => false,
        }
    }
}

/// Tries to open the store with a doubling pause until it opens, then hands the backend to
/// `store`. A failure is logged when it differs from the previous one, not on every try.
async fn keep_opening(
    config: StoreConfig,
    store: Store,
    mut last: String,
    opening: watch::Sender<bool>,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        if tokio::time::timeout(backoff, stop.wait_for(|stop| *stop)).await.is_ok() {
            return;
        }
        match open(&config).await {
            Ok(opened) => {
                store.make_available(&opened);
                let _ = opening.send(true);
                tracing::info!(backend = store.backend(), "the store is open; serving with it");
                warn_of_failover_risk(&store).await;
                return;
            }
            Err(err) => {
                let now = one_line(&err);
                if now != last {
                    tracing::error!(error = %now, "the store is still unavailable; retrying");
                    last = now;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Logs a warning, once when the store opens, if it is PostgreSQL and a failover to a
/// standby could lose events it acknowledges: no synchronous standby connected and in
/// sync, or commits that do not wait for one. Not an error: one server without
/// replication is a valid setup. `/readyz` and `idemgate_store_synchronous_standby` say
/// the same while the gateway runs.
async fn warn_of_failover_risk(store: &Store) {
    match store.replication().await {
        Ok(Some(replication)) => {
            if let Some(risk) = replication.failover_risk() {
                tracing::warn!(reason = %risk, "{FAILOVER_WARNING}");
            }
        }
        Ok(None) => {}
        Err(err) => tracing::warn!(error = %one_line(&err), "could not read PostgreSQL's replication state"),
    }
}
