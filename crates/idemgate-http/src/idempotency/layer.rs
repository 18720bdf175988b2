//! [`IdempotencyLayer`]: wraps a service in [`Idempotency`].

use std::{
    sync::{Arc, atomic::AtomicU64},
    time::Duration,
};

use idemgate_clock::{Clock, SystemClock};
use idemgate_store::Store;
use tower::Layer;

use super::{IdempotencyConfig, replays::Replays, service::Idempotency};

/// Applies `Idempotency-Key` semantics to the wrapped service. See the module docs.
///
/// ```no_run
/// use std::sync::Arc;
/// use axum::{Router, routing::post};
/// use idemgate_http::idempotency::{IdempotencyConfig, IdempotencyLayer};
/// use idemgate_store::{SqliteStore, StoreOptions};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let store = Arc::new(SqliteStore::open("api.sqlite3".as_ref(), StoreOptions::default())?);
/// let layer = IdempotencyLayer::new(store, IdempotencyConfig::default());
/// tokio::spawn(layer.purge_expired_every(std::time::Duration::from_secs(60)));
/// let app: Router = Router::new().route("/orders", post(|| async { "created" })).layer(layer);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct IdempotencyLayer {
    pub(super) shared: Arc<Shared>,
}

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) config: IdempotencyConfig,
    pub(super) store: Store,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) replays: Replays,
    pub(super) unprotected: AtomicU64,
}

impl IdempotencyLayer {
    /// A layer keeping its records in `store` (an `Arc<SqliteStore>` or a [`Store`]).
    #[must_use]
    pub fn new(store: impl Into<Store>, config: IdempotencyConfig) -> Self {
        Self::with_clock(store, config, Arc::new(SystemClock))
    }

    /// A layer on an injected clock (locks and retention are timed by it).
    #[must_use]
    pub fn with_clock(store: impl Into<Store>, config: IdempotencyConfig, clock: Arc<dyn Clock>) -> Self {
        let replays = Replays::with_capacity(config.replay_cache_bytes);
        let shared = Shared { config, store: store.into(), clock, replays, unprotected: AtomicU64::new(0) };
        Self { shared: Arc::new(shared) }
    }

    /// How many requests ran unprotected because the store was unavailable.
    #[must_use]
    pub fn unprotected_count(&self) -> u64 {
        self.shared.unprotected.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Deletes expired records every `interval`, forever; spawn it next to the server.
    pub fn purge_expired_every(&self, interval: Duration) -> impl Future<Output = ()> + Send + 'static {
        purge_expired_every(self.shared.store.clone(), Arc::clone(&self.shared.clock), interval)
    }
}

/// Deletes `store`'s expired idempotency records every `interval`, forever. One task per
/// store is enough, whatever the number of layers on it.
pub async fn purge_expired_every(store: Store, clock: Arc<dyn Clock>, interval: Duration) {
    loop {
        tokio::time::sleep(interval).await;
        match store.purge_idempotency(clock.now_ms(), 1000).await {
            Ok(0) => {}
            Ok(purged) => tracing::debug!(purged, "expired idempotency records purged"),
            Err(err) => tracing::warn!(error = %err, "purging idempotency records failed"),
        }
    }
}

impl<S> Layer<S> for IdempotencyLayer {
    type Service = Idempotency<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Idempotency { inner, shared: Arc::clone(&self.shared) }
    }
}
