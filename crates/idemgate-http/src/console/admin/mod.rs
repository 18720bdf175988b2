//! The admin API under `/admin/v1`, for operators and their tools: events with filters and
//! cursor pagination, one event's history and payload, conflicts, replays of finished jobs, retry-now
//! of waiting ones, counts, rejections by reason, destinations, their health and their
//! attempts over the last hour or day, re-enabling a destination, the audit log of
//! those changes, and the sending side's applications, endpoints and messages (read-only). Every route needs `Authorization: Bearer <token>`, one of the named
//! admin tokens (each compared by digest in constant time); a `read` token may use every
//! `GET`, and anything else needs `operate` ([`crate::access`]). Each change is recorded
//! in the audit log under the token's name. The OpenAPI document at `/admin/v1/openapi.json` is
//! generated from these handlers, so it cannot drift from them.
//!
//! This module is the router; each resource is a module of its own, with its routes:
//! [`events`], [`replay`], [`retry`], [`stats`], [`rejections`], [`conflicts`],
//! [`destinations`], [`audit`] and [`applications`] ([`series`]: the window the `…/series` routes share).
//! Every refusal of the API is JSON with a code and a detail ([`AdminError`]), a query or
//! body that does not parse included ([`extract`]); [`openapi`] holds the document's
//! security scheme, refusals and enums.

mod applications;
mod audit;
mod conflicts;
mod destinations;
mod events;
mod extract;
mod openapi;
mod rejections;
mod replay;
mod retry;
mod series;
mod stats;

use std::sync::Arc;

use axum::{
    Router,
    extract::{Request, State},
    http::header,
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use self::openapi::{BearerToken, ErrorBody};
use crate::{
    access::{self, Need},
    answer::AdminError,
    console::state::AdminState,
};

#[derive(OpenApi)]
#[openapi(
    info(title = "idemgate admin API", description = "Events, jobs, replays and counts of an idemgate gateway, and the applications it sends to."),
    components(schemas(ErrorBody)),
    security(("bearer" = [])),
    modifiers(&BearerToken)
)]
struct AdminDoc;

/// The API's routes behind the bearer token, and its OpenAPI document.
pub(super) fn router(state: AdminState) -> Router {
    let (api, doc) = OpenApiRouter::with_openapi(AdminDoc::openapi())
        .merge(events::routes())
        .merge(replay::routes())
        .merge(retry::routes())
        .merge(stats::routes())
        .merge(rejections::routes())
        .merge(conflicts::routes())
        .merge(destinations::routes())
        .merge(audit::routes())
        .merge(applications::routes())
        .split_for_parts();
    let protected = api.route_layer(middleware::from_fn_with_state(state.clone(), require_token)).with_state(state);
    let doc: Arc<str> = doc.to_json().unwrap_or_else(|_| "{}".to_owned()).into();
    let serve_doc = move || {
        let doc = Arc::clone(&doc);
        async move { ([(header::CONTENT_TYPE, "application/json")], doc.to_string()).into_response() }
    };
    Router::new().route("/admin/v1/openapi.json", get(serve_doc)).merge(protected)
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
