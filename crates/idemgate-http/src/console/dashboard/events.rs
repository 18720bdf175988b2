//! `/admin/events`: the event search, as the admin API's listing filters it (source,
//! identity prefix, type, job state, destination, received since and until), a page at a
//! time, newest first. Times are typed as the CLI's `--since` takes them (RFC 3339, a
//! date, or `1h` back from now). The page is a plain `GET` form, so a search is a link
//! one can keep; "older" follows the listing's cursor, and "newer" goes back along the
//! cursors that led here, carried in the link (`trail`), so the store needs no reverse
//! order.

use std::fmt::Write as _;

use axum::{
    extract::{Query, State},
    http::HeaderMap,
    response::{IntoResponse, Response},
};
use idemgate_core::{UnixTime, job::JobState, time::TimeSpec};
use idemgate_store::views::{EventFilter, UNMATCHED};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;

use super::{
    page::{Rendered, shown},
    session::signed_in,
};
use crate::console::ui::{esc, time_html};
use crate::console::{
    state::AdminState,
    ui::{Control, Field, Table, cell, state_badge},
    views,
};

/// Events per page.
const PAGE: usize = 50;
/// How many earlier cursors a link carries back (older ones fall off: "newer" then stops
/// short of the first page, which the search itself reaches).
const TRAIL: usize = 100;

/// The search form's fields, as the browser sends them (empty fields are no filter).
#[derive(Debug, Default, Deserialize)]
pub(super) struct Search {
    #[serde(default)]
    source: String,
    #[serde(default)]
    identity: String,
    #[serde(default, rename = "type")]
    event_type: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    destination: String,
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
    before: Option<i64>,
    #[serde(default)]
    trail: String,
}

fn given(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// What is wrong with a search: the field (its form name) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Problem {
    field: &'static str,
    why: String,
}

/// The filter a search asks for at `now`, or what is wrong with it.
fn filter(search: &Search, now: UnixTime) -> Result<EventFilter, Problem> {
    let time = |field: &'static str, text: &str| -> Result<Option<UnixTime>, Problem> {
        given(text)
            .map(|t| {
                t.parse::<TimeSpec>()
                    .map(|spec| spec.resolve(now))
                    .map_err(|err| Problem { field, why: err.to_string() })
            })
            .transpose()
    };
    let state = given(&search.state);
    if let Some(s) = &state
        && s != UNMATCHED
        && s.parse::<JobState>().is_err()
    {
        return Err(Problem { field: "state", why: "not a job state".to_owned() });
    }
    Ok(EventFilter {
        source: given(&search.source),
        identity_prefix: given(&search.identity),
        event_type: given(&search.event_type),
        state,
        destination: given(&search.destination),
        since: time("since", &search.since)?,
        until: time("until", &search.until)?,
        before_id: search.before,
        limit: PAGE,
    })
}

/// The earlier cursors in a link: ids, `0` for the first page.
fn trail(text: &str) -> Vec<i64> {
    text.split(',').filter_map(|id| id.parse().ok()).collect()
}

/// The search's own fields as a query string, to which a page's cursor is appended.
fn search_query(search: &Search) -> String {
    let fields = [
        ("source", &search.source),
        ("identity", &search.identity),
        ("type", &search.event_type),
        ("state", &search.state),
        ("destination", &search.destination),
        ("since", &search.since),
        ("until", &search.until),
    ];
    fields
        .iter()
        .filter(|(_, value)| !value.trim().is_empty())
        .map(|(name, value)| format!("{name}={}&", utf8_percent_encode(value.trim(), NON_ALPHANUMERIC)))
        .collect()
}

/// The link to the page at cursor `before` (`0`: the first page), carrying `trail`.
fn page_link(query: &str, before: i64, trail: &[i64]) -> String {
    let trail: Vec<String> = trail.iter().map(i64::to_string).collect();
    let mut link = format!("/admin/events?{query}");
    if before > 0 {
        let _ = write!(link, "before={before}&");
    }
    if !trail.is_empty() {
        let _ = write!(link, "trail={}&", trail.join("%2C"));
    }
    esc(link.trim_end_matches(['&', '?']))
}

/// The search form, holding `search`; the field `problem` names says what is wrong with
/// its value.
fn form(search: &Search, problem: Option<&Problem>) -> String {
    let states: Vec<(&str, &str)> = [("", "any")]
        .into_iter()
        .chain(JobState::ALL.iter().map(|s| (s.as_str(), s.as_str())))
        .chain([(UNMATCHED, UNMATCHED)])
        .collect();
    let text = |name: &'static str, label: &'static str, value: &'static str| (name, label, Control::Text, value);
    let fields = [
        (text("source", "Source", "any"), search.source.as_str()),
        (text("identity", "Identity starts with", "any"), &search.identity),
        (text("type", "Type", "any"), &search.event_type),
        (("state", "Job state", Control::Select(&states), ""), &search.state),
        (text("destination", "Destination", "any"), &search.destination),
        (text("since", "Received since", ""), &search.since),
        (text("until", "Received before", ""), &search.until),
    ];
    let mut html =
        String::from("<form id=\"search\" class=\"fields\" method=\"get\" action=\"/admin/events\" role=\"search\">");
    for ((name, label, control, placeholder), value) in fields {
        let id = format!("q-{name}");
        let mut field = Field::new(&id, name, label, control).value(value);
        if !placeholder.is_empty() {
            field = field.placeholder(placeholder);
        }
        if matches!(name, "since" | "until") {
            field = field.hint("1h, 30m, 2026-12-01 or RFC 3339");
        }
        let error = problem.filter(|p| p.field == name).map(|p| p.why.as_str());
        html.push_str(&field.error(error).html());
    }
    html.push_str("<button id=\"search-submit\" type=\"submit\">Search</button></form>");
    html
}

/// The search page: the form, then the page of events it selects.
pub(super) async fn page(
    State(state): State<AdminState>,
    headers: HeaderMap,
    Query(search): Query<Search>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer.into_response(),
    };
    let csrf = esc(&session.csrf);
    shown("idemgate: events", &[], &csrf, render(&state, &search).await)
}

async fn render(state: &AdminState, search: &Search) -> Rendered {
    let now = state.clock.now();
    let filter = match filter(search, now) {
        Ok(filter) => filter,
        Err(problem) => {
            return Ok(Some(format!(
                "<p class=\"bad\" role=\"alert\" id=\"search-problem\">{}: {}</p>{}",
                problem.field,
                esc(&problem.why),
                form(search, Some(&problem))
            )));
        }
    };
    let mut html = form(search, None);
    let page = views::events_page(&state.store, filter).await?;
    let mut table =
        Table::new("events", &["id", "source", "identity", "type", "received", "jobs"]).caption("Newest first");
    for e in &page.events {
        let jobs: Vec<String> = if e.unmatched {
            vec![UNMATCHED.to_owned()]
        } else {
            e.jobs
                .iter()
                .map(|(d, s)| format!("<span class=\"job-{s}\">{}: {}</span>", esc(d), state_badge(s)))
                .collect()
        };
        let id = e.id;
        table.keyed_row(
            ("id", &id.to_string()),
            [
                cell(id.to_string()),
                cell(esc(&e.source)),
                cell(format!("<a href=\"/admin/events/{id}\">{}</a>", esc(&e.identity))),
                cell(esc(e.event_type.as_deref().unwrap_or("-"))),
                cell(time_html(UnixTime(e.received_at), now)),
                cell(jobs.join(", ")),
            ],
        );
    }
    html.push_str(&table.html());
    if page.events.is_empty() {
        html.push_str("<p id=\"no-events\">No event matches.</p>");
    }
    let query = search_query(search);
    let mut back = trail(&search.trail);
    back.truncate(TRAIL);
    let mut links = Vec::new();
    if let Some(&newer) = back.last() {
        links.push(format!(
            "<a id=\"newer\" rel=\"prev\" href=\"{}\">Newer</a>",
            page_link(&query, newer, &back[..back.len() - 1])
        ));
    }
    if let Some(older) = page.next_before {
        let mut forward = back.clone();
        forward.push(search.before.unwrap_or(0));
        if forward.len() > TRAIL {
            forward.remove(0);
        }
        links.push(format!("<a id=\"older\" rel=\"next\" href=\"{}\">Older</a>", page_link(&query, older, &forward)));
    }
    if !links.is_empty() {
        let _ = write!(html, "<nav aria-label=\"event pages\">{}</nav>", links.join(" "));
    }
    Ok(Some(html))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use idemgate_core::UnixTime;

    use super::{Search, filter, page_link, search_query, trail};

    #[test]
    fn empty_fields_filter_nothing_and_times_read_as_the_cli_takes_them() {
        let now = UnixTime(1_800_000_000);
        let all = filter(&Search::default(), now).unwrap();
        assert_eq!((all.source, all.state, all.since, all.limit), (None, None, None, super::PAGE));
        let search = Search {
            source: " hooks ".to_owned(),
            since: "1h".to_owned(),
            until: "2027-01-15T08:00:00Z".to_owned(),
            state: "unmatched".to_owned(),
            ..Search::default()
        };
        let f = filter(&search, now).unwrap();
        assert_eq!(f.source.as_deref(), Some("hooks"));
        assert_eq!(f.since, Some(UnixTime(now.0 - 3600)));
        assert_eq!(f.until, Some(now), "1_800_000_000 is that instant");
        assert_eq!(f.state.as_deref(), Some("unmatched"));
        let bad = Search { since: "yesterday".to_owned(), ..Search::default() };
        assert_eq!(filter(&bad, now).unwrap_err().field, "since");
        let state = Search { state: "lost".to_owned(), ..Search::default() };
        assert_eq!(
            filter(&state, now).unwrap_err(),
            super::Problem { field: "state", why: "not a job state".to_owned() }
        );
    }

    #[test]
    fn page_links_keep_the_search_and_the_way_back() {
        let search = Search { identity: "msg a&b".to_owned(), ..Search::default() };
        let query = search_query(&search);
        assert_eq!(query, "identity=msg%20a%26b&");
        assert_eq!(
            page_link(&query, 40, &[0, 90]),
            "/admin/events?identity=msg%20a%26b&amp;before=40&amp;trail=0%2C90"
        );
        assert_eq!(page_link("", 0, &[]), "/admin/events");
        assert_eq!(trail("0,90,x,40"), [0, 90, 40]);
    }
}
