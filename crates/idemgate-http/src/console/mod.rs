//! The operator console, on the admin listener: the admin API under `/admin/v1`
//! (`admin/`) and the dashboard under `/admin/` (`dashboard/`), both working on one
//! [`AdminState`] ([`state`]) and reading the store through the operator's [`views`] (the
//! sending side's in [`applications`]); the
//! dashboard's signed-in sessions are kept in the store through [`session`].
//!
//! The dashboard's look is one stylesheet ([`assets`]) and the components in [`ui`].
//! Every answer of the console, API and dashboard, forbids framing and caching (but the
//! content-addressed stylesheets), and every
//! request body is read under a limit and the listener's body timeout.

mod admin;
pub mod applications;
pub(crate) mod assets;
pub(crate) mod dashboard;
pub mod session;
pub mod state;
pub(crate) mod ui;
pub mod views;

use std::time::Duration;

use axum::{
    Router,
    body::Body,
    extract::{Request, State},
    http::{HeaderValue, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
};

pub use self::{
    state::AdminState,
    ui::{Accent, AccentError},
};
use crate::{
    answer::{AdminError, no_route, wrong_method},
    body::read_limited,
};

/// Largest request body the admin routes read (replay filters and dashboard forms).
const BODY_LIMIT: usize = 64 * 1024;
/// No scripts, no external anything, no framing, no inline style: the dashboard needs only
/// its own stylesheets ([`assets`]).
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";

/// The console's router: the admin API and the dashboard (mount it on its own listener).
pub fn router(state: AdminState) -> Router {
    let body_timeout = state.body_timeout;
    admin::router(state.clone())
        .merge(dashboard::router(state))
        .route(assets::stylesheet_path(), get(assets::stylesheet))
        .route(assets::brand_sheet().path(), get(assets::brand_stylesheet))
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

/// The headers every admin answer carries; `no-store` unless the answer says how long it
/// may be kept (only the content-addressed stylesheets do).
async fn guarded(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    // Not `no-referrer`: with it, browsers send `Origin: null` on the dashboard's own forms.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}
