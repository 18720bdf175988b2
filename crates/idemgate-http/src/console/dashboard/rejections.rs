//! `/admin/rejections`: deliveries refused before the store, by bounded reason over the
//! last hour and day (a chart each, and a table), and by source since the process started
//! (all counted in memory: nothing of a rejected delivery is stored); then the conflicting
//! repeats the store recorded (same identity, other bytes), over the last hour and day
//! by when each other body was first seen, and the most recent ones.

use std::fmt::Write as _;

use axum::{
    extract::State,
    http::HeaderMap,
    response::{IntoResponse, Response},
};

use std::collections::BTreeMap;

use idemgate_core::UnixTime;
use idemgate_store::{StoreError, views::RecentConflict};

use super::{
    chart,
    page::{Rendered, shown},
    session::signed_in,
};
use crate::console::ui::{Cell, Table, cell, esc, time_html};
use crate::console::{state::AdminState, views::Window};

/// The rejections page.
pub(super) async fn page(State(state): State<AdminState>, headers: HeaderMap) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer.into_response(),
    };
    let csrf = esc(&session.csrf);
    shown("idemgate: rejections and conflicts", &[], &csrf, render(&state).await)
}

async fn render(state: &AdminState) -> Rendered {
    let now = state.clock.now();
    let mut html = rejections_over_time(state, now);
    html.push_str(&rejections_since_start(state));
    html.push_str(&conflicts_over_time(state, now).await?);
    html.push_str(&recent_conflicts(state, now).await?);
    Ok(Some(html))
}

/// The two windows a chart is drawn for, each with its caption.
const WINDOWS: [(Window, &str); 2] =
    [(Window::Hour, "last hour, per minute"), (Window::Day, "last day, per half hour")];

/// The index in a window's buckets of the one starting at `start`.
fn bucket_of(start: i64, since: UnixTime, width: i64, buckets: usize) -> usize {
    usize::try_from((start - since.0) / width).unwrap_or(0).min(buckets.saturating_sub(1))
}

/// Rejections by reason over the last hour and day: a chart each, then a table.
fn rejections_over_time(state: &AdminState, now: UnixTime) -> String {
    let mut html = String::from("<h2>Rejections over time</h2><div class=\"charts\">");
    let mut by_reason: BTreeMap<&'static str, [u64; 2]> = BTreeMap::new();
    for (i, (window, label)) in WINDOWS.into_iter().enumerate() {
        let (since, width) = (window.since(now), window.span().1);
        let mut per_bucket = vec![(0, 0); window.buckets()];
        for (start, reason, count) in state.rejections.series(since, width) {
            if let Some(bucket) = per_bucket.get_mut(bucket_of(start, since, width, window.buckets())) {
                bucket.1 += count;
            }
            by_reason.entry(reason).or_default()[i] += count;
        }
        let _ = write!(
            html,
            "<figure class=\"chart rejections\">{}<figcaption>Rejections {label}</figcaption>{}</figure>",
            chart::stacked_bars(&format!("rejections {label}"), window.axis(), &per_bucket),
            chart::line_table(&format!("rejections {label}"), &counted(&per_bucket), "rejections")
        );
    }
    let mut table = Table::new("rejections-by-reason", &["reason", "last hour", "last day"]);
    for (reason, [hour, day]) in &by_reason {
        table.row([cell(*reason), cell(hour.to_string()), cell(day.to_string())]);
    }
    html.push_str("</div>");
    html.push_str(&table.html());
    if by_reason.is_empty() {
        html.push_str("<p id=\"no-recent-rejections\" class=\"empty\">None in the last day.</p>");
    }
    html
}

/// Rejections by source and reason since the process started.
fn rejections_since_start(state: &AdminState) -> String {
    let mut table = Table::new("rejections", &["source", "reason", "count"]);
    let rejections = state.rejections.snapshot();
    for (source, reason, count) in &rejections {
        table.row([cell(esc(source)), cell(*reason), cell(count.to_string()).class("count")]);
    }
    let mut html = format!("<h2>Rejections since start</h2>{}", table.html());
    if rejections.is_empty() {
        html.push_str("<p id=\"no-rejections\" class=\"empty\">None since the process started.</p>");
    }
    html
}

/// Conflicts by source over the last hour and day, by when each other body was first
/// seen: a chart each, then a table.
async fn conflicts_over_time(state: &AdminState, now: UnixTime) -> Result<String, StoreError> {
    let mut html = String::from("<h2>Conflicts over time</h2><div class=\"charts\">");
    let mut by_source: BTreeMap<String, [u64; 2]> = BTreeMap::new();
    for (i, (window, label)) in WINDOWS.into_iter().enumerate() {
        let (since, width) = (window.since(now), window.span().1);
        let mut per_bucket = vec![(0, 0); window.buckets()];
        for b in state.store.conflict_series(since, width).await? {
            if let Some(bucket) = per_bucket.get_mut(bucket_of(b.start.0, since, width, window.buckets())) {
                bucket.1 += b.conflicts;
            }
            by_source.entry(b.source).or_default()[i] += b.conflicts;
        }
        let _ = write!(
            html,
            "<figure class=\"chart conflicts\">{}<figcaption>Conflicts first seen {label}</figcaption>{}</figure>",
            chart::stacked_bars(&format!("conflicts {label}"), window.axis(), &per_bucket),
            chart::line_table(&format!("conflicts {label}"), &counted(&per_bucket), "conflicts")
        );
    }
    let mut table = Table::new("conflicts-by-source", &["source", "last hour", "last day"]);
    for (source, [hour, day]) in &by_source {
        table.row([cell(esc(source)), cell(hour.to_string()), cell(day.to_string())]);
    }
    html.push_str("</div>");
    html.push_str(&table.html());
    if by_source.is_empty() {
        html.push_str("<p id=\"no-recent-conflicts\" class=\"empty\">None in the last day.</p>");
    }
    Ok(html)
}

/// The most recent conflicts, each linking to its event while stored.
async fn recent_conflicts(state: &AdminState, now: UnixTime) -> Result<String, StoreError> {
    let mut table = Table::new("conflicts", &["source", "identity", "times seen", "last seen"]);
    let recent = state.store.recent_conflicts(100).await?;
    for c in &recent {
        table.row(conflict_cells(c, now));
    }
    let mut html = format!("<h2>Recent conflicts</h2>{}", table.html());
    if recent.is_empty() {
        html.push_str("<p id=\"no-conflicts\" class=\"empty\">None recorded.</p>");
    }
    Ok(html)
}

/// One recent conflict as a table row's cells (source, event, times seen, last seen), as
/// the overview and the rejections page list them; the event links to its page while
/// stored.
pub(super) fn conflict_cells(c: &RecentConflict, now: UnixTime) -> [Cell; 4] {
    let identity = esc(&c.identity);
    let event =
        c.event_id.map_or_else(|| identity.clone(), |id| format!("<a href=\"/admin/events/{id}\">{identity}</a>"));
    [
        cell(esc(&c.source)),
        cell(event).class("event"),
        cell(c.seen_count.to_string()),
        cell(time_html(c.last_seen_at, now)),
    ]
}

/// The counts of a chart's buckets (drawn as failures), `None` where there are none.
fn counted(per_bucket: &[(u64, u64)]) -> Vec<Option<u64>> {
    per_bucket.iter().map(|&(_, n)| (n > 0).then_some(n)).collect()
}
