//! The admin API under `/admin/v1`, for operators and their tools: events with filters and
//! cursor pagination, one event's history and payload, conflicts, replays of finished jobs, retry-now
//! of waiting ones, counts, rejections by reason, destinations, their health and their
//! attempts over the last hour or day, re-enabling a destination, and the audit log of
//! those changes. Every route needs `Authorization: Bearer <token>`, one of the named
//! admin tokens (each compared by digest in constant time); a `read` token may use every
//! `GET`, and anything else needs `operate` ([`crate::access`]). Each change is recorded
//! in the audit log under the token's name. The OpenAPI document at `/admin/v1/openapi.json` is
//! generated from these handlers, so it cannot drift from them.
//!
//! Every admin answer, API and dashboard, forbids framing and caching, and every request
//! body is read under a limit and the listener's body timeout. Every refusal of the API is
//! JSON with a code and a detail ([`AdminError`]), a query or body that does not parse
//! included ([`crate::extract`]).

use std::{sync::Arc, time::Duration};

use axum::{
    Json, Router,
    body::Body,
    extract::{Extension, Request, State},
    http::{HeaderValue, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
};
use idemgate_clock::Clock;
use idemgate_core::{Identity, ReceiptKey, SourceName, job::JobState};
use idemgate_store::{
    Store,
    audit::{Action, Audit, AuditFilter, target},
    jobs::{ReplayFilter, ReplayTo, ReplayedTo},
    views::{ConflictFilter, EventFilter, UNMATCHED},
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{
    RejectionCounts,
    access::{self, Need, Principal},
    answer::{AdminError, no_route, wrong_method},
    body::read_limited,
    current::{AdminTokens, DestinationNames},
    extract::{AdminJson, AdminPath, AdminQuery, When, resolve},
    openapi::{
        AuditAction, BearerToken, BulkRefusals, ChangeRefusals, ErrorBody, EventState, LookupRefusals, ReadRefusals,
        ReplayState, WaitingState,
    },
    session::Sessions,
    views::{
        self, AttemptSeries, AuditEntry, ConflictsPage, DestinationView, EventDetail, EventPayloadView, EventsPage,
        SourceCounts, Window,
    },
};

/// Largest request body the admin routes read (replay filters and dashboard forms).
const BODY_LIMIT: usize = 64 * 1024;
/// No scripts, no external anything, no framing: the dashboard needs its inline style only.
const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// What the admin routes work on.
#[derive(Debug, Clone)]
pub struct AdminState {
    /// The store.
    pub store: Store,
    /// The named admin tokens and their roles, replaced by a configuration reload.
    pub tokens: AdminTokens,
    /// Rejections counted by the inbound routes.
    pub rejections: Arc<RejectionCounts>,
    /// The dashboard's signed-in sessions.
    pub sessions: Arc<Sessions>,
    /// Whether the listener terminates TLS (the session cookie is then `Secure`).
    pub tls: bool,
    /// How long a client may take to send a request body.
    pub body_timeout: Duration,
    /// Where replays and re-enabled destinations read the time.
    pub clock: Arc<dyn Clock>,
    /// The configured destinations: a replay `to` another name is refused.
    pub destinations: DestinationNames,
}

#[derive(OpenApi)]
#[openapi(
    info(title = "idemgate admin API", description = "Events, jobs, replays and counts of an idemgate gateway."),
    components(schemas(ErrorBody)),
    security(("bearer" = [])),
    modifiers(&BearerToken)
)]
struct AdminDoc;

/// The admin router (mount it on its own listener).
pub fn router(state: AdminState) -> Router {
    let (api, doc) = OpenApiRouter::with_openapi(AdminDoc::openapi())
        .routes(routes!(list_events))
        .routes(routes!(show_event))
        .routes(routes!(replay_event))
        .routes(routes!(replay_bulk))
        .routes(routes!(retry_event))
        .routes(routes!(retry_bulk))
        .routes(routes!(stats))
        .routes(routes!(rejections))
        .routes(routes!(rejection_series))
        .routes(routes!(conflict_series))
        .routes(routes!(list_conflicts))
        .routes(routes!(list_destinations))
        .routes(routes!(destination_series))
        .routes(routes!(enable_destination))
        .routes(routes!(event_payload))
        .routes(routes!(list_audit))
        .split_for_parts();
    let state_for_ui = state.clone();
    let body_timeout = state.body_timeout;
    let protected = api.route_layer(middleware::from_fn_with_state(state.clone(), require_token)).with_state(state);
    let doc: Arc<str> = doc.to_json().unwrap_or_else(|_| "{}".to_owned()).into();
    let serve_doc = move || {
        let doc = Arc::clone(&doc);
        async move { ([(header::CONTENT_TYPE, "application/json")], doc.to_string()).into_response() }
    };
    Router::new()
        .route("/admin/v1/openapi.json", get(serve_doc))
        .merge(protected)
        .merge(crate::dashboard::router(state_for_ui))
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(middleware::from_fn_with_state(body_timeout, bounded_body))
        .layer(middleware::map_response(guarded))
}

/// Reads the body under [`BODY_LIMIT`] and the body timeout before any handler sees it.
async fn bounded_body(State(timeout): State<Duration>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    match read_limited(&parts.headers, body, BODY_LIMIT, timeout).await {
        Ok(bytes) => next.run(Request::from_parts(parts, Body::from(bytes))).await,
        Err(err) => AdminError::Body(err).into_response(),
    }
}

/// The headers every admin answer carries.
async fn guarded(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Not `no-referrer`: with it, browsers send `Origin: null` on the dashboard's own forms.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// Refuses requests without one of the bearer tokens (saying nothing about why) and
/// requests their token's role does not allow; hands the handlers who asked.
async fn require_token(State(state): State<AdminState>, mut request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let Some(principal) = state.tokens.identify(given.as_bytes()) else {
        return AdminError::Unauthorized.into_response();
    };
    if let Err(forbidden) = access::check(&principal, Need::of_method(request.method())) {
        return AdminError::from(forbidden).into_response();
    }
    request.extensions_mut().insert(principal);
    next.run(request).await
}

/// Filters of the event listing.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// Only this source.
    source: Option<String>,
    /// Only identities starting with this (a whole identity matches itself).
    identity: Option<String>,
    /// Only this event type.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    event_type: Option<String>,
    /// Only events with a job in this state; `unmatched`: only events with no job (for
    /// `destination`, when given: none for it).
    #[param(value_type = Option<EventState>, inline)]
    state: Option<String>,
    /// Only events with a job for this destination.
    destination: Option<String>,
    /// Received at or after: unix seconds, RFC 3339, a date or a duration back from now (`1h`).
    #[param(value_type = Option<String>)]
    since: Option<When>,
    /// Received before: unix seconds, RFC 3339, a date or a duration back from now (`1h`).
    #[param(value_type = Option<String>)]
    until: Option<When>,
    /// The cursor: `next_before` of the previous page.
    before: Option<i64>,
    /// Page size (1 to 500, default 50).
    limit: Option<usize>,
}

/// List events, newest first.
#[utoipa::path(get, path = "/admin/v1/events", params(ListQuery), responses((status = 200, body = EventsPage), ReadRefusals))]
async fn list_events(
    State(state): State<AdminState>,
    AdminQuery(query): AdminQuery<ListQuery>,
) -> Result<Json<EventsPage>, AdminError> {
    if let Some(s) = &query.state
        && s != UNMATCHED
        && s.parse::<JobState>().is_err()
    {
        return Err(AdminError::BadRequest("unknown_state"));
    }
    let limit = query.limit.unwrap_or(50).clamp(1, 500);
    let now = state.clock.now();
    let filter = EventFilter {
        source: query.source,
        identity_prefix: query.identity,
        event_type: query.event_type,
        state: query.state,
        destination: query.destination,
        since: resolve(query.since, now),
        until: resolve(query.until, now),
        before_id: query.before,
        limit,
    };
    Ok(Json(views::events_page(&state.store, filter).await?))
}

/// One event: its receipt, jobs and every delivery attempt.
#[utoipa::path(get, path = "/admin/v1/events/{source}/{identity}",
    params(("source" = String, Path), ("identity" = String, Path)),
    responses((status = 200, body = EventDetail), LookupRefusals))]
async fn show_event(
    State(state): State<AdminState>,
    AdminPath((source, identity)): AdminPath<(String, String)>,
) -> Result<Json<EventDetail>, AdminError> {
    views::event_detail(&state.store, &source, &identity).await?.map(Json).ok_or(AdminError::NotFound)
}

/// One event's headers as stored and its body, unless retention purged it.
#[utoipa::path(get, path = "/admin/v1/events/{source}/{identity}/payload",
    params(("source" = String, Path), ("identity" = String, Path)),
    responses((status = 200, body = EventPayloadView), LookupRefusals))]
async fn event_payload(
    State(state): State<AdminState>,
    AdminPath((source, identity)): AdminPath<(String, String)>,
) -> Result<Json<EventPayloadView>, AdminError> {
    views::event_payload(&state.store, &source, &identity).await?.map(Json).ok_or(AdminError::NotFound)
}

#[derive(Debug, Serialize, ToSchema)]
struct Replayed {
    /// Jobs made pending again (and, with `to`, jobs created).
    replayed: usize,
    /// With `to`: jobs created for events that had none for that destination.
    #[serde(skip_serializing_if = "Option::is_none")]
    created: Option<usize>,
}

impl Replayed {
    fn jobs(replayed: usize) -> Self {
        Self { replayed, created: None }
    }

    fn to(done: ReplayedTo) -> Self {
        Self { replayed: done.replayed + done.created, created: Some(done.created) }
    }
}

#[derive(Debug, Default, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
struct ReplayQuery {
    /// Jobs in this state are replayed: dead (default), superseded or succeeded; with `to`,
    /// absent or `unmatched`.
    #[param(value_type = Option<ReplayState>, inline)]
    state: Option<String>,
    /// Send to this destination: its missing job is created (pending), a finished one replayed.
    to: Option<String>,
}

/// A replay to the destination `to`: the state is absent (every selected event) or
/// `unmatched` (only events with no job).
fn replay_to(
    known: &DestinationNames,
    to: String,
    state: Option<&str>,
    selection: ReplayTo,
) -> Result<ReplayTo, AdminError> {
    let unmatched_only = match state {
        None => false,
        Some(UNMATCHED) => true,
        Some(_) => return Err(AdminError::BadRequest("state_not_for_replay_to")),
    };
    if !known.contains(&to) {
        return Err(AdminError::BadRequest("unknown_destination"));
    }
    Ok(ReplayTo { destination: to, unmatched_only, ..selection })
}

fn replay_state(state: Option<&str>) -> Result<Option<JobState>, AdminError> {
    match state.map(str::parse::<JobState>) {
        None => Ok(None),
        Some(Ok(state)) if state.is_replayable() => Ok(Some(state)),
        Some(_) => Err(AdminError::BadRequest("state_not_replayable")),
    }
}

/// Replay one event's finished jobs (same `webhook-id`).
#[utoipa::path(post, path = "/admin/v1/events/{source}/{identity}/replay",
    params(("source" = String, Path), ("identity" = String, Path), ReplayQuery),
    responses((status = 200, body = Replayed), ChangeRefusals))]
async fn replay_event(
    State(state): State<AdminState>,
    Extension(who): Extension<Principal>,
    AdminPath((source, identity)): AdminPath<(String, String)>,
    AdminQuery(query): AdminQuery<ReplayQuery>,
) -> Result<Json<Replayed>, AdminError> {
    existing(&state.store, &source, &identity).await?;
    if let Some(to) = query.to {
        let selection = ReplayTo { source: Some(source), identity: Some(identity), ..ReplayTo::default() };
        let to = replay_to(&state.destinations, to, query.state.as_deref(), selection)?;
        let audit = Audit::new(who.name, Action::ReplayTo, target::replay_to(&to));
        return Ok(Json(Replayed::to(state.store.audited(audit).replay_to(to, state.clock.now()).await?)));
    }
    let filter = ReplayFilter {
        source: Some(source),
        identity: Some(identity),
        state: replay_state(query.state.as_deref())?,
        ..ReplayFilter::default()
    };
    let audit = Audit::new(who.name, Action::Replay, target::filter(&filter));
    let replayed = state.store.audited(audit).replay_jobs(filter, state.clock.now(), 10_000).await?;
    Ok(Json(Replayed::jobs(replayed)))
}

/// A bulk replay's filter.
#[derive(Debug, Default, Deserialize, ToSchema)]
struct ReplayRequest {
    source: Option<String>,
    destination: Option<String>,
    /// dead (default), superseded or succeeded; with `to`, absent or `unmatched`.
    #[schema(value_type = Option<ReplayState>)]
    state: Option<String>,
    /// Send the selected events to this destination: the missing job is created
    /// (pending), a finished one replayed. Not with `destination`.
    to: Option<String>,
    /// Received at or after: unix seconds, RFC 3339, a date or a duration back from now (`1h`).
    #[schema(value_type = Option<String>)]
    since: Option<When>,
    /// Received before: unix seconds, RFC 3339, a date or a duration back from now (`1h`).
    #[schema(value_type = Option<String>)]
    until: Option<When>,
}

/// Replay every finished job matching the filter when the replay starts, each once.
#[utoipa::path(post, path = "/admin/v1/replay", request_body = ReplayRequest,
    responses((status = 200, body = Replayed), BulkRefusals))]
async fn replay_bulk(
    State(state): State<AdminState>,
    Extension(who): Extension<Principal>,
    AdminJson(request): AdminJson<ReplayRequest>,
) -> Result<Json<Replayed>, AdminError> {
    let now = state.clock.now();
    if let Some(to) = request.to {
        if request.destination.is_some() {
            return Err(AdminError::BadRequest("destination_with_to"));
        }
        let selection = ReplayTo {
            source: request.source,
            since: resolve(request.since, now),
            until: resolve(request.until, now),
            ..ReplayTo::default()
        };
        let to = replay_to(&state.destinations, to, request.state.as_deref(), selection)?;
        let audit = Audit::new(who.name, Action::ReplayTo, target::replay_to(&to));
        return Ok(Json(Replayed::to(state.store.audited(audit).replay_to(to, state.clock.now()).await?)));
    }
    let filter = ReplayFilter {
        source: request.source,
        destination: request.destination,
        state: replay_state(request.state.as_deref())?,
        since: resolve(request.since, now),
        until: resolve(request.until, now),
        identity: None,
    };
    let audit = Audit::new(who.name, Action::Replay, target::filter(&filter));
    let replayed =
        state.store.audited(audit).replay_all(filter, state.clock.now(), 500, |_, _| std::future::ready(())).await?;
    Ok(Json(Replayed::jobs(replayed)))
}

#[derive(Debug, Serialize, ToSchema)]
struct Retried {
    /// How many waiting jobs were made due now (one already due is not counted).
    retried: usize,
}

#[derive(Debug, Default, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
struct RetryQuery {
    /// Only jobs in this state: pending or retrying (default both).
    #[param(value_type = Option<WaitingState>, inline)]
    state: Option<String>,
}

fn waiting_state(state: Option<&str>) -> Result<Option<JobState>, AdminError> {
    match state.map(str::parse::<JobState>) {
        None => Ok(None),
        Some(Ok(state)) if state.is_claimable() => Ok(Some(state)),
        Some(_) => Err(AdminError::BadRequest("state_not_waiting")),
    }
}

/// Make one event's waiting (pending or retrying) jobs due now; their attempts so far count.
#[utoipa::path(post, path = "/admin/v1/events/{source}/{identity}/retry",
    params(("source" = String, Path), ("identity" = String, Path), RetryQuery),
    responses((status = 200, body = Retried), ChangeRefusals))]
async fn retry_event(
    State(state): State<AdminState>,
    Extension(who): Extension<Principal>,
    AdminPath((source, identity)): AdminPath<(String, String)>,
    AdminQuery(query): AdminQuery<RetryQuery>,
) -> Result<Json<Retried>, AdminError> {
    existing(&state.store, &source, &identity).await?;
    let filter = ReplayFilter {
        source: Some(source),
        identity: Some(identity),
        state: waiting_state(query.state.as_deref())?,
        ..ReplayFilter::default()
    };
    let audit = Audit::new(who.name, Action::Retry, target::filter(&filter));
    let retried = state.store.audited(audit).retry_now(filter, state.clock.now_ms()).await?;
    Ok(Json(Retried { retried }))
}

/// A bulk retry-now's filter.
#[derive(Debug, Default, Deserialize, ToSchema)]
struct RetryRequest {
    source: Option<String>,
    destination: Option<String>,
    /// pending or retrying (default both).
    #[schema(value_type = Option<WaitingState>)]
    state: Option<String>,
    /// Received at or after: unix seconds, RFC 3339, a date or a duration back from now (`1h`).
    #[schema(value_type = Option<String>)]
    since: Option<When>,
    /// Received before: unix seconds, RFC 3339, a date or a duration back from now (`1h`).
    #[schema(value_type = Option<String>)]
    until: Option<When>,
}

/// Make every waiting job matching the filter due now; finished jobs are replay's.
#[utoipa::path(post, path = "/admin/v1/retry", request_body = RetryRequest,
    responses((status = 200, body = Retried), BulkRefusals))]
async fn retry_bulk(
    State(state): State<AdminState>,
    Extension(who): Extension<Principal>,
    AdminJson(request): AdminJson<RetryRequest>,
) -> Result<Json<Retried>, AdminError> {
    let now = state.clock.now();
    let filter = ReplayFilter {
        source: request.source,
        destination: request.destination,
        state: waiting_state(request.state.as_deref())?,
        since: resolve(request.since, now),
        until: resolve(request.until, now),
        identity: None,
    };
    let audit = Audit::new(who.name, Action::Retry, target::filter(&filter));
    let retried = state.store.audited(audit).retry_now(filter, state.clock.now_ms()).await?;
    Ok(Json(Retried { retried }))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct StatsQuery {
    /// Only what arrived at or after: unix seconds, RFC 3339, a date or a duration back
    /// from now (`1h`).
    #[param(value_type = Option<String>)]
    since: Option<When>,
}

/// Counts per source: receipts, conflicts, jobs by state.
#[utoipa::path(get, path = "/admin/v1/stats", params(StatsQuery), responses((status = 200, body = Vec<SourceCounts>), ReadRefusals))]
async fn stats(
    State(state): State<AdminState>,
    AdminQuery(query): AdminQuery<StatsQuery>,
) -> Result<Json<Vec<SourceCounts>>, AdminError> {
    Ok(Json(views::source_counts(&state.store, resolve(query.since, state.clock.now())).await?))
}

#[derive(Debug, Serialize, ToSchema)]
struct RejectionCount {
    source: String,
    reason: String,
    count: u64,
}

/// Rejected deliveries by source and bounded reason since the process started (counts
/// only: nothing of a rejected delivery is stored).
#[utoipa::path(get, path = "/admin/v1/rejections", responses((status = 200, body = Vec<RejectionCount>), ReadRefusals))]
async fn rejections(State(state): State<AdminState>) -> Json<Vec<RejectionCount>> {
    Json(
        state
            .rejections
            .snapshot()
            .into_iter()
            .map(|(source, reason, count)| RejectionCount { source, reason: reason.to_owned(), count })
            .collect(),
    )
}

#[derive(Debug, Serialize, ToSchema)]
struct RejectionBucket {
    /// Where the bucket starts (unix seconds).
    start: i64,
    reason: String,
    count: u64,
}

/// Rejected deliveries by bounded reason over the last hour (per minute) or day (per half
/// hour), every source together; buckets without rejections are left out (counts kept in
/// memory for a day).
#[utoipa::path(get, path = "/admin/v1/rejections/series", params(SeriesQuery),
    responses((status = 200, body = Vec<RejectionBucket>), ReadRefusals))]
async fn rejection_series(
    State(state): State<AdminState>,
    AdminQuery(query): AdminQuery<SeriesQuery>,
) -> Json<Vec<RejectionBucket>> {
    let window = query.window.unwrap_or(Window::Hour);
    let series = state.rejections.series(window.since(state.clock.now()), window.span().1);
    Json(
        series
            .into_iter()
            .map(|(start, reason, count)| RejectionBucket { start, reason: reason.to_owned(), count })
            .collect(),
    )
}

#[derive(Debug, Serialize, ToSchema)]
struct ConflictBucket {
    source: String,
    /// Where the bucket starts (unix seconds).
    start: i64,
    /// Identities whose receipt met another body for the first time in it.
    conflicts: u64,
}

/// Conflicting repeats (same identity, other bytes) over the last hour (per minute) or day
/// (per half hour), by source, counted when each other body was first seen; buckets
/// without any are left out.
#[utoipa::path(get, path = "/admin/v1/conflicts/series", params(SeriesQuery),
    responses((status = 200, body = Vec<ConflictBucket>), ReadRefusals))]
async fn conflict_series(
    State(state): State<AdminState>,
    AdminQuery(query): AdminQuery<SeriesQuery>,
) -> Result<Json<Vec<ConflictBucket>>, AdminError> {
    let window = query.window.unwrap_or(Window::Hour);
    let series = state.store.conflict_series(window.since(state.clock.now()), window.span().1).await?;
    Ok(Json(
        series
            .into_iter()
            .map(|b| ConflictBucket { source: b.source, start: b.start.0, conflicts: b.conflicts })
            .collect(),
    ))
}

/// Filters of the conflict listing.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ConflictsQuery {
    /// Only this source.
    source: Option<String>,
    /// Only this identity (exactly).
    identity: Option<String>,
    /// Only bodies last seen at or after: unix seconds, RFC 3339, a date or a duration back
    /// from now (`1h`).
    #[param(value_type = Option<String>)]
    since: Option<When>,
    /// Only bodies first seen before, in the same forms.
    #[param(value_type = Option<String>)]
    until: Option<When>,
    /// The cursor: `next_after` of the previous page.
    after: Option<String>,
    /// Page size (1 to 500, default 50).
    limit: Option<usize>,
}

/// List the conflicting bodies recorded (deliveries refused `409`: an identity already
/// recorded with other bytes), newest first seen first: each with its event, the body's
/// hash (never the body), when it was first and last seen, and how often.
#[utoipa::path(get, path = "/admin/v1/conflicts", params(ConflictsQuery),
    responses((status = 200, body = ConflictsPage), ReadRefusals))]
async fn list_conflicts(
    State(state): State<AdminState>,
    AdminQuery(query): AdminQuery<ConflictsQuery>,
) -> Result<Json<ConflictsPage>, AdminError> {
    let after = match query.after.as_deref() {
        None => None,
        Some(text) => Some(views::parse_conflict_cursor(text).ok_or(AdminError::BadRequest("bad_cursor"))?),
    };
    let now = state.clock.now();
    let filter = ConflictFilter {
        source: query.source,
        identity: query.identity,
        since: resolve(query.since, now),
        until: resolve(query.until, now),
        after,
        limit: query.limit.unwrap_or(50).clamp(1, 500),
    };
    Ok(Json(views::conflicts_page(&state.store, filter).await?))
}

/// Every destination that has jobs or was disabled: its state (enabled, disabled or
/// paused), jobs by state, latest success and failure, health from its attempts of the
/// last hour, and its circuit breaker.
#[utoipa::path(get, path = "/admin/v1/destinations", responses((status = 200, body = Vec<DestinationView>), ReadRefusals))]
async fn list_destinations(State(state): State<AdminState>) -> Result<Json<Vec<DestinationView>>, AdminError> {
    Ok(Json(views::destinations(&state.store, state.clock.now()).await?))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct SeriesQuery {
    /// `hour` (the default: per minute) or `day` (per half hour), up to now.
    #[param(inline)]
    window: Option<Window>,
}

/// A destination's attempts over the last hour or day: per bucket, how many succeeded
/// (a 2xx, a broker's confirm, a smarthost's 250) and failed, and their mean and longest latency; buckets without attempts are left
/// out, as is everything for a destination without attempts in the window.
#[utoipa::path(get, path = "/admin/v1/destinations/{name}/series", params(("name" = String, Path), SeriesQuery),
    responses((status = 200, body = AttemptSeries), LookupRefusals))]
async fn destination_series(
    State(state): State<AdminState>,
    AdminPath(name): AdminPath<String>,
    AdminQuery(query): AdminQuery<SeriesQuery>,
) -> Result<Json<AttemptSeries>, AdminError> {
    let window = query.window.unwrap_or(Window::Hour);
    let now = state.clock.now();
    let series = views::attempt_series(&state.store, window, now).await?.into_iter().find(|s| s.destination == name);
    Ok(Json(series.unwrap_or_else(|| AttemptSeries {
        destination: name,
        since: window.since(now).0,
        width: window.span().1,
        buckets: Vec::new(),
    })))
}

#[derive(Debug, Serialize, ToSchema)]
struct Enabled {
    /// False when the destination was neither disabled nor paused.
    was_disabled: bool,
}

/// Resume deliveries to a destination disabled by a `410 Gone` or paused by its breaker;
/// a name that is neither configured nor in the store is 404, and nothing is recorded.
#[utoipa::path(post, path = "/admin/v1/destinations/{name}/enable", params(("name" = String, Path)),
    responses((status = 200, body = Enabled), ChangeRefusals))]
async fn enable_destination(
    State(state): State<AdminState>,
    Extension(who): Extension<Principal>,
    AdminPath(name): AdminPath<String>,
) -> Result<Json<Enabled>, AdminError> {
    let stored = || async { Ok::<_, AdminError>(state.store.destinations().await?.iter().any(|d| d.name == name)) };
    if !state.destinations.contains(&name) && !stored().await? {
        return Err(AdminError::UnknownDestination);
    }
    let audit = Audit::new(who.name, Action::Enable, target::destination(&name));
    let was_disabled = state.store.audited(audit).enable_destination(name, state.clock.now()).await?;
    Ok(Json(Enabled { was_disabled }))
}

/// Filters of the audit log.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct AuditQuery {
    /// Only actions at or after: unix seconds, RFC 3339, a date or a duration back from
    /// now (`1h`).
    #[param(value_type = Option<String>)]
    since: Option<When>,
    /// Only this token's actions (`cli`: the command line's).
    token: Option<String>,
    /// Only this action: replay, replay_to, retry or enable.
    #[param(value_type = Option<AuditAction>, inline)]
    action: Option<String>,
    /// At most this many (1 to 500, default 100).
    limit: Option<usize>,
}

/// The audit log: every state-changing admin action (API, dashboard, CLI), newest first.
#[utoipa::path(get, path = "/admin/v1/audit", params(AuditQuery),
    responses((status = 200, body = Vec<AuditEntry>), ReadRefusals))]
async fn list_audit(
    State(state): State<AdminState>,
    AdminQuery(query): AdminQuery<AuditQuery>,
) -> Result<Json<Vec<AuditEntry>>, AdminError> {
    let action = match query.action.as_deref() {
        None => None,
        Some(name) => Some(Action::parse(name).ok_or(AdminError::BadRequest("unknown_action"))?),
    };
    let filter = AuditFilter {
        since: resolve(query.since, state.clock.now()),
        token: query.token,
        action,
        limit: query.limit.unwrap_or(100).clamp(1, 500),
    };
    Ok(Json(views::audit(&state.store, filter).await?))
}

/// Refuses with 404 unless the event `identity` of `source` has a receipt.
async fn existing(store: &Store, source: &str, identity: &str) -> Result<(), AdminError> {
    let (Ok(source), Ok(identity)) = (SourceName::new(source), Identity::new(identity)) else {
        return Err(AdminError::NotFound);
    };
    store.receipt(ReceiptKey { source, identity }).await?.map(|_| ()).ok_or(AdminError::NotFound)
}
