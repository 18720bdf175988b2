//! Entering and leaving the portal. `app-portal-access` answers a link
//! `{public_url}/portal/enter#{login}`: the login sits in the fragment, so it reaches no
//! server log and no `Referer`. The landing page's script (`/portal/enter.js`, a file so the
//! CSP allows no inline script) posts it; without scripts the customer pastes it into the
//! same form. `POST /portal/enter` consumes the login and starts a session in one store
//! transaction, so a link opens the portal once, on any instance. Signing out deletes the
//! session from the store, so it ends everywhere.

use std::sync::Arc;

use axum::{
    Router,
    extract::{Request, State},
    http::header,
    response::{IntoResponse, Redirect, Response},
    routing::{get, post},
};
use idemgate_store::session::{NewSession, PORTAL_LIFETIME_MS};
use serde::Deserialize;

use super::{
    PortalState, Shared,
    layout::plain_page,
    session::{NoFields, Posted, from_own_origin, read_form, set_cookie},
};
use crate::{access::digest, answer::PortalAnswer};

/// The landing page's script: it reads the login from the fragment, removes the fragment
/// from the address bar and history, and posts the login.
const ENTER_SCRIPT: &str = "(function(){var t=location.hash.slice(1);if(!t)return;\
history.replaceState(null,'',location.pathname);\
var f=document.getElementById('enter');f.elements.token.value=decodeURIComponent(t);f.submit();})();";

pub(super) fn routes() -> Router<Arc<PortalState>> {
    Router::new()
        .route("/enter", get(landing).post(enter))
        .route("/enter.js", get(script))
        .route("/sign-out", post(sign_out))
        .route("/signed-out", get(signed_out))
}

/// The link's landing page: the form the script fills and posts (or the customer, pasting
/// the part of the link after `#`).
async fn landing(state: Shared) -> impl IntoResponse {
    plain_page(
        &state.portal.brand,
        "Opening the portal",
        "<form id=\"enter\" method=\"post\" action=\"/portal/enter\">\
         <p>Opening your webhook portal… If nothing happens, paste the part of your link after <code>#</code>.</p>\
         <label for=\"token\">Login code</label> <input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"off\" required> \
         <button type=\"submit\">Open</button></form><script src=\"/portal/enter.js\"></script>",
    )
}

async fn script() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], ENTER_SCRIPT)
}

#[derive(Deserialize)]
struct Login {
    #[serde(default)]
    token: String,
}

/// Consumes the login and starts the session: to the endpoints with the cookie set; a login
/// that is unknown, used or expired is 401 and changes nothing.
async fn enter(state: Shared, request: Request) -> Result<Response, PortalAnswer> {
    let (parts, body) = request.into_parts();
    if !from_own_origin(&parts.headers, &state.origin) {
        return Err(PortalAnswer::Refused);
    }
    let bytes = read_form(&parts.headers, body).await?;
    let login: Login = serde_urlencoded::from_bytes(&bytes).map_err(|_| PortalAnswer::SignedOut)?;
    let login = digest(login.token.trim().as_bytes());
    let (id, csrf) = (random_hex()?, random_hex()?);
    let new = NewSession {
        digest: digest(id.as_bytes()),
        csrf,
        lifetime_ms: PORTAL_LIFETIME_MS,
        name: String::new(),
        role: String::new(),
    };
    let Some(_) = state.api.store.enter_portal(login, new, state.now_ms()).await? else {
        return Err(PortalAnswer::SignedOut);
    };
    let mut answer = Redirect::to("/portal/endpoints").into_response();
    answer.headers_mut().insert(header::SET_COOKIE, set_cookie(&state, Some(&id)));
    Ok(answer)
}

/// Ends the session in the store (on every instance) and clears the cookie.
async fn sign_out(State(state): Shared, posted: Posted<NoFields>) -> Result<Response, PortalAnswer> {
    state.api.store.end_session(posted.customer.digest).await?;
    let mut answer = Redirect::to("/portal/signed-out").into_response();
    answer.headers_mut().insert(header::SET_COOKIE, set_cookie(&state, None));
    Ok(answer)
}

async fn signed_out(state: Shared) -> impl IntoResponse {
    plain_page(
        &state.portal.brand,
        "Signed out",
        "<p>You are signed out. Open a new link to the portal to come back.</p>",
    )
}

/// 32 bytes from the operating system's CSPRNG, as hex.
fn random_hex() -> Result<String, PortalAnswer> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|_| PortalAnswer::Unavailable)?;
    Ok(hex::encode(bytes))
}
