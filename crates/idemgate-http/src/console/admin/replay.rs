//! Replays of finished jobs: one event's, or every job a filter selects; with `to`, the
//! selected events sent to one destination.

use axum::{
    Json,
    extract::{Extension, State},
};
use idemgate_core::job::JobState;
use idemgate_store::{
    audit::{Action, Audit, target},
    jobs::{ReplayFilter, ReplayTo, ReplayedTo},
    views::UNMATCHED,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    events::existing,
    extract::{AdminJson, AdminPath, AdminQuery, When, resolve},
    openapi::{BulkRefusals, ChangeRefusals, ReplayState},
};
use crate::{access::Principal, answer::AdminError, console::state::AdminState, current::DestinationNames};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new().routes(routes!(replay_event)).routes(routes!(replay_bulk))
}

#[derive(Debug, Serialize, ToSchema)]
struct Replayed {
    /// Jobs made pending again (and, with `to`, jobs created).
    replayed: usize,
    /// With `to`: jobs created for events that had none for that destination.
    #[serde(skip_serializing_if = "Option::is_none")]
    created: Option<usize>,
}

impl Replayed {
    fn jobs(replayed: usize) -> Self {
        Self { replayed, created: None }
    }

    fn to(done: ReplayedTo) -> Self {
        Self { replayed: done.replayed + done.created, created: Some(done.created) }
    }
}

#[derive(Debug, Default, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
struct ReplayQuery {
    /// Jobs in this state are replayed: dead (default), superseded or succeeded; with `to`,
    /// absent or `unmatched`.
    #[param(value_type = Option<ReplayState>, inline)]
    state: Option<String>,
    /// Send to this destination: its missing job is created (pending), a finished one replayed.
    to: Option<String>,
}

/// A replay to the destination `to`: the state is absent (every selected event) or
/// `unmatched` (only events with no job).
fn replay_to(
    known: &DestinationNames,
    to: String,
    state: Option<&str>,
    selection: ReplayTo,
) -> Result<ReplayTo, AdminError> {
    let unmatched_only = match state {
        None => false,
        Some(UNMATCHED) => true,
        Some(_) => return Err(AdminError::BadRequest("state_not_for_replay_to")),
    };
    if !known.contains(&to) {
        return Err(AdminError::BadRequest("unknown_destination"));
    }
    Ok(ReplayTo { destination: to, unmatched_only, ..selection })
}

fn replay_state(state: Option<&str>) -> Result<Option<JobState>, AdminError> {
    match state.map(str::parse::<JobState>) {
        None => Ok(None),
        Some(Ok(state)) if state.is_replayable() => Ok(Some(state)),
        Some(_) => Err(AdminError::BadRequest("state_not_replayable")),
    }
}

/// Replay one event's finished jobs (same `webhook-id`).
#[utoipa::path(post, path = "/admin/v1/events/{source}/{identity}/replay",
    params(("source" = String, Path), ("identity" = String, Path), ReplayQuery),
    responses((status = 200, body = Replayed), ChangeRefusals))]
async fn replay_event(
    State(state): State<AdminState>,
    Extension(who): Extension<Principal>,
    AdminPath((source, identity)): AdminPath<(String, String)>,
    AdminQuery(query): AdminQuery<ReplayQuery>,
) -> Result<Json<Replayed>, AdminError> {
    existing(&state.store, &source, &identity).await?;
    if let Some(to) = query.to {
        let selection = ReplayTo { source: Some(source), identity: Some(identity), ..ReplayTo::default() };
        let to = replay_to(&state.destinations, to, query.state.as_deref(), selection)?;
        let audit = Audit::new(who.name, Action::ReplayTo, target::replay_to(&to));
        return Ok(Json(Replayed::to(state.store.audited(audit).replay_to(to, state.clock.now()).await?)));
    }
    let filter = ReplayFilter {
        source: Some(source),
        identity: Some(identity),
        state: replay_state(query.state.as_deref())?,
        ..ReplayFilter::default()
    };
    let audit = Audit::new(who.name, Action::Replay, target::filter(&filter));
    let replayed = state.store.audited(audit).replay_jobs(filter, state.clock.now(), 10_000).await?;
    Ok(Json(Replayed::jobs(replayed)))
}

/// A bulk replay's filter.
#[derive(Debug, Default, Deserialize, ToSchema)]
struct ReplayRequest {
    source: Option<String>,
    destination: Option<String>,
    /// dead (default), superseded or succeeded; with `to`, absent or `unmatched`.
    #[schema(value_type = Option<ReplayState>)]
    state: Option<String>,
    /// Send the selected events to this destination: the missing job is created
    /// (pending), a finished one replayed. Not with `destination`.
    to: Option<String>,
    /// Received at or after: unix seconds, RFC 3339, a date or a duration back from now (`1h`).
    #[schema(value_type = Option<String>)]
    since: Option<When>,
    /// Received before: unix seconds, RFC 3339, a date or a duration back from now (`1h`).
    #[schema(value_type = Option<String>)]
    until: Option<When>,
}

/// Replay every finished job matching the filter when the replay starts, each once.
#[utoipa::path(post, path = "/admin/v1/replay", request_body = ReplayRequest,
    responses((status = 200, body = Replayed), BulkRefusals))]
async fn replay_bulk(
    State(state): State<AdminState>,
    Extension(who): Extension<Principal>,
    AdminJson(request): AdminJson<ReplayRequest>,
) -> Result<Json<Replayed>, AdminError> {
    let now = state.clock.now();
    if let Some(to) = request.to {
        if request.destination.is_some() {
            return Err(AdminError::BadRequest("destination_with_to"));
        }
        let selection = ReplayTo {
            source: request.source,
            since: resolve(request.since, now),
            until: resolve(request.until, now),
            ..ReplayTo::default()
        };
        let to = replay_to(&state.destinations, to, request.state.as_deref(), selection)?;
        let audit = Audit::new(who.name, Action::ReplayTo, target::replay_to(&to));
        return Ok(Json(Replayed::to(state.store.audited(audit).replay_to(to, state.clock.now()).await?)));
    }
    let filter = ReplayFilter {
        source: request.source,
        destination: request.destination,
        state: replay_state(request.state.as_deref())?,
        since: resolve(request.since, now),
        until: resolve(request.until, now),
        identity: None,
    };
    let audit = Audit::new(who.name, Action::Replay, target::filter(&filter));
    let replayed =
        state.store.audited(audit).replay_all(filter, state.clock.now(), 500, |_, _| std::future::ready(())).await?;
    Ok(Json(Replayed::jobs(replayed)))
}
