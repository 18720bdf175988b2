//! `/admin/events/<id>`: one event, by the listing's row id. Its receipt (source,
//! identity, body hash, received at, outcome), its headers from the source's allowlist as
//! stored, the conflicting bodies seen under its identity (their hashes, how often, when),
//! its payload re-indented and escaped while retention keeps it (and the body each
//! destination with a transform gets from it), every job per destination and every attempt; and two forms: replay its finished jobs, or make its
//! waiting ones due now, shown only while one waits (the admin API's `replay` and `retry` of one event).
//!
//! The payload is re-indented as text rather than parsed and printed again, so what the
//! page shows is the stored bytes: a number too large for a float keeps every digit.

use std::fmt::Write as _;

use axum::{
    Form,
    extract::{Path, Query, State},
    http::HeaderMap,
    response::{IntoResponse, Redirect, Response},
};
use idemgate_core::{UnixTime, job::JobState};
use idemgate_store::{
    audit::{Action, Audit, target},
    jobs::ReplayFilter,
    views::EventPayload,
};
use serde::Deserialize;

use super::{
    page::{Rendered, shown},
    session::{operate_session, signed_in},
};
use crate::console::ui::{esc, time_html};
use crate::{
    access::Need,
    answer::DashboardAnswer,
    console::{
        state::AdminState,
        ui::{Table, cell, state_badge},
        views::{self, EventDetail},
    },
    current::Transforms,
};

/// How much of a payload the page shows.
const SHOWN: usize = 256 * 1024;
/// Nesting deeper than this is not indented further.
const DEEPEST: usize = 24;

/// What the last form did, shown once after its redirect.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Done {
    replayed: Option<usize>,
    retried: Option<usize>,
}

fn event_id(id: &str) -> Option<i64> {
    id.parse().ok().filter(|id| *id > 0)
}

/// The event page.
pub(super) async fn page(
    State(state): State<AdminState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(done): Query<Done>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer.into_response(),
    };
    let csrf = esc(&session.csrf);
    let Some(id) = event_id(&id) else { return DashboardAnswer::NotFound.into_response() };
    // The replay and retry forms only for a session that may use them.
    let operate = session.principal.role.allows(Need::Operate).then_some(csrf.as_str());
    shown("idemgate: event", &[("/admin/events", "Events")], &csrf, render(&state, id, operate, &done).await)
}

async fn render(state: &AdminState, id: i64, operate: Option<&str>, done: &Done) -> Rendered {
    let Some(payload) = state.store.event_payload(id).await? else { return Ok(None) };
    let Some(event) = views::event_detail(&state.store, &payload.source, &payload.identity).await? else {
        return Ok(None);
    };
    let now = state.clock.now();
    let mut html = String::new();
    if let Some(n) = done.replayed {
        let _ = write!(html, "<p role=\"status\" id=\"done\">Replayed {n} job(s).</p>");
    }
    if let Some(n) = done.retried {
        let _ = write!(html, "<p role=\"status\" id=\"done\">Made {n} waiting job(s) due now.</p>");
    }
    html.push_str(&receipt(&event, &payload, now));
    html.push_str(&conflicts_table(&event, now));
    if let Some(csrf) = operate {
        html.push_str(&actions(id, csrf, waiting(&event)));
    }
    html.push_str(&headers_table(&payload.headers));
    html.push_str("<h2>Payload</h2>");
    match &payload.body {
        Some(body) => {
            let _ = write!(
                html,
                "<p>{} bytes{}.</p><pre id=\"payload\">{}</pre>",
                body.len(),
                payload.content_type.as_deref().map_or(String::new(), |t| format!(", {}", esc(t))),
                esc(&shown_body(body))
            );
        }
        None => html.push_str("<p id=\"payload-purged\">Payload purged by retention: the receipt stays.</p>"),
    }
    if let Some(body) = &payload.body {
        html.push_str(&sent_bodies(&event, body, &state.destinations.transforms()));
    }
    html.push_str(&jobs_table(&event, now));
    html.push_str(&attempts_table(&event, now));
    Ok(Some(html))
}

/// The body each destination with a transform gets from the stored bytes (each of them for
/// an unmatched event, which can be replayed to any), computed now with the transforms
/// configured now.
fn sent_bodies(event: &EventDetail, body: &[u8], transforms: &Transforms) -> String {
    let mut html = String::new();
    for (destination, transform) in transforms {
        if !event.unmatched && !event.jobs.iter().any(|job| &job.destination == destination) {
            continue;
        }
        let name = esc(destination);
        let sent = match transform.transform(body) {
            Ok(sent) => format!("<pre class=\"sent\">{}</pre>", esc(&shown_body(&sent))),
            Err(err) => format!("<p class=\"bad\">The transform gives no body: {}</p>", esc(&err.to_string())),
        };
        let _ = write!(
            html,
            "<section id=\"sent-{name}\"><h3>Sent to {name} (its transform <code>{}</code>)</h3>{sent}</section>",
            esc(transform.text())
        );
    }
    if html.is_empty() { html } else { format!("<h2>Transformed</h2>{html}") }
}

fn receipt(event: &EventDetail, payload: &EventPayload, now: UnixTime) -> String {
    format!(
        "<h2>Receipt</h2><dl id=\"receipt\"><dt>id</dt><dd>{}</dd><dt>source</dt><dd>{}</dd>\
         <dt>identity</dt><dd>{}</dd><dt>body SHA-256</dt><dd><code>{}</code></dd><dt>received</dt><dd>{}</dd>\
         <dt>outcome</dt><dd>{} (result <code>{}</code>)</dd></dl>",
        payload.id,
        esc(&event.source),
        esc(&event.identity),
        event.body_sha256,
        time_html(UnixTime(event.received_at), now),
        esc(&event.outcome),
        esc(&event.result.to_string()),
    )
}

/// The other bodies deliveries carried under this event's identity, each refused `409`:
/// their hashes (the bytes are never kept), how often and when.
fn conflicts_table(event: &EventDetail, now: UnixTime) -> String {
    if event.conflicts.is_empty() {
        return "<h2>Conflicts</h2><p id=\"no-conflicts\" class=\"empty\">No delivery brought other bytes under \
                this identity.</p>"
            .to_owned();
    }
    let seen: u64 = event.conflicts.iter().map(|c| c.seen_count).sum();
    let mut table = Table::new("conflicts", &["other body SHA-256", "deliveries", "first seen", "last seen"]);
    for c in &event.conflicts {
        table.row([
            cell(format!("<code>{}</code>", esc(&c.body_sha256))),
            cell(c.seen_count.to_string()),
            cell(time_html(UnixTime(c.first_seen_at), now)),
            cell(time_html(UnixTime(c.last_seen_at), now)),
        ]);
    }
    format!(
        "<h2>Conflicts</h2><p id=\"conflict-summary\" class=\"bad\">{seen} conflicting deliver{} (other bytes, \
         answered 409), {} other bod{}: the receipt above was kept.</p>{}",
        if seen == 1 { "y" } else { "ies" },
        event.conflicts.len(),
        if event.conflicts.len() == 1 { "y" } else { "ies" },
        table.html()
    )
}

/// Whether any of the event's jobs waits for an attempt (pending or retrying): only then
/// is there something to retry now.
fn waiting(event: &EventDetail) -> bool {
    event.jobs.iter().any(|job| matches!(job.state.as_str(), "pending" | "retrying"))
}

fn actions(id: i64, csrf: &str, waiting: bool) -> String {
    let mut states = String::new();
    for state in JobState::ALL.into_iter().filter(|s| s.is_replayable()) {
        let name = state.as_str();
        let selected = if state == JobState::Dead { " selected" } else { "" };
        let _ = write!(states, "<option value=\"{name}\"{selected}>{name}</option>");
    }
    format!(
        "<h2>Actions</h2><form id=\"replay\" class=\"fields\" method=\"post\" action=\"/admin/events/{id}/replay\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><label for=\"replay-state\">Replay its jobs that are\
         <select id=\"replay-state\" name=\"state\">{states}</select></label>\
         <button id=\"replay-submit\" type=\"submit\">Replay</button></form>{}",
        if waiting { retry_form(id, csrf) } else { String::new() }
    )
}

fn retry_form(id: i64, csrf: &str) -> String {
    format!(
        "<form id=\"retry\" class=\"fields\" method=\"post\" action=\"/admin/events/{id}/retry\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <button id=\"retry-submit\" type=\"submit\">Retry waiting jobs now</button></form>"
    )
}

fn headers_table(headers: &[(String, String)]) -> String {
    if headers.is_empty() {
        return "<h2>Headers</h2><p id=\"no-headers\">None kept (the source's allowlist keeps them).</p>".to_owned();
    }
    let mut table = Table::new("headers", &["name", "value"]);
    for (name, value) in headers {
        table.row([cell(esc(name)), cell(esc(value))]);
    }
    format!("<h2>Headers</h2>{}", table.html())
}

fn jobs_table(event: &EventDetail, now: UnixTime) -> String {
    if event.unmatched {
        return "<h2>Jobs</h2><p id=\"unmatched\">None: no destination's subscription matched \
                (<code>idemgate events replay --to DEST</code> sends it to one).</p>"
            .to_owned();
    }
    let mut table = Table::new("jobs", &["destination", "state", "attempts", "next, or finished", "last error"]);
    for job in &event.jobs {
        table.keyed_row(
            ("destination", &job.destination),
            [
                cell(esc(&job.destination)),
                cell(state_badge(&job.state)).class(&format!("state job-{}", job.state)),
                cell(job.attempts.to_string()),
                cell(time_html(UnixTime(job.next_attempt_at), now)),
                cell(esc(job.last_error.as_deref().unwrap_or("-"))),
            ],
        );
    }
    format!("<h2>Jobs</h2>{}", table.html())
}

fn attempts_table(event: &EventDetail, now: UnixTime) -> String {
    if event.attempts.is_empty() {
        return "<h2>Attempts</h2><p id=\"no-attempts\">None yet.</p>".to_owned();
    }
    let mut table = Table::new("attempts", &["destination", "#", "started", "duration", "status", "response"]);
    for a in &event.attempts {
        let succeeded = a.outcome == "succeeded";
        let status = match (a.status, &a.error) {
            (Some(status), _) => status.to_string(),
            (None, Some(error)) if succeeded => format!("accepted; {}", esc(error)),
            (None, None) if succeeded => "accepted".to_owned(),
            (None, Some(error)) => esc(error),
            (None, None) => "failed".to_owned(),
        };
        table.row([
            cell(esc(&a.destination)),
            cell(a.attempt.to_string()),
            cell(time_html(UnixTime(a.started_at), now)),
            cell(format!("{} ms", a.latency_ms)),
            cell(status).class("status"),
            cell(format!("<code>{}</code>", esc(a.response_prefix.as_deref().unwrap_or("")))),
        ]);
    }
    format!("<h2>Attempts</h2>{}", table.html())
}

/// The body as the page shows it: JSON re-indented, anything else as text (invalid
/// UTF-8 replaced), cut at [`SHOWN`] bytes.
pub(super) fn shown_body(body: &[u8]) -> String {
    let cut = &body[..body.len().min(SHOWN)];
    let text = String::from_utf8_lossy(cut);
    let mut shown =
        if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() { indent(&text) } else { text.into_owned() };
    if body.len() > SHOWN {
        let _ = write!(shown, "\n… ({} bytes more)", body.len() - SHOWN);
    }
    shown
}

/// JSON text re-indented by two spaces a level, its strings and numbers untouched.
fn indent(json: &str) -> String {
    let mut out = String::with_capacity(json.len() * 2);
    let mut depth: usize = 0;
    let (mut in_string, mut escaped) = (false, false);
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth.min(DEEPEST)));
    };
    let mut chars = json.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                    chars.next();
                }
                if chars.peek().is_some_and(|&next| next == '}' || next == ']') {
                    out.extend(chars.next());
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_ascii_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

#[derive(Debug, Deserialize)]
pub(super) struct ReplayForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    state: String,
}

/// The event's key, for a form posted to its page.
async fn key_of(state: &AdminState, id: &str) -> Result<(String, String), DashboardAnswer> {
    let Some(id) = event_id(id) else { return Err(DashboardAnswer::NotFound) };
    match state.store.event_payload(id).await {
        Ok(Some(payload)) => Ok((payload.source, payload.identity)),
        Ok(None) => Err(DashboardAnswer::NotFound),
        Err(err) => {
            tracing::warn!(error = %err, "dashboard could not read the store");
            Err(DashboardAnswer::StoreUnreadable)
        }
    }
}

/// Replays the event's jobs in the chosen finished state (dead unless told).
pub(super) async fn replay(
    State(state): State<AdminState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<ReplayForm>,
) -> Response {
    let session = match operate_session(&state, &headers, &form.csrf).await {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    let chosen = match form.state.as_str() {
        "" => None,
        name => match name.parse::<JobState>() {
            Ok(s) if s.is_replayable() => Some(s),
            _ => return DashboardAnswer::BadForm.into_response(),
        },
    };
    let (source, identity) = match key_of(&state, &id).await {
        Ok(key) => key,
        Err(answer) => return answer.into_response(),
    };
    let filter =
        ReplayFilter { source: Some(source), identity: Some(identity), state: chosen, ..ReplayFilter::default() };
    let audit = Audit::new(session.principal.name, Action::Replay, target::filter(&filter));
    match state.store.audited(audit).replay_jobs(filter, state.clock.now(), 1000).await {
        Ok(n) => Redirect::to(&format!("/admin/events/{id}?replayed={n}")).into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "dashboard replay failed");
            DashboardAnswer::ReplayFailed.into_response()
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct RetryForm {
    #[serde(default)]
    csrf: String,
}

/// Makes the event's pending and retrying jobs due now.
pub(super) async fn retry(
    State(state): State<AdminState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<RetryForm>,
) -> Response {
    let session = match operate_session(&state, &headers, &form.csrf).await {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    let (source, identity) = match key_of(&state, &id).await {
        Ok(key) => key,
        Err(answer) => return answer.into_response(),
    };
    let filter = ReplayFilter { source: Some(source), identity: Some(identity), ..ReplayFilter::default() };
    let audit = Audit::new(session.principal.name, Action::Retry, target::filter(&filter));
    match state.store.audited(audit).retry_now(filter, state.clock.now_ms()).await {
        Ok(n) => Redirect::to(&format!("/admin/events/{id}?retried={n}")).into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "dashboard retry failed");
            DashboardAnswer::RetryFailed.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{indent, shown_body};

    #[test]
    fn json_is_reindented_without_touching_strings_or_numbers() {
        let body = r#"{"a":[1,2],"b":{},"s":"x, {y}: \"z\"","n":123456789012345678901234567890,"e":[ ]}"#;
        assert_eq!(
            indent(body),
            "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {},\n  \"s\": \"x, {y}: \\\"z\\\"\",\n  \
             \"n\": 123456789012345678901234567890,\n  \"e\": []\n}"
        );
    }

    #[test]
    fn a_body_that_is_not_json_is_shown_as_text_and_a_long_one_is_cut() {
        assert_eq!(shown_body(b"a=1&b={2}"), "a=1&b={2}");
        assert_eq!(shown_body(b"\xff{"), "\u{fffd}{");
        let long = vec![b'x'; super::SHOWN + 5];
        assert!(shown_body(&long).ends_with("\n… (5 bytes more)"));
    }
}
