//! The outbound API (`/api/v1`, Svix-compatible; `docs/design/outbound-api.md`): sending
//! webhooks to one's customers through the API of Svix's open-source server.
//!
//! [`router`] serves `GET`/`HEAD /api/v1/health` and `/api/v1/health/ping` (204, no token
//! needed) and, after the bearer token is checked ([`auth`]) and behind the
//! `Idempotency-Key` layer in Svix's answer style (scoped to the token and the
//! application in the path), the resources over the store: applications, event types,
//! endpoints (with their headers and secrets), messages and their attempts, and the
//! application tokens, and the expunges of their content. Every other path answers `404`
//! in Svix's `HttpErrorOut` shape.
//!
//! - [`auth`]: tokens, roles, an application token's scope and what each request needs;
//! - `app_tokens`: `app-portal-access` issues an application's token, `logout` revokes it;
//! - `pagination`: `limit`, `iterator`, `order`;
//! - `body`: a request's JSON body and query flags, refused in Svix's 422 shape;
//! - `payload_schema`: an event type's schema, compiled once, checked at message create;
//! - `applications`, `event_types`, `endpoints`, `messages` (with `send-example`),
//!   `attempts`: one module per resource; `redelivery`: resend and recover; `content`:
//!   the expunges of a message's payload and an attempt's response;
//! - `wire`: every JSON shape of Svix's spec;
//! - `openapi`: the API's OpenAPI document, served at `/api/v1/openapi.json` (no token
//!   needed), its schemas derived from `wire`.
//!
//! Every status is chosen in `answer/outbound.rs` (`OutboundAnswer`).

mod app_tokens;
mod applications;
mod attempts;
pub mod auth;
mod body;
mod content;
pub(crate) mod endpoints;
pub(crate) mod event_types;
pub(crate) mod messages;
mod openapi;
mod pagination;
mod payload_schema;
pub(crate) mod redelivery;
// Some shapes of the spec wait for a route that answers with them.
#[allow(dead_code)]
pub(crate) mod wire;

use std::sync::Arc;

use axum::{
    Router,
    extract::{Request, State},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{any, get},
};
use idemgate_clock::Clock;
use idemgate_core::outbound::{address::UrlPolicy, sealing::SecretsKey};
use idemgate_store::Store;

use self::auth::By;
pub use self::auth::{ApiRole, ApiToken, Caller};
use crate::{
    answer::{OutboundAnswer, api_not_found},
    idempotency::{IdempotencyConfig, IdempotencyLayer, RefusalStyle, Scope},
};

/// Where the API is mounted on the public listener.
pub const PREFIX: &str = "/api/v1";

/// What `/api/v1` serves: the plain settings the binary makes from `[api]`.
#[derive(Debug, Clone, Default)]
pub struct Api {
    /// The API's bearer tokens and their roles.
    pub tokens: Vec<ApiToken>,
    /// The key that seals endpoint secrets; `None`: endpoints cannot be created (`serve`
    /// refuses to start the API without one).
    pub secrets_key: Option<SecretsKey>,
    /// What endpoint URLs may be (`[api] allow_http`, `allow_networks`).
    pub url_policy: UrlPolicy,
    /// The API's public URL (`[api] public_url`): the OpenAPI document's server; `None`:
    /// the document names its server relative to where it was fetched.
    pub public_url: Option<String>,
    /// The customer portal (`/portal`), served when `public_url` is set: its links start
    /// there.
    pub portal: Option<crate::portal::Portal>,
}

/// What every route of the API reads: the store, the clock and the settings.
pub(crate) struct ApiState {
    pub(crate) store: Store,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) secrets_key: Option<SecretsKey>,
    pub(crate) url_policy: UrlPolicy,
    /// The event types' compiled payload schemas.
    pub(crate) schemas: payload_schema::PayloadSchemas,
    /// The portal's base URL when it is served: `app-portal-access` links there.
    pub(crate) portal_url: Option<String>,
}

impl ApiState {
    /// The state of the API's routes (and the portal's pages) over `store` on `clock`.
    pub(crate) fn new(api: &Api, store: &Store, clock: Arc<dyn Clock>) -> Self {
        Self {
            store: store.clone(),
            clock,
            secrets_key: api.secrets_key.clone(),
            url_policy: api.url_policy.clone(),
            schemas: payload_schema::PayloadSchemas::default(),
            portal_url: api.portal.as_ref().map(|portal| portal.public_url.clone()),
        }
    }

    /// Now, unix milliseconds.
    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }
}

/// The state every handler takes.
pub(crate) type Shared = State<Arc<ApiState>>;

/// The router of `/api/v1` (mounted there: its paths are below it), keeping its
/// `Idempotency-Key` records in `store` on `clock`.
pub(crate) fn router(api: &Api, store: &Store, clock: Arc<dyn Clock>) -> Router {
    let access =
        Arc::new(Access { tokens: api.tokens.clone().into(), store: store.clone(), clock: Arc::clone(&clock) });
    let config = IdempotencyConfig {
        scope: Scope::Custom(Arc::new(key_scope)),
        refusals: RefusalStyle::Svix,
        ..IdempotencyConfig::default()
    };
    let keys = IdempotencyLayer::with_clock(store.clone(), config, Arc::clone(&clock));
    let state = Arc::new(ApiState::new(api, store, clock));
    let resources = Router::new()
        .merge(applications::routes())
        .merge(event_types::routes())
        .merge(endpoints::routes())
        .merge(messages::routes())
        .merge(attempts::routes())
        .merge(redelivery::routes())
        .merge(app_tokens::routes())
        .merge(content::routes())
        .with_state(state);
    // The layers run outside in: the token first, then the key, then the route.
    let authorized = resources
        .route("/{*rest}", any(api_not_found))
        .layer(keys)
        .layer(middleware::from_fn_with_state(access, authorize));
    let doc =
        Arc::<str>::from(serde_json::to_string(&openapi::document(api.public_url.as_deref())).unwrap_or_default());
    let serve_doc = move || {
        let doc = Arc::clone(&doc);
        async move { ([(http::header::CONTENT_TYPE, "application/json")], doc.to_string()).into_response() }
    };
    Router::new()
        .route("/openapi.json", get(serve_doc).fallback(api_not_found))
        .route("/health", get(health).fallback(api_not_found))
        .route("/health/ping", get(health).fallback(api_not_found))
        .merge(authorized)
        .fallback(api_not_found)
}

/// The customer portal's router (nest it at [`crate::portal::PREFIX`]) when `api` serves
/// one, over its own [`ApiState`] on the same store.
pub(crate) fn portal_router(api: &Api, store: &Store, clock: Arc<dyn Clock>) -> Option<Router> {
    let portal = api.portal.as_ref()?;
    Some(crate::portal::router(Arc::new(ApiState::new(api, store, clock)), portal))
}

/// `GET`/`HEAD /health` and `/health/ping`: 204 while the process answers (the spec's
/// status; Svix's own server answers 200 with a report, and the SDK takes any 2xx).
async fn health() -> OutboundAnswer {
    OutboundAnswer::NoContent
}

/// What the token check reads: the configured tokens, and the store and clock that
/// application tokens are looked up on.
struct Access {
    tokens: Arc<[ApiToken]>,
    store: Store,
    clock: Arc<dyn Clock>,
}

/// Lets through a request whose token allows it, with its [`Caller`]; answers 401, 403,
/// or for an application's token 404 on another application's path (and 503 when the
/// store cannot tell whether the token is live).
async fn authorize(State(access): State<Arc<Access>>, mut request: Request, next: Next) -> Response {
    let (method, path) = (request.method(), request.uri().path());
    let caller = match app_caller(&access, request.headers(), method, path).await {
        Ok(Some(caller)) => Ok(caller),
        Ok(None) => auth::authorize(&access.tokens, request.headers(), auth::need_of(method, path)),
        Err(refused) => Err(refused),
    };
    match caller {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(refused) => refused.into_response(),
    }
}

/// The caller of an application's token that the store holds, live, at this request
/// (one read per request, so a logout counts on every instance at once), allowed on
/// `path` by its scope; `None` when the bearer token is not a live application token.
async fn app_caller(
    access: &Access,
    headers: &http::HeaderMap,
    method: &http::Method,
    path: &str,
) -> Result<Option<Caller>, OutboundAnswer> {
    let Some(digest) = auth::app_token_digest(headers) else { return Ok(None) };
    let Some(token) = access.store.app_token(digest, access.clock.now_ms()).await? else { return Ok(None) };
    auth::app_scope(method, path, &token)?;
    Ok(Some(Caller::of_app(&token, digest)))
}

/// An `Idempotency-Key`'s scope on `/api/v1`: the token's digest and the application in
/// the path, so one key is used once per token and application
/// (`docs/design/outbound-api.md` §3.4). The token was checked before the layer runs.
fn key_scope(parts: &http::request::Parts) -> String {
    let token = parts.extensions.get::<Caller>().map_or_else(String::new, |caller| hex::encode(caller.digest));
    let app = app_in_path(parts.uri.path()).unwrap_or("");
    format!("api:{token}:{app}")
}

/// The application a path below `/api/v1` names (by id or uid), if any.
fn app_in_path(path: &str) -> Option<&str> {
    let mut segments = path.trim_start_matches('/').split('/');
    match (segments.next(), segments.next(), segments.next()) {
        (Some("app"), Some(app), _) if !app.is_empty() => Some(app),
        (Some("auth"), Some("app-portal-access"), Some(app)) if !app.is_empty() => Some(app),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_scope_names_the_application_of_the_path() {
        assert_eq!(app_in_path("/app/app_1/msg"), Some("app_1"));
        assert_eq!(app_in_path("/app/my-uid"), Some("my-uid"));
        assert_eq!(app_in_path("/auth/app-portal-access/app_2"), Some("app_2"));
        assert_eq!(app_in_path("/app"), None);
        assert_eq!(app_in_path("/event-type"), None);
        let request = |path: &str, token: &[u8]| {
            let (mut parts, ()) = http::Request::post(path).body(()).unwrap_or_else(|_| unreachable!()).into_parts();
            let caller =
                Caller { name: "a".into(), role: ApiRole::Admin, app: None, digest: crate::access::digest(token) };
            parts.extensions.insert(caller);
            parts
        };
        let one = key_scope(&request("/app/app_1/msg", b"token-one"));
        assert_eq!(one, key_scope(&request("/app/app_1/endpoint", b"token-one")));
        assert_ne!(one, key_scope(&request("/app/app_2/msg", b"token-one")));
        assert_ne!(one, key_scope(&request("/app/app_1/msg", b"token-two")));
        assert!(!one.contains("token-one"), "{one}");
    }
}
