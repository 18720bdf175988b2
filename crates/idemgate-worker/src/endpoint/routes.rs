//! The routes of customer endpoints, from the store (`docs/design/outbound-api.md` §3.5):
//! a destination named `ep_…` is an endpoint of the outbound API, and its [`Route`] is
//! made from the stored row, its custom headers and its secrets opened with `[api]
//! secrets_key`, kept in a cache beside the configured routes.
//!
//! The cache follows the store's outbound version, which every application, endpoint and
//! secret change moves in its transaction: the worker reads it before each claim and, when
//! it moved, reloads the endpoints changed since (`Store::endpoints_changed_since`); a job
//! whose endpoint the cache lacks makes the same read at once (the endpoint was made after
//! the last one). So a change is seen within one claim, or one poll interval, on every
//! instance.
//!
//! An endpoint's route is never FIFO, never handed over (it is not in the configured
//! table whose eligible set the hand-over reads: its jobs are claimed), retries on the
//! worker's default policy, and is rate limited by the endpoint's `throttleRate`. A secret
//! that does not open fails every attempt "secret unreadable" (retried, never sent
//! unsigned); a job whose endpoint is deleted ends dead "endpoint deleted".

use std::{collections::HashMap, sync::Arc, time::Duration};

use arc_swap::ArcSwap;
use idemgate_core::{
    SecretSet, UnixTime,
    outbound::{id::EndpointId, sealing::SecretsKey},
    retry::{AttemptResult, RetryPolicy},
};
use idemgate_store::{
    Store,
    jobs::ClaimedJob,
    outbound::{
        OutboundError,
        endpoint::{ENDPOINT_DELETED, EndpointState},
    },
};

use super::{Endpoint, EndpointClient, EndpointDelivery};
use crate::{AttemptOutcome, Deliver, Protection, RateLimit, Route, deliver::BoxFuture};

/// The prefix of an endpoint's id, and so of its destination's name.
pub const ENDPOINT_PREFIX: &str = "ep_";

/// Why an endpoint's attempt fails while a secret of its does not open.
pub const SECRET_UNREADABLE: &str = "secret unreadable";

/// The whole of one attempt to an endpoint (connecting, sending, reading the answer).
pub const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(15);

/// The endpoints' routes, cached by endpoint id and kept in step with the store's outbound
/// version. Clones share one cache.
#[derive(Clone)]
pub struct EndpointRoutes(Arc<Cache>);

struct Cache {
    store: Store,
    client: EndpointClient,
    key: Option<SecretsKey>,
    policy: RetryPolicy,
    timeout: Duration,
    /// The routes by endpoint id, and the version they were read at.
    routes: ArcSwap<Cached>,
    /// One reload at a time.
    reloading: tokio::sync::Mutex<Option<String>>,
}

#[derive(Default)]
struct Cached {
    /// `None` before the first read: then every endpoint is read.
    version: Option<i64>,
    routes: Arc<HashMap<String, Route>>,
}

impl std::fmt::Debug for EndpointRoutes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cached = self.0.routes.load();
        f.debug_struct("EndpointRoutes")
            .field("version", &cached.version)
            .field("endpoints", &cached.routes.len())
            .finish()
    }
}

impl EndpointRoutes {
    /// The endpoints of `store`, delivered to through `client`, their secrets opened with
    /// `key` (`None`: none configured, so every endpoint's secret is unreadable), retried
    /// on the worker's default policy.
    #[must_use]
    pub fn new(store: Store, client: EndpointClient, key: Option<SecretsKey>) -> Self {
        Self(Arc::new(Cache {
            store,
            client,
            key,
            policy: RetryPolicy::default(),
            timeout: ENDPOINT_TIMEOUT,
            routes: ArcSwap::default(),
            reloading: tokio::sync::Mutex::new(None),
        }))
    }

    /// The cached routes by endpoint id, as they are now.
    #[must_use]
    pub fn snapshot(&self) -> Arc<HashMap<String, Route>> {
        Arc::clone(&self.0.routes.load().routes)
    }

    /// Reads the outbound version and, when it moved since the last read, the endpoints
    /// changed since, replacing their routes (a deleted endpoint's is dropped). A store
    /// that cannot be read leaves the cache as it was; the failure is logged when it
    /// differs from the last one.
    pub(crate) async fn refresh(&self, now_ms: i64) {
        let mut failing = self.0.reloading.lock().await;
        match self.reload(now_ms).await {
            Ok(()) => {
                if failing.take().is_some() {
                    tracing::info!("reading the endpoints works again");
                }
            }
            Err(err) => {
                let text = err.to_string();
                if failing.as_ref() != Some(&text) {
                    tracing::warn!(error = %text, "could not read the endpoints; their routes stay as they were");
                    *failing = Some(text);
                }
            }
        }
    }

    async fn reload(&self, now_ms: i64) -> Result<(), OutboundError> {
        let cached = self.0.routes.load_full();
        let since = match cached.version {
            Some(version) if self.0.store.outbound_version().await? == version => return Ok(()),
            Some(version) => version,
            None => 0,
        };
        let changed = self.0.store.endpoints_changed_since(since, now_ms).await?;
        let mut routes = HashMap::clone(&cached.routes);
        for state in changed.endpoints {
            if state.live {
                let route = self.route(&state);
                routes.insert(state.endpoint.id, route);
            } else {
                routes.remove(&state.endpoint.id);
            }
        }
        self.0.routes.store(Arc::new(Cached { version: Some(changed.version), routes: Arc::new(routes) }));
        Ok(())
    }

    /// The route of a live endpoint.
    fn route(&self, state: &EndpointState) -> Route {
        let endpoint = &state.endpoint;
        let rate_limit = endpoint
            .throttle_rate
            .map(|rate| RateLimit { per_second: f64::from(rate.max(1)), burst: u32::from(rate.max(1)) });
        let deliver: Arc<dyn Deliver> = match self.secrets(state) {
            Some(secrets) => {
                let target = Endpoint {
                    url: endpoint.url.clone(),
                    headers: endpoint.headers.iter().map(|(name, value)| (name.clone(), value.clone())).collect(),
                    secrets,
                    timeout: self.0.timeout,
                };
                match EndpointDelivery::new(&self.0.client, target) {
                    Ok(delivery) => Arc::new(delivery),
                    Err(err) => Arc::new(Undeliverable { reason: err.to_string(), permanent: true }),
                }
            }
            None => Arc::new(Undeliverable { reason: SECRET_UNREADABLE.to_owned(), permanent: false }),
        };
        Route {
            deliver,
            policy: self.0.policy.clone(),
            fifo: false,
            transform: None,
            protection: Protection { rate_limit, ..Protection::default() },
        }
    }

    /// The endpoint's secrets, opened (the current first), or `None` when one of them does
    /// not open: a delivery is signed with all of them or not sent.
    fn secrets(&self, state: &EndpointState) -> Option<SecretSet> {
        let key = self.0.key.as_ref()?;
        let id = EndpointId::parse(&state.endpoint.id).ok()?;
        let mut opened = Vec::with_capacity(state.secrets.len());
        for stored in &state.secrets {
            match key.open(&stored.sealed, &id, stored.seq) {
                Ok(secret) => opened.push(secret.secret().clone()),
                Err(err) => {
                    tracing::warn!(endpoint = %state.endpoint.id, seq = stored.seq, error = %err, "an endpoint's secret does not open; its attempts fail until it does");
                    return None;
                }
            }
        }
        SecretSet::new(opened).ok()
    }

    /// The route of a job's endpoint that no read of the store found live: it was deleted
    /// (or its application was), so the job ends dead without being sent.
    pub(crate) fn deleted() -> Route {
        Route {
            deliver: Arc::new(Undeliverable { reason: ENDPOINT_DELETED.to_owned(), permanent: true }),
            policy: RetryPolicy::default(),
            fifo: false,
            transform: None,
            protection: Protection::default(),
        }
    }
}

/// An endpoint that cannot be sent to as it is stored: each attempt fails with `reason`
/// without a connection, retried unless `permanent`.
#[derive(Debug)]
struct Undeliverable {
    reason: String,
    permanent: bool,
}

impl Deliver for Undeliverable {
    fn deliver<'a>(&'a self, _job: &'a ClaimedJob, _now: UnixTime) -> BoxFuture<'a, AttemptOutcome> {
        let outcome = AttemptOutcome {
            result: AttemptResult::Refused { permanent: self.permanent },
            error: Some(self.reason.clone()),
            response_prefix: None,
        };
        Box::pin(std::future::ready(outcome))
    }
}
