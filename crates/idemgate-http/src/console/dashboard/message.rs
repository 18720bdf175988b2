//! `/admin/applications/<app>/messages/<msg>`: one message of the sending side, its fields,
//! its payload as the event page shows a payload (re-indented and escaped, cut at the same
//! length, to every signed-in session, while retention keeps it), its deliveries (one per
//! endpoint, with status and next attempt) and its attempts with status code and duration.
//! Read-only.

use std::fmt::Write as _;

use axum::{
    extract::{Path, State},
    http::HeaderMap,
    response::{IntoResponse, Response},
};
use idemgate_core::UnixTime;

use super::{
    applications::subject,
    event::shown_body,
    page::{Rendered, shown},
    session::signed_in,
};
use crate::console::ui::{esc, time_html};
use crate::console::{
    applications::{self, MessageDetail},
    state::AdminState,
    ui::{Table, cell, empty_state},
};

/// The message page.
pub(super) async fn page(
    State(state): State<AdminState>,
    headers: HeaderMap,
    Path((app, msg)): Path<(String, String)>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer.into_response(),
    };
    let parent = format!("/admin/applications/{app}");
    let crumbs = [("/admin/applications", "Applications"), (parent.as_str(), app.as_str())];
    shown("idemgate: message", &crumbs, &esc(&session.csrf), render(&state, &app, &msg).await)
}

async fn render(state: &AdminState, app: &str, msg: &str) -> Rendered {
    let Some(detail) = subject(applications::message_detail(&state.store, app, msg).await)? else {
        return Ok(None);
    };
    let now = state.clock.now();
    let mut html = about(&detail, now);
    html.push_str("<h2>Payload</h2>");
    match &detail.payload {
        Some(payload) => {
            let _ = write!(
                html,
                "<p>{} bytes.</p><pre id=\"payload\">{}</pre>",
                payload.len(),
                esc(&shown_body(payload.as_bytes()))
            );
        }
        None => html.push_str("<p id=\"payload-purged\">Payload purged by retention: the message stays.</p>"),
    }
    html.push_str(&deliveries_table(&detail, now));
    html.push_str(&attempts_table(&detail, now));
    Ok(Some(html))
}

fn about(detail: &MessageDetail, now: UnixTime) -> String {
    let m = &detail.message;
    format!(
        "<dl id=\"message\"><dt>id</dt><dd><code>{}</code></dd><dt>application</dt>\
         <dd><a href=\"/admin/applications/{app}\"><code>{app}</code></a></dd><dt>event type</dt><dd>{}</dd>\
         <dt>event id</dt><dd>{}</dd><dt>channels</dt><dd>{}</dd><dt>accepted</dt><dd>{}</dd></dl>",
        esc(&m.id),
        esc(&m.event_type),
        esc(m.event_id.as_deref().unwrap_or("-")),
        esc(&m.channels.as_ref().map_or("-".to_owned(), |c| c.join(", "))),
        time_html(UnixTime(m.created_at), now),
        app = esc(&detail.app_id),
    )
}

fn deliveries_table(detail: &MessageDetail, now: UnixTime) -> String {
    if detail.deliveries.is_empty() {
        return format!(
            "<h2>Deliveries</h2>{}",
            empty_state(
                "no-deliveries",
                "No endpoint took it.",
                "An endpoint of the application whose filters take this event type would; see the \
                 application's endpoints."
            )
        );
    }
    let mut table = Table::new("deliveries", &["endpoint", "status", "next attempt"]);
    for d in &detail.deliveries {
        table.row([
            cell(format!("{}<br><code>{}</code>", esc(&d.url), esc(&d.endpoint_id))),
            cell(esc(&d.status)).class("status"),
            cell(d.next_attempt_at.map_or("-".to_owned(), |at| time_html(UnixTime(at), now))),
        ]);
    }
    format!("<h2>Deliveries</h2>{}", table.html())
}

fn attempts_table(detail: &MessageDetail, now: UnixTime) -> String {
    if detail.attempts.is_empty() {
        return "<h2>Attempts</h2><p id=\"no-attempts\">None yet.</p>".to_owned();
    }
    let mut table = Table::new("attempts", &["endpoint", "started", "duration", "status code", "status", "response"]);
    for a in &detail.attempts {
        table.row([
            cell(format!("<code>{}</code>", esc(&a.endpoint_id))),
            cell(time_html(UnixTime(a.started_at), now)),
            cell(format!("{} ms", a.duration_ms)),
            cell(a.status_code.map_or("no answer".to_owned(), |c| c.to_string())).class("code"),
            cell(esc(&a.status)).class("status"),
            cell(format!("<code>{}</code>", esc(&a.response))),
        ]);
    }
    format!("<h2>Attempts</h2>{}", table.html())
}
