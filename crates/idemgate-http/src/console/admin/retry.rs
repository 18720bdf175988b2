//! Retry-now: waiting (pending or retrying) jobs made due now, one event's or every job a
//! filter selects.

use axum::{
    Json,
    extract::{Extension, State},
};
use idemgate_core::job::JobState;
use idemgate_store::{
    audit::{Action, Audit, target},
    jobs::ReplayFilter,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    events::existing,
    extract::{AdminJson, AdminPath, AdminQuery, When, resolve},
    openapi::{BulkRefusals, ChangeRefusals, WaitingState},
};
use crate::{access::Principal, answer::AdminError, console::state::AdminState};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new().routes(routes!(retry_event)).routes(routes!(retry_bulk))
}

#[derive(Debug, Serialize, ToSchema)]
struct Retried {
    /// How many waiting jobs were made due now (one already due is not counted).
    retried: usize,
}

#[derive(Debug, Default, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
struct RetryQuery {
    /// Only jobs in this state: pending or retrying (default both).
    #[param(value_type = Option<WaitingState>, inline)]
    state: Option<String>,
}

fn waiting_state(state: Option<&str>) -> Result<Option<JobState>, AdminError> {
    match state.map(str::parse::<JobState>) {
        None => Ok(None),
        Some(Ok(state)) if state.is_claimable() => Ok(Some(state)),
        Some(_) => Err(AdminError::BadRequest("state_not_waiting")),
    }
}

/// Make one event's waiting (pending or retrying) jobs due now; their attempts so far count.
#[utoipa::path(post, path = "/admin/v1/events/{source}/{identity}/retry",
    params(("source" = String, Path), ("identity" = String, Path), RetryQuery),
    responses((status = 200, body = Retried), ChangeRefusals))]
async fn retry_event(
    State(state): State<AdminState>,
    Extension(who): Extension<Principal>,
    AdminPath((source, identity)): AdminPath<(String, String)>,
    AdminQuery(query): AdminQuery<RetryQuery>,
) -> Result<Json<Retried>, AdminError> {
    existing(&state.store, &source, &identity).await?;
    let filter = ReplayFilter {
        source: Some(source),
        identity: Some(identity),
        state: waiting_state(query.state.as_deref())?,
        ..ReplayFilter::default()
    };
    let audit = Audit::new(who.name, Action::Retry, target::filter(&filter));
    let retried = state.store.audited(audit).retry_now(filter, state.clock.now_ms()).await?;
    Ok(Json(Retried { retried }))
}

/// A bulk retry-now's filter.
#[derive(Debug, Default, Deserialize, ToSchema)]
struct RetryRequest {
    source: Option<String>,
    destination: Option<String>,
    /// pending or retrying (default both).
    #[schema(value_type = Option<WaitingState>)]
    state: Option<String>,
    /// Received at or after: unix seconds, RFC 3339, a date or a duration back from now (`1h`).
    #[schema(value_type = Option<String>)]
    since: Option<When>,
    /// Received before: unix seconds, RFC 3339, a date or a duration back from now (`1h`).
    #[schema(value_type = Option<String>)]
    until: Option<When>,
}

/// Make every waiting job matching the filter due now; finished jobs are replay's.
#[utoipa::path(post, path = "/admin/v1/retry", request_body = RetryRequest,
    responses((status = 200, body = Retried), BulkRefusals))]
async fn retry_bulk(
    State(state): State<AdminState>,
    Extension(who): Extension<Principal>,
    AdminJson(request): AdminJson<RetryRequest>,
) -> Result<Json<Retried>, AdminError> {
    let now = state.clock.now();
    let filter = ReplayFilter {
        source: request.source,
        destination: request.destination,
        state: waiting_state(request.state.as_deref())?,
        since: resolve(request.since, now),
        until: resolve(request.until, now),
        identity: None,
    };
    let audit = Audit::new(who.name, Action::Retry, target::filter(&filter));
    let retried = state.store.audited(audit).retry_now(filter, state.clock.now_ms()).await?;
    Ok(Json(Retried { retried }))
}
