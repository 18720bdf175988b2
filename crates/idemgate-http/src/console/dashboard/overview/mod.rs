//! `/admin/`: what needs an operator's attention, a section each: per source the counts by
//! outcome and job state; dead jobs, each with a replay button; unmatched events; recent
//! conflicts, each linking to its event; destinations, each with the buttons that apply
//! to it (replay its dead jobs, make its waiting jobs due now, enable it when disabled or
//! paused); rejections by reason. An empty section says so in words, and a button shows
//! only when it has something to act on.

mod forms;

use std::fmt::Write as _;

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
use super::{
    layout::{esc, time_html},
    page::shown,
    rejections::conflict_row,
    session::signed_in,
};
use crate::{
    access::Need,
    console::{
        state::AdminState,
        ui::{Tone, badge, empty_state, state_badge},
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

/// A section: its heading, then `table` (its start) with `rows`, or `empty` (its id, its
/// words, and what to do next) as an empty state.
fn section(heading: &str, rows: &str, table: &str, empty: (&str, &str, &str)) -> String {
    if rows.is_empty() {
        format!("<h2>{heading}</h2>{}", empty_state(empty.0, empty.1, empty.2))
    } else {
        format!("<h2>{heading}</h2>{table}{rows}</table>")
    }
}

async fn sources(state: &AdminState) -> Result<String, StoreError> {
    let mut rows = String::new();
    for s in state.store.stats(None).await? {
        let jobs: Vec<String> = s
            .jobs
            .iter()
            .map(|(state, n)| {
                format!("<span class=\"job-{state}\">{}</span>", badge(Tone::of(state), &format!("{state} {n}")))
            })
            .collect();
        let _ = write!(
            rows,
            "<tr data-source=\"{src}\"><td>{src}</td><td class=\"receipts\">{}</td><td class=\"conflicts\">{}</td><td>{}</td></tr>",
            s.receipts,
            s.conflicts,
            jobs.join(", "),
            src = esc(&s.source)
        );
    }
    let table = "<table id=\"sources\"><tr><th>source</th><th>receipts</th><th>conflicts</th><th>jobs</th></tr>";
    Ok(section(
        "Sources",
        &rows,
        table,
        (
            "no-sources",
            "No event received yet.",
            "Point a sender at <code>/in/&lt;source&gt;</code> on the gateway's listener; each delivery is counted here.",
        ),
    ))
}

async fn dead_jobs(state: &AdminState, operate: Option<&str>) -> Result<String, StoreError> {
    let mut rows = String::new();
    for job in state.store.dead_jobs(50).await? {
        let (src, id) = (esc(&job.source), esc(&job.identity));
        let button = operate.map_or(String::new(), |csrf| replay_button(&src, &id, csrf));
        let _ = write!(
            rows,
            "<tr><td>{src}</td><td>{id}</td><td>{}</td><td>{}</td><td>{}</td><td>{button}</td></tr>",
            esc(&job.destination),
            job.attempts,
            esc(job.reason.as_deref().unwrap_or("")),
        );
    }
    let table = "<table id=\"dead\"><tr><th>source</th><th>event</th><th>destination</th><th>attempts</th>\
                 <th>reason</th><th></th></tr>";
    Ok(section(
        "Dead jobs",
        &rows,
        table,
        (
            "no-dead",
            "No dead jobs.",
            "Nothing to replay: a job that runs out of attempts is listed here with a Replay button.",
        ),
    ))
}

async fn unmatched(state: &AdminState, now: UnixTime) -> Result<String, StoreError> {
    let mut rows = String::new();
    let unmatched = EventFilter { state: Some(UNMATCHED.to_owned()), limit: 50, ..EventFilter::default() };
    for e in state.store.list_events(unmatched).await? {
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&e.source),
            esc(&e.identity),
            esc(e.event_type.as_deref().unwrap_or("-")),
            time_html(e.received_at, now)
        );
    }
    let table = "<p>No destination's subscription matched them; \
                 <code>idemgate events replay --to DEST --state unmatched</code> sends them to one.</p>\
                 <table id=\"unmatched\"><tr><th>source</th><th>event</th><th>type</th><th>received</th></tr>";
    Ok(section(
        "Unmatched events",
        &rows,
        table,
        (
            "no-unmatched",
            "No unmatched events.",
            "Every event found a destination; an event no route takes would show here.",
        ),
    ))
}

async fn conflicts(state: &AdminState, now: UnixTime) -> Result<String, StoreError> {
    let rows: String = state.store.recent_conflicts(50).await?.iter().map(|c| conflict_row(c, now)).collect();
    let table = "<table id=\"conflicts\"><tr><th>source</th><th>event</th><th>seen</th><th>last seen</th></tr>";
    Ok(section(
        "Recent conflicts",
        &rows,
        table,
        (
            "no-conflicts",
            "No conflicts recorded.",
            "A delivery bringing other bytes under a known identity would show here.",
        ),
    ))
}

async fn destinations(state: &AdminState, operate: Option<&str>, now: UnixTime) -> Result<String, StoreError> {
    let mut rows = String::new();
    for d in views::destinations(&state.store, now).await? {
        let health = state_badge(&d.health);
        let jobs: Vec<String> = d.jobs.iter().map(|(state, n)| format!("{state} {n}")).collect();
        let success = d.last_success_at.map_or("-".to_owned(), |at| time_html(UnixTime(at), now));
        let failure = d.last_failure.as_ref().map_or("-".to_owned(), |f| {
            let what = f.status.map_or_else(|| f.error.clone().unwrap_or_default(), |s| s.to_string());
            format!("{} {}", time_html(UnixTime(f.at), now), esc(&what))
        });
        let _ = write!(
            rows,
            "<tr data-destination=\"{name}\"><td>{name}</td><td class=\"state\">{}</td>\
             <td class=\"health\">{health}</td><td>{}</td><td>{success}</td><td>{failure}</td><td>{}</td></tr>",
            state_html(&d, now),
            jobs.join(", "),
            operate.map_or(String::new(), |csrf| destination_forms(&d, csrf)),
            name = esc(&d.name),
        );
    }
    let table = "<table id=\"destinations\"><tr><th>destination</th><th>state</th><th>health</th><th>jobs</th>\
                 <th>last success</th><th>last failure</th><th></th></tr>";
    Ok(section(
        "Destinations",
        &rows,
        table,
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
    let mut rows = String::new();
    for (source, reason, count) in state.rejections.snapshot() {
        let _ = write!(rows, "<tr><td>{}</td><td>{reason}</td><td>{count}</td></tr>", esc(&source));
    }
    let table = "<table id=\"rejections\"><tr><th>source</th><th>reason</th><th>count</th></tr>";
    section(
        "Rejections",
        &rows,
        table,
        (
            "no-rejections",
            "No rejections since the process started.",
            "A delivery refused at the edge (signature, size, source) is counted here by reason.",
        ),
    )
}
