//! Who is signed in: the session cookie, the dashboard's own origin, and the CSRF token
//! every state-changing form carries. Signing in with an admin token starts a session in
//! the store ([`crate::console::session`]), known to every instance: the cookie holds a
//! random id (HttpOnly, SameSite=Strict, Secure under TLS), never the token. The session
//! keeps the token's name and role: a `read` session sees no buttons, and any change it
//! posts is refused ([`crate::access`]); changes are audited under the name. Every request
//! reads its session from the store, so a sign-out on any instance counts at once.
//!
//! `SameSite` does not cover another port of the same host (a page behind `[[proxy]]`,
//! say), so every state-changing request must also come from the dashboard's own origin
//! (`Sec-Fetch-Site`, `Origin`) and, once signed in, carry the session's CSRF token.

use axum::http::{HeaderMap, header};

use crate::{
    access::{self, Need, Principal},
    answer::DashboardAnswer,
    console::{
        session::{LiveSession, csrf_matches},
        state::AdminState,
    },
};

/// The session cookie's name.
pub(super) const COOKIE: &str = "idemgate_admin";

/// A signed-in request: its session id, that session's CSRF token and its token.
pub(super) struct SignedIn {
    pub(super) id: String,
    pub(super) csrf: String,
    pub(super) principal: Principal,
}

/// The live session the request's cookie names, read from the store: `SignedOut` when
/// there is none (or its token is no longer configured with its role), `StoreUnreadable`
/// when the store cannot say.
pub(super) async fn signed_in(state: &AdminState, headers: &HeaderMap) -> Result<SignedIn, DashboardAnswer> {
    let Some(id) = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(&format!("{COOKIE}=")).map(str::to_owned))
    else {
        return Err(DashboardAnswer::SignedOut);
    };
    match state.sessions.live(&id, &state.tokens, state.clock.now_ms()).await {
        Ok(Some(LiveSession { csrf, principal })) => Ok(SignedIn { id, csrf, principal }),
        Ok(None) => Err(DashboardAnswer::SignedOut),
        Err(err) => {
            tracing::error!(error = %err, "cannot read a dashboard session");
            Err(DashboardAnswer::StoreUnreadable)
        }
    }
}

/// Whether a state-changing request comes from the dashboard's own origin, as far as the
/// browser says: `Sec-Fetch-Site` must be `same-origin` (or `none`, typed by the user),
/// and `Origin` must be this listener's `Host` under its scheme: `https` under TLS; `http`,
/// or `https` through a TLS-terminating proxy in front, on a plain listener. Clients that
/// send neither (scripts) are let through to the session and CSRF checks.
pub(super) fn from_own_origin(headers: &HeaderMap, tls: bool) -> bool {
    if let Some(site) = headers.get("sec-fetch-site")
        && !matches!(site.as_bytes(), b"same-origin" | b"none")
    {
        return false;
    }
    let Some(origin) = headers.get(header::ORIGIN) else { return true };
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else { return false };
    let schemes: &[&str] = if tls { &["https"] } else { &["http", "https"] };
    origin
        .to_str()
        .is_ok_and(|origin| schemes.iter().any(|scheme| origin.eq_ignore_ascii_case(&format!("{scheme}://{host}"))))
}

/// Whether the browser reached the dashboard over HTTPS: the listener's own TLS, or a
/// TLS-terminating proxy in front (the browser's `Origin` says `https`).
pub(super) fn over_https(headers: &HeaderMap, tls: bool) -> bool {
    tls || headers.get(header::ORIGIN).is_some_and(|origin| origin.as_bytes().starts_with(b"https://"))
}

/// The checks every state-changing form passes: the dashboard's own origin, a live
/// session, and that session's CSRF token.
pub(super) async fn form_session(
    state: &AdminState,
    headers: &HeaderMap,
    csrf: &str,
) -> Result<SignedIn, DashboardAnswer> {
    if !from_own_origin(headers, state.tls) {
        return Err(DashboardAnswer::Refused);
    }
    let session = signed_in(state, headers).await?;
    if !csrf_matches(&session.csrf, csrf) {
        return Err(DashboardAnswer::Refused);
    }
    Ok(session)
}

/// [`form_session`] for a form that changes state: its token must be allowed to operate.
pub(super) async fn operate_session(
    state: &AdminState,
    headers: &HeaderMap,
    csrf: &str,
) -> Result<SignedIn, DashboardAnswer> {
    let session = form_session(state, headers, csrf).await?;
    access::check(&session.principal, Need::Operate)?;
    Ok(session)
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue};

    use super::{from_own_origin, over_https};

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (k.parse().unwrap_or_else(|_| unreachable!()), HeaderValue::from_static(v))).collect()
    }

    #[test]
    fn only_the_dashboards_own_origin_may_change_state() {
        let own = [("host", "127.0.0.1:8081"), ("origin", "http://127.0.0.1:8081"), ("sec-fetch-site", "same-origin")];
        assert!(from_own_origin(&headers(&own), false));
        assert!(!from_own_origin(&headers(&own), true), "https origin expected under TLS");
        let proxied =
            [("host", "admin.example"), ("origin", "https://admin.example"), ("sec-fetch-site", "same-origin")];
        assert!(from_own_origin(&headers(&proxied), false), "through a TLS-terminating proxy in front");
        assert!(from_own_origin(&headers(&proxied), true));
        assert!(from_own_origin(&headers(&[("host", "x")]), false), "a script sends neither");
        for foreign in [
            vec![("host", "127.0.0.1:8081"), ("origin", "http://127.0.0.1:8080")],
            vec![("host", "127.0.0.1:8081"), ("origin", "null")],
            vec![("host", "127.0.0.1:8081"), ("sec-fetch-site", "same-site")],
            vec![("host", "127.0.0.1:8081"), ("sec-fetch-site", "cross-site"), ("origin", "http://127.0.0.1:8081")],
            vec![("origin", "http://127.0.0.1:8081")],
        ] {
            assert!(!from_own_origin(&headers(&foreign), false), "{foreign:?}");
        }
    }

    #[test]
    fn the_cookie_is_secure_whenever_the_browser_is_on_https() {
        assert!(over_https(&headers(&[]), true));
        assert!(over_https(&headers(&[("origin", "https://admin.example")]), false), "a TLS proxy in front");
        assert!(!over_https(&headers(&[("origin", "http://127.0.0.1:8081")]), false));
        assert!(!over_https(&headers(&[]), false));
    }
}
