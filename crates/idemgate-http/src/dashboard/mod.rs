//! The dashboard under `/admin/`: server-rendered pages, no scripts, no external assets.
//! This module is the router and what every page shares (sessions, the layout, escaping,
//! times); each page is a module of its own:
//!
//! - `/admin/` (here): per source the counts by outcome and job state; dead jobs, each
//!   with a replay button; unmatched events; recent conflicts; destinations, each with a
//!   button making its waiting jobs due now (and, when disabled or paused, one enabling
//!   it); rejections by reason;
//! - `/admin/events` ([`events`]): the event search, a page at a time;
//! - `/admin/events/<id>` ([`event`]): one event's receipt, headers, payload, jobs and
//!   attempts, with replay and retry-now;
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
    views::{EventFilter, UNMATCHED},
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
mod rejections;

const COOKIE: &str = "idemgate_admin";

/// The dashboard's routes, to merge into the admin router.
pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/admin/", get(page))
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
/// overview and the rejections page list them.
pub(super) fn conflict_row(c: &idemgate_store::views::RecentConflict, now: UnixTime) -> String {
    format!(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        esc(&c.source),
        esc(&c.identity),
        c.seen_count,
        time_html(c.last_seen_at, now)
    )
}

/// The style every page shares. A narrow screen keeps the page itself from scrolling
/// sideways: tables scroll in their own box, long identities wrap, charts shrink.
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
    svg{max-width:100%;height:auto}figcaption{font-size:.9em}";

/// A dashboard page: `title` as its heading, then `body` (already HTML).
pub(crate) fn layout(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{title}</title>\
         <style>{STYLE}</style></head><body><h1>{title}</h1>{body}</body></html>"
    ))
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
    layout(
        "idemgate: sign in",
        "<form method=\"post\" action=\"/admin/login\"><label>Admin token <input id=\"token\" name=\"token\" \
         type=\"password\" autocomplete=\"off\"></label> <button id=\"sign-in\" type=\"submit\">Sign in</button></form>",
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

async fn page(State(state): State<AdminState>, headers: HeaderMap) -> Response {
    let Some(session) = signed_in(&state, &headers) else {
        return DashboardAnswer::SignedOut.into_response();
    };
    let csrf = esc(&session.csrf);
    let operate = session.principal.role.allows(Need::Operate);
    shown("idemgate", &csrf, render(&state, &csrf, operate).await.map(Some))
}

/// The page; the forms that change state only when the session may `operate`.
async fn render(state: &AdminState, csrf: &str, operate: bool) -> Result<String, StoreError> {
    let store = &state.store;
    let now = state.clock.now();
    let mut html = String::from(
        "<h2>Sources</h2><table id=\"sources\"><tr><th>source</th><th>receipts</th><th>conflicts</th><th>jobs</th></tr>",
    );
    for s in store.stats(None).await? {
        let jobs: Vec<String> =
            s.jobs.iter().map(|(state, n)| format!("<span class=\"job-{state}\">{state} {n}</span>")).collect();
        let _ = write!(
            html,
            "<tr data-source=\"{src}\"><td>{src}</td><td class=\"receipts\">{}</td><td class=\"conflicts\">{}</td><td>{}</td></tr>",
            s.receipts,
            s.conflicts,
            jobs.join(", "),
            src = esc(&s.source)
        );
    }
    html.push_str("</table><h2>Dead jobs</h2><table id=\"dead\"><tr><th>source</th><th>event</th><th>destination</th><th>attempts</th><th>reason</th><th></th></tr>");
    for job in store.dead_jobs(50).await? {
        let (src, id) = (esc(&job.source), esc(&job.identity));
        let button = if operate {
            format!(
                "<form method=\"post\" action=\"/admin/replay\"><input type=\"hidden\" name=\"source\" value=\"{src}\">\
                 <input type=\"hidden\" name=\"identity\" value=\"{id}\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
                 <button class=\"replay\" type=\"submit\">Replay</button></form>"
            )
        } else {
            String::new()
        };
        let _ = write!(
            html,
            "<tr><td>{src}</td><td>{id}</td><td>{}</td><td>{}</td><td>{}</td><td>{button}</td></tr>",
            esc(&job.destination),
            job.attempts,
            esc(job.reason.as_deref().unwrap_or("")),
        );
    }
    html.push_str(
        "</table><h2>Unmatched events</h2><p>No destination's subscription matched them; \
         <code>idemgate events replay --to DEST --state unmatched</code> sends them to one.</p>\
         <table id=\"unmatched\"><tr><th>source</th><th>event</th><th>type</th><th>received</th></tr>",
    );
    let unmatched = EventFilter { state: Some(UNMATCHED.to_owned()), limit: 50, ..EventFilter::default() };
    for e in store.list_events(unmatched).await? {
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&e.source),
            esc(&e.identity),
            esc(e.event_type.as_deref().unwrap_or("-")),
            time_html(e.received_at, now)
        );
    }
    html.push_str("</table><h2>Recent conflicts</h2><table id=\"conflicts\"><tr><th>source</th><th>event</th><th>seen</th><th>last seen</th></tr>");
    for c in store.recent_conflicts(50).await? {
        html.push_str(&conflict_row(&c, now));
    }
    html.push_str(
        "</table><h2>Destinations</h2><table id=\"destinations\"><tr><th>destination</th><th>state</th>\
         <th>health</th><th>jobs</th><th>last success</th><th>last failure</th><th></th></tr>",
    );
    for d in crate::views::destinations(store, now).await? {
        let state_html = match d.disabled_at {
            Some(at) => format!(
                "<span class=\"bad\">disabled ({}) since {}</span>",
                esc(d.disabled_reason.as_deref().unwrap_or("")),
                time_html(UnixTime(at), now)
            ),
            None => match (d.breaker.paused_at, d.breaker.next_probe_at) {
                (Some(at), Some(probe)) => format!(
                    "<span class=\"bad\">paused since {} after {} failures; next probe {}</span>",
                    time_html(UnixTime(at), now),
                    d.breaker.failures,
                    time_html(UnixTime(probe), now)
                ),
                _ => match d.throttled_since {
                    Some(at) => {
                        format!("throttled since {} (rate limit or in-flight cap)", time_html(UnixTime(at), now))
                    }
                    None => "enabled".to_owned(),
                },
            },
        };
        let health = if d.health == "failing" { format!("<span class=\"bad\">{}</span>", d.health) } else { d.health };
        let jobs: Vec<String> = d.jobs.iter().map(|(state, n)| format!("{state} {n}")).collect();
        let success = d.last_success_at.map_or("-".to_owned(), |at| time_html(UnixTime(at), now));
        let failure = d.last_failure.as_ref().map_or("-".to_owned(), |f| {
            let what = f.status.map_or_else(|| f.error.clone().unwrap_or_default(), |s| s.to_string());
            format!("{} {}", time_html(UnixTime(f.at), now), esc(&what))
        });
        let name = esc(&d.name);
        let stopped = d.disabled_at.is_some() || d.breaker.paused_at.is_some();
        let buttons = match (operate, stopped) {
            (false, _) => String::new(),
            (true, stopped) => {
                let form = |action: &str, class: &str, label: &str| {
                    format!(
                        "<form method=\"post\" action=\"/admin/{action}\"><input type=\"hidden\" name=\"destination\" \
                         value=\"{name}\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
                         <button class=\"{class}\" type=\"submit\">{label}</button></form>"
                    )
                };
                let enable = if stopped { form("enable", "enable", "Enable") } else { String::new() };
                format!("{}{enable}", form("retry", "retry", "Retry waiting jobs now"))
            }
        };
        let _ = write!(
            html,
            "<tr data-destination=\"{name}\"><td>{name}</td><td class=\"state\">{state_html}</td>\
             <td class=\"health\">{health}</td><td>{}</td><td>{success}</td><td>{failure}</td><td>{buttons}</td></tr>",
            jobs.join(", "),
        );
    }
    html.push_str(
        "</table><h2>Rejections</h2><table id=\"rejections\"><tr><th>source</th><th>reason</th><th>count</th></tr>",
    );
    for (source, reason, count) in state.rejections.snapshot() {
        let _ = write!(html, "<tr><td>{}</td><td>{reason}</td><td>{count}</td></tr>", esc(&source));
    }
    html.push_str("</table>");
    Ok(html)
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

    use super::{from_own_origin, over_https, time_html};

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
