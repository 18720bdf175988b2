//! The gateway's routes: `POST /in/{route}` for each configured source, `/healthz` and
//! `/readyz`. Each accepted event is stored with one job per destination in the receipt's
//! transaction and answered `202` once that commit is durable.

use std::{
    collections::{BTreeSet, HashMap},
    sync::Arc,
};

use axum::{
    Router,
    extract::{Path, Request, State},
    response::{IntoResponse, Response},
    routing::{MethodRouter, get, post},
};
use http::{HeaderName, header::CONTENT_TYPE};
use idemgate_clock::SystemClock;
use idemgate_core::{Rejection, json};

use idemgate_http::{
    Accepted, AnswerStyle, Checked, Inbound, RejectionCounts,
    answer::{healthy, method_not_allowed, not_found, readiness},
    system_now,
};
use idemgate_store::{
    Store,
    inbox::{IncomingEvent, Ordering, Version},
};
use metrics_exporter_prometheus::PrometheusHandle;
use serde_json::json;

use crate::{
    config::{Config, SourceConfig},
    proxy,
};

/// Longest content type kept with an event; longer ones are not stored.
const MAX_CONTENT_TYPE: usize = 255;

/// One source's route: its configuration and its inbound pipeline.
#[derive(Debug)]
struct SourceRoute {
    config: SourceConfig,
    inbound: Inbound<Store>,
    destinations: Arc<[String]>,
    allowed_types: Option<Arc<BTreeSet<String>>>,
    /// Whether another source feeds one of this source's destinations: its events'
    /// outgoing ids then carry the source, so that no destination gets two events under
    /// one `webhook-id`.
    shares_a_destination: bool,
}

#[derive(Debug)]
struct Gateway {
    routes: HashMap<String, SourceRoute>,
    store: Store,
    metrics: Option<PrometheusHandle>,
}

/// The gateway's router for `config`, writing to `store`: the sources' routes, health,
/// and each `[[proxy]]` under its prefix.
pub fn router(config: &Config, store: &Store, observers: Observers) -> Result<Router, reqwest::Error> {
    let Observers { metrics, rejections } = observers;
    let routes =
        config.sources.iter().map(|source| (source.route.clone(), route(config, source, store, &rejections))).collect();
    let gateway = Arc::new(Gateway { routes, store: store.clone(), metrics });
    let mut router = Router::new();
    for (path, handler) in own_routes() {
        router = router.route(path, handler);
    }
    for proxy in &config.proxies {
        router = router.nest_service(&proxy.prefix, proxy::router(proxy, store, Arc::new(SystemClock))?);
    }
    Ok(router.fallback(not_found).with_state(gateway))
}

/// The gateway's own routes, from which both the router and the reserved prefixes are made.
fn own_routes() -> [(&'static str, MethodRouter<Arc<Gateway>>); 4] {
    [
        ("/in/{route}", post(deliver).fallback(method_not_allowed)),
        ("/healthz", get(healthy)),
        ("/readyz", get(readyz)),
        ("/metrics", get(scrape)),
    ]
}

/// The first path segment of each of the gateway's own routes (`/in`, `/healthz`, …): a
/// `[[proxy]]` prefix may neither be one nor lie below one.
#[must_use]
pub fn reserved_prefixes() -> Vec<&'static str> {
    own_routes().map(|(path, _)| first_segment(path)).into()
}

/// `/in/{route}` → `/in`.
fn first_segment(path: &'static str) -> &'static str {
    let end = path[1..].find('/').map_or(path.len(), |slash| slash + 1);
    &path[..end]
}

/// What the routes report to: the metrics recorder's handle (for `/metrics`) and the
/// rejection counts (for the admin API).
#[derive(Debug, Clone, Default)]
pub struct Observers {
    /// Renders `/metrics`; `None` answers it with 404.
    pub metrics: Option<PrometheusHandle>,
    /// Rejections by source and reason.
    pub rejections: Arc<RejectionCounts>,
}

fn route(config: &Config, source: &SourceConfig, store: &Store, rejections: &Arc<RejectionCounts>) -> SourceRoute {
    let inbound = Inbound {
        source: source.id.clone(),
        scheme: Arc::clone(&source.scheme),
        secrets: source.secrets.clone(),
        body_limit: source.body_limit,
        body_timeout: config.server.body_timeout,
        dedupe_body: source.dedupe_body,
        json_limits: source.json_limits,
        answers: AnswerStyle::Queued,
        rejections: Arc::clone(rejections),
        store: store.clone(),
    };
    SourceRoute {
        shares_a_destination: shares_a_destination(config, source),
        destinations: source.destinations.clone().into(),
        allowed_types: source.allowed_types.clone().map(Arc::new),
        config: source.clone(),
        inbound,
    }
}

fn shares_a_destination(config: &Config, source: &SourceConfig) -> bool {
    config
        .sources
        .iter()
        .filter(|other| other.id != source.id)
        .any(|other| other.destinations.iter().any(|d| source.destinations.contains(d)))
}

async fn deliver(State(gateway): State<Arc<Gateway>>, Path(route): Path<String>, request: Request) -> Response {
    // An unknown source looks exactly like any other unknown path.
    let Some(source) = gateway.routes.get(&route) else {
        return not_found().await;
    };
    let (parts, body) = request.into_parts();
    let delivered = source.inbound.deliver(&parts.headers, body, system_now(), |checked| source.accept(checked)).await;
    delivered.answer.into_response()
}

impl SourceRoute {
    /// Resolves the identity now. The event-type check is decided here but applied by the
    /// store only to a first delivery, after the receipt lookup, so that a repeat of an
    /// event accepted under an older allowlist is still answered as a duplicate.
    fn accept(&self, checked: Checked<'_>) -> Result<Accepted<IncomingEvent>, Rejection> {
        let identity = self.config.identity.resolve(
            self.config.scheme.as_ref(),
            checked.headers,
            checked.delivery,
            checked.event,
        )?;
        let event_type = self.event_type(checked);
        let refusal = self
            .allowed_types
            .as_ref()
            .filter(|allowed| !event_type.as_ref().is_some_and(|t| allowed.contains(t)))
            .map(|_| "event type is not accepted by this source");
        let event = IncomingEvent {
            result: json!({ "event": identity.as_str() }),
            outgoing_id: self.shares_a_destination.then(|| format!("{}:{identity}", self.config.id)),
            event_type,
            content_type: content_type(checked),
            headers: self.forwarded_headers(checked),
            ordering: self.ordering(checked),
            body: checked.raw.clone(),
            destinations: Arc::clone(&self.destinations),
            refusal,
        };
        Ok(Accepted { identity, effect: event })
    }

    fn event_type(&self, checked: Checked<'_>) -> Option<String> {
        let pointer = self.config.event_type.as_deref()?;
        checked.event.pointer(pointer)?.as_str().map(str::to_owned)
    }

    /// The configured headers present on the request, to pass on to destinations.
    fn forwarded_headers(&self, checked: Checked<'_>) -> Vec<(String, String)> {
        let present =
            |name: &HeaderName| Some((name.to_string(), checked.headers.get(name)?.to_str().ok()?.to_owned()));
        self.config.forward_headers.iter().filter_map(present).collect()
    }

    /// The ordering key and version, when the source has a guard and the event has both.
    fn ordering(&self, checked: Checked<'_>) -> Option<Ordering> {
        let guard = self.config.ordering.as_ref()?;
        let key = match checked.event.pointer(&guard.key)? {
            json::Json::String(text) => text.clone(),
            number => number.as_i64()?.to_string(),
        };
        let version = match checked.event.pointer(&guard.version)? {
            json::Json::String(text) => Version::Text(text.clone()),
            number => Version::Int(number.as_i64()?),
        };
        Some(Ordering { key, version })
    }
}

fn content_type(checked: Checked<'_>) -> Option<String> {
    let value = checked.headers.get(CONTENT_TYPE)?.to_str().ok()?;
    (value.len() <= MAX_CONTENT_TYPE).then(|| value.to_owned())
}

/// Prometheus text: the counters and histograms recorded so far, and gauges read from the
/// store now (jobs by state, the age of the oldest waiting job).
async fn scrape(State(gateway): State<Arc<Gateway>>) -> Response {
    let Some(handle) = &gateway.metrics else { return not_found().await };
    if let Err(err) = record_store_gauges(&gateway.store).await {
        tracing::warn!(error = %err, "could not read job gauges");
    }
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], handle.render()).into_response()
}

/// Reads the queue's gauges from the store. While the store cannot be read, the gauges keep
/// their last values (a backlog does not look empty because the store is down) and
/// `idemgate_store_available` says 0.
async fn record_store_gauges(store: &Store) -> Result<(), idemgate_store::StoreError> {
    let read =
        async { Ok::<_, idemgate_store::StoreError>((store.job_states().await?, store.oldest_waiting_job().await?)) };
    let read = read.await;
    metrics::gauge!("idemgate_store_available").set(if read.is_ok() { 1.0 } else { 0.0 });
    let (states, oldest) = read?;
    for state in idemgate_core::job::JobState::ALL {
        metrics::gauge!("idemgate_jobs", "state" => state.as_str()).set(0.0);
    }
    for (state, count) in states {
        metrics::gauge!("idemgate_jobs", "state" => state).set(count as f64);
    }
    let age = oldest.map_or(0, |oldest| (system_now().0 - oldest.0).max(0));
    metrics::gauge!("idemgate_oldest_waiting_job_seconds").set(age as f64);
    Ok(())
}

/// Ready when the store's writer can take the write lock now.
async fn readyz(State(gateway): State<Arc<Gateway>>) -> Response {
    let ready = gateway.store.ping().await;
    if let Err(err) = &ready {
        tracing::warn!(error = %err, "readiness check failed");
    }
    readiness(ready.is_ok())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{raw, validated};

    fn with_proxies(prefixes: &[&str]) -> Result<Config, crate::config::ConfigError> {
        let mut text = String::new();
        for prefix in prefixes {
            text.push_str(&format!("[[proxy]]\nprefix = {prefix:?}\nupstream = \"http://127.0.0.1:1\"\n"));
        }
        Ok(validated::validate(raw::parse(&text, Vec::new())?, Path::new("."))?.0)
    }

    #[test]
    fn the_reserved_prefixes_are_the_first_segments_of_the_own_routes() {
        assert_eq!(reserved_prefixes(), ["/in", "/healthz", "/readyz", "/metrics"]);
    }

    #[test]
    fn a_proxy_on_or_below_an_own_route_is_refused_naming_the_key() {
        for taken in reserved_prefixes() {
            for prefix in [taken.to_owned(), format!("{taken}/x")] {
                let err = with_proxies(&["/api", &prefix]).unwrap_err();
                assert_eq!(err.key, "proxy[1].prefix", "{prefix}: {err}");
                assert!(err.message.contains(taken), "{err}");
            }
        }
    }

    #[test]
    fn every_prefix_the_configuration_accepts_builds_a_router() {
        let candidates = [
            "/api",
            "/api/v1",
            "/inbox",
            "/metricsx",
            "/a:b@c",
            "/%7Bx%7D",
            "/{x}",
            "/a/{*rest}",
            "/*",
            "/a//b",
            "/a/../b",
            "/./a",
            "/api/",
            "/",
            "",
            "api",
            "/a b",
            "/a?b",
            "/a#b",
            "/ä",
        ];
        for first in ["/api", "/api/v1", "/b"] {
            for prefix in candidates {
                let Ok(config) = with_proxies(&[first, prefix]) else { continue };
                let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    router(&config, &Store::unavailable(), Observers::default()).map(|_| ())
                }));
                assert!(
                    matches!(built, Ok(Ok(()))),
                    "[[proxy]] {first:?} then {prefix:?} was accepted but cannot be served"
                );
            }
        }
    }
}
