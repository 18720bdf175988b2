//! The portal's endpoint pages (`docs/design/portal.md` §1, "Endpoints"): the list, adding
//! and editing one ([`form`]), one endpoint's page with its health, latest attempts,
//! headers and secret ([`page`]), and its actions: disable, enable, delete (confirmed),
//! set headers, reveal and rotate the secret, send a test event.
//!
//! Every action is the `/api/v1` route's own function (`outbound::endpoints`,
//! `outbound::messages`) on the signed-in customer's application, audited under
//! [`Customer::actor`]; every lookup is `(customer.app(), endpoint id)`, so another
//! application's endpoint is 404 and unchanged.

mod form;
mod page;

use std::{collections::BTreeMap, sync::Arc};

use axum::{
    Router,
    extract::{Path, State},
    response::{Html, Redirect},
    routing::{get, post},
};
use idemgate_store::outbound::{ListQuery, Lookup, endpoint::Endpoint};
use serde::Deserialize;

use super::{Customer, PortalState, Posted, Shared, layout::page as frame, not_found, session::NoFields};
use crate::{
    answer::{OutboundAnswer, PortalAnswer},
    console::ui::{empty_state, esc},
    outbound::{
        endpoints::{current_secret, patch_endpoint, rotate_secret, set_endpoint_headers},
        messages::send_example_to,
        wire::{DEFAULT_GRACE_PERIOD_SECONDS, EndpointPatch},
    },
};

/// The navigation entry the endpoint pages sit under.
const NAV: &str = "/portal/endpoints";
/// The most endpoints (and event types of the catalog) a page lists.
const LIST_LIMIT: usize = 250;
/// A day, in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// The routes below `/portal`; another method on one of them is "Not found", as any other
/// path of the portal.
pub(super) fn routes() -> Router<Arc<PortalState>> {
    Router::new()
        .route("/endpoints", get(list).post(form::create).fallback(not_found))
        .route("/endpoints/new", get(form::new).fallback(not_found))
        .route("/endpoints/{ep}", get(page::show).post(form::update).fallback(not_found))
        .route("/endpoints/{ep}/edit", get(form::edit).fallback(not_found))
        .route("/endpoints/{ep}/disable", post(disable).fallback(not_found))
        .route("/endpoints/{ep}/enable", post(enable).fallback(not_found))
        .route("/endpoints/{ep}/delete", post(delete).fallback(not_found))
        .route("/endpoints/{ep}/headers", post(page::headers).fallback(not_found))
        .route("/endpoints/{ep}/secret", get(secret).fallback(not_found))
        .route("/endpoints/{ep}/secret/rotate", post(rotate).fallback(not_found))
        .route("/endpoints/{ep}/test", post(test_event).fallback(not_found))
}

/// The endpoint `ep` of the customer's application, or 404 (another application's too).
async fn own(state: &PortalState, customer: &Customer, ep: &str) -> Result<Endpoint, PortalAnswer> {
    state.api.store.endpoint(customer.app(), Lookup::Id(ep.to_owned())).await?.ok_or(PortalAnswer::NotFound)
}

/// The endpoint's path in the portal.
fn path_of(ep: &str) -> String {
    format!("/portal/endpoints/{ep}")
}

/// The live event types of the catalog, by name.
async fn catalog(state: &PortalState) -> Result<Vec<String>, PortalAnswer> {
    let found = state.api.store.list_event_types(ListQuery::first(LIST_LIMIT), false).await?;
    Ok(found.data.into_iter().map(|t| t.name).collect())
}

/// An endpoint's success rate: delivered of those finished (delivered or given up), as a
/// percentage with one decimal; `None` when none finished.
fn success_rate(success: u64, fail: u64) -> Option<String> {
    let done = success + fail;
    (done > 0).then(|| {
        let tenths = (success * 1000 + done / 2) / done;
        format!("{}.{} %", tenths / 10, tenths % 10)
    })
}

/// `GET /portal/endpoints`: the application's endpoints, each with its state, filter and
/// success rate over the last day; an empty state when there are none.
async fn list(State(state): Shared, customer: Customer) -> Result<Html<String>, PortalAnswer> {
    let found = state.api.store.list_endpoints(customer.app(), ListQuery::first(LIST_LIMIT)).await?;
    let add = "<p><a class=\"button\" id=\"add-endpoint\" href=\"/portal/endpoints/new\">Add endpoint</a></p>";
    if found.data.is_empty() {
        let empty = empty_state(
            "no-endpoints",
            "No endpoints yet.",
            "Add an endpoint: a URL of yours that receives the webhooks, signed with its own secret.",
        );
        return Ok(frame(&state, &customer, NAV, "Endpoints", &[], &format!("{empty}{add}")));
    }
    let now = state.now_ms();
    let mut rows = String::new();
    for ep in &found.data {
        let stats =
            state.api.store.endpoint_stats(customer.app(), Lookup::Id(ep.id.clone()), now - DAY_MS, now).await?;
        let rate = success_rate(stats.success, stats.fail).unwrap_or_else(|| "no deliveries".to_owned());
        rows.push_str(&format!(
            "<tr><td data-label=\"URL\"><a href=\"{}\">{}</a></td><td data-label=\"Description\">{}</td>\
             <td data-label=\"State\">{}</td><td data-label=\"Event types\">{}</td>\
             <td data-label=\"Success, last day\">{}</td></tr>",
            esc(&path_of(&ep.id)),
            esc(&ep.url),
            esc(&ep.description),
            state_badge_of(ep),
            types_text(ep),
            esc(&rate),
        ));
    }
    let more = if found.done { "" } else { "<p>Only the first 250 endpoints are listed.</p>" };
    let body = format!(
        "{add}<table class=\"endpoints\"><caption class=\"visually-hidden\">Your endpoints</caption><thead><tr>\
         <th scope=\"col\">URL</th><th scope=\"col\">Description</th><th scope=\"col\">State</th>\
         <th scope=\"col\">Event types</th><th scope=\"col\">Success, last day</th></tr></thead>\
         <tbody>{rows}</tbody></table>{more}"
    );
    Ok(frame(&state, &customer, NAV, "Endpoints", &[], &body))
}

/// The endpoint's state as a badge: enabled or disabled.
fn state_badge_of(ep: &Endpoint) -> String {
    crate::console::ui::state_badge(if ep.disabled { "disabled" } else { "enabled" })
}

/// The event types an endpoint receives, as text (escaped): all, or the list.
fn types_text(ep: &Endpoint) -> String {
    match &ep.event_types {
        None => "all".to_owned(),
        Some(types) => esc(&types.join(", ")),
    }
}

/// Sets the endpoint's `disabled` flag through the API's `PATCH`, then back to its page.
async fn set_disabled(
    state: &PortalState,
    customer: &Customer,
    ep: &str,
    disabled: bool,
) -> Result<Redirect, PortalAnswer> {
    let patch = EndpointPatch { disabled: Some(disabled), ..EndpointPatch::default() };
    patch_endpoint(&state.api, customer.app(), Lookup::Id(ep.to_owned()), patch, &customer.actor()).await?;
    Ok(Redirect::to(&format!("/portal/endpoints/{ep}")))
}

/// `POST /portal/endpoints/{ep}/disable`: its messages wait, new ones make no delivery.
async fn disable(
    State(state): Shared,
    Path(ep): Path<String>,
    posted: Posted<NoFields>,
) -> Result<Redirect, PortalAnswer> {
    set_disabled(&state, &posted.customer, &ep, true).await
}

/// `POST /portal/endpoints/{ep}/enable`: its waiting retries are due again.
async fn enable(
    State(state): Shared,
    Path(ep): Path<String>,
    posted: Posted<NoFields>,
) -> Result<Redirect, PortalAnswer> {
    set_disabled(&state, &posted.customer, &ep, false).await
}

/// The delete form: its confirmation box.
#[derive(Deserialize)]
struct Confirm {
    #[serde(default)]
    confirm: Option<String>,
}

/// `POST /portal/endpoints/{ep}/delete`: only with "I understand" ticked (else 422,
/// nothing deleted); then to the list.
async fn delete(
    State(state): Shared,
    Path(ep): Path<String>,
    posted: Posted<Confirm>,
) -> Result<Redirect, PortalAnswer> {
    let customer = posted.customer;
    own(&state, &customer, &ep).await?;
    if posted.form.confirm.is_none() {
        return Err(PortalAnswer::Rejected(vec![
            "Tick \u{201c}I understand\u{201d} to delete the endpoint: nothing was deleted.".to_owned(),
        ]));
    }
    let by = customer.actor();
    state.api.store.delete_endpoint(customer.app(), Lookup::Id(ep), &by, state.now_ms()).await?;
    Ok(Redirect::to(NAV))
}

/// `GET /portal/endpoints/{ep}/secret`: the signing secret, on a page of its own.
async fn secret(
    State(state): Shared,
    customer: Customer,
    Path(ep): Path<String>,
) -> Result<Html<String>, PortalAnswer> {
    let endpoint = own(&state, &customer, &ep).await?;
    let secret = current_secret(&state.api, customer.app(), Lookup::Id(endpoint.id.clone())).await?;
    let back = path_of(&endpoint.id);
    let body = format!(
        "<p>Verify each webhook's signature with this secret (Svix's libraries take it as it is).</p>\
         <p><label for=\"secret\">Signing secret</label> \
         <input id=\"secret\" type=\"text\" readonly value=\"{}\" size=\"48\"></p><p><a href=\"{}\">Back to the endpoint</a></p>",
        esc(&secret.reveal()),
        esc(&back)
    );
    Ok(frame(&state, &customer, NAV, "Signing secret", &[(NAV, "Endpoints"), (&back, &endpoint.url)], &body))
}

/// `POST /portal/endpoints/{ep}/secret/rotate`: a new secret (the API's rotate, the old one
/// signing on for a day beside it), then back to the endpoint.
async fn rotate(
    State(state): Shared,
    Path(ep): Path<String>,
    posted: Posted<NoFields>,
) -> Result<Redirect, PortalAnswer> {
    let customer = posted.customer;
    let lookups = (customer.app(), Lookup::Id(ep.clone()));
    rotate_secret(&state.api, lookups, None, DEFAULT_GRACE_PERIOD_SECONDS, &customer.actor()).await?;
    Ok(Redirect::to(&format!("/portal/endpoints/{ep}?rotated=1")))
}

/// The test event form: an event type of the catalog.
#[derive(Deserialize)]
struct TestEvent {
    #[serde(default)]
    event_type: String,
}

/// `POST /portal/endpoints/{ep}/test`: the API's `send-example` of the chosen type to this
/// endpoint alone, then to the message's page.
async fn test_event(
    State(state): Shared,
    Path(ep): Path<String>,
    posted: Posted<TestEvent>,
) -> Result<Redirect, PortalAnswer> {
    let customer = posted.customer;
    let lookups = (customer.app(), Lookup::Id(ep));
    let message =
        send_example_to(&state.api, lookups, &posted.form.event_type, 0, None).await.map_err(
            |answer| match answer {
                OutboundAnswer::Invalid(_) => {
                    PortalAnswer::Rejected(vec!["Pick an event type of the list.".to_owned()])
                }
                other => other.into(),
            },
        )?;
    Ok(Redirect::to(&format!("/portal/messages/{}", message.id)))
}

/// An endpoint's custom headers from the form's text: one `Name: value` a line, blank
/// lines skipped; a line without `:` is named in the error (by its number, not its text).
fn headers_of(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut headers = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("Line {} is not \u{201c}Name: value\u{201d}.", n + 1));
        };
        headers.insert(name.trim().to_owned(), value.trim().to_owned());
    }
    Ok(headers)
}

/// Sets the headers (the API's `PUT …/headers`).
async fn put_headers(
    state: &PortalState,
    customer: &Customer,
    ep: &str,
    headers: BTreeMap<String, String>,
) -> Result<(), OutboundAnswer> {
    set_endpoint_headers(&state.api, customer.app(), Lookup::Id(ep.to_owned()), headers, &customer.actor()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_success_rate_counts_finished_deliveries_only() {
        assert_eq!(success_rate(0, 0), None);
        assert_eq!(success_rate(1, 0).as_deref(), Some("100.0 %"));
        assert_eq!(success_rate(2, 1).as_deref(), Some("66.7 %"));
    }

    #[test]
    fn headers_are_one_name_and_value_a_line() {
        let parsed = headers_of("X-One: a:b\n\n  X-Two :c  \n").unwrap_or_default();
        assert_eq!(parsed.get("X-One").map(String::as_str), Some("a:b"));
        assert_eq!(parsed.get("X-Two").map(String::as_str), Some("c"));
        assert_eq!(headers_of("ok: 1\nnot a header"), Err("Line 2 is not \u{201c}Name: value\u{201d}.".to_owned()));
    }
}
