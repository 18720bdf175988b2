//! The dashboard under `/admin/`: server-rendered pages, no scripts, no external assets.
//! This module is the router and what every page shares (sessions, the layout, escaping,
//! times); each page is a module of its own:
//!
//! - `/admin/` ([`overview`]): per source the counts by outcome and job state; dead jobs,
//!   each with a replay button; unmatched events; recent conflicts, each linking to its
//!   event; destinations, each with buttons replaying its dead jobs, making its waiting
//!   jobs due now and (when disabled or paused) enabling it; rejections by reason;
//! - `/admin/events` ([`events`]): the event search, a page at a time;
//! - `/admin/events/<id>` ([`event`]): one event's receipt, headers, payload, jobs,
//!   attempts and the conflicting bodies seen for it, with replay and retry-now;
//! - `/admin/destinations` ([`destinations`]): each destination's state, queue, and its
//!   success rate and latency over the last hour and day as charts ([`chart`]);
//! - `/admin/rejections` ([`rejections`]): rejections by reason, conflicts over time;
//! - `/admin/audit` ([`audit`]): the audit log of the changes made through the admin API,
//!   the dashboard and the CLI.
//!
//! Signing in with an admin token starts a session (`session.rs`): the cookie holds a
//! random id (HttpOnly, SameSite=Strict, Secure under TLS), never the token. The session
//! keeps the token's name and role: a `read` session sees no buttons, and any change it
//! posts is refused ([`crate::access`]); changes are audited under the name.
//!
//! `SameSite` does not cover another port of the same host (a page behind `[[proxy]]`,
//! say), so every state-changing request must also come from the dashboard's own origin
//! (`Sec-Fetch-Site`, `Origin`) and, once signed in, carry the session's CSRF token.

mod audit;

use std::fmt::Write as _;

use axum::{
    Form, Router,
    extract::State,
    http::{HeaderMap, HeaderValue, header},
    response::{Html, IntoResponse, Redirect, Response},
    routing::{get, post},
};
use idemgate_core::{UnixTime, time::relative};
use idemgate_store::{
    StoreError,
    audit::{Action, Audit, target},
    jobs::ReplayFilter,
};
use serde::Deserialize;

use crate::{
    access::{self, Need, Principal},
    admin::AdminState,
    answer::DashboardAnswer,
};

mod chart;
mod destinations;
mod event;
mod events;
mod overview;
mod rejections;

const COOKIE: &str = "idemgate_admin";

/// The dashboard's routes, to merge into the admin router.
pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/admin/", get(overview::page))
        .route("/admin/login", get(login_form).post(login))
        .route("/admin/logout", post(logout))
        .route("/admin/replay", post(replay))
        .route("/admin/retry", post(retry))
        .route("/admin/events", get(events::page))
        .route("/admin/events/{id}", get(event::page))
        .route("/admin/events/{id}/replay", post(event::replay))
        .route("/admin/events/{id}/retry", post(event::retry))
        .route("/admin/destinations", get(destinations::page))
        .route("/admin/rejections", get(rejections::page))
        .route("/admin/enable", post(enable))
        .route("/admin/replay-dead", post(overview::replay_dead))
        .route("/admin/audit", get(audit::page))
        .with_state(state)
}

/// A signed-in request: its session id, that session's CSRF token and its token.
pub(super) struct SignedIn {
    id: String,
    csrf: String,
    principal: Principal,
}

pub(super) fn signed_in(state: &AdminState, headers: &HeaderMap) -> Option<SignedIn> {
    let id = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(&format!("{COOKIE}=")).map(str::to_owned))?;
    let (csrf, principal) = state.sessions.live(&id, state.clock.now_ms())?;
    Some(SignedIn { id, csrf, principal })
}

/// Whether a state-changing request comes from the dashboard's own origin, as far as the
/// browser says: `Sec-Fetch-Site` must be `same-origin` (or `none`, typed by the user),
/// and `Origin` must be this listener's `Host` under its scheme: `https` under TLS; `http`,
/// or `https` through a TLS-terminating proxy in front, on a plain listener. Clients that
/// send neither (scripts) are let through to the session and CSRF checks.
fn from_own_origin(headers: &HeaderMap, tls: bool) -> bool {
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
fn over_https(headers: &HeaderMap, tls: bool) -> bool {
    tls || headers.get(header::ORIGIN).is_some_and(|origin| origin.as_bytes().starts_with(b"https://"))
}

/// The checks every state-changing form passes: the dashboard's own origin, a live
/// session, and that session's CSRF token.
pub(super) fn form_session(state: &AdminState, headers: &HeaderMap, csrf: &str) -> Result<SignedIn, DashboardAnswer> {
    if !from_own_origin(headers, state.tls) {
        return Err(DashboardAnswer::Refused);
    }
    let Some(session) = signed_in(state, headers) else { return Err(DashboardAnswer::SignedOut) };
    if !state.sessions.csrf_matches(&session.id, csrf, state.clock.now_ms()) {
        return Err(DashboardAnswer::Refused);
    }
    Ok(session)
}

/// [`form_session`] for a form that changes state: its token must be allowed to operate.
pub(super) fn operate_session(
    state: &AdminState,
    headers: &HeaderMap,
    csrf: &str,
) -> Result<SignedIn, DashboardAnswer> {
    let session = form_session(state, headers, csrf)?;
    access::check(&session.principal, Need::Operate)?;
    Ok(session)
}

fn session_cookie(id: &str, max_age: u64, https: bool) -> Option<HeaderValue> {
    let secure = if https { "; Secure" } else { "" };
    HeaderValue::from_str(&format!("{COOKIE}={id}; Path=/admin; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}"))
        .ok()
}

fn with_cookie(mut response: Response, cookie: Option<HeaderValue>) -> Response {
    if let Some(cookie) = cookie {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// Escapes text for HTML: identities are any printable ASCII.
pub(super) fn esc(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

/// A time as the page shows it: RFC 3339 UTC and how long ago as of `now`, in a `<time>`
/// element whose `datetime` a script or a browser extension can read.
pub(super) fn time_html(at: UnixTime, now: UnixTime) -> String {
    let text = at.rfc3339();
    format!("<time datetime=\"{text}\">{text} ({})</time>", relative(at, now))
}

/// One recent conflict as a table row (source, event, times seen, last seen), as the
/// overview and the rejections page list them; the event links to its page while stored.
pub(super) fn conflict_row(c: &idemgate_store::views::RecentConflict, now: UnixTime) -> String {
    let identity = esc(&c.identity);
    let event =
        c.event_id.map_or_else(|| identity.clone(), |id| format!("<a href=\"/admin/events/{id}\">{identity}</a>"));
    format!(
        "<tr><td>{}</td><td class=\"event\">{event}</td><td>{}</td><td>{}</td></tr>",
        esc(&c.source),
        c.seen_count,
        time_html(c.last_seen_at, now)
    )
}

/// The style every page shares. A narrow screen keeps the page itself from scrolling
/// sideways: long identities wrap, charts shrink, and each table row becomes a card whose
/// cells stack, each after its column's name ([`narrow_labels`]), so a row's buttons stay
/// in view without scrolling inside the table.
const STYLE: &str = "body{font-family:sans-serif;margin:1em auto;padding:0 1em;max-width:80em;line-height:1.4}\
    table{border-collapse:collapse;margin-bottom:1.5em;display:block;overflow-x:auto;max-width:100%}\
    td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}th{background:#f3f3f3}\
    td{overflow-wrap:break-word}.bad{color:#a00}.ok{color:#060}\
    nav{display:flex;flex-wrap:wrap;gap:.3em 1.2em;align-items:center;margin-bottom:1em}\
    nav form{margin:0}a:focus,button:focus,input:focus,select:focus{outline:3px solid #05a;outline-offset:1px}\
    form.fields{display:flex;flex-wrap:wrap;gap:.6em 1em;align-items:flex-end;margin-bottom:1em}\
    form.fields label{display:flex;flex-direction:column;font-size:.9em}\
    input,select,button{font-size:1em;max-width:100%}\
    pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f7f7f7;padding:.6em;max-height:40em;overflow-y:auto}\
    dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.2em 1em}dd{margin:0;overflow-wrap:anywhere}\
    .charts{display:flex;flex-wrap:wrap;gap:1em}.charts figure{margin:0;max-width:100%}\
    svg{max-width:100%;height:auto}figcaption{font-size:.9em}.empty{color:#555}\
    @media (max-width:40em){table,tbody,tr,td,caption{display:block}table{overflow:visible}\
    tr:has(th){display:none}tr{border:1px solid #ccc;margin-bottom:.6em;padding:.2em 0}\
    td{border:none;padding:.15em .6em}td:empty{display:none}td::before{font-weight:bold}}";

/// A dashboard page: `title` as its heading, then `body` (already HTML); its tables'
/// cells labelled on a narrow screen by [`narrow_labels`].
pub(crate) fn layout(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{title}</title>\
         <style>{STYLE}@media (max-width:40em){{{}}}</style></head><body><h1>{title}</h1>{body}</body></html>",
        narrow_labels(body)
    ))
}

/// The narrow screen's label for each cell: per table with an id, one CSS rule per named
/// column putting the column's name (its header cell's text) before each cell's value, as
/// `#dead td:nth-child(2)::before{content:"event: "}`. Read from the dashboard's own
/// markup, where every table's first row holds its header cells; the cells themselves
/// stay as they are.
fn narrow_labels(body: &str) -> String {
    let mut rules = String::new();
    for table in body.split("<table id=\"").skip(1) {
        let Some((id, rest)) = table.split_once('"') else { continue };
        let header = rest.split("</tr>").next().unwrap_or("");
        for (column, cell) in header.split("<th").skip(1).enumerate() {
            let name = cell.split_once('>').map_or("", |(_, text)| text.split('<').next().unwrap_or(""));
            if !name.is_empty() {
                let _ = write!(
                    rules,
                    "#{} td:nth-child({})::before{{content:\"{}: \"}}",
                    css_escaped(id),
                    column + 1,
                    css_escaped(name)
                );
            }
        }
    }
    rules
}

/// `text` with everything but letters, digits, `-`, `_` and spaces as a CSS escape, so it
/// can neither end a string or rule nor the style element.
fn css_escaped(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ' ') {
                c.to_string()
            } else {
                format!("\\{:x} ", u32::from(c))
            }
        })
        .collect()
}

/// A signed-in page: the navigation between pages and the sign-out button, then `body`.
/// `csrf` is the session's token, escaped.
pub(super) fn signed_in_layout(title: &str, csrf: &str, body: &str) -> Html<String> {
    layout(
        title,
        &format!(
            "<nav aria-label=\"pages\"><a href=\"/admin/\">Overview</a><a href=\"/admin/events\">Events</a>\
             <a href=\"/admin/destinations\">Destinations</a><a href=\"/admin/rejections\">Rejections</a>\
             <a href=\"/admin/audit\">Audit log</a><form method=\"post\" action=\"/admin/logout\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <button id=\"sign-out\" type=\"submit\">Sign out</button></form></nav><main>{body}</main>"
        ),
    )
}

/// What a page's render gives: its body, or `None` for a thing that is not there.
pub(super) type Rendered = Result<Option<String>, StoreError>;

/// The answer for a rendered page: the page, `404` for `None`, `503` if the store failed.
pub(super) fn shown(title: &str, csrf: &str, rendered: Rendered) -> Response {
    match rendered {
        Ok(Some(body)) => signed_in_layout(title, csrf, &body).into_response(),
        Ok(None) => DashboardAnswer::NotFound.into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "dashboard could not read the store");
            DashboardAnswer::StoreUnreadable.into_response()
        }
    }
}

async fn login_form() -> Html<String> {
    sign_in_page(None)
}

/// The sign-in page, with `error` (plain text) above the form when the last try failed:
/// the error is announced and tied to the field, and the field is focused and empty again,
/// since the page never echoes a token.
pub(crate) fn sign_in_page(error: Option<&str>) -> Html<String> {
    let (message, field) = match error {
        Some(text) => (
            format!("<p id=\"sign-in-error\" class=\"bad\" role=\"alert\">{}</p>", esc(text)),
            " aria-invalid=\"true\" aria-describedby=\"sign-in-error\" autofocus",
        ),
        None => (String::new(), ""),
    };
    layout(
        "idemgate: sign in",
        &format!(
            "{message}<form method=\"post\" action=\"/admin/login\"><label>Admin token <input id=\"token\" \
             name=\"token\" type=\"password\" autocomplete=\"off\"{field}></label> \
             <button id=\"sign-in\" type=\"submit\">Sign in</button></form>"
        ),
    )
}

#[derive(Deserialize)]
struct Login {
    token: String,
}

async fn login(State(state): State<AdminState>, headers: HeaderMap, Form(form): Form<Login>) -> Response {
    if !from_own_origin(&headers, state.tls) {
        return DashboardAnswer::Refused.into_response();
    }
    let Some(principal) = state.tokens.identify(form.token.as_bytes()) else {
        return DashboardAnswer::WrongToken.into_response();
    };
    match state.sessions.create(state.clock.now_ms(), principal) {
        Ok(session) => {
            let cookie =
                session_cookie(&session.id, state.sessions.lifetime().as_secs(), over_https(&headers, state.tls));
            with_cookie(Redirect::to("/admin/").into_response(), cookie)
        }
        Err(err) => {
            tracing::error!(error = %err, "cannot start a dashboard session");
            DashboardAnswer::NoSession.into_response()
        }
    }
}

#[derive(Deserialize)]
struct SignOut {
    #[serde(default)]
    csrf: String,
}

async fn logout(State(state): State<AdminState>, headers: HeaderMap, Form(form): Form<SignOut>) -> Response {
    let session = match form_session(&state, &headers, &form.csrf) {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    state.sessions.end(&session.id);
    with_cookie(Redirect::to("/admin/login").into_response(), session_cookie("", 0, over_https(&headers, state.tls)))
}

#[derive(Deserialize)]
struct ReplayForm {
    source: String,
    identity: String,
    #[serde(default)]
    csrf: String,
}

async fn replay(State(state): State<AdminState>, headers: HeaderMap, Form(form): Form<ReplayForm>) -> Response {
    let session = match operate_session(&state, &headers, &form.csrf) {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    let filter = ReplayFilter { source: Some(form.source), identity: Some(form.identity), ..ReplayFilter::default() };
    let audit = Audit::new(session.principal.name, Action::Replay, target::filter(&filter));
    match state.store.audited(audit).replay_jobs(filter, state.clock.now(), 1000).await {
        Ok(_) => Redirect::to("/admin/").into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "dashboard replay failed");
            DashboardAnswer::ReplayFailed.into_response()
        }
    }
}

#[derive(Deserialize)]
struct RetryForm {
    destination: String,
    #[serde(default)]
    csrf: String,
}

/// Makes the destination's pending and retrying jobs due now, as `idemgate events retry
/// --destination` does.
async fn retry(State(state): State<AdminState>, headers: HeaderMap, Form(form): Form<RetryForm>) -> Response {
    let session = match operate_session(&state, &headers, &form.csrf) {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    let filter = ReplayFilter { destination: Some(form.destination), ..ReplayFilter::default() };
    let audit = Audit::new(session.principal.name, Action::Retry, target::filter(&filter));
    match state.store.audited(audit).retry_now(filter, state.clock.now_ms()).await {
        Ok(_) => Redirect::to("/admin/").into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "dashboard retry failed");
            DashboardAnswer::RetryFailed.into_response()
        }
    }
}

/// Resumes a disabled or paused destination, as `idemgate destination enable` does.
async fn enable(State(state): State<AdminState>, headers: HeaderMap, Form(form): Form<RetryForm>) -> Response {
    let session = match operate_session(&state, &headers, &form.csrf) {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    let audit = Audit::new(session.principal.name, Action::Enable, target::destination(&form.destination));
    match state.store.audited(audit).enable_destination(form.destination, state.clock.now()).await {
        Ok(_) => Redirect::to("/admin/").into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "dashboard enable failed");
            DashboardAnswer::EnableFailed.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::{HeaderMap, HeaderValue};

    use idemgate_core::UnixTime;

    use super::{from_own_origin, narrow_labels, over_https, time_html};

    #[test]
    fn each_named_column_gets_its_label_on_a_narrow_screen() {
        let body = "<p>x</p><table id=\"t\"><caption>c</caption><tr><th>source</th><th></th><th>a \"b\"</th></tr>\
                    <tr><td>s</td><td><form><button>Go</button></form></td><td class=\"n\">1</td></tr>\
                    </table><table><tr><th>unnamed table</th></tr></table><table id=\"u\"><tr><th>#</th></tr></table>";
        assert_eq!(
            narrow_labels(body),
            "#t td:nth-child(1)::before{content:\"source: \"}#t td:nth-child(3)::before{content:\"a \\22 b\\22 : \"}\
             #u td:nth-child(1)::before{content:\"\\23 : \"}"
        );
    }

    #[test]
    fn a_time_reads_as_rfc_3339_with_how_long_ago() {
        assert_eq!(
            time_html(UnixTime(1_796_147_038), UnixTime(1_796_147_038 + 180)),
            "<time datetime=\"2026-12-01T17:43:58Z\">2026-12-01T17:43:58Z (3 min ago)</time>"
        );
    }

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
