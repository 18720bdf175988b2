//! `idemgate events list | show | stats` and `idemgate destination list`: what an operator
//! types during an incident, as
//! aligned text or `--json`. Reads the store directly through `idemgate_http::console::views`, so
//! `--json` prints the admin API's shapes (`stats` as `{"sources": [...]}`), and the text is
//! made from the same views; identities and states only. The text shows times in RFC 3339
//! UTC, with how long ago (or ahead) as of `now`, the caller's clock; `--json` keeps unix
//! seconds. Text the destination sent (a response's first bytes) is escaped, so it cannot
//! move a terminal's cursor or change its colours. An empty listing's text is empty: the
//! command says so on stderr (`NO_EVENTS`, …), so stdout holds only rows.

use std::collections::BTreeMap;

use idemgate_core::{Identity, ReceiptKey, SourceName, UnixTime, time::relative};
use idemgate_http::console::views::{
    self, AttemptView, ConflictView, DestinationView, EventDetail, EventsPage, JobView, SourceCounts,
};
use idemgate_jq::Program;
use idemgate_store::{Store, StoreError, views::EventFilter};

/// How much of a response's recorded first bytes `events show` prints.
const RESPONSE_SHOWN: usize = 200;
/// How much of an event's body, and of each transformed body, `events show` prints.
const BODY_SHOWN: usize = 4096;

/// The listing as text (one event a line) or JSON.
pub async fn list(store: &Store, filter: EventFilter, as_json: bool, now: UnixTime) -> Result<String, StoreError> {
    let page = views::events_page(store, filter).await?;
    if as_json {
        return Ok(to_json(&page));
    }
    Ok(list_text(&page, now))
}

/// What `events list` says (on stderr) when no event matches: its text is then empty.
pub const NO_EVENTS: &str = "No events match.";
/// What `events stats` says when no source has a receipt.
pub const NO_SOURCES: &str = "No events received yet.";
/// What `destination list` says when no destination has jobs or was disabled.
pub const NO_DESTINATIONS: &str = "No destination has jobs yet.";

fn list_text(page: &EventsPage, now: UnixTime) -> String {
    if page.events.is_empty() && page.next_before.is_none() {
        return String::new();
    }
    let mut text = format!("{:>8}  {:<16} {:<40} {:<20} {:<34} jobs\n", "id", "source", "identity", "type", "received");
    for e in &page.events {
        let mut jobs: Vec<String> = e.jobs.iter().map(|(d, s)| format!("{d}={s}")).collect();
        if e.unmatched {
            jobs.push(idemgate_store::views::UNMATCHED.to_owned());
        }
        text.push_str(&format!(
            "{:>8}  {:<16} {:<40} {:<20} {:<34} {}\n",
            e.id,
            e.source,
            e.identity,
            e.event_type.as_deref().unwrap_or("-"),
            when(e.received_at, now),
            jobs.join(" ")
        ));
    }
    if let Some(before) = page.next_before {
        text.push_str(&format!("(more: --before {before})\n"));
    }
    text
}

/// One event: its receipt, its jobs and every attempt; as text also its stored body and,
/// for each of its destinations with a transform (every one, for an unmatched event), the
/// body that destination gets, computed here from `transforms` and the stored bytes.
pub async fn show(
    store: &Store,
    (source, identity): (&str, &str),
    as_json: bool,
    transforms: &BTreeMap<String, Program>,
    now: UnixTime,
) -> Result<Option<String>, StoreError> {
    let Some(event) = views::event_detail(store, source, identity).await? else { return Ok(None) };
    if as_json {
        return Ok(Some(to_json(&event)));
    }
    let mut text = show_text(&event, now);
    let (Ok(source), Ok(identity)) = (SourceName::new(source), Identity::new(identity)) else { return Ok(Some(text)) };
    match store.event_body(ReceiptKey { source, identity }).await? {
        None => text.push_str("body      (purged by retention)\n"),
        Some(body) => text.push_str(&bodies_text(&event, &body, transforms)),
    }
    Ok(Some(text))
}

/// The stored body, then the body each destination with a transform gets from it.
fn bodies_text(event: &EventDetail, body: &[u8], transforms: &BTreeMap<String, Program>) -> String {
    let mut text = format!("body      {}\n", printable_body(body));
    for (destination, transform) in transforms {
        if !event.unmatched && !event.jobs.iter().any(|job| &job.destination == destination) {
            continue;
        }
        let sent = match transform.transform(body) {
            Ok(sent) => printable_body(&sent),
            Err(err) => format!("({err})"),
        };
        text.push_str(&format!("sends     {destination:<16} {sent}\n"));
    }
    text
}

fn show_text(event: &EventDetail, now: UnixTime) -> String {
    let mut text = format!(
        "event     {} / {}\nreceived  {}\nsha256    {}\noutcome   {} (result {})\n",
        event.source,
        event.identity,
        when(event.received_at, now),
        event.body_sha256,
        event.outcome,
        event.result
    );
    if event.unmatched {
        text.push_str("jobs      none: unmatched (no destination's subscription matched; events replay --to DEST)\n");
    }
    for job in &event.jobs {
        text.push_str(&job_line(job, now));
    }
    for attempt in &event.attempts {
        text.push_str(&attempt_line(attempt));
    }
    text.push_str(&conflicts_text(&event.conflicts, now));
    text
}

/// The conflicting bodies seen under the event's identity: a count, then one line each
/// with its hash (never the bytes), how often, and when first and last seen.
fn conflicts_text(conflicts: &[ConflictView], now: UnixTime) -> String {
    if conflicts.is_empty() {
        return "conflicts none\n".to_owned();
    }
    let seen: u64 = conflicts.iter().map(|c| c.seen_count).sum();
    let mut text = format!("conflicts {seen} delivery(ies) with other bytes, answered 409; the receipt was kept\n");
    for c in conflicts {
        text.push_str(&format!(
            "conflict  sha256 {}  seen {}  first {}  last {}\n",
            c.body_sha256,
            c.seen_count,
            when(c.first_seen_at, now),
            when(c.last_seen_at, now)
        ));
    }
    text
}

/// A job's state and attempts, when it is due (or since when it is finished), and its
/// last error or the reason it is dead on a line of its own.
fn job_line(job: &JobView, now: UnixTime) -> String {
    let waiting = matches!(job.state.as_str(), "pending" | "retrying" | "running");
    let due = if waiting { "next " } else { "since" };
    let mut line = format!(
        "job       {:<16} {:<10} attempts {:<3} {due} {}\n",
        job.destination,
        job.state,
        job.attempts,
        when(job.next_attempt_at, now)
    );
    if let Some(error) = &job.last_error {
        let label = if job.state == "dead" { "reason" } else { "error " };
        line.push_str(&format!("          {label} {}\n", printable(error, RESPONSE_SHOWN)));
    }
    line
}

/// One attempt: when, how long, the status or what went wrong, and the response's
/// first bytes. A succeeded attempt without a status is one a destination that is not HTTP
/// took (a broker's confirm, a smarthost's `250`); its error, if any, says what it did not
/// take (a mail's refused recipients).
fn attempt_line(a: &AttemptView) -> String {
    let succeeded = a.outcome == "succeeded";
    let result = match (a.status, &a.error) {
        (Some(status), _) => status.to_string(),
        (None, Some(error)) if succeeded => format!("accepted; {}", printable(error, RESPONSE_SHOWN)),
        (None, None) if succeeded => "accepted".to_owned(),
        (None, Some(error)) => printable(error, RESPONSE_SHOWN),
        (None, None) => "failed".to_owned(),
    };
    let body = a
        .response_prefix
        .as_deref()
        .filter(|b| !b.is_empty())
        .map_or(String::new(), |b| format!("  \"{}\"", printable(b, RESPONSE_SHOWN)));
    format!(
        "attempt   {:<16} #{:<3} {} {:>6} ms  {result}{body}\n",
        a.destination,
        a.attempt,
        UnixTime(a.started_at).rfc3339(),
        a.latency_ms
    )
}

/// `2026-12-01T17:43:58Z (3 min ago)`, of a view's unix seconds.
pub(crate) fn when(secs: i64, now: UnixTime) -> String {
    let at = UnixTime(secs);
    format!("{} ({})", at.rfc3339(), relative(at, now))
}

/// At most `max` bytes of `text`, with `"` and `\\` escaped and every character that
/// could steer a terminal (controls, escape sequences, bidirectional and zero-width
/// format characters) written as an escape; `…` marks a cut.
pub(crate) fn printable(text: &str, max: usize) -> String {
    escaped(text, max, true)
}

/// A stored or transformed body as [`printable`] shows text, but with its quotes and
/// backslashes as they are, so JSON reads as JSON.
fn printable_body(body: &[u8]) -> String {
    escaped(&String::from_utf8_lossy(body), BODY_SHOWN, false)
}

fn escaped(text: &str, max: usize, quotes: bool) -> String {
    let mut out = String::new();
    for (at, c) in text.char_indices() {
        if at + c.len_utf8() > max {
            out.push('…');
            break;
        }
        match c {
            '"' if quotes => out.push_str("\\\""),
            '\\' if quotes => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x80 && c.is_control() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c if c.is_control() || is_invisible_format(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// Zero-width and bidirectional formatting characters, which reorder or hide what a
/// terminal shows.
fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// Counts per source.
pub async fn stats(store: &Store, since: Option<UnixTime>, as_json: bool) -> Result<String, StoreError> {
    let sources = views::source_counts(store, since).await?;
    if as_json {
        return Ok(serde_json::json!({ "sources": sources }).to_string());
    }
    Ok(stats_text(&sources))
}

fn stats_text(sources: &[SourceCounts]) -> String {
    if sources.is_empty() {
        return String::new();
    }
    let mut text = format!("{:<16} {:>9} {:>9}  jobs\n", "source", "receipts", "conflicts");
    for s in sources {
        let jobs: Vec<String> = s.jobs.iter().map(|(k, v)| format!("{k} {v}")).collect();
        text.push_str(&format!("{:<16} {:>9} {:>9}  {}\n", s.source, s.receipts, s.conflicts, jobs.join(", ")));
    }
    text
}

/// Every destination with jobs or disabled: its state, health, jobs, latest success and
/// failure.
pub async fn destinations(store: &Store, as_json: bool, now: UnixTime) -> Result<String, StoreError> {
    let all = views::destinations(store, now).await?;
    if as_json {
        return Ok(serde_json::json!({ "destinations": all }).to_string());
    }
    Ok(destinations_text(&all, now))
}

fn destinations_text(all: &[DestinationView], now: UnixTime) -> String {
    let mut text = String::new();
    for d in all {
        let state = match d.disabled_at {
            Some(at) => format!("disabled ({}) since {}", d.disabled_reason.as_deref().unwrap_or("-"), when(at, now)),
            None => "enabled".to_owned(),
        };
        let breaker = match (d.breaker.paused_at, d.breaker.next_probe_at) {
            (Some(at), Some(probe)) => {
                format!(
                    "paused since {} ({} failures), next probe {}",
                    when(at, now),
                    d.breaker.failures,
                    when(probe, now)
                )
            }
            _ if d.breaker.failures > 0 => format!("closed, {} failures in a row", d.breaker.failures),
            _ => "closed".to_owned(),
        };
        let throttled = d.throttled_since.map_or("no".to_owned(), |at| format!("since {}", when(at, now)));
        let jobs: Vec<String> = d.jobs.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let failure = d.last_failure.as_ref().map_or("-".to_owned(), |f| {
            let what = f
                .status
                .map_or_else(|| printable(f.error.as_deref().unwrap_or("-"), RESPONSE_SHOWN), |s| s.to_string());
            format!("{} {what}", when(f.at, now))
        });
        text.push_str(&format!(
            "{}\n  state         {state}\n  health        {}\n  jobs          {}\n  last success  {}\n  last failure  {failure}\n  breaker       {breaker}\n  throttled     {throttled}\n",
            d.name,
            d.health,
            if jobs.is_empty() { "-".to_owned() } else { jobs.join(", ") },
            d.last_success_at.map_or("-".to_owned(), |at| when(at, now)),
        ));
    }
    text
}

/// A view as one line of JSON; a view is plain data, so this cannot fail.
pub(crate) fn to_json(view: &impl serde::Serialize) -> String {
    serde_json::to_string(view).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_cannot_steer_the_terminal() {
        assert_eq!(printable("plain text", 200), "plain text");
        assert_eq!(printable("a\x1b[31mred\x07\u{7f}", 200), "a\\x1b[31mred\\x07\\x7f");
        assert_eq!(printable("two\r\nlines\t\"q\" \\", 200), "two\\r\\nlines\\t\\\"q\\\" \\\\");
        assert_eq!(printable("\u{9b}31m \u{202e}evil \u{200b}", 200), "\\u{9b}31m \\u{202e}evil \\u{200b}");
        assert_eq!(printable("bad \u{fffd} bytes, é kept", 200), "bad \u{fffd} bytes, é kept");
    }

    #[test]
    fn a_body_keeps_its_quotes_but_cannot_steer_the_terminal() {
        assert_eq!(printable_body(br#"{"a":"b\"c"}"#), r#"{"a":"b\"c"}"#);
        assert_eq!(printable_body(b"{\"a\":\"\x1b[31m\"}"), "{\"a\":\"\\x1b[31m\"}");
    }

    #[test]
    fn a_long_response_is_cut_on_a_character_boundary() {
        assert_eq!(printable(&"x".repeat(300), 200), format!("{}…", "x".repeat(200)));
        assert_eq!(printable("ééé", 5), "éé…", "never half a character");
        assert_eq!(printable("abc", 3), "abc");
    }

    #[test]
    fn an_attempt_shows_its_status_or_what_went_wrong_and_the_response() {
        let attempt = AttemptView {
            destination: "app".to_owned(),
            attempt: 2,
            started_at: 1_796_147_038,
            latency_ms: 12,
            status: Some(501),
            error: Some("status 501".to_owned()),
            response_prefix: Some("not\nimplemented".to_owned()),
            outcome: "failed".to_owned(),
        };
        assert_eq!(
            attempt_line(&attempt),
            "attempt   app              #2   2026-12-01T17:43:58Z     12 ms  501  \"not\\nimplemented\"\n"
        );
        let refused = AttemptView {
            status: None,
            error: Some("connection refused".to_owned()),
            response_prefix: None,
            ..attempt
        };
        assert!(attempt_line(&refused).ends_with(" ms  connection refused\n"), "{}", attempt_line(&refused));
        let confirmed = AttemptView { error: None, outcome: "succeeded".to_owned(), ..refused };
        assert!(attempt_line(&confirmed).ends_with(" ms  accepted\n"), "{}", attempt_line(&confirmed));
        let partly = AttemptView { error: Some("recipients refused: x".to_owned()), ..confirmed };
        assert!(attempt_line(&partly).ends_with(" ms  accepted; recipients refused: x\n"), "{}", attempt_line(&partly));
    }

    #[test]
    fn an_events_conflicts_show_their_hash_count_and_times() {
        assert_eq!(conflicts_text(&[], UnixTime(0)), "conflicts none\n");
        let conflict = ConflictView {
            source: "hooks".to_owned(),
            identity: "msg_1".to_owned(),
            event_id: Some(1),
            body_sha256: "ab".repeat(32),
            first_seen_at: 1_796_147_038,
            last_seen_at: 1_796_147_038 + 60,
            seen_count: 2,
        };
        assert_eq!(
            conflicts_text(&[conflict], UnixTime(1_796_147_038 + 180)),
            format!(
                "conflicts 2 delivery(ies) with other bytes, answered 409; the receipt was kept\n\
                 conflict  sha256 {}  seen 2  first 2026-12-01T17:43:58Z (3 min ago)  last 2026-12-01T17:44:58Z (2 min ago)\n",
                "ab".repeat(32)
            )
        );
    }

    #[test]
    fn an_empty_listing_prints_no_table_head() {
        assert_eq!(list_text(&EventsPage { events: Vec::new(), next_before: None }, UnixTime(0)), "");
        assert_eq!(stats_text(&[]), "");
        assert_eq!(destinations_text(&[], UnixTime(0)), "");
    }

    #[test]
    fn a_dead_job_says_since_when_and_why() {
        let job = JobView {
            destination: "app".to_owned(),
            state: "dead".to_owned(),
            attempts: 3,
            next_attempt_at: 1_796_147_038,
            last_error: Some("attempts exhausted; last attempt: status 501".to_owned()),
        };
        assert_eq!(
            job_line(&job, UnixTime(1_796_147_038 + 180)),
            "job       app              dead       attempts 3   since 2026-12-01T17:43:58Z (3 min ago)\n          \
             reason attempts exhausted; last attempt: status 501\n"
        );
        let retrying = JobView { state: "retrying".to_owned(), last_error: None, ..job };
        assert!(job_line(&retrying, UnixTime(1_796_147_038 - 300)).contains("next  2026-12-01T17:43:58Z (in 5 min)"));
    }
}
