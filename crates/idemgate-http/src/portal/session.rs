//! Who is signed in to the portal: the session cookie, looked up in the store on every
//! request ([`Customer`]), and the checks every form passes ([`Posted`]): the portal's own
//! origin, a live session, and that session's CSRF token. The application a request works
//! on is the session's, and nothing else.
//!
//! The cookie holds a random id (its SHA-256 is the store's key), `HttpOnly`, `Path=/portal`;
//! under HTTPS it is `__Host-`-less but `Secure`, and `SameSite=None` when the portal may be
//! framed by the provider's site (a cross-site iframe), else `Lax`.

use std::sync::Arc;

use axum::{
    extract::{FromRequest, FromRequestParts, Request},
    http::{HeaderMap, HeaderValue, header, request::Parts},
};
use idemgate_store::{audit::Actor, outbound::Lookup, session::SessionKind};
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq;

use super::PortalState;
use crate::{
    access::digest,
    answer::PortalAnswer,
    body::{BODY_TIMEOUT, read_limited},
};

/// The session cookie's name.
pub(crate) const COOKIE: &str = "idemgate_portal";

/// A request of a signed-in customer: the one application its session sees.
#[derive(Debug, Clone)]
pub(crate) struct Customer {
    /// The application's id.
    pub(crate) app_id: String,
    /// The session's CSRF token, for the page's forms.
    pub(crate) csrf: String,
    /// The SHA-256 of the session id.
    pub(crate) digest: [u8; 32],
}

impl Customer {
    /// The application, as the store's lookups take it.
    pub(crate) fn app(&self) -> Lookup {
        Lookup::Id(self.app_id.clone())
    }

    /// Who the audit log records the customer's changes under: the application.
    pub(crate) fn actor(&self) -> Actor {
        Actor::app(&self.app_id)
    }

    /// The hidden field carrying the CSRF token, for every form of a page.
    pub(crate) fn csrf_field(&self) -> String {
        format!("<input type=\"hidden\" name=\"csrf\" value=\"{}\">", self.csrf)
    }
}

impl FromRequestParts<Arc<PortalState>> for Customer {
    type Rejection = PortalAnswer;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<PortalState>) -> Result<Self, PortalAnswer> {
        let Some(id) = cookie(&parts.headers) else { return Err(PortalAnswer::SignedOut) };
        let digest = digest(id.as_bytes());
        let session = state.api.store.session(digest, state.now_ms()).await?;
        match session {
            Some(session) if session.kind == SessionKind::Portal => {
                let app_id = session.app_id.ok_or(PortalAnswer::SignedOut)?;
                Ok(Self { app_id, csrf: session.csrf, digest })
            }
            _ => Err(PortalAnswer::SignedOut),
        }
    }
}

/// The session id the request's cookie carries.
fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(&format!("{COOKIE}=")).map(str::to_owned))
        .filter(|id| !id.is_empty())
}

/// The `Set-Cookie` starting the session `id` (`None`: ending it).
pub(crate) fn set_cookie(state: &PortalState, id: Option<&str>) -> HeaderValue {
    let same_site = if state.portal.frame_ancestors.is_empty() { "Lax" } else { "None" };
    let secure = if state.secure() || same_site == "None" { "; Secure" } else { "" };
    let value = match id {
        Some(id) => format!("{COOKIE}={id}; Path={}; HttpOnly; SameSite={same_site}{secure}", super::PREFIX),
        None => format!("{COOKIE}=; Path={}; HttpOnly; SameSite={same_site}{secure}; Max-Age=0", super::PREFIX),
    };
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("idemgate_portal=; Max-Age=0"))
}

/// Whether an unsafe request comes from the portal's own origin: its `Origin`, or when a
/// browser sent none, its `Referer`, must be `origin`. A request with neither is refused:
/// every browser sends `Origin` on a form's `POST`.
pub(crate) fn from_own_origin(headers: &HeaderMap, origin: &str) -> bool {
    if let Some(given) = headers.get(header::ORIGIN) {
        return given.to_str().is_ok_and(|given| given.eq_ignore_ascii_case(origin));
    }
    headers.get(header::REFERER).and_then(|r| r.to_str().ok()).is_some_and(|referer| {
        referer.len() > origin.len()
            && referer[..origin.len()].eq_ignore_ascii_case(origin)
            && referer.as_bytes()[origin.len()] == b'/'
    })
}

/// A form a signed-in customer posted, checked: from the portal's own origin, with the
/// session's CSRF token (field `csrf`), its other fields read as `T` (a URL-encoded body;
/// unknown fields are ignored, a malformed one is refused as 422).
pub(crate) struct Posted<T> {
    /// The customer who posted it.
    pub(crate) customer: Customer,
    /// Its fields.
    pub(crate) form: T,
}

/// A form with no fields but its CSRF token (a button).
#[derive(serde::Deserialize)]
pub(crate) struct NoFields {}

#[derive(serde::Deserialize)]
struct Csrf {
    #[serde(default)]
    csrf: String,
}

impl<T: DeserializeOwned> FromRequest<Arc<PortalState>> for Posted<T> {
    type Rejection = PortalAnswer;

    async fn from_request(request: Request, state: &Arc<PortalState>) -> Result<Self, PortalAnswer> {
        let (mut parts, body) = request.into_parts();
        if !from_own_origin(&parts.headers, &state.origin) {
            return Err(PortalAnswer::Refused);
        }
        let customer = Customer::from_request_parts(&mut parts, state).await?;
        let bytes = read_form(&parts.headers, body).await?;
        let given: Csrf = serde_urlencoded::from_bytes(&bytes).map_err(|_| PortalAnswer::Refused)?;
        if !bool::from(digest(given.csrf.as_bytes()).ct_eq(&digest(customer.csrf.as_bytes()))) {
            return Err(PortalAnswer::Refused);
        }
        let form = serde_urlencoded::from_bytes(&bytes)
            .map_err(|_| PortalAnswer::Rejected(vec!["The form's fields are not what this page sends.".to_owned()]))?;
        Ok(Self { customer, form })
    }
}

/// The largest form the portal reads: an endpoint's headers and description fit well.
const FORM_LIMIT: usize = 64 * 1024;

/// A form's body, read under [`FORM_LIMIT`] and the listener's body timeout, so a slow or
/// endless body cannot hold a connection.
pub(crate) async fn read_form(headers: &HeaderMap, body: axum::body::Body) -> Result<bytes::Bytes, PortalAnswer> {
    read_limited(headers, body, FORM_LIMIT, BODY_TIMEOUT)
        .await
        .map_err(|_| PortalAnswer::Rejected(vec!["The form could not be read: too large or too slow.".to_owned()]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (k.parse().unwrap_or_else(|_| unreachable!()), HeaderValue::from_static(v))).collect()
    }

    #[test]
    fn only_the_portals_own_origin_may_post() {
        let own = "https://hooks.example";
        assert!(from_own_origin(&headers(&[("origin", "https://hooks.example")]), own));
        assert!(from_own_origin(&headers(&[("referer", "https://hooks.example/portal/endpoints")]), own));
        for foreign in [
            vec![("origin", "https://evil.example")],
            vec![("origin", "null")],
            vec![("origin", "https://hooks.example.evil")],
            vec![("referer", "https://hooks.example.evil/portal")],
            vec![("referer", "https://hooks.example")],
            vec![],
        ] {
            assert!(!from_own_origin(&headers(&foreign), own), "{foreign:?}");
        }
    }

    #[test]
    fn the_cookie_is_read_by_its_name_alone() {
        assert_eq!(cookie(&headers(&[("cookie", "a=1; idemgate_portal=abc; b=2")])).as_deref(), Some("abc"));
        assert_eq!(cookie(&headers(&[("cookie", "xidemgate_portal=abc")])), None);
        assert_eq!(cookie(&headers(&[("cookie", "idemgate_portal=")])), None);
    }
}
