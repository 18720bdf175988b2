//! `/admin/`: what needs an operator's attention, a section each: per source the counts by
//! outcome and job state; dead jobs, each with a replay button; unmatched events; recent
//! conflicts, each linking to its event; destinations, each with the buttons that apply
//! to it (replay its dead jobs, make its waiting jobs due now, enable it when disabled or
//! paused); rejections by reason. An empty section says so in words, and a button shows
//! only when it has something to act on.

mod forms;

use axum::{
    extract::{Query, State},
    http::HeaderMap,
    response::{IntoResponse, Response},
};
use idemgate_core::UnixTime;
use idemgate_store::{
    StoreError,
    views::{EventFilter, UNMATCHED},
};
use serde::Deserialize;

use self::forms::replay_button;
pub(super) use self::forms::{destination_forms, enable, replay, replay_dead, retry};
use super::{page::shown, rejections::conflict_cells, session::signed_in};
use crate::console::ui::{esc, time_html};
use crate::{
    access::Need,
    console::{
        state::AdminState,
        ui::{Table, Tone, badge, cell, empty_state, state_badge},
        views::{self, DestinationView},
    },
};

/// What the last form did, shown once after its redirect.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Done {
    replayed: Option<usize>,
    destination: Option<String>,
}

/// The overview page.
pub(super) async fn page(State(state): State<AdminState>, headers: HeaderMap, Query(done): Query<Done>) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer.into_response(),
    };
    let csrf = esc(&session.csrf);
    let operate = session.principal.role.allows(Need::Operate).then_some(csrf.as_str());
    shown("idemgate", &[], &csrf, render(&state, operate, &done).await.map(Some))
}

/// The page; `operate` is the session's CSRF token when it may change state (the forms
/// show only then).
async fn render(state: &AdminState, operate: Option<&str>, done: &Done) -> Result<String, StoreError> {
    let now = state.clock.now();
    let mut html = confirmation(done);
    html.push_str(&sources(state).await?);
    html.push_str(&dead_jobs(state, operate).await?);
    html.push_str(&unmatched(state, now).await?);
    html.push_str(&conflicts(state, now).await?);
    html.push_str(&destinations(state, operate, now).await?);
    html.push_str(&rejections(state));
    Ok(html)
}

fn confirmation(done: &Done) -> String {
    match (done.replayed, &done.destination) {
        (Some(n), Some(name)) => {
            format!("<p role=\"status\" id=\"done\">Replayed {n} dead job(s) of {}.</p>", esc(name))
        }
        (Some(n), None) => format!("<p role=\"status\" id=\"done\">Replayed {n} job(s).</p>"),
        _ => String::new(),
    }
}

/// A section: its heading, then `intro` (HTML) and `table`, or, when the table has no
/// rows, `empty` (its id, its words, and what to do next) as an empty state.
fn section(heading: &str, intro: &str, table: &Table, empty: (&str, &str, &str)) -> String {
    if table.is_empty() {
        format!("<h2>{heading}</h2>{}", empty_state(empty.0, empty.1, empty.2))
    } else {
        format!("<h2>{heading}</h2>{intro}{}", table.html())
    }
}

async fn sources(state: &AdminState) -> Result<String, StoreError> {
    let mut table = Table::new("sources", &["source", "receipts", "conflicts", "jobs"]);
    for s in state.store.stats(None).await? {
        let jobs: Vec<String> = s
            .jobs
            .iter()
            .map(|(state, n)| {
                format!("<span class=\"job-{state}\">{}</span>", badge(Tone::of(state), &format!("{state} {n}")))
            })
            .collect();
        table.keyed_row(
            ("source", &s.source),
            [
                cell(esc(&s.source)),
                cell(s.receipts.to_string()).class("receipts"),
                cell(s.conflicts.to_string()).class("conflicts"),
                cell(jobs.join(", ")),
            ],
        );
    }
    Ok(section(
        "Sources",
        "",
        &table,
        (
            "no-sources",
            "No event received yet.",
            "Point a sender at <code>/in/&lt;source&gt;</code> on the gateway's listener; each delivery is counted here.",
        ),
    ))
}

async fn dead_jobs(state: &AdminState, operate: Option<&str>) -> Result<String, StoreError> {
    let mut table = Table::new("dead", &["source", "event", "destination", "attempts", "reason", ""]);
    for job in state.store.dead_jobs(50).await? {
        let (src, id) = (esc(&job.source), esc(&job.identity));
        let button = operate.map_or(String::new(), |csrf| replay_button(&src, &id, csrf));
        table.row([
            cell(src),
            cell(id),
            cell(esc(&job.destination)),
            cell(job.attempts.to_string()),
            cell(esc(job.reason.as_deref().unwrap_or(""))),
            cell(button),
        ]);
    }
    Ok(section(
        "Dead jobs",
        "",
        &table,
        (
            "no-dead",
            "No dead jobs.",
            "Nothing to replay: a job that runs out of attempts is listed here with a Replay button.",
        ),
    ))
}

async fn unmatched(state: &AdminState, now: UnixTime) -> Result<String, StoreError> {
    let mut table = Table::new("unmatched", &["source", "event", "type", "received"]);
    let unmatched = EventFilter { state: Some(UNMATCHED.to_owned()), limit: 50, ..EventFilter::default() };
    for e in state.store.list_events(unmatched).await? {
        table.row([
            cell(esc(&e.source)),
            cell(esc(&e.identity)),
            cell(esc(e.event_type.as_deref().unwrap_or("-"))),
            cell(time_html(e.received_at, now)),
        ]);
    }
    Ok(section(
        "Unmatched events",
        "<p>No destination's subscription matched them; \
         <code>idemgate events replay --to DEST --state unmatched</code> sends them to one.</p>",
        &table,
        (
            "no-unmatched",
            "No unmatched events.",
            "Every event found a destination; an event no route takes would show here.",
        ),
    ))
}

async fn conflicts(state: &AdminState, now: UnixTime) -> Result<String, StoreError> {
    let mut table = Table::new("conflicts", &["source", "event", "seen", "last seen"]);
    for c in state.store.recent_conflicts(50).await? {
        table.row(conflict_cells(&c, now));
    }
    Ok(section(
        "Recent conflicts",
        "",
        &table,
        (
            "no-conflicts",
            "No conflicts recorded.",
            "A delivery bringing other bytes under a known identity would show here.",
        ),
    ))
}

async fn destinations(state: &AdminState, operate: Option<&str>, now: UnixTime) -> Result<String, StoreError> {
    let mut table =
        Table::new("destinations", &["destination", "state", "health", "jobs", "last success", "last failure", ""]);
    for d in views::destinations(&state.store, now).await? {
        let health = state_badge(&d.health);
        let jobs: Vec<String> = d.jobs.iter().map(|(state, n)| format!("{state} {n}")).collect();
        let success = d.last_success_at.map_or("-".to_owned(), |at| time_html(UnixTime(at), now));
        let failure = d.last_failure.as_ref().map_or("-".to_owned(), |f| {
            let what = f.status.map_or_else(|| f.error.clone().unwrap_or_default(), |s| s.to_string());
            format!("{} {}", time_html(UnixTime(f.at), now), esc(&what))
        });
        table.keyed_row(
            ("destination", &d.name),
            [
                cell(esc(&d.name)),
                cell(state_html(&d, now)).class("state"),
                cell(health).class("health"),
                cell(jobs.join(", ")),
                cell(success),
                cell(failure),
                cell(operate.map_or(String::new(), |csrf| destination_forms(&d, csrf))),
            ],
        );
    }
    Ok(section(
        "Destinations",
        "",
        &table,
        (
            "no-destinations",
            "No destination has jobs yet.",
            "Name destinations under a source in the configuration; their queues show here.",
        ),
    ))
}

fn state_html(d: &DestinationView, now: UnixTime) -> String {
    if let Some(at) = d.disabled_at {
        return format!(
            "<span class=\"badge bad\">disabled ({}) since {}</span>",
            esc(d.disabled_reason.as_deref().unwrap_or("")),
            time_html(UnixTime(at), now)
        );
    }
    match (d.breaker.paused_at, d.breaker.next_probe_at, d.throttled_since) {
        (Some(at), Some(probe), _) => format!(
            "<span class=\"badge warn\">paused since {} after {} failures; next probe {}</span>",
            time_html(UnixTime(at), now),
            d.breaker.failures,
            time_html(UnixTime(probe), now)
        ),
        (_, _, Some(at)) => format!("throttled since {} (rate limit or in-flight cap)", time_html(UnixTime(at), now)),
        _ => "enabled".to_owned(),
    }
}

fn rejections(state: &AdminState) -> String {
    let mut table = Table::new("rejections", &["source", "reason", "count"]);
    for (source, reason, count) in state.rejections.snapshot() {
        table.row([cell(esc(&source)), cell(reason), cell(count.to_string())]);
    }
    section(
        "Rejections",
        "",
        &table,
        (
            "no-rejections",
            "No rejections since the process started.",
            "A delivery refused at the edge (signature, size, source) is counted here by reason.",
        ),
    )
}
