//! The portal's messages: the application's messages a page at a time, newest first,
//! filtered by event type, time and a delivery's status (`GET /portal/messages`); one
//! message with its payload and, per endpoint it was sent to, every attempt
//! (`GET /portal/messages/{msg}`, reloading itself while a delivery waits or is being
//! tried); sending it again to one endpoint (`POST /portal/messages/{msg}/resend`); and
//! recovering an endpoint's failed messages since a time
//! (`POST /portal/endpoints/{ep}/recover`).
//!
//! Each reads and changes through the store calls of the `/api/v1` routes for the same
//! thing (`v1.message.list`, `v1.message.get`, `list-attempted-messages` with its `status`,
//! `list-attempted-destinations`, `v1.message-attempt.list-by-msg`, `resend`, `recover`),
//! with the application of the session, so another application's ids are 404.

use std::{collections::BTreeMap, fmt::Write as _, sync::Arc};

use axum::{
    Router,
    extract::{Path, RawQuery, State},
    http::header,
    response::{Html, IntoResponse, Redirect},
    routing::{get, post},
};
use idemgate_core::{
    outbound::{
        field::{EventTypeName, Loc},
        id::{MAX_MILLIS, MIN_MILLIS},
        status::MessageStatus,
    },
    time::{TimeSpec, UnixTime},
};
use idemgate_store::outbound::{
    ListQuery, Lookup, Page,
    attempt::{Attempt, AttemptFilter, AttemptQuery, AttemptedMessageQuery},
    endpoint::Endpoint,
    message::{Message, MessageQuery},
};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;

use super::{Customer, PortalState, Posted, Shared, layout::page};
use crate::{
    answer::{OutboundAnswer, PortalAnswer},
    console::ui::{Tone, badge, empty_state, esc, time_html},
    outbound::{
        redelivery::{recover_failed, resend_to},
        wire::{RecoverIn, WireTime},
    },
};

/// Messages on one page of the list.
const PAGE_SIZE: usize = 25;
/// The most endpoints, event types and attempts a page reads (the API's largest page).
const MOST: usize = 250;
/// How much of an endpoint's answer an attempt shows, in characters.
const RESPONSE_START: usize = 500;
/// How often a message's page updates its deliveries while one waits or is being tried.
const UPDATE_SECONDS: u32 = 3;
/// The message page's script: it fetches the page again every [`UPDATE_SECONDS`] and puts
/// the new deliveries in place, with a button that pauses it (no `<meta>` refresh: a page
/// that reloads itself on a timer fails WCAG 2.2.1, and takes the reader's place and focus).
const LIVE_SCRIPT: &str = include_str!("live.js");

/// The message pages and the recovery, below `/portal`.
pub(super) fn routes() -> Router<Arc<PortalState>> {
    Router::new()
        .route("/messages", get(list))
        .route("/messages/{msg}", get(one))
        .route("/messages.js", get(live_script))
        .route("/messages/{msg}/resend", post(resend))
        .route("/endpoints/{ep}/recover", post(recover))
}

/// The list's filters as the form sends them (empty: not filtered).
#[derive(Debug, Default, Deserialize)]
struct Filters {
    /// One event type's name.
    #[serde(default)]
    event_type: String,
    /// Sent after this time ([`form_time`]).
    #[serde(default)]
    since: String,
    /// Sent before this time ([`form_time`]).
    #[serde(default)]
    until: String,
    /// Sent to this endpoint (id or uid).
    #[serde(default)]
    endpoint: String,
    /// The delivery's status to that endpoint ([`STATUS_WORDS`]).
    #[serde(default)]
    status: String,
    /// Where the previous page ended.
    #[serde(default)]
    iterator: String,
}

impl Filters {
    /// The filters as a query string (without the iterator), for the pages' links.
    fn query(&self) -> String {
        let pairs: Vec<(&str, &str)> = [
            ("event_type", &self.event_type),
            ("since", &self.since),
            ("until", &self.until),
            ("endpoint", &self.endpoint),
            ("status", &self.status),
        ]
        .into_iter()
        .filter(|(_, value)| !value.is_empty())
        .map(|(name, value)| (name, value.as_str()))
        .collect();
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }
}

/// The filters checked, as the store's queries take them.
struct Checked {
    /// Only these types.
    event_types: Option<Vec<String>>,
    /// Sent after, unix milliseconds.
    after_ms: Option<i64>,
    /// Sent before, unix milliseconds.
    before_ms: Option<i64>,
    /// The delivery's status.
    status: Option<MessageStatus>,
}

/// The words of a delivery's status, as the list's filter and badges name it.
const STATUS_WORDS: [(MessageStatus, &str); 4] = [
    (MessageStatus::Success, "delivered"),
    (MessageStatus::Pending, "pending"),
    (MessageStatus::Sending, "sending"),
    (MessageStatus::Fail, "failed"),
];

/// The word of a delivery's status ([`STATUS_WORDS`]).
fn status_word(status: MessageStatus) -> &'static str {
    STATUS_WORDS.iter().find(|(known, _)| *known == status).map_or("pending", |(_, word)| word)
}

/// A time typed in a form, in UTC: a `datetime-local` value (`YYYY-MM-DDTHH:MM`, seconds
/// optional), a date (midnight), or RFC 3339; as unix milliseconds.
pub(crate) fn form_time(text: &str) -> Option<i64> {
    let text = text.trim();
    let full = match text.len() {
        16 => format!("{text}:00Z"),
        19 => format!("{text}Z"),
        _ => text.to_owned(),
    };
    match full.parse::<TimeSpec>() {
        Ok(TimeSpec::At(at)) => Some(at.0.saturating_mul(1000)),
        _ => None,
    }
}

/// What a time filter or field accepts, for its error.
const TIME_HELP: &str = "Give a date (YYYY-MM-DD) or a date and time (YYYY-MM-DDTHH:MM), in UTC.";

/// Checks the filters: each error is (field, words).
fn check(filters: &Filters) -> Result<Checked, Vec<(&'static str, &'static str)>> {
    let mut errors = Vec::new();
    let event_types = match filters.event_type.as_str() {
        "" => None,
        name => match EventTypeName::parse(name, Loc::query("event_type")) {
            Ok(name) => Some(vec![name.as_str().to_owned()]),
            Err(_) => {
                errors.push(("event_type", "This is not an event type's name."));
                None
            }
        },
    };
    let mut time = |field: &'static str, text: &str| match text {
        "" => None,
        text => {
            let at = form_time(text);
            if at.is_none() {
                errors.push((field, TIME_HELP));
            }
            at
        }
    };
    // A time outside the ids' range would be no bound at all in the store: clamped, a
    // bound before the first possible message keeps every one out.
    let bounded = |at: Option<i64>| at.map(|at| at.clamp(MIN_MILLIS, MAX_MILLIS));
    let (after_ms, before_ms) = (bounded(time("since", &filters.since)), bounded(time("until", &filters.until)));
    if let (Some(after), Some(before)) = (after_ms, before_ms)
        && after > before
    {
        errors.push(("until", "The end must not be before the start."));
    }
    let status = match filters.status.as_str() {
        "" => None,
        word => {
            let status = STATUS_WORDS.iter().find(|(_, known)| *known == word).map(|(status, _)| *status);
            if status.is_none() {
                errors.push(("status", "Choose one of the statuses listed."));
            } else if filters.endpoint.is_empty() {
                errors.push(("status", "Choose an endpoint too: a status is that of the delivery to one endpoint."));
            }
            status
        }
    };
    if errors.is_empty() { Ok(Checked { event_types, after_ms, before_ms, status }) } else { Err(errors) }
}

/// One row of the list: the message and its status (the delivery's to the chosen
/// endpoint, else all of its deliveries' together; `None`: sent to no endpoint).
struct Row {
    /// The message.
    message: Message,
    /// Its status.
    status: Option<MessageStatus>,
}

/// The status of a message from its deliveries': failed if one failed, else sending if
/// one is being tried, else pending if one waits, else delivered.
fn overall(statuses: &[MessageStatus]) -> Option<MessageStatus> {
    [MessageStatus::Fail, MessageStatus::Sending, MessageStatus::Pending, MessageStatus::Success]
        .into_iter()
        .find(|status| statuses.contains(status))
}

/// `GET /portal/messages`: the filter form, then a page of messages, newest first.
async fn list(
    State(state): Shared,
    customer: Customer,
    RawQuery(query): RawQuery,
) -> Result<Html<String>, PortalAnswer> {
    let filters: Filters = serde_urlencoded::from_str(query.as_deref().unwrap_or(""))
        .map_err(|_| PortalAnswer::Rejected(vec!["The filters are not what this page sends.".to_owned()]))?;
    let store = &state.api.store;
    let event_types = store.list_event_types(ListQuery::first(MOST), false).await?.data;
    let endpoints = store.list_endpoints(customer.app(), ListQuery::first(MOST)).await?.data;
    let names: Vec<&str> = event_types.iter().map(|t| t.name.as_str()).collect();
    let checked = match check(&filters) {
        Ok(checked) => checked,
        Err(errors) => {
            let form = filter_form(&filters, &errors, &names, &endpoints);
            let Html(html) = page(&state, &customer, "/portal/messages", "Messages", &[], &form);
            return Err(PortalAnswer::Invalid(html));
        }
    };
    let messages = MessageQuery {
        limit: PAGE_SIZE,
        iterator: (!filters.iterator.is_empty()).then(|| filters.iterator.clone()),
        before_ms: checked.before_ms,
        after_ms: checked.after_ms,
        event_types: checked.event_types,
        channel: None,
    };
    let found: Page<Row> = if filters.endpoint.is_empty() {
        let found = store.list_messages(customer.app(), messages).await?;
        let mut data = Vec::with_capacity(found.data.len());
        for message in found.data {
            let sent = store
                .attempted_destinations(customer.app(), Lookup::Id(message.id.clone()), ListQuery::first(MOST))
                .await?;
            let statuses: Vec<MessageStatus> = sent.data.iter().map(|d| d.status).collect();
            data.push(Row { message, status: overall(&statuses) });
        }
        Page { data, iterator: found.iterator, prev_iterator: found.prev_iterator, done: found.done }
    } else {
        let ep = Lookup::endpoint(&filters.endpoint);
        let query = AttemptedMessageQuery { messages, status: checked.status };
        let found = store.attempted_messages(customer.app(), ep, query).await?;
        let data =
            found.data.into_iter().map(|sent| Row { message: sent.message, status: Some(sent.status) }).collect();
        Page { data, iterator: found.iterator, prev_iterator: found.prev_iterator, done: found.done }
    };
    let mut body = filter_form(&filters, &[], &names, &endpoints);
    body.push_str(&message_table(&found, &filters, state.now_ms()));
    Ok(page(&state, &customer, "/portal/messages", "Messages", &[], &body))
}

/// A form field's error paragraph and the input's attributes pointing at it.
fn field_error(errors: &[(&str, &str)], field: &str) -> (String, String) {
    errors.iter().find(|(name, _)| *name == field).map_or((String::new(), String::new()), |(_, words)| {
        (
            format!("<p id=\"{field}-error\" class=\"field-error bad\">{}</p>", esc(words)),
            format!(" aria-invalid=\"true\" aria-describedby=\"{field}-error\""),
        )
    })
}

/// A `<select>` of `options` (value, text) with "all" first, `chosen` selected.
fn select(
    field: &str,
    label: &str,
    all: &str,
    options: &[(String, String)],
    chosen: &str,
    errors: &[(&str, &str)],
) -> String {
    let (error, aria) = field_error(errors, field);
    let mut html = format!(
        "<div class=\"field\"><label for=\"{field}\">{label}</label><select id=\"{field}\" name=\"{field}\"{aria}><option value=\"\">{all}</option>"
    );
    let mut listed = false;
    for (value, text) in options {
        let here = value == chosen;
        listed |= here;
        let selected = if here { " selected" } else { "" };
        let _ = write!(html, "<option value=\"{}\"{selected}>{}</option>", esc(value), esc(text));
    }
    if !listed && !chosen.is_empty() {
        let _ = write!(html, "<option value=\"{0}\" selected>{0}</option>", esc(chosen));
    }
    let _ = write!(html, "</select>{error}</div>");
    html
}

/// The filter form (a `GET`: it changes nothing), with each field's error.
fn filter_form(filters: &Filters, errors: &[(&str, &str)], event_types: &[&str], endpoints: &[Endpoint]) -> String {
    let types: Vec<(String, String)> =
        event_types.iter().map(|name| ((*name).to_owned(), (*name).to_owned())).collect();
    let endpoints: Vec<(String, String)> = endpoints.iter().map(|ep| (ep.id.clone(), ep.url.clone())).collect();
    let statuses: Vec<(String, String)> =
        STATUS_WORDS.iter().map(|(_, word)| ((*word).to_owned(), (*word).to_owned())).collect();
    let mut html = String::from("<form class=\"filters\" method=\"get\" action=\"/portal/messages\">");
    if !errors.is_empty() {
        html.push_str("<p class=\"notice bad\" role=\"alert\">Some filters are not right: see below.</p>");
    }
    html.push_str(&select("event_type", "Event type", "All types", &types, &filters.event_type, errors));
    for (field, label, value) in [("since", "From (UTC)", &filters.since), ("until", "Until (UTC)", &filters.until)] {
        let (error, aria) = field_error(errors, field);
        let _ = write!(
            html,
            "<div class=\"field\"><label for=\"{field}\">{label}</label><input id=\"{field}\" name=\"{field}\" type=\"datetime-local\" value=\"{}\"{aria}>{error}</div>",
            esc(value)
        );
    }
    html.push_str(&select("endpoint", "Endpoint", "All endpoints", &endpoints, &filters.endpoint, errors));
    html.push_str(&select(
        "status",
        "Delivery status (to the endpoint)",
        "Any status",
        &statuses,
        &filters.status,
        errors,
    ));
    html.push_str("<button type=\"submit\">Show</button> <a href=\"/portal/messages\">Clear the filters</a></form>");
    html
}

/// The page of messages as a table, with links to the older and newer pages.
fn message_table(found: &Page<Row>, filters: &Filters, now_ms: i64) -> String {
    if found.data.is_empty() {
        let words = if filters.query().is_empty() && filters.iterator.is_empty() {
            "No message was sent to you yet."
        } else {
            "No message matches these filters."
        };
        return empty_state(
            "no-messages",
            words,
            "Send a test event from an endpoint's page (<a href=\"/portal/endpoints\">Endpoints</a>) and it shows here.",
        );
    }
    let mut html = String::from(
        "<table class=\"messages\"><caption>Messages, newest first</caption><thead><tr>\
         <th scope=\"col\">Event type</th><th scope=\"col\">Event id</th><th scope=\"col\">When</th>\
         <th scope=\"col\">Status</th></tr></thead><tbody>",
    );
    let now = UnixTime(now_ms.div_euclid(1000));
    for row in &found.data {
        let message = &row.message;
        let status = row.status.map_or_else(|| badge(Tone::Neutral, "not sent"), status_badge);
        let _ = write!(
            html,
            "<tr><td data-label=\"Event type\"><a href=\"/portal/messages/{}\">{}</a></td>\
             <td data-label=\"Event id\">{}</td><td data-label=\"When\">{}</td><td data-label=\"Status\">{status}</td></tr>",
            esc(&message.id),
            esc(&message.event_type),
            message.event_id.as_deref().map_or_else(|| "<span class=\"muted\">none</span>".to_owned(), esc),
            time_html(UnixTime(message.created_at_ms.div_euclid(1000)), now),
        );
    }
    html.push_str("</tbody></table><nav class=\"pager\" aria-label=\"pages of messages\">");
    let base = filters.query();
    let link = |iterator: &str| {
        let mut query = base.clone();
        if !query.is_empty() {
            query.push('&');
        }
        query.push_str(&serde_urlencoded::to_string([("iterator", iterator)]).unwrap_or_default());
        format!("/portal/messages?{}", esc(&query))
    };
    if let (false, Some(prev)) = (filters.iterator.is_empty(), &found.prev_iterator) {
        let _ = write!(html, "<a rel=\"prev\" href=\"{}\">Newer</a> ", link(prev));
    }
    if let (false, Some(next)) = (found.done, &found.iterator) {
        let _ = write!(html, "<a rel=\"next\" href=\"{}\">Older</a>", link(next));
    }
    html.push_str("</nav>");
    html
}

/// A delivery's (or an attempt's) status as a badge in its word's tone.
fn status_badge(status: MessageStatus) -> String {
    let word = status_word(status);
    badge(Tone::of(word), word)
}

/// What a path segment escapes: all but letters, digits and `-._~` (ids stay as they are).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// A message id or `eventId` as one path segment.
fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// `GET /portal/messages/{msg}`: the payload, then per endpoint its delivery and every
/// attempt, each endpoint with a Resend button; while one waits or is tried, its script
/// keeps the deliveries up to date (without script, a Reload link).
async fn one(State(state): Shared, customer: Customer, Path(msg): Path<String>) -> Result<Html<String>, PortalAnswer> {
    let store = &state.api.store;
    let message = store.message(customer.app(), Lookup::message(&msg)).await?.ok_or(PortalAnswer::NotFound)?;
    let id = Lookup::Id(message.id.clone());
    let sent = store.attempted_destinations(customer.app(), id.clone(), ListQuery::first(MOST)).await?.data;
    let query = AttemptQuery { limit: MOST, iterator: None, filter: AttemptFilter::default() };
    let attempts = store.attempts_by_message(customer.app(), id, query).await?.data;
    let mut by_endpoint: BTreeMap<&str, Vec<&Attempt>> = BTreeMap::new();
    for attempt in &attempts {
        by_endpoint.entry(attempt.endpoint_id.as_str()).or_default().push(attempt);
    }
    let now_ms = state.now_ms();
    let now = UnixTime(now_ms.div_euclid(1000));
    let mut body = format!(
        "<dl class=\"facts\"><dt>Event type</dt><dd>{}</dd><dt>Event id</dt><dd>{}</dd><dt>Message id</dt><dd><code>{}</code></dd><dt>Sent</dt><dd>{}</dd></dl>",
        esc(&message.event_type),
        message.event_id.as_deref().map_or_else(|| "none".to_owned(), esc),
        esc(&message.id),
        time_html(UnixTime(message.created_at_ms.div_euclid(1000)), now),
    );
    body.push_str("<h2>Payload</h2>");
    match &message.payload {
        Some(bytes) => {
            let pretty = serde_json::from_slice::<serde_json::Value>(bytes)
                .ok()
                .and_then(|value| serde_json::to_string_pretty(&value).ok())
                .unwrap_or_else(|| String::from_utf8_lossy(bytes).into_owned());
            let _ = write!(body, "<pre class=\"payload\"><code>{}</code></pre>", esc(&pretty));
        }
        None => body.push_str("<p class=\"muted\">The payload is no longer kept (past its retention).</p>"),
    }
    let under_way = sent.iter().any(|d| matches!(d.status, MessageStatus::Pending | MessageStatus::Sending));
    let here = format!("/portal/messages/{}", segment(&message.id));
    body.push_str("<h2>Deliveries</h2>");
    if under_way {
        let _ = write!(
            body,
            "<p id=\"live-status\" class=\"muted\" role=\"status\"><span id=\"live-text\">A delivery is under way.</span> \
             <a id=\"live-reload\" href=\"{}\">Reload</a></p>",
            esc(&here)
        );
    }
    // What the script replaces: `data-live` says it is still under way.
    let live = if under_way { format!(" data-live=\"{UPDATE_SECONDS}\"") } else { String::new() };
    let _ = write!(body, "<div id=\"deliveries\"{live}>");
    if sent.is_empty() {
        body.push_str(&empty_state(
            "no-deliveries",
            "This message was sent to no endpoint: none of yours took its event type when it was sent.",
            "Add an endpoint or change its event types on <a href=\"/portal/endpoints\">Endpoints</a>.",
        ));
    }
    for (n, destination) in sent.iter().enumerate() {
        let endpoint = &destination.endpoint;
        let _ = write!(
            body,
            "<section class=\"delivery\" aria-labelledby=\"delivery-{n}\"><h3 id=\"delivery-{n}\">{}</h3><p>{}",
            esc(&endpoint.url),
            status_badge(destination.status),
        );
        if let Some(next) = destination.next_attempt_ms {
            let _ = write!(body, " Next attempt: {}", time_html(UnixTime(next.div_euclid(1000)), now));
        }
        body.push_str("</p>");
        let tries = by_endpoint.get(endpoint.id.as_str()).map(Vec::as_slice).unwrap_or_default();
        body.push_str(&attempt_table(tries, now));
        let _ = write!(
            body,
            "<form method=\"post\" action=\"/portal/messages/{}/resend\">{}<input type=\"hidden\" name=\"endpoint\" value=\"{}\">\
             <button type=\"submit\">Resend to {}</button></form></section>",
            esc(&segment(&message.id)),
            customer.csrf_field(),
            esc(&endpoint.id),
            esc(&endpoint.url),
        );
    }
    body.push_str("</div>");
    if under_way {
        body.push_str("<script src=\"/portal/messages.js\"></script>");
    }
    let title = format!("Message {}", message.event_type);
    let crumbs = [("/portal/messages", "Messages")];
    Ok(page(&state, &customer, "/portal/messages", &title, &crumbs, &body))
}

/// `GET /portal/messages.js`: the message page's script (a file: the CSP allows no inline
/// script).
async fn live_script() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], LIVE_SCRIPT)
}

/// An endpoint's attempts, newest first.
fn attempt_table(attempts: &[&Attempt], now: UnixTime) -> String {
    if attempts.is_empty() {
        return "<p class=\"muted\">No attempt yet.</p>".to_owned();
    }
    let mut html = String::from(
        "<table class=\"attempts\"><caption>Attempts, newest first</caption><thead><tr><th scope=\"col\">Status</th>\
         <th scope=\"col\">HTTP status</th><th scope=\"col\">Duration</th><th scope=\"col\">When</th>\
         <th scope=\"col\">Trigger</th><th scope=\"col\">Response</th></tr></thead><tbody>",
    );
    for attempt in attempts {
        let code = attempt.status_code.map_or_else(|| "no answer".to_owned(), |code| code.to_string());
        let response: String = attempt.response.chars().take(RESPONSE_START).collect();
        let more = if attempt.response.chars().count() > RESPONSE_START { "…" } else { "" };
        let _ = write!(
            html,
            "<tr><td data-label=\"Status\">{}</td><td data-label=\"HTTP status\">{code}</td>\
             <td data-label=\"Duration\">{} ms</td><td data-label=\"When\">{}</td><td data-label=\"Trigger\">{}</td>\
             <td data-label=\"Response\"><pre class=\"response\"><code>{}{more}</code></pre></td></tr>",
            status_badge(attempt.status()),
            attempt.duration_ms,
            time_html(UnixTime(attempt.started_at_ms.div_euclid(1000)), now),
            if attempt.manual { "resent" } else { "scheduled" },
            esc(&response),
        );
    }
    html.push_str("</tbody></table>");
    html
}

/// The Resend form's field.
#[derive(Deserialize)]
struct ResendForm {
    /// The endpoint's id.
    #[serde(default)]
    endpoint: String,
}

/// `POST /portal/messages/{msg}/resend`, `endpoint`: the API's resend, audited as the
/// customer; back to the message.
async fn resend(
    State(state): Shared,
    Path(msg): Path<String>,
    posted: Posted<ResendForm>,
) -> Result<Redirect, PortalAnswer> {
    let customer = &posted.customer;
    let message =
        state.api.store.message(customer.app(), Lookup::message(&msg)).await?.ok_or(PortalAnswer::NotFound)?;
    if posted.form.endpoint.is_empty() {
        return Err(PortalAnswer::Rejected(vec!["Choose the endpoint to send the message to again.".to_owned()]));
    }
    let (app, ep) = (customer.app(), Lookup::endpoint(&posted.form.endpoint));
    resend_to(&state.api, app, Lookup::Id(message.id.clone()), ep, &customer.actor()).await?;
    Ok(Redirect::to(&format!("/portal/messages/{}", segment(&message.id))))
}

/// The recovery form's field: `since`, a `datetime-local` value in UTC.
#[derive(Deserialize)]
struct RecoverForm {
    /// Failed messages sent since this time ([`form_time`]).
    #[serde(default)]
    since: String,
}

/// `POST /portal/endpoints/{ep}/recover`, `since` (`YYYY-MM-DDTHH:MM`, UTC): the API's
/// recover of the endpoint's failed messages since then; back to the endpoint. A `since`
/// that is not a time, in the future, or older than the API reaches is the form again
/// with its error (422), and nothing is changed.
async fn recover(
    State(state): Shared,
    Path(ep): Path<String>,
    posted: Posted<RecoverForm>,
) -> Result<Redirect, PortalAnswer> {
    let customer = &posted.customer;
    let store = &state.api.store;
    let endpoint = store.endpoint(customer.app(), Lookup::endpoint(&ep)).await?.ok_or(PortalAnswer::NotFound)?;
    let now_ms = state.now_ms();
    let refused = |words: &str| {
        let Html(html) = recover_page(&state, customer, &endpoint, &posted.form.since, words);
        PortalAnswer::Invalid(html)
    };
    let Some(since) = form_time(&posted.form.since) else { return Err(refused(TIME_HELP)) };
    if since > now_ms {
        return Err(refused("The time is in the future: give one in the past."));
    }
    let input = RecoverIn { since: WireTime(since), until: None };
    let app = customer.app();
    match recover_failed(&state.api, app, Lookup::Id(endpoint.id.clone()), &input, &customer.actor(), now_ms).await {
        Ok(_) => Ok(Redirect::to(&format!("/portal/endpoints/{}", segment(&endpoint.id)))),
        Err(OutboundAnswer::Invalid(items)) => {
            Err(refused(&items.into_iter().map(|item| item.msg).collect::<Vec<_>>().join(" ")))
        }
        Err(other) => Err(other.into()),
    }
}

/// The recovery form again, with `since` and its error.
fn recover_page(
    state: &PortalState,
    customer: &Customer,
    endpoint: &Endpoint,
    since: &str,
    error: &str,
) -> Html<String> {
    let body = format!(
        "<p>Send again every message that failed to reach <strong>{url}</strong> since a time.</p>\
         <form method=\"post\" action=\"/portal/endpoints/{ep}/recover\">{csrf}<div class=\"field\">\
         <label for=\"since\">Failed since (UTC)</label>\
         <input id=\"since\" name=\"since\" type=\"datetime-local\" value=\"{since}\" required aria-invalid=\"true\" aria-describedby=\"since-error\">\
         <p id=\"since-error\" class=\"field-error bad\">{error}</p></div><button type=\"submit\">Recover failed messages</button></form>",
        url = esc(&endpoint.url),
        ep = esc(&segment(&endpoint.id)),
        csrf = customer.csrf_field(),
        since = esc(since),
        error = esc(error),
    );
    let back = format!("/portal/endpoints/{}", segment(&endpoint.id));
    let crumbs = [("/portal/endpoints", "Endpoints"), (back.as_str(), endpoint.url.as_str())];
    page(state, customer, "/portal/endpoints", "Recover failed messages", &crumbs, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_time_is_a_datetime_local_a_date_or_rfc_3339_in_utc() {
        assert_eq!(form_time("1970-01-02"), Some(86_400_000));
        assert_eq!(form_time("1970-01-01T00:01"), Some(60_000));
        assert_eq!(form_time("1970-01-01T00:01:02"), Some(62_000));
        assert_eq!(form_time(" 1970-01-01T00:00:01Z "), Some(1_000));
        for bad in ["", "yesterday", "1h", "1970-13-01", "1970-01-01T25:00"] {
            assert_eq!(form_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_message_reads_failed_before_sending_before_pending_before_delivered() {
        use MessageStatus::{Fail, Pending, Sending, Success};
        assert_eq!(overall(&[Success, Pending, Fail]), Some(Fail));
        assert_eq!(overall(&[Success, Pending, Sending]), Some(Sending));
        assert_eq!(overall(&[Success, Pending]), Some(Pending));
        assert_eq!(overall(&[Success, Success]), Some(Success));
        assert_eq!(overall(&[]), None);
    }

    #[test]
    fn a_status_filter_needs_an_endpoint_and_times_must_be_in_order() {
        let filters = Filters {
            status: "failed".into(),
            since: "2026-01-02".into(),
            until: "2026-01-01".into(),
            ..Filters::default()
        };
        let Err(errors) = check(&filters) else { panic!("refused") };
        let fields: Vec<&str> = errors.iter().map(|(field, _)| *field).collect();
        assert_eq!(fields, ["until", "status"]);
        let fine = Filters { status: "failed".into(), endpoint: "ep_x".into(), ..Filters::default() };
        assert!(check(&fine).is_ok_and(|checked| checked.status == Some(MessageStatus::Fail)));
    }
}
