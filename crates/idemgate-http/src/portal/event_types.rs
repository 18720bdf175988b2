//! The portal's event type catalog (`GET /portal/event-types`): each live event type a
//! page at a time, by name, with its description, its schema and the example payload the
//! API's `send-example` sends for it. Archived types are hidden, as the API's list hides
//! them unless asked; so are types behind a feature flag, which a customer's session does
//! not carry.

use std::{fmt::Write as _, sync::Arc};

use axum::{
    Router,
    extract::{RawQuery, State},
    response::Html,
    routing::get,
};
use idemgate_store::outbound::{ListQuery, Order, event_type::EventType};
use serde::Deserialize;

use super::{Customer, PortalState, Shared, layout::page};
use crate::{
    answer::PortalAnswer,
    console::ui::{empty_state, esc},
    outbound::messages::example_payload,
};

/// Event types on one page of the catalog.
const PAGE_SIZE: usize = 50;

/// The catalog, below `/portal`.
pub(super) fn routes() -> Router<Arc<PortalState>> {
    Router::new().route("/event-types", get(catalog))
}

/// Where a page of the catalog starts.
#[derive(Deserialize)]
struct At {
    /// The last event type's name of the page before.
    #[serde(default)]
    iterator: String,
}

/// `GET /portal/event-types`: a page of the catalog.
async fn catalog(
    State(state): Shared,
    customer: Customer,
    RawQuery(query): RawQuery,
) -> Result<Html<String>, PortalAnswer> {
    let at: At = serde_urlencoded::from_str(query.as_deref().unwrap_or(""))
        .map_err(|_| PortalAnswer::Rejected(vec!["The page asked for is not one this page links to.".to_owned()]))?;
    let list = ListQuery {
        limit: PAGE_SIZE,
        iterator: (!at.iterator.is_empty()).then_some(at.iterator),
        order: Order::Ascending,
    };
    let found = state.api.store.list_event_types(list, false).await?;
    let shown: Vec<&EventType> = found.data.iter().filter(|t| !t.archived && t.feature_flag.is_none()).collect();
    let mut body = String::new();
    if shown.is_empty() {
        body.push_str(&empty_state(
            "no-event-types",
            "No event type is described yet.",
            "Messages still reach your endpoints; ask your provider which events it sends.",
        ));
    }
    for (n, event_type) in shown.iter().enumerate() {
        body.push_str(&entry(n, event_type));
    }
    if let (false, Some(next)) = (found.done, &found.iterator) {
        let query = serde_urlencoded::to_string([("iterator", next.as_str())]).unwrap_or_default();
        let _ = write!(
            body,
            "<nav class=\"pager\" aria-label=\"pages of event types\"><a rel=\"next\" href=\"/portal/event-types?{}\">More</a></nav>",
            esc(&query)
        );
    }
    Ok(page(&state, &customer, "/portal/event-types", "Event types", &[], &body))
}

/// One event type: its name, description, schema and example.
fn entry(n: usize, event_type: &EventType) -> String {
    let mut html = format!(
        "<section class=\"event-type\" aria-labelledby=\"event-type-{n}\"><h2 id=\"event-type-{n}\"><code>{}</code>{}</h2>",
        esc(&event_type.name),
        if event_type.deprecated { " <span class=\"badge warn\">deprecated</span>" } else { "" },
    );
    if !event_type.description.is_empty() {
        let _ = write!(html, "<p>{}</p>", esc(&event_type.description));
    }
    html.push_str("<h3>Schema</h3>");
    match event_type.schemas.as_deref().and_then(pretty) {
        Some(schema) => {
            // Focusable: a long schema scrolls, and a keyboard must be able to scroll it.
            let _ = write!(html, "<pre class=\"schema\" tabindex=\"0\"><code>{}</code></pre>", esc(&schema));
        }
        None => html.push_str("<p class=\"muted\">No schema: any JSON object.</p>"),
    }
    html.push_str("<h3>Example payload</h3>");
    match example_payload(&event_type.name, event_type.schemas.as_deref(), 0).as_deref().and_then(pretty) {
        Some(example) => {
            let _ = write!(html, "<pre class=\"example\"><code>{}</code></pre>", esc(&example));
        }
        None => html.push_str("<p class=\"muted\">No example is given.</p>"),
    }
    html.push_str("</section>");
    html
}

/// JSON text, indented.
fn pretty(text: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(text).ok().and_then(|value| serde_json::to_string_pretty(&value).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_escapes_and_shows_the_schema_and_its_example() {
        let event_type = EventType {
            name: "order.paid".into(),
            description: "Paid <now>".into(),
            archived: false,
            deprecated: true,
            feature_flag: None,
            schemas: Some(r#"{"1":{"type":"object","examples":[{"n":"<1>"}]}}"#.into()),
            created_at_ms: 0,
            updated_at_ms: 0,
        };
        let html = entry(0, &event_type);
        assert!(html.contains("<p>Paid &lt;now&gt;</p>"), "{html}");
        assert!(html.contains("deprecated"), "{html}");
        assert!(
            html.contains("<pre class=\"example\"><code>{\n  &quot;n&quot;: &quot;&lt;1&gt;&quot;\n}</code></pre>"),
            "{html}"
        );
        let bare = EventType { schemas: None, ..event_type };
        assert!(entry(1, &bare).contains("No schema") && entry(1, &bare).contains("No example"));
    }
}
