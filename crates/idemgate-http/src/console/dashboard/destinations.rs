//! `/admin/destinations`: each destination's state (enabled, disabled, paused or
//! throttled), its queue (jobs waiting and since when the oldest waits), and its
//! attempts over the last hour and the last day: successes and failures, and latency, as
//! charts the server draws ([`super::chart`]), with the same numbers as text beside them;
//! and, for a token that may operate, the overview's buttons for each destination.

use std::fmt::Write as _;

use axum::{
    extract::State,
    http::HeaderMap,
    response::{IntoResponse, Response},
};
use idemgate_core::UnixTime;

use super::{
    chart,
    overview::destination_forms,
    page::{Rendered, shown},
    session::signed_in,
};
use crate::console::ui::{Table, cell, esc, time_html};
use crate::{
    access::Need,
    console::{
        state::AdminState,
        views::{self, AttemptBucketView, AttemptSeries, DestinationView, Window},
    },
};

/// The destinations page.
pub(super) async fn page(State(state): State<AdminState>, headers: HeaderMap) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer.into_response(),
    };
    let csrf = esc(&session.csrf);
    let operate = session.principal.role.allows(Need::Operate).then_some(csrf.as_str());
    shown("idemgate: destinations", &[], &csrf, render(&state, operate).await)
}

/// The page; `operate` is the session's CSRF token when it may change state (each
/// destination's buttons show only then).
async fn render(state: &AdminState, operate: Option<&str>) -> Rendered {
    let now = state.clock.now();
    let destinations = views::destinations(&state.store, now).await?;
    let queues = state.store.waiting_queues().await?;
    let hour = views::attempt_series(&state.store, Window::Hour, now).await?;
    let day = views::attempt_series(&state.store, Window::Day, now).await?;
    if destinations.is_empty() {
        return Ok(Some("<p id=\"no-destinations\">No destination has jobs yet.</p>".to_owned()));
    }
    let mut table = Table::new(
        "destinations",
        &["destination", "state", "health", "waiting", "oldest waiting", "last hour", "last day", ""],
    );
    for d in &destinations {
        let queue = queues.iter().find(|q| q.destination == d.name);
        let name = esc(&d.name);
        table.keyed_row(
            ("destination", &d.name),
            [
                cell(format!("<a href=\"#dest-{name}\">{name}</a>")),
                cell(state_text(d, now)).class("state"),
                cell(esc(&d.health)).class("health"),
                cell(queue.map_or(0, |q| q.depth).to_string()).class("depth"),
                cell(queue.map_or("-".to_owned(), |q| time_html(q.oldest, now))),
                cell(summary(series_of(&hour, &d.name))),
                cell(summary(series_of(&day, &d.name))),
                cell(operate.map_or(String::new(), |csrf| destination_forms(d, csrf))),
            ],
        );
    }
    let mut html = table.html();
    for d in &destinations {
        let name = esc(&d.name);
        let _ = write!(html, "<section id=\"dest-{name}\" class=\"destination\"><h2>{name}</h2><div class=\"charts\">");
        for (window, series, label) in
            [(Window::Hour, &hour, "last hour, per minute"), (Window::Day, &day, "last day, per half hour")]
        {
            let buckets = filled(series_of(series, &d.name), window, now);
            let counts: Vec<(u64, u64)> =
                buckets.iter().map(|b| b.map_or((0, 0), |b| (b.succeeded, b.failed))).collect();
            let latency: Vec<Option<u64>> = buckets.iter().map(|b| b.map(|b| b.mean_latency_ms)).collect();
            let _ = write!(
                html,
                "<figure class=\"chart attempts\">{}<figcaption>Attempts {label}: succeeded (green), failed (red)</figcaption>{}</figure>\
                 <figure class=\"chart latency\">{}<figcaption>Mean latency {label} (ms)</figcaption>{}</figure>",
                chart::stacked_bars(&format!("{} attempts {label}", d.name), window.axis(), &counts),
                chart::bars_table(&format!("{} attempts {label}", d.name), &counts, "succeeded", "failed"),
                chart::line(&format!("{} mean latency {label}", d.name), window.axis(), &latency, "ms"),
                chart::line_table(&format!("{} mean latency {label}", d.name), &latency, "ms"),
            );
        }
        html.push_str("</div></section>");
    }
    Ok(Some(html))
}

fn state_text(d: &DestinationView, now: UnixTime) -> String {
    let since = |at: Option<i64>| at.map_or(String::new(), |at| format!(" since {}", time_html(UnixTime(at), now)));
    match d.state.as_str() {
        "disabled" => format!(
            "<span class=\"badge bad\">disabled ({}){}</span>",
            esc(d.disabled_reason.as_deref().unwrap_or("")),
            since(d.disabled_at)
        ),
        "paused" => format!(
            "<span class=\"badge warn\">paused{} after {} failures</span>",
            since(d.breaker.paused_at),
            d.breaker.failures
        ),
        "throttled" => format!("throttled{}", since(d.throttled_since)),
        other => esc(other),
    }
}

fn series_of<'a>(all: &'a [AttemptSeries], name: &str) -> &'a [AttemptBucketView] {
    all.iter().find(|s| s.destination == name).map_or(&[], |s| s.buckets.as_slice())
}

/// `12 attempts, 75% succeeded, mean 40 ms`, or `no attempts`.
fn summary(buckets: &[AttemptBucketView]) -> String {
    let (ok, failed) = buckets.iter().fold((0, 0), |(ok, failed), b| (ok + b.succeeded, failed + b.failed));
    let total = ok + failed;
    if total == 0 {
        return "no attempts".to_owned();
    }
    let latency: u64 = buckets.iter().map(|b| b.mean_latency_ms * (b.succeeded + b.failed)).sum::<u64>() / total;
    format!("{total} attempts, {}% succeeded, mean {latency} ms", ok * 100 / total)
}

/// One slot per bucket of `window` ending at `now`, holding the bucket with attempts
/// there, if any. Attempts that started at `now` itself are a bucket of their own in the
/// store; they count in the last slot, with the attempts already there.
fn filled(buckets: &[AttemptBucketView], window: Window, now: UnixTime) -> Vec<Option<AttemptBucketView>> {
    let (since, width, n) = (window.since(now).0, window.span().1, window.buckets());
    let mut slots: Vec<Option<AttemptBucketView>> = vec![None; n];
    for b in buckets {
        let at = usize::try_from((b.start - since) / width).unwrap_or(0).min(n.saturating_sub(1));
        let Some(slot) = slots.get_mut(at) else { continue };
        *slot = Some(match *slot {
            None => *b,
            Some(here) => {
                let (count, more) = (here.succeeded + here.failed, b.succeeded + b.failed);
                let total = (count + more).max(1);
                AttemptBucketView {
                    start: here.start,
                    succeeded: here.succeeded + b.succeeded,
                    failed: here.failed + b.failed,
                    mean_latency_ms: (here.mean_latency_ms * count + b.mean_latency_ms * more) / total,
                    max_latency_ms: here.max_latency_ms.max(b.max_latency_ms),
                }
            }
        });
    }
    slots
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use idemgate_core::UnixTime;

    use super::{filled, summary};
    use crate::console::views::{AttemptBucketView, Window};

    fn bucket(start: i64, succeeded: u64, failed: u64, mean_latency_ms: u64) -> AttemptBucketView {
        AttemptBucketView { start, succeeded, failed, mean_latency_ms, max_latency_ms: mean_latency_ms }
    }

    #[test]
    fn buckets_fill_their_slots_and_gaps_stay_empty() {
        let now = UnixTime(10_000);
        let since = now.0 - 3600;
        let slots =
            filled(&[bucket(since, 1, 0, 5), bucket(since + 120, 0, 1, 9), bucket(now.0, 1, 0, 1)], Window::Hour, now);
        assert_eq!(slots.len(), 60);
        assert_eq!(slots[0].map(|b| b.succeeded), Some(1));
        assert_eq!(slots[1], None);
        assert_eq!(slots[2].map(|b| b.failed), Some(1));
        assert_eq!(slots[59].map(|b| b.mean_latency_ms), Some(1), "an attempt at now counts in the last minute");
        let last = filled(&[bucket(now.0 - 30, 0, 1, 9), bucket(now.0, 3, 0, 1)], Window::Hour, now)[59].unwrap();
        assert_eq!(
            (last.succeeded, last.failed, last.mean_latency_ms, last.max_latency_ms),
            (3, 1, 3, 9),
            "merged, not replaced"
        );
    }

    #[test]
    fn the_summary_weighs_each_buckets_latency_by_its_attempts() {
        assert_eq!(summary(&[]), "no attempts");
        assert_eq!(summary(&[bucket(0, 3, 0, 10), bucket(60, 0, 1, 50)]), "4 attempts, 75% succeeded, mean 20 ms");
    }
}
