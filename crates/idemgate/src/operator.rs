//! `idemgate events list | show | stats`: what an operator types during an incident, as
//! aligned text or `--json`. Reads the store directly through `idemgate_http::views`, so
//! `--json` prints the admin API's shapes (`stats` as `{"sources": [...]}`), and the text is
//! made from the same views; identities and states only.

use idemgate_http::views::{self, EventDetail, EventsPage, SourceCounts};
use idemgate_store::{Store, StoreError, views::EventFilter};

/// The listing as text (one event a line) or JSON.
pub async fn list(store: &Store, filter: EventFilter, as_json: bool) -> Result<String, StoreError> {
    let page = views::events_page(store, filter).await?;
    if as_json {
        return Ok(to_json(&page));
    }
    Ok(list_text(&page))
}

fn list_text(page: &EventsPage) -> String {
    let mut text =
        format!("{:>8}  {:<16} {:<40} {:<20} {:>11}  jobs\n", "id", "source", "identity", "type", "received");
    for e in &page.events {
        let jobs: Vec<String> = e.jobs.iter().map(|(d, s)| format!("{d}={s}")).collect();
        text.push_str(&format!(
            "{:>8}  {:<16} {:<40} {:<20} {:>11}  {}\n",
            e.id,
            e.source,
            e.identity,
            e.event_type.as_deref().unwrap_or("-"),
            e.received_at,
            jobs.join(" ")
        ));
    }
    if let Some(before) = page.next_before {
        text.push_str(&format!("(more: --before {before})\n"));
    }
    text
}

/// One event: its receipt, its jobs and every attempt.
pub async fn show(store: &Store, source: &str, identity: &str, as_json: bool) -> Result<Option<String>, StoreError> {
    let Some(event) = views::event_detail(store, source, identity).await? else { return Ok(None) };
    if as_json {
        return Ok(Some(to_json(&event)));
    }
    Ok(Some(show_text(&event)))
}

fn show_text(event: &EventDetail) -> String {
    let mut text = format!(
        "event     {} / {}\nreceived  {}\nsha256    {}\noutcome   {} (result {})\n",
        event.source, event.identity, event.received_at, event.body_sha256, event.outcome, event.result
    );
    for job in &event.jobs {
        text.push_str(&format!(
            "job       {:<16} {:<10} attempts {}  next {}\n",
            job.destination, job.state, job.attempts, job.next_attempt_at
        ));
    }
    for a in &event.attempts {
        let status = a.status.map_or("-".to_owned(), |s| s.to_string());
        text.push_str(&format!(
            "attempt   {:<16} #{:<3} at {} {:>6} ms  status {status}  {}\n",
            a.destination,
            a.attempt,
            a.started_at,
            a.latency_ms,
            a.error.as_deref().unwrap_or("")
        ));
    }
    text
}

/// Counts per source.
pub async fn stats(store: &Store, since: Option<idemgate_core::UnixTime>, as_json: bool) -> Result<String, StoreError> {
    let sources = views::source_counts(store, since).await?;
    if as_json {
        return Ok(serde_json::json!({ "sources": sources }).to_string());
    }
    Ok(stats_text(&sources))
}

fn stats_text(sources: &[SourceCounts]) -> String {
    let mut text = format!("{:<16} {:>9} {:>9}  jobs\n", "source", "receipts", "conflicts");
    for s in sources {
        let jobs: Vec<String> = s.jobs.iter().map(|(k, v)| format!("{k} {v}")).collect();
        text.push_str(&format!("{:<16} {:>9} {:>9}  {}\n", s.source, s.receipts, s.conflicts, jobs.join(", ")));
    }
    text
}

/// A view as one line of JSON; a view is plain data, so this cannot fail.
fn to_json(view: &impl serde::Serialize) -> String {
    serde_json::to_string(view).unwrap_or_default()
}
