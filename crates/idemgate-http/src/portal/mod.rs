//! The customer portal under `/portal` on the public listener (`docs/design/portal.md`):
//! where a provider's customer (one application of the outbound API) manages its own
//! endpoints, reads what was sent to them and what they answered, resends, and rotates
//! secrets, without a support ticket.
//!
//! A customer enters by the link `app-portal-access` answers (`enter`): a single-use login
//! in the URL's fragment, consumed into a session kept in the store, so every instance
//! knows it ([`session`]). Every page takes its application from that session alone, never
//! from the path or a form, and every lookup is of that application's own rows, so
//! another application's ids are 404. Every change is a form carrying the session's CSRF
//! token, from the portal's own origin, and makes the same store call as the `/api/v1`
//! route for it: the portal adds pages, not behaviour.
//!
//! - `enter`: the link's landing page, entering, signing out;
//! - [`session`]: the signed-in customer ([`Customer`]) and a checked form ([`Posted`]);
//! - [`layout`]: the frame of every page, branded from `[portal]` ([`Brand`]);
//! - the pages, one module each: `endpoints`, `messages`, `event_types`.
//!
//! Every status is chosen in `answer/portal.rs` (`PortalAnswer`).

mod endpoints;
mod enter;
mod event_types;
pub(crate) mod layout;
mod messages;
pub(crate) mod session;

use std::sync::Arc;

use axum::{
    Router,
    extract::State,
    http::{HeaderValue, header},
    middleware,
    response::{Redirect, Response},
    routing::get,
};

pub(crate) use self::session::{Customer, Posted};
use crate::{
    answer::PortalAnswer,
    console::assets::{css_response, stylesheet, stylesheet_path},
    outbound::ApiState,
};

/// Where the portal is mounted on the public listener.
pub const PREFIX: &str = "/portal";

/// The portal's settings, from `[api] public_url` and `[portal]`.
#[derive(Debug, Clone)]
pub struct Portal {
    /// The public base URL the portal's links start with (`[api] public_url`), without a
    /// trailing slash; its origin is the only one a form may come from.
    pub public_url: String,
    /// The provider's name, logo and accent colour.
    pub brand: Brand,
    /// The origins that may embed the portal in an iframe (`frame-ancestors`); empty: none.
    pub frame_ancestors: Vec<String>,
}

/// The provider's branding (`[portal]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brand {
    /// Shown in every page's header and title.
    pub name: String,
    /// An `https` logo shown beside the name; its origin is allowed by the CSP's `img-src`.
    pub logo_url: Option<String>,
    /// The accent colour, `#rrggbb`.
    pub accent: Option<String>,
}

impl Default for Brand {
    fn default() -> Self {
        Self { name: "Webhooks".to_owned(), logo_url: None, accent: None }
    }
}

/// What every portal page works on: the outbound API's state (store, clock, secrets key,
/// URL policy, schemas), so a portal action is the API's own call, and the settings.
pub(crate) struct PortalState {
    pub(crate) api: Arc<ApiState>,
    pub(crate) portal: Portal,
    /// `public_url`'s origin (`scheme://host[:port]`).
    pub(crate) origin: String,
    /// The headers every answer carries: CSP (with `frame-ancestors`), framing, caching.
    headers: Vec<(header::HeaderName, HeaderValue)>,
}

impl PortalState {
    /// Now, unix milliseconds.
    pub(crate) fn now_ms(&self) -> i64 {
        self.api.now_ms()
    }

    /// Whether the portal is reached over HTTPS (its cookie is then `Secure`).
    pub(crate) fn secure(&self) -> bool {
        self.origin.starts_with("https://")
    }
}

/// The state every page takes.
pub(crate) type Shared = State<Arc<PortalState>>;

/// The portal's router (nest it at [`PREFIX`]: its paths are below it).
pub(crate) fn router(api: Arc<ApiState>, portal: &Portal) -> Router {
    let origin = origin_of(&portal.public_url);
    let headers = answer_headers(portal);
    let state = Arc::new(PortalState { api, portal: portal.clone(), origin, headers });
    let (configured, default) = (layout::brand_sheet(&portal.brand), layout::brand_sheet(&Brand::default()));
    let (configured_css, default_css): (Arc<str>, Arc<str>) = (configured.css().into(), default.css().into());
    // The console's stylesheet, below `/portal` (the public listener serves no `/assets`),
    // and the brand's: the configured accent's, and idemgate's own for the pages drawn
    // without the settings (the refusals), when they differ.
    let mut router = Router::new()
        .route("/", get(home))
        .route(stylesheet_path(), get(stylesheet))
        .route(configured.path(), get(move || brand_css(configured_css)));
    if default.path() != configured.path() {
        router = router.route(default.path(), get(move || brand_css(default_css)));
    }
    router
        .merge(enter::routes())
        .merge(endpoints::routes())
        .merge(messages::routes())
        .merge(event_types::routes())
        .fallback(not_found)
        .layer(middleware::map_response_with_state(Arc::clone(&state), guarded))
        .with_state(state)
}

/// A brand's stylesheet, with the long `Cache-Control` of a content-addressed path.
async fn brand_css(css: Arc<str>) -> Response {
    css_response(css.to_string())
}

/// `/portal/`: the endpoints are the portal's first page.
async fn home(_: Customer) -> Redirect {
    Redirect::to("/portal/endpoints")
}

async fn not_found() -> PortalAnswer {
    PortalAnswer::NotFound
}

/// The headers of every portal answer.
async fn guarded(State(state): State<Arc<PortalState>>, mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in &state.headers {
        headers.insert(name.clone(), value.clone());
    }
    headers.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    response
}

/// The CSP and the other headers, made once from the settings: scripts, styles and the
/// message page's reads of itself only from the portal itself, images also from the logo's origin, framing only by the listed
/// origins (else none, and `X-Frame-Options: DENY` for old browsers), forms only to itself.
fn answer_headers(portal: &Portal) -> Vec<(header::HeaderName, HeaderValue)> {
    let logo = portal.brand.logo_url.as_deref().map(origin_of).map(|o| format!(" {o}")).unwrap_or_default();
    let ancestors =
        if portal.frame_ancestors.is_empty() { "'none'".to_owned() } else { portal.frame_ancestors.join(" ") };
    let csp = format!(
        "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'{logo}; \
         form-action 'self'; frame-ancestors {ancestors}; base-uri 'none'"
    );
    let mut headers = vec![
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::REFERRER_POLICY, HeaderValue::from_static("same-origin")),
    ];
    // The settings were checked at load: an origin is plain ASCII.
    if let Ok(csp) = HeaderValue::from_str(&csp) {
        headers.push((header::CONTENT_SECURITY_POLICY, csp));
    }
    if portal.frame_ancestors.is_empty() {
        headers.push((header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")));
    }
    headers
}

/// `scheme://host[:port]` of an absolute URL (the URL itself when it has no path).
pub(crate) fn origin_of(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    format!("{}://{}", scheme.to_ascii_lowercase(), host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_scheme_host_and_port() {
        assert_eq!(origin_of("https://Hooks.Example.com/base/"), "https://hooks.example.com");
        assert_eq!(origin_of("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(origin_of("https://cdn.example/logo.svg?x#y"), "https://cdn.example");
    }

    #[test]
    fn framing_is_refused_unless_origins_are_listed() {
        let mut portal =
            Portal { public_url: "https://hooks.example".into(), brand: Brand::default(), frame_ancestors: vec![] };
        let csp = |portal: &Portal| {
            answer_headers(portal)
                .into_iter()
                .find(|(name, _)| name == header::CONTENT_SECURITY_POLICY)
                .map(|(_, value)| value.to_str().unwrap_or_default().to_owned())
                .unwrap_or_default()
        };
        assert!(csp(&portal).contains("frame-ancestors 'none'"), "{}", csp(&portal));
        assert!(answer_headers(&portal).iter().any(|(name, _)| name == header::X_FRAME_OPTIONS));
        portal.frame_ancestors = vec!["https://app.example".into()];
        portal.brand.logo_url = Some("https://cdn.example/logo.svg".into());
        assert!(csp(&portal).contains("frame-ancestors https://app.example;"), "{}", csp(&portal));
        assert!(csp(&portal).contains("img-src 'self' https://cdn.example;"), "{}", csp(&portal));
        assert!(!answer_headers(&portal).iter().any(|(name, _)| name == header::X_FRAME_OPTIONS));
    }
}
