//! The events: the listing with filters and cursor pagination, one event's history, and
//! its payload.

use axum::{Json, extract::State};
use idemgate_core::{Identity, ReceiptKey, SourceName, job::JobState};
use idemgate_store::{
    Store,
    views::{EventFilter, UNMATCHED},
};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{AdminPath, AdminQuery, When, resolve},
    openapi::{EventState, LookupRefusals, ReadRefusals},
};
use crate::{
    answer::AdminError,
    console::{
        state::AdminState,
        views::{self, EventDetail, EventPayloadView, EventsPage},
    },
};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new().routes(routes!(list_events)).routes(routes!(show_event)).routes(routes!(event_payload))
}

/// Filters of the event listing.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// Only this source.
    source: Option<String>,
    /// Only identities starting with this (a whole identity matches itself).
    identity: Option<String>,
    /// Only this event type.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    event_type: Option<String>,
    /// Only events with a job in this state; `unmatched`: only events with no job (for
    /// `destination`, when given: none for it).
    #[param(value_type = Option<EventState>, inline)]
    state: Option<String>,
    /// Only events with a job for this destination.
    destination: Option<String>,
    /// Received at or after: unix seconds, RFC 3339, a date or a duration back from now (`1h`).
    #[param(value_type = Option<String>)]
    since: Option<When>,
    /// Received before: unix seconds, RFC 3339, a date or a duration back from now (`1h`).
    #[param(value_type = Option<String>)]
    until: Option<When>,
    /// The cursor: `next_before` of the previous page.
    before: Option<i64>,
    /// Page size (1 to 500, default 50).
    limit: Option<usize>,
}

/// List events, newest first.
#[utoipa::path(get, path = "/admin/v1/events", params(ListQuery), responses((status = 200, body = EventsPage), ReadRefusals))]
async fn list_events(
    State(state): State<AdminState>,
    AdminQuery(query): AdminQuery<ListQuery>,
) -> Result<Json<EventsPage>, AdminError> {
    if let Some(s) = &query.state
        && s != UNMATCHED
        && s.parse::<JobState>().is_err()
    {
        return Err(AdminError::BadRequest("unknown_state"));
    }
    let limit = query.limit.unwrap_or(50).clamp(1, 500);
    let now = state.clock.now();
    let filter = EventFilter {
        source: query.source,
        identity_prefix: query.identity,
        event_type: query.event_type,
        state: query.state,
        destination: query.destination,
        since: resolve(query.since, now),
        until: resolve(query.until, now),
        before_id: query.before,
        limit,
    };
    Ok(Json(views::events_page(&state.store, filter).await?))
}

/// One event: its receipt, jobs and every delivery attempt.
#[utoipa::path(get, path = "/admin/v1/events/{source}/{identity}",
    params(("source" = String, Path), ("identity" = String, Path)),
    responses((status = 200, body = EventDetail), LookupRefusals))]
async fn show_event(
    State(state): State<AdminState>,
    AdminPath((source, identity)): AdminPath<(String, String)>,
) -> Result<Json<EventDetail>, AdminError> {
    views::event_detail(&state.store, &source, &identity).await?.map(Json).ok_or(AdminError::NotFound)
}

/// One event's headers as stored and its body, unless retention purged it.
#[utoipa::path(get, path = "/admin/v1/events/{source}/{identity}/payload",
    params(("source" = String, Path), ("identity" = String, Path)),
    responses((status = 200, body = EventPayloadView), LookupRefusals))]
async fn event_payload(
    State(state): State<AdminState>,
    AdminPath((source, identity)): AdminPath<(String, String)>,
) -> Result<Json<EventPayloadView>, AdminError> {
    views::event_payload(&state.store, &source, &identity).await?.map(Json).ok_or(AdminError::NotFound)
}
/// Refuses with 404 unless the event `identity` of `source` has a receipt.
pub(super) async fn existing(store: &Store, source: &str, identity: &str) -> Result<(), AdminError> {
    let (Ok(source), Ok(identity)) = (SourceName::new(source), Identity::new(identity)) else {
        return Err(AdminError::NotFound);
    };
    store.receipt(ReceiptKey { source, identity }).await?.map(|_| ()).ok_or(AdminError::NotFound)
}
