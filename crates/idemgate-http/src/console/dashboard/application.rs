//! `/admin/applications/<app>` (its id or uid): one application of the sending side, its
//! endpoints with their state (enabled, disabled and why, paused, throttled), filters,
//! rate limit, custom header names (never values, never secrets), jobs by state, health
//! and latest failure; then its latest messages, each linking to its page
//! ([`super::message`]) with its deliveries by status. Read-only.

use axum::{
    extract::{Path, State},
    http::HeaderMap,
    response::{IntoResponse, Response},
};
use idemgate_core::UnixTime;

use super::{
    applications::subject,
    page::{Rendered, shown},
    session::signed_in,
};
use crate::console::ui::{esc, time_html};
use crate::console::{
    applications::{self, ApplicationDetail, EndpointView, MessagesPage},
    state::AdminState,
    ui::{Table, cell, empty_state, state_badge},
};

/// How many of the latest messages the page lists.
const LATEST: usize = 20;

/// The application page.
pub(super) async fn page(State(state): State<AdminState>, headers: HeaderMap, Path(app): Path<String>) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer.into_response(),
    };
    shown(
        "idemgate: application",
        &[("/admin/applications", "Applications")],
        &esc(&session.csrf),
        render(&state, &app).await,
    )
}

async fn render(state: &AdminState, app: &str) -> Rendered {
    let now = state.clock.now();
    let Some(detail) = subject(applications::application_detail(&state.store, app, now).await)? else {
        return Ok(None);
    };
    let Some(messages) =
        subject(applications::messages_page(&state.store, &detail.application.id, None, LATEST).await)?
    else {
        return Ok(None);
    };
    let mut html = about(&detail, now);
    html.push_str(&endpoints_table(&detail.endpoints, now));
    html.push_str(&messages_table(&detail.application.id, &messages, now));
    Ok(Some(html))
}

fn about(detail: &ApplicationDetail, now: UnixTime) -> String {
    let app = &detail.application;
    format!(
        "<dl id=\"application\"><dt>name</dt><dd>{}</dd><dt>id</dt><dd><code>{}</code></dd><dt>uid</dt><dd>{}</dd>\
         <dt>rate limit</dt><dd>{}</dd><dt>created</dt><dd>{}</dd></dl>",
        esc(&app.name),
        esc(&app.id),
        esc(app.uid.as_deref().unwrap_or("-")),
        app.throttle_rate.map_or("none".to_owned(), |r| format!("{r} per second")),
        time_html(UnixTime(app.created_at), now),
    )
}

fn endpoints_table(endpoints: &[EndpointView], now: UnixTime) -> String {
    if endpoints.is_empty() {
        return format!(
            "<h2>Endpoints</h2>{}",
            empty_state(
                "no-endpoints",
                "No endpoint.",
                "Add one with the outbound API (<code>POST /api/v1/app/&lt;app&gt;/endpoint</code>)."
            )
        );
    }
    let mut table = Table::new(
        "endpoints",
        &[
            "endpoint",
            "state",
            "health",
            "jobs",
            "event types",
            "channels",
            "rate limit",
            "header names",
            "latest failure",
        ],
    );
    for e in endpoints {
        let state = match (&e.state[..], &e.disabled_reason) {
            ("enabled", _) => "enabled".to_owned(),
            (state, Some(reason)) => format!("<span class=\"badge bad\">{} ({})</span>", esc(state), esc(reason)),
            (state, None) => state_badge(state),
        };
        let jobs: Vec<String> = e.jobs.iter().map(|(s, n)| format!("{}={n}", esc(s))).collect();
        let failure = e.last_failure.as_ref().map_or(String::new(), |f| {
            let what = f.status.map(|s| s.to_string()).or_else(|| f.error.clone()).unwrap_or_default();
            format!("{} {}", esc(&what), time_html(UnixTime(f.at), now))
        });
        let uid = e.uid.as_deref().map_or(String::new(), |uid| format!(" ({})", esc(uid)));
        table.keyed_row(
            ("endpoint", &e.id),
            [
                cell(format!("{}<br><code>{}</code>{uid}", esc(&e.url), esc(&e.id))),
                cell(state).class("state"),
                cell(esc(&e.health)).class("health"),
                cell(jobs.join(" ")).class("jobs"),
                cell(list(e.event_types.as_deref())),
                cell(list(e.channels.as_deref())),
                cell(e.throttle_rate.map_or("none".to_owned(), |r| format!("{r}/s"))),
                cell(esc(&e.header_names.join(", "))).class("headers"),
                cell(failure),
            ],
        );
    }
    format!("<h2>Endpoints</h2>{}", table.html())
}

fn list(names: Option<&[String]>) -> String {
    names.map_or("all".to_owned(), |names| esc(&names.join(", ")))
}

fn messages_table(app_id: &str, messages: &MessagesPage, now: UnixTime) -> String {
    if messages.messages.is_empty() {
        return format!(
            "<h2>Latest messages</h2>{}",
            empty_state(
                "no-messages",
                "No message.",
                "Send one with the outbound API (<code>POST /api/v1/app/&lt;app&gt;/msg</code>)."
            )
        );
    }
    let mut table = Table::new("messages", &["message", "event type", "event id", "deliveries", "accepted"]);
    for m in &messages.messages {
        let deliveries: Vec<String> = m.deliveries.iter().map(|(s, n)| format!("{}={n}", esc(s))).collect();
        let (id, app) = (esc(&m.id), esc(app_id));
        table.keyed_row(
            ("message", &m.id),
            [
                cell(format!("<a href=\"/admin/applications/{app}/messages/{id}\"><code>{id}</code></a>")),
                cell(esc(&m.event_type)),
                cell(esc(m.event_id.as_deref().unwrap_or(""))),
                cell(if deliveries.is_empty() { "none".to_owned() } else { deliveries.join(" ") }).class("deliveries"),
                cell(time_html(UnixTime(m.created_at), now)),
            ],
        );
    }
    format!("<h2>Latest messages</h2>{}", table.html())
}
