//! The dashboard at `/admin/`: one server-rendered page, no scripts, no external assets.
//! Per source the counts by outcome and job state; recent conflicts and dead jobs with
//! their reasons, each dead job with a replay button; destination health; rejections by
//! reason. It signs in with the admin token, kept in an HttpOnly, SameSite=Strict cookie.

use std::fmt::Write as _;

use axum::{
    Form, Router,
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{Html, IntoResponse, Redirect, Response},
    routing::{get, post},
};
use idemgate_store::{StoreError, jobs::ReplayFilter};
use serde::Deserialize;
use subtle::ConstantTimeEq;

use crate::{admin::AdminState, system_now};

const COOKIE: &str = "idemgate_admin";

/// The dashboard's routes, to merge into the admin router.
pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/admin/", get(page))
        .route("/admin/login", get(login_form).post(login))
        .route("/admin/replay", post(replay))
        .with_state(state)
}

fn signed_in(state: &AdminState, headers: &HeaderMap) -> bool {
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix(&format!("{COOKIE}=")).map(str::to_owned))
        .next()
        .unwrap_or_default();
    bool::from(cookie.as_bytes().ct_eq(state.token.expose()))
}

/// Escapes text for HTML: identities are any printable ASCII.
fn esc(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

fn layout(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title><style>\
         body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin-bottom:1.5em}}\
         td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:left}}th{{background:#f3f3f3}}\
         .bad{{color:#a00}}</style></head><body><h1>{title}</h1>{body}</body></html>"
    ))
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

async fn login(State(state): State<AdminState>, Form(form): Form<Login>) -> Response {
    if !bool::from(form.token.as_bytes().ct_eq(state.token.expose())) {
        return (StatusCode::UNAUTHORIZED, layout("idemgate: sign in", "<p class=\"bad\">Wrong token.</p>"))
            .into_response();
    }
    let mut response = Redirect::to("/admin/").into_response();
    let cookie = format!("{COOKIE}={}; Path=/admin; HttpOnly; SameSite=Strict", form.token);
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

async fn page(State(state): State<AdminState>, headers: HeaderMap) -> Response {
    if !signed_in(&state, &headers) {
        return Redirect::to("/admin/login").into_response();
    }
    match render(&state).await {
        Ok(body) => layout("idemgate", &body).into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "dashboard could not read the store");
            (StatusCode::SERVICE_UNAVAILABLE, layout("idemgate", "<p class=\"bad\">The store cannot be read.</p>"))
                .into_response()
        }
    }
}

async fn render(state: &AdminState) -> Result<String, StoreError> {
    let store = &state.store;
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
        let _ = write!(
            html,
            "<tr><td>{src}</td><td>{id}</td><td>{}</td><td>{}</td><td>{}</td><td><form method=\"post\" action=\"/admin/replay\">\
             <input type=\"hidden\" name=\"source\" value=\"{src}\"><input type=\"hidden\" name=\"identity\" value=\"{id}\">\
             <button class=\"replay\" type=\"submit\">Replay</button></form></td></tr>",
            esc(&job.destination),
            job.attempts,
            esc(job.reason.as_deref().unwrap_or("")),
            src = esc(&job.source),
            id = esc(&job.identity),
        );
    }
    html.push_str("</table><h2>Recent conflicts</h2><table id=\"conflicts\"><tr><th>source</th><th>event</th><th>seen</th><th>last seen</th></tr>");
    for c in store.recent_conflicts(50).await? {
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&c.source),
            esc(&c.identity),
            c.seen_count,
            c.last_seen_at.0
        );
    }
    html.push_str("</table><h2>Destinations</h2><table id=\"destinations\"><tr><th>destination</th><th>health</th><th>jobs</th></tr>");
    for d in store.destinations().await? {
        let health = d
            .disabled
            .as_deref()
            .map_or("ok".to_owned(), |r| format!("<span class=\"bad\">disabled: {}</span>", esc(r)));
        let jobs: Vec<String> = d.jobs.iter().map(|(state, n)| format!("{state} {n}")).collect();
        let _ = write!(html, "<tr><td>{}</td><td>{health}</td><td>{}</td></tr>", esc(&d.name), jobs.join(", "));
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
}

async fn replay(State(state): State<AdminState>, headers: HeaderMap, Form(form): Form<ReplayForm>) -> Response {
    if !signed_in(&state, &headers) {
        return Redirect::to("/admin/login").into_response();
    }
    let filter = ReplayFilter { source: Some(form.source), identity: Some(form.identity), ..ReplayFilter::default() };
    match state.store.replay_jobs(filter, system_now(), 1000).await {
        Ok(_) => Redirect::to("/admin/").into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "dashboard replay failed");
            (StatusCode::SERVICE_UNAVAILABLE, layout("idemgate", "<p class=\"bad\">Replay failed; try again.</p>"))
                .into_response()
        }
    }
}
