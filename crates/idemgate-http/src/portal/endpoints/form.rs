//! Adding and editing an endpoint: one form (URL, description, event types from the
//! catalog, rate limit), checked by the API's own rules (`[api] allow_http`,
//! `allow_networks`, core's event type names). A refused field shows the form again with
//! its error (422) and nothing is stored.

use std::fmt::Write as _;

use axum::{
    extract::{Path, State},
    response::{Html, Redirect},
};
use idemgate_store::outbound::{Lookup, endpoint::Endpoint};

use super::{NAV, catalog, frame, own, path_of};
use crate::{
    answer::{OutboundAnswer, PortalAnswer},
    console::ui::esc,
    outbound::{
        endpoints::{Fields, create_endpoint, patch_endpoint},
        wire::{EndpointPatch, Metadata, Patch},
    },
    portal::{Customer, PortalState, Posted, Shared},
};

/// The form's fields as posted (every checked event type is one `event_types` pair).
#[derive(Debug, Default, Clone)]
pub(super) struct EndpointForm {
    url: String,
    description: String,
    event_types: Vec<String>,
    rate_limit: String,
}

impl EndpointForm {
    fn of_pairs(pairs: Vec<(String, String)>) -> Self {
        let mut form = Self::default();
        for (name, value) in pairs {
            match name.as_str() {
                "url" => form.url = value.trim().to_owned(),
                "description" => form.description = value,
                "event_types" => form.event_types.push(value),
                "rate_limit" => form.rate_limit = value,
                _ => {}
            }
        }
        form
    }

    fn of_endpoint(ep: &Endpoint) -> Self {
        Self {
            url: ep.url.clone(),
            description: ep.description.clone(),
            event_types: ep.event_types.clone().unwrap_or_default(),
            rate_limit: ep.throttle_rate.map(|rate| rate.to_string()).unwrap_or_default(),
        }
    }

    /// The chosen event types: `None` (all) when none is ticked.
    fn types(&self) -> Option<Vec<String>> {
        (!self.event_types.is_empty()).then(|| self.event_types.clone())
    }

    /// The rate limit: empty is none; else a whole number of messages per second.
    fn rate(&self) -> Result<Option<u16>, Errors> {
        let text = self.rate_limit.trim();
        if text.is_empty() {
            return Ok(None);
        }
        match text.parse::<u16>() {
            Ok(rate) if rate > 0 => Ok(Some(rate)),
            _ => Err(Errors::one("rate_limit", "Write a whole number from 1 to 65535, or leave it empty.")),
        }
    }
}

/// Each refused field's error (field name, words), and errors of no one field.
#[derive(Debug, Default)]
struct Errors(Vec<(&'static str, String)>);

impl Errors {
    fn one(field: &'static str, words: &str) -> Self {
        Self(vec![(field, words.to_owned())])
    }

    /// The API's refusal as the form's errors: each item at the field its `loc` names.
    fn of(answer: OutboundAnswer) -> Result<Self, PortalAnswer> {
        match answer {
            OutboundAnswer::Invalid(items) => Ok(Self(
                items
                    .into_iter()
                    .map(|item| {
                        let field = match item.loc.get(1).map(String::as_str) {
                            Some("url") => "url",
                            Some("eventTypes") => "event_types",
                            Some("throttleRate") => "rate_limit",
                            _ => "form",
                        };
                        (field, format!("{}.", capitalised(&item.msg)))
                    })
                    .collect(),
            )),
            other => Err(other.into()),
        }
    }

    fn of_field(&self, field: &str) -> Option<&str> {
        self.0.iter().find(|(f, _)| *f == field).map(|(_, words)| words.as_str())
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.trim_end_matches('.').chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// A labelled input's error paragraph and the attributes tying it to the input.
fn described(id: &str, error: Option<&str>) -> (String, String) {
    match error {
        Some(words) => (
            format!(" aria-describedby=\"{id}-error\" aria-invalid=\"true\""),
            format!("<p id=\"{id}-error\" class=\"field-error\">{}</p>", esc(words)),
        ),
        None => (String::new(), String::new()),
    }
}

/// The form, posting to `action`, filled with `form`, showing `errors`; the event types are
/// the catalog's and any the endpoint has already.
fn form_html(
    customer: &Customer,
    action: &str,
    button: &str,
    form: &EndpointForm,
    types: &[String],
    errors: &Errors,
) -> String {
    let mut html =
        format!("<form method=\"post\" action=\"{action}\" class=\"endpoint-form\">{}", customer.csrf_field());
    if let Some(words) = errors.of_field("form") {
        let _ = write!(html, "<p class=\"field-error\" role=\"alert\">{}</p>", esc(words));
    }
    let (attrs, error) = described("url", errors.of_field("url"));
    let _ = write!(
        html,
        "<p><label for=\"url\">URL</label><br><input id=\"url\" name=\"url\" type=\"url\" required size=\"60\" \
         value=\"{}\"{attrs}>{error}</p>",
        esc(&form.url)
    );
    let _ = write!(
        html,
        "<p><label for=\"description\">Description</label><br><input id=\"description\" name=\"description\" \
         type=\"text\" size=\"60\" value=\"{}\"></p>",
        esc(&form.description)
    );
    let (attrs, error) = described("event-types", errors.of_field("event_types"));
    let _ = write!(html, "<fieldset id=\"event-types\"{attrs}><legend>Event types</legend>");
    let mut all: Vec<&String> = types.iter().collect();
    all.extend(form.event_types.iter().filter(|t| !types.contains(t)));
    if all.is_empty() {
        html.push_str("<p>The catalog has no event types yet: this endpoint receives every message.</p>");
    } else {
        html.push_str("<p>Tick none to receive every event type.</p>");
    }
    for (i, name) in all.iter().enumerate() {
        let checked = if form.event_types.contains(name) { " checked" } else { "" };
        let _ = write!(
            html,
            "<label for=\"type-{i}\"><input id=\"type-{i}\" type=\"checkbox\" name=\"event_types\" value=\"{}\"{checked}> {}</label><br>",
            esc(name),
            esc(name)
        );
    }
    let _ = write!(html, "{error}</fieldset>");
    let (attrs, error) = described("rate-limit", errors.of_field("rate_limit"));
    let _ = write!(
        html,
        "<p><label for=\"rate-limit\">Rate limit (messages per second, empty: none)</label><br>\
         <input id=\"rate-limit\" name=\"rate_limit\" type=\"text\" inputmode=\"numeric\" size=\"8\" value=\"{}\"{attrs}>{error}</p>\
         <p><button type=\"submit\">{}</button></p></form>",
        esc(&form.rate_limit),
        esc(button)
    );
    html
}

/// The add page, filled with `form` and showing `errors`.
async fn add_page(
    state: &PortalState,
    customer: &Customer,
    form: &EndpointForm,
    errors: &Errors,
) -> Result<Html<String>, PortalAnswer> {
    let types = catalog(state).await?;
    let body = form_html(customer, "/portal/endpoints", "Add endpoint", form, &types, errors);
    Ok(frame(state, customer, NAV, "Add an endpoint", &[(NAV, "Endpoints")], &body))
}

/// The edit page of `ep`, filled with `form` and showing `errors`.
async fn edit_page(
    state: &PortalState,
    customer: &Customer,
    ep: &Endpoint,
    form: &EndpointForm,
    errors: &Errors,
) -> Result<Html<String>, PortalAnswer> {
    let types = catalog(state).await?;
    let back = path_of(&ep.id);
    let body = form_html(customer, &esc(&back), "Save", form, &types, errors);
    Ok(frame(state, customer, NAV, "Edit the endpoint", &[(NAV, "Endpoints"), (&back, &ep.url)], &body))
}

/// `GET /portal/endpoints/new`.
pub(super) async fn new(State(state): Shared, customer: Customer) -> Result<Html<String>, PortalAnswer> {
    add_page(&state, &customer, &EndpointForm::default(), &Errors::default()).await
}

/// `POST /portal/endpoints`: the API's create; 303 to the new endpoint's page, or the form
/// again with its errors (422), nothing created.
pub(super) async fn create(
    State(state): Shared,
    posted: Posted<Vec<(String, String)>>,
) -> Result<Redirect, PortalAnswer> {
    let customer = posted.customer;
    let form = EndpointForm::of_pairs(posted.form);
    let rate = match form.rate() {
        Ok(rate) => rate,
        Err(errors) => return refuse(add_page(&state, &customer, &form, &errors).await),
    };
    let fields = Fields {
        url: form.url.clone(),
        description: form.description.clone(),
        uid: None,
        disabled: false,
        event_types: form.types(),
        channels: None,
        metadata: Metadata::new(),
        throttle_rate: rate,
    };
    match create_endpoint(&state.api, customer.app(), fields, Default::default(), None, &customer.actor()).await {
        Ok(created) => Ok(Redirect::to(&format!("/portal/endpoints/{}", created.id))),
        Err(answer) => refuse(add_page(&state, &customer, &form, &Errors::of(answer)?).await),
    }
}

/// The form shown again (422), or why it cannot be.
pub(super) fn refuse(page: Result<Html<String>, PortalAnswer>) -> Result<Redirect, PortalAnswer> {
    let Html(page) = page?;
    Err(PortalAnswer::Invalid(page))
}

/// `GET /portal/endpoints/{ep}/edit`.
pub(super) async fn edit(
    State(state): Shared,
    customer: Customer,
    Path(ep): Path<String>,
) -> Result<Html<String>, PortalAnswer> {
    let endpoint = own(&state, &customer, &ep).await?;
    edit_page(&state, &customer, &endpoint, &EndpointForm::of_endpoint(&endpoint), &Errors::default()).await
}

/// `POST /portal/endpoints/{ep}`: the API's `PATCH` of URL, description, event types and
/// rate limit; 303 to the endpoint's page, or the form again with its errors (422),
/// nothing changed.
pub(super) async fn update(
    State(state): Shared,
    Path(ep): Path<String>,
    posted: Posted<Vec<(String, String)>>,
) -> Result<Redirect, PortalAnswer> {
    let customer = posted.customer;
    let endpoint = own(&state, &customer, &ep).await?;
    let form = EndpointForm::of_pairs(posted.form);
    let rate = match form.rate() {
        Ok(rate) => rate,
        Err(errors) => return refuse(edit_page(&state, &customer, &endpoint, &form, &errors).await),
    };
    let patch = EndpointPatch {
        url: Some(form.url.clone()),
        description: Some(form.description.clone()),
        event_types: form.types().map_or(Patch::Null, Patch::Value),
        throttle_rate: rate.map_or(Patch::Null, Patch::Value),
        ..EndpointPatch::default()
    };
    let ep = Lookup::Id(endpoint.id.clone());
    match patch_endpoint(&state.api, customer.app(), ep, patch, &customer.actor()).await {
        Ok(_) => Ok(Redirect::to(&format!("/portal/endpoints/{}", endpoint.id))),
        Err(answer) => refuse(edit_page(&state, &customer, &endpoint, &form, &Errors::of(answer)?).await),
    }
}
