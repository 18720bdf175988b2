//! One endpoint's page: its settings and state, its health (success rate and latency over
//! the last hour and the last day, drawn with the dashboard's charts), its latest attempts,
//! the "Send test event" form, its custom headers' form, its signing secret (hidden: "Reveal"
//! opens it on a page of its own; "Rotate"), and disable, enable and delete.

use std::{collections::BTreeMap, fmt::Write as _};

use axum::{
    extract::{Path, Query, State},
    response::{Html, Redirect},
};
use idemgate_core::{UnixTime, outbound::headers::is_sensitive};
use idemgate_store::outbound::{
    Lookup,
    attempt::{AttemptFilter, AttemptQuery},
    endpoint::Endpoint,
};
use serde::Deserialize;

use super::{
    DAY_MS, NAV, catalog, form::refuse, frame, headers_of, own, path_of, put_headers, state_badge_of, success_rate,
    types_text,
};
use crate::{
    answer::{OutboundAnswer, PortalAnswer},
    console::{
        dashboard::chart,
        ui::{empty_state, esc, state_badge, time_html},
    },
    portal::{Customer, PortalState, Posted, Shared},
};

const HOUR_MS: i64 = 3_600_000;
/// The most attempts the health reads per window, and the latest attempts listed.
const HEALTH_ATTEMPTS: usize = 250;
const LATEST_ATTEMPTS: usize = 20;

/// What the endpoint page says beside its sections.
#[derive(Deserialize, Default)]
pub(super) struct Notice {
    #[serde(default)]
    rotated: Option<String>,
}

/// `GET /portal/endpoints/{ep}`.
pub(super) async fn show(
    State(state): Shared,
    customer: Customer,
    Path(ep): Path<String>,
    Query(notice): Query<Notice>,
) -> Result<Html<String>, PortalAnswer> {
    let endpoint = own(&state, &customer, &ep).await?;
    let text = editable_headers(&endpoint.headers);
    endpoint_page(&state, &customer, &endpoint, &text, None, notice.rotated.is_some()).await
}

/// The headers form: the text, and sensitive headers to remove.
#[derive(Deserialize)]
pub(super) struct HeadersForm {
    #[serde(default)]
    headers: String,
    #[serde(default)]
    remove: Option<String>,
}

/// `POST /portal/endpoints/{ep}/headers`: the API's `PUT …/headers` with the written ones
/// and the sensitive ones kept (their values are never shown; a written one replaces it,
/// ticking "remove" drops them); the page again with the error (422) when refused.
pub(super) async fn headers(
    State(state): Shared,
    Path(ep): Path<String>,
    posted: Posted<HeadersForm>,
) -> Result<Redirect, PortalAnswer> {
    let customer = posted.customer;
    let endpoint = own(&state, &customer, &ep).await?;
    let text = &posted.form.headers;
    let mut headers = match headers_of(text) {
        Ok(headers) => headers,
        Err(words) => return refuse(endpoint_page(&state, &customer, &endpoint, text, Some(&words), false).await),
    };
    if posted.form.remove.is_none() {
        for (name, value) in endpoint.headers.iter().filter(|(name, _)| is_sensitive(name)) {
            headers.entry(name.clone()).or_insert_with(|| value.clone());
        }
    }
    match put_headers(&state, &customer, &endpoint.id, headers).await {
        Ok(()) => Ok(Redirect::to(&format!("/portal/endpoints/{}", endpoint.id))),
        Err(OutboundAnswer::Invalid(items)) => {
            let words = items.into_iter().map(|item| item.msg).collect::<Vec<_>>().join("; ");
            refuse(endpoint_page(&state, &customer, &endpoint, text, Some(&words), false).await)
        }
        Err(other) => Err(other.into()),
    }
}

/// The headers whose values may be shown, one `Name: value` a line.
fn editable_headers(headers: &BTreeMap<String, String>) -> String {
    headers.iter().filter(|(name, _)| !is_sensitive(name)).map(|(name, value)| format!("{name}: {value}\n")).collect()
}

/// The endpoint's page; `headers_text` fills the headers' form, `headers_error` its error.
async fn endpoint_page(
    state: &PortalState,
    customer: &Customer,
    ep: &Endpoint,
    headers_text: &str,
    headers_error: Option<&str>,
    rotated: bool,
) -> Result<Html<String>, PortalAnswer> {
    let here = esc(&path_of(&ep.id));
    let csrf = customer.csrf_field();
    let mut body = String::new();
    let rate = ep.throttle_rate.map_or_else(|| "none".to_owned(), |rate| format!("{rate} messages per second"));
    let now = state.now_ms();
    let now_s = UnixTime(now.div_euclid(1000));
    let _ = write!(
        body,
        "<section aria-labelledby=\"settings\"><h2 id=\"settings\">Settings</h2><dl class=\"settings\">\
         <dt>URL</dt><dd><code>{}</code></dd><dt>Description</dt><dd>{}</dd><dt>State</dt><dd>{}</dd>\
         <dt>Event types</dt><dd>{}</dd><dt>Rate limit</dt><dd>{}</dd><dt>Created</dt><dd>{}</dd></dl>\
         <p><a href=\"{here}/edit\">Edit</a></p>",
        esc(&ep.url),
        if ep.description.is_empty() { "—".to_owned() } else { esc(&ep.description) },
        state_badge_of(ep),
        types_text(ep),
        esc(&rate),
        time_html(UnixTime(ep.created_at_ms.div_euclid(1000)), now_s),
    );
    let (action, button) = if ep.disabled { ("enable", "Enable") } else { ("disable", "Disable") };
    let _ = write!(
        body,
        "<form method=\"post\" action=\"{here}/{action}\">{csrf}<button type=\"submit\" id=\"{action}\">{button}</button></form></section>"
    );
    body.push_str(&health(state, customer, ep, now).await?);
    body.push_str(&latest_attempts(state, customer, ep, now_s).await?);
    body.push_str(&test_event_form(state, customer, &here).await?);
    // The headers.
    let sensitive: Vec<&String> = ep.headers.keys().filter(|name| is_sensitive(name)).collect();
    let (attrs, error) = match headers_error {
        Some(words) => (
            " aria-describedby=\"headers-error\" aria-invalid=\"true\"",
            format!("<p id=\"headers-error\" class=\"field-error\" role=\"alert\">{}</p>", esc(words)),
        ),
        None => ("", String::new()),
    };
    let kept = if sensitive.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = sensitive.iter().map(|name| esc(name)).collect();
        format!(
            "<p>Kept, values hidden: {}. Write one again to replace it.</p><p><label for=\"remove\">\
             <input id=\"remove\" type=\"checkbox\" name=\"remove\" value=\"1\"> Remove the hidden ones</label></p>",
            names.join(", ")
        )
    };
    let _ = write!(
        body,
        "<section aria-labelledby=\"custom-headers\"><h2 id=\"custom-headers\">Custom headers</h2>\
         <form method=\"post\" action=\"{here}/headers\">{csrf}<p><label for=\"headers\">Headers sent with every \
         webhook, one <code>Name: value</code> a line</label><br><textarea id=\"headers\" name=\"headers\" rows=\"4\" \
         cols=\"60\"{attrs}>{}</textarea></p>{error}{kept}<p><button type=\"submit\">Save headers</button></p></form></section>",
        esc(headers_text)
    );
    // The secret.
    let rotated = if rotated {
        "<p role=\"status\">The secret was rotated: the previous one signs beside it for a day.</p>"
    } else {
        ""
    };
    let _ = write!(
        body,
        "<section aria-labelledby=\"signing-secret\"><h2 id=\"signing-secret\">Signing secret</h2>{rotated}\
         <p>Hidden. <a id=\"reveal\" href=\"{here}/secret\">Reveal</a></p>\
         <form method=\"post\" action=\"{here}/secret/rotate\">{csrf}<p>Rotating makes a new secret; the \
         previous one keeps signing beside it for a day, while you switch.</p><button type=\"submit\">Rotate</button></form></section>"
    );
    // Deleting.
    let _ = write!(
        body,
        "<section aria-labelledby=\"danger\"><h2 id=\"danger\">Delete</h2><form method=\"post\" action=\"{here}/delete\">{csrf}\
         <p><label for=\"confirm\"><input id=\"confirm\" type=\"checkbox\" name=\"confirm\" value=\"1\" required> I understand: \
         the endpoint and its waiting deliveries are gone for good.</label></p><button type=\"submit\">Delete endpoint</button></form></section>"
    );
    Ok(frame(state, customer, NAV, &ep.url, &[(NAV, "Endpoints")], &body))
}

/// The health section: per window (the last hour, the last day) the deliveries by outcome,
/// the success rate and the attempts' latency; then the last day's attempts per hour.
async fn health(state: &PortalState, customer: &Customer, ep: &Endpoint, now: i64) -> Result<String, PortalAnswer> {
    let mut rows = String::new();
    let mut day_attempts = Vec::new();
    let mut capped = false;
    for (name, span) in [("Last hour", HOUR_MS), ("Last day", DAY_MS)] {
        let (app, id) = (customer.app(), Lookup::Id(ep.id.clone()));
        let stats = state.api.store.endpoint_stats(app.clone(), id.clone(), now - span, now).await?;
        let filter = AttemptFilter { after_ms: Some(now - span), ..AttemptFilter::default() };
        let query = AttemptQuery { limit: HEALTH_ATTEMPTS, iterator: None, filter };
        let attempts = state.api.store.attempts_by_endpoint(app, id, query).await?;
        capped |= !attempts.done;
        let mut durations: Vec<i64> = attempts.data.iter().map(|a| a.duration_ms).collect();
        durations.sort_unstable();
        let at = |q: usize| durations.get((durations.len() * q / 100).min(durations.len().saturating_sub(1)));
        let latency = match (at(50), at(95)) {
            (Some(median), Some(p95)) => format!("{median} ms median, {p95} ms p95"),
            _ => "no attempts".to_owned(),
        };
        let rate = success_rate(stats.success, stats.fail).unwrap_or_else(|| "no deliveries".to_owned());
        let _ = write!(
            rows,
            "<tr><th scope=\"row\">{name}</th><td data-label=\"Delivered\">{}</td><td data-label=\"Failed\">{}</td>\
             <td data-label=\"Waiting\">{}</td><td data-label=\"Success rate\">{}</td><td data-label=\"Latency\">{}</td></tr>",
            stats.success,
            stats.fail,
            stats.pending + stats.sending,
            esc(&rate),
            esc(&latency)
        );
        day_attempts = attempts.data;
    }
    // The last day per hour, oldest first: attempts by outcome, and their mean latency.
    let mut buckets = [(0u64, 0u64); 24];
    let mut latency = [(0i64, 0i64); 24];
    for attempt in &day_attempts {
        let age = (now - attempt.started_at_ms).clamp(0, DAY_MS - 1);
        let i = 23 - usize::try_from(age / HOUR_MS).unwrap_or(23).min(23);
        if attempt.status_code.is_some_and(|code| (200..300).contains(&code)) {
            buckets[i].0 += 1;
        } else {
            buckets[i].1 += 1;
        }
        latency[i] = (latency[i].0 + attempt.duration_ms, latency[i].1 + 1);
    }
    let means: Vec<Option<u64>> =
        latency.iter().map(|&(sum, n)| (n > 0).then(|| u64::try_from(sum / n).unwrap_or(0))).collect();
    let axis = ["24 h ago", "now"];
    let note =
        if capped { "<p>The latency and the chart count the latest 250 attempts of each window.</p>" } else { "" };
    Ok(format!(
        "<section aria-labelledby=\"health\"><h2 id=\"health\">Health</h2>\
         <table class=\"health\"><caption class=\"visually-hidden\">Deliveries and latency</caption><thead><tr>\
         <th scope=\"col\">Window</th><th scope=\"col\">Delivered</th><th scope=\"col\">Failed</th>\
         <th scope=\"col\">Waiting</th><th scope=\"col\">Success rate</th><th scope=\"col\">Latency</th></tr></thead>\
         <tbody>{rows}</tbody></table>{note}<div class=\"charts\">{}{}{}{}</div></section>",
        chart::stacked_bars("attempts per hour, last day", axis, &buckets),
        chart::bars_table("attempts per hour, last day", &buckets, "succeeded", "failed"),
        chart::line("mean latency per hour, last day", axis, &means, "ms"),
        chart::line_table("mean latency per hour, last day", &means, "ms"),
    ))
}

/// The latest attempts at the endpoint, newest first.
async fn latest_attempts(
    state: &PortalState,
    customer: &Customer,
    ep: &Endpoint,
    now: UnixTime,
) -> Result<String, PortalAnswer> {
    let found = state
        .api
        .store
        .attempts_by_endpoint(customer.app(), Lookup::Id(ep.id.clone()), AttemptQuery::newest(LATEST_ATTEMPTS))
        .await?;
    let mut html = String::from("<section aria-labelledby=\"attempts\"><h2 id=\"attempts\">Latest attempts</h2>");
    if found.data.is_empty() {
        html.push_str(&empty_state(
            "no-attempts",
            "No attempts yet.",
            "Send a test event below and reload this page to see its attempt.",
        ));
        html.push_str("</section>");
        return Ok(html);
    }
    html.push_str(
        "<table class=\"attempts\"><caption class=\"visually-hidden\">Latest attempts</caption><thead><tr>\
         <th scope=\"col\">Status</th><th scope=\"col\">HTTP status</th><th scope=\"col\">Duration</th>\
         <th scope=\"col\">When</th><th scope=\"col\">Message</th></tr></thead><tbody>",
    );
    for attempt in &found.data {
        let outcome =
            if attempt.status_code.is_some_and(|code| (200..300).contains(&code)) { "succeeded" } else { "failed" };
        let code = attempt.status_code.map_or_else(|| "no answer".to_owned(), |code| code.to_string());
        let _ = write!(
            html,
            "<tr><td data-label=\"Status\">{}</td><td data-label=\"HTTP status\">{code}</td>\
             <td data-label=\"Duration\">{} ms</td><td data-label=\"When\">{}</td>\
             <td data-label=\"Message\"><a href=\"/portal/messages/{}\">{}</a></td></tr>",
            state_badge(outcome),
            attempt.duration_ms,
            time_html(UnixTime(attempt.started_at_ms.div_euclid(1000)), now),
            esc(&attempt.msg_id),
            esc(&attempt.msg_id),
        );
    }
    html.push_str("</tbody></table></section>");
    Ok(html)
}

/// The "Send test event" form: an event type of the catalog (or Svix's `svix.ping`).
async fn test_event_form(state: &PortalState, customer: &Customer, here: &str) -> Result<String, PortalAnswer> {
    let mut types = catalog(state).await?;
    if !types.iter().any(|t| t == "svix.ping") {
        types.push("svix.ping".to_owned());
    }
    let options: String = types.iter().map(|t| format!("<option value=\"{0}\">{0}</option>", esc(t))).collect();
    Ok(format!(
        "<section aria-labelledby=\"test-event\"><h2 id=\"test-event\">Send test event</h2>\
         <form method=\"post\" action=\"{here}/test\">{}<p><label for=\"event-type\">Event type</label> \
         <select id=\"event-type\" name=\"event_type\">{options}</select> \
         <button type=\"submit\">Send test event</button></p></form>\
         <p>The event carries its type's example payload and goes to this endpoint alone.</p></section>",
        customer.csrf_field()
    ))
}
