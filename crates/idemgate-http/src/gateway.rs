//! The gateway's routes: `POST /in/{route}` for each configured source, `/healthz`,
//! `/readyz`, `/metrics`, and each `[[proxy]]` under its prefix. Each accepted event is
//! stored with one job per destination it matches ([`Subscription`]: event-type patterns
//! and a jq filter, decided here once, before the store) in the receipt's transaction and
//! answered `202` once that commit is durable. A repeat finds the receipt first, so what
//! was decided for the first delivery is never decided again.
//!
//! What the routes are made from is plain data ([`Routes`], [`Source`],
//! [`ProxyRoute`]): the gateway binary turns its configuration into it, so this crate
//! knows no configuration file. The time of every delivery is read from the
//! [`Clock`] given to [`router`].
//!
//! Each delivery is a `delivery` span ([`crate::trace`]) continuing the sender's
//! `traceparent`; a traced event stores that span's own `traceparent` with its headers,
//! so that the worker's attempts are its children.

use std::{
    collections::{BTreeSet, HashMap},
    sync::Arc,
    time::Duration,
};

use axum::{
    Router,
    body::Body,
    extract::{Path, Request, State},
    response::{IntoResponse, Response},
    routing::{MethodRouter, get, post},
};
use http::{HeaderMap, HeaderName, header::CONTENT_TYPE};
use idemgate_clock::Clock;
use idemgate_core::{
    Outcome, Rejection, Scheme, SecretSet, SourceName, UnixTime,
    comparison::FieldPointer,
    form::BodyFormat,
    json,
    outcome::{Field, Location},
    routing::{self, TypePattern},
    scheme::IdentityLocation,
    traceparent::{self, Traceparent},
};
use idemgate_jq::Program;
use idemgate_store::{
    Store,
    inbox::{IncomingEvent, Ordering, Version},
};
use serde_json::json;
use tracing::{Instrument, info_span};

use crate::{
    Accepted, AnswerStyle, Checked, DeliveryAnswer, Inbound, RejectionCounts,
    answer::{healthy, method_not_allowed, not_found, readiness},
    outbound,
    proxy::{self, ProxyRoute},
    scrape::Render,
    trace,
};

/// Longest content type kept with an event; longer ones are not stored.
const MAX_CONTENT_TYPE: usize = 255;
/// Longest event type taken from a header; a longer one is no type.
const MAX_EVENT_TYPE: usize = 255;
/// Why the store refuses a first delivery whose type the source does not accept.
const TYPE_NOT_ACCEPTED: &str = "event type is not accepted by this source";

/// Everything the gateway's router serves.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    /// The sources, each at `POST /in/<route>`.
    pub sources: Vec<Source>,
    /// The proxied upstreams, each under its prefix.
    pub proxies: Vec<ProxyRoute>,
    /// How long a sender may take to send a delivery's whole body.
    pub body_timeout: Duration,
    /// The outbound API on `/api/v1`, when `[api]` enables it.
    pub api: Option<outbound::Api>,
}

/// One source's route: how its deliveries are verified, identified and stored.
#[derive(Debug, Clone)]
pub struct Source {
    /// Stable id: receipts are keyed by it.
    pub id: SourceName,
    /// `POST /in/<route>`.
    pub route: String,
    /// The signature scheme.
    pub scheme: Arc<dyn Scheme>,
    /// Decoded active secrets.
    pub secrets: SecretSet,
    /// Largest body, in bytes.
    pub body_limit: usize,
    /// Strict JSON limits.
    pub json_limits: json::Limits,
    /// How bodies are read into the JSON view (JSON, or a form).
    pub body: BodyFormat,
    /// The fields the provider changes when it retries, left out of the fingerprint.
    pub per_attempt: Vec<FieldPointer>,
    /// Where the stable event identity is.
    pub identity: IdentityLocation,
    /// Whether the same body bytes under another identity are a duplicate of the first.
    pub dedupe_body: bool,
    /// JSON pointer to the event type.
    pub event_type: Option<String>,
    /// Request header holding the event type; when present on a delivery it is the type.
    pub event_type_header: Option<HeaderName>,
    /// Accepted event types; `None` accepts all.
    pub allowed_types: Option<BTreeSet<String>>,
    /// The destinations and what each subscribes to: one job for each that an event matches.
    pub destinations: Vec<Subscription>,
    /// Original headers passed on to destinations (lowercase names).
    pub forward_headers: Vec<HeaderName>,
    /// The ordering guard, if any.
    pub ordering: Option<OrderingGuard>,
}

/// One destination of a source and the events it gets: those whose type matches one of
/// `types` (when given) and for which `filter` (when given) is truthy.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    /// The destination's name.
    pub destination: String,
    /// Event-type patterns; `None`: every event.
    pub types: Option<Vec<TypePattern>>,
    /// A jq expression on the parsed body; `None`: every event.
    pub filter: Option<Program>,
}

impl Subscription {
    /// Every event to `destination`.
    #[must_use]
    pub fn every_event(destination: impl Into<String>) -> Self {
        Self { destination: destination.into(), types: None, filter: None }
    }

    /// What this subscription decides for an event of `event_type` with `body`.
    #[must_use]
    pub fn decide(&self, event_type: Option<&str>, body: &[u8]) -> Routing {
        if !routing::subscribed(self.types.as_deref(), event_type) {
            return Routing::Unmatched;
        }
        match self.filter.as_ref().map(|filter| filter.matches(body)) {
            None | Some(Ok(true)) => Routing::Matched,
            Some(Ok(false)) => Routing::Unmatched,
            Some(Err(err)) => Routing::FilterFailed(format!("filter failed: {err}")),
        }
    }
}

/// A subscription's decision for one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routing {
    /// A job, delivered as usual.
    Matched,
    /// No job.
    Unmatched,
    /// The filter failed on this event: a job stored `dead` with this reason.
    FilterFailed(String),
}

/// Where an event's ordering key and version are (JSON pointers): of two events with one
/// key, the one with the lower version is not delivered after the higher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderingGuard {
    /// JSON pointer to the ordering key.
    pub key: String,
    /// JSON pointer to the version.
    pub version: String,
}

/// One source's route at run time: its settings and its inbound pipeline.
#[derive(Debug)]
struct SourceRoute {
    source: Source,
    inbound: Inbound<Store>,
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
    clock: Arc<dyn Clock>,
    metrics: Option<Render>,
}

/// What the routes report to: the metrics renderer (for `/metrics`) and the rejection
/// counts (for the admin API).
#[derive(Debug, Clone, Default)]
pub struct Observers {
    /// Renders `/metrics`; `None` answers it with 404.
    pub metrics: Option<Render>,
    /// Rejections by source and reason.
    pub rejections: Arc<RejectionCounts>,
}

/// The gateway's router for `routes`, writing to `store` and reading the time from
/// `clock`: the sources' routes, health, metrics, and each proxy under its prefix.
pub fn router(
    routes: &Routes,
    store: &Store,
    clock: Arc<dyn Clock>,
    observers: Observers,
) -> Result<Router, reqwest::Error> {
    let Observers { metrics, rejections } = observers;
    let sources =
        routes.sources.iter().map(|source| (source.route.clone(), route(routes, source, store, &rejections))).collect();
    let gateway = Arc::new(Gateway { routes: sources, store: store.clone(), clock: Arc::clone(&clock), metrics });
    let mut router = Router::new();
    for (path, handler) in own_routes() {
        router = router.route(path, handler);
    }
    for proxy in &routes.proxies {
        router = router.nest_service(&proxy.prefix, proxy::router(proxy, store, Arc::clone(&clock))?);
    }
    if let Some(api) = &routes.api {
        router = router.nest_service(outbound::PREFIX, outbound::router(api, store, Arc::clone(&clock)));
        if let Some(portal) = outbound::portal_router(api, store, Arc::clone(&clock)) {
            router = router.nest_service(crate::portal::PREFIX, portal);
        }
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

fn route(routes: &Routes, source: &Source, store: &Store, rejections: &Arc<RejectionCounts>) -> SourceRoute {
    let inbound = Inbound {
        source: source.id.clone(),
        scheme: Arc::clone(&source.scheme),
        secrets: source.secrets.clone(),
        body_limit: source.body_limit,
        body_timeout: routes.body_timeout,
        dedupe_body: source.dedupe_body,
        json_limits: source.json_limits,
        body_format: source.body,
        per_attempt: source.per_attempt.clone().into(),
        answers: AnswerStyle::Queued,
        rejections: Arc::clone(rejections),
        store: store.clone(),
    };
    SourceRoute {
        shares_a_destination: shares_a_destination(routes, source),
        allowed_types: source.allowed_types.clone().map(Arc::new),
        source: source.clone(),
        inbound,
    }
}

fn shares_a_destination(routes: &Routes, source: &Source) -> bool {
    routes.sources.iter().filter(|other| other.id != source.id).any(|other| {
        other.destinations.iter().any(|d| source.destinations.iter().any(|s| s.destination == d.destination))
    })
}

async fn deliver(State(gateway): State<Arc<Gateway>>, Path(route): Path<String>, request: Request) -> Response {
    // An unknown source looks exactly like any other unknown path.
    let Some(source) = gateway.routes.get(&route) else {
        return not_found().await;
    };
    let (parts, body) = request.into_parts();
    let span = trace::delivery_span(&source.source.id, &parts.headers);
    let traced = trace::traceparent_of(&span);
    let answer = source.deliver(&parts.headers, body, gateway.clock.now(), traced).instrument(span.clone()).await;
    let response = info_span!(parent: &span, "answer").in_scope(|| answer.into_response());
    span.record("http.response.status_code", response.status().as_u16());
    response
}

/// What the source's rules make of a delivery: the identity and event to offer the store,
/// and the refusal the store applies to a first delivery, as its answer names it.
struct Ruled {
    accepted: Accepted<IncomingEvent>,
    refusal: Option<Rejection>,
}

impl SourceRoute {
    /// One delivery, top-down: read, verify and parse; the source's rules; the store.
    async fn deliver(
        &self,
        headers: &HeaderMap,
        body: Body,
        now: UnixTime,
        traced: Option<Traceparent>,
    ) -> DeliveryAnswer {
        let verified = match self.inbound.verify(headers, body, now).await {
            Ok(verified) => verified,
            Err(rejected) => return rejected.answer,
        };
        let Ruled { accepted, refusal } = match self.rules(verified.checked(headers), traced) {
            Ok(ruled) => ruled,
            Err(rejection) => return self.inbound.reject(rejection, now).answer,
        };
        match (self.inbound.commit(&verified, accepted).await.answer, refusal) {
            // The store refused the first delivery by the rules' refusal: answered as the
            // contract refusal it is.
            (DeliveryAnswer::Queued(Outcome::Refused { .. }), Some(refusal)) => DeliveryAnswer::Rejected(refusal),
            (answer, _) => answer,
        }
    }

    /// The source's rules, as a step between the parse and the store: resolves the
    /// identity, routes the event to its destinations and decides the event-type check,
    /// which the store applies only to a first delivery, after the receipt lookup, so that
    /// a repeat of an event accepted under an older allowlist is still answered as a
    /// duplicate.
    ///
    /// `traced` is the delivery's own span when it is traced: it is stored with the
    /// event's headers as its `traceparent`, the parent of every attempt to deliver it.
    fn rules(&self, checked: Checked<'_>, traced: Option<Traceparent>) -> Result<Ruled, Rejection> {
        let identity = self.source.identity.resolve(
            self.source.scheme.as_ref(),
            checked.headers,
            checked.delivery,
            checked.event,
        )?;
        let event_type = self.event_type(checked);
        // Named where the type was read (never the type itself).
        let refusal = self
            .allowed_types
            .as_ref()
            .filter(|allowed| !event_type.as_ref().is_some_and(|t| allowed.contains(t)))
            .map(|_| Rejection::Contract { reason: TYPE_NOT_ACCEPTED, field: self.event_type_field(checked.headers) });
        // Filters read the JSON view: the body itself, or a form's fields as a JSON object.
        let view;
        let filtered: &[u8] = match self.source.body {
            BodyFormat::Json => checked.raw,
            BodyFormat::Form => {
                view = serde_json::to_vec(&serde_json::Value::from(checked.event)).unwrap_or_default();
                &view
            }
        };
        let (destinations, dead) = self.route(event_type.as_deref(), filtered);
        let event = IncomingEvent {
            result: json!({ "event": identity.as_str() }),
            outgoing_id: self.shares_a_destination.then(|| format!("{}:{identity}", self.source.id)),
            event_type,
            content_type: content_type(checked),
            headers: self.stored_headers(checked, traced),
            ordering: self.ordering(checked),
            body: checked.raw.clone(),
            destinations: destinations.into(),
            dead,
            refusal: refusal.as_ref().map(|_| TYPE_NOT_ACCEPTED),
        };
        Ok(Ruled { accepted: Accepted { identity, effect: event }, refusal })
    }

    /// Where this delivery's type was looked for: the configured header when the delivery
    /// has it, else the configured pointer, else the header.
    fn event_type_field(&self, headers: &HeaderMap) -> Option<Field> {
        let header = self.source.event_type_header.as_ref();
        let location = match (header, self.source.event_type.as_ref()) {
            (Some(name), _) if headers.contains_key(name) => Location::Header(name.to_string()),
            (_, Some(pointer)) => Location::Pointer(pointer.clone()),
            (Some(name), None) => Location::Header(name.to_string()),
            (None, None) => return None,
        };
        Some(Field { name: Field::EVENT_TYPE, location })
    }

    /// The destinations that get a job, and those whose filter failed with its reason.
    fn route(&self, event_type: Option<&str>, body: &[u8]) -> (Vec<String>, Vec<(String, String)>) {
        let (mut matched, mut dead) = (Vec::new(), Vec::new());
        for subscription in &self.source.destinations {
            match subscription.decide(event_type, body) {
                Routing::Matched => matched.push(subscription.destination.clone()),
                Routing::Unmatched => {}
                Routing::FilterFailed(reason) => dead.push((subscription.destination.clone(), reason)),
            }
        }
        (matched, dead)
    }

    /// The type from the configured header when the delivery has it, else from the body.
    fn event_type(&self, checked: Checked<'_>) -> Option<String> {
        let from_header = self.source.event_type_header.as_ref().and_then(|name| checked.headers.get(name));
        if let Some(value) = from_header {
            return value.to_str().ok().filter(|t| !t.is_empty() && t.len() <= MAX_EVENT_TYPE).map(str::to_owned);
        }
        let pointer = self.source.event_type.as_deref()?;
        checked.event.pointer(pointer)?.as_str().map(str::to_owned)
    }

    /// The configured headers present on the request, to pass on to destinations, and the
    /// delivery's `traceparent` when it is traced (in place of a forwarded one: the
    /// destination's parent is then idemgate's span, not the sender's).
    fn stored_headers(&self, checked: Checked<'_>, traced: Option<Traceparent>) -> Vec<(String, String)> {
        let present =
            |name: &HeaderName| Some((name.to_string(), checked.headers.get(name)?.to_str().ok()?.to_owned()));
        let mut headers: Vec<_> = self.source.forward_headers.iter().filter_map(present).collect();
        if let Some(traced) = traced {
            headers.retain(|(name, _)| name != traceparent::HEADER);
            headers.push((traceparent::HEADER.to_owned(), traced.to_string()));
        }
        headers
    }

    /// The ordering key and version, when the source has a guard and the event has both.
    fn ordering(&self, checked: Checked<'_>) -> Option<Ordering> {
        let guard = self.source.ordering.as_ref()?;
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

/// Prometheus text: what the process recorded, with the queue's gauges as last refreshed
/// ([`crate::scrape`]); 404 when this router renders no metrics.
async fn scrape(State(gateway): State<Arc<Gateway>>) -> Response {
    match &gateway.metrics {
        Some(render) => render.answer(),
        None => not_found().await,
    }
}

/// Ready when the store's writer can take the write lock now; on PostgreSQL, with whether
/// a synchronous standby holds every acknowledged commit (read now, so a failover that
/// left the promoted server alone shows).
async fn readyz(State(gateway): State<Arc<Gateway>>) -> Response {
    let ready = gateway.store.ping().await;
    if let Err(err) = &ready {
        tracing::warn!(error = %err, "readiness check failed");
        return readiness(false, None);
    }
    let standby = match gateway.store.replication().await {
        Ok(replication) => replication.map(|replication| replication.failover_risk()),
        Err(err) => {
            tracing::debug!(error = %err, "could not read the store's replication");
            None
        }
    };
    readiness(true, standby)
}

#[cfg(test)]
mod tests {
    use super::reserved_prefixes;

    #[test]
    fn the_reserved_prefixes_are_the_first_segments_of_the_own_routes() {
        assert_eq!(reserved_prefixes(), ["/in", "/healthz", "/readyz", "/metrics"]);
    }
}
