//! The destinations: their state, queue and health, their attempts over the last hour or
//! day, and re-enabling one.

use axum::{
    Json,
    extract::{Extension, State},
};
use idemgate_store::audit::{Action, Audit, target};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{AdminPath, AdminQuery},
    openapi::{ChangeRefusals, LookupRefusals, ReadRefusals},
    series::SeriesQuery,
};
use crate::{
    access::Principal,
    answer::AdminError,
    console::{
        state::AdminState,
        views::{self, AttemptSeries, DestinationView, Window},
    },
};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_destinations))
        .routes(routes!(destination_series))
        .routes(routes!(enable_destination))
}

/// Every destination that has jobs or was disabled: its state (enabled, disabled or
/// paused), jobs by state, latest success and failure, health from its attempts of the
/// last hour, and its circuit breaker.
#[utoipa::path(get, path = "/admin/v1/destinations", responses((status = 200, body = Vec<DestinationView>), ReadRefusals))]
async fn list_destinations(State(state): State<AdminState>) -> Result<Json<Vec<DestinationView>>, AdminError> {
    Ok(Json(views::destinations(&state.store, state.clock.now()).await?))
}

/// A destination's attempts over the last hour or day: per bucket, how many succeeded
/// (a 2xx, a broker's confirm, a smarthost's 250) and failed, and their mean and longest latency; buckets without attempts are left
/// out, as is everything for a destination without attempts in the window.
#[utoipa::path(get, path = "/admin/v1/destinations/{name}/series", params(("name" = String, Path), SeriesQuery),
    responses((status = 200, body = AttemptSeries), LookupRefusals))]
async fn destination_series(
    State(state): State<AdminState>,
    AdminPath(name): AdminPath<String>,
    AdminQuery(query): AdminQuery<SeriesQuery>,
) -> Result<Json<AttemptSeries>, AdminError> {
    let window = query.window.unwrap_or(Window::Hour);
    let now = state.clock.now();
    let series = views::attempt_series(&state.store, window, now).await?.into_iter().find(|s| s.destination == name);
    Ok(Json(series.unwrap_or_else(|| AttemptSeries {
        destination: name,
        since: window.since(now).0,
        width: window.span().1,
        buckets: Vec::new(),
    })))
}

#[derive(Debug, Serialize, ToSchema)]
struct Enabled {
    /// False when the destination was neither disabled nor paused.
    was_disabled: bool,
}

/// Resume deliveries to a destination disabled by a `410 Gone` or paused by its breaker;
/// a name that is neither configured nor in the store is 404, and nothing is recorded.
#[utoipa::path(post, path = "/admin/v1/destinations/{name}/enable", params(("name" = String, Path)),
    responses((status = 200, body = Enabled), ChangeRefusals))]
async fn enable_destination(
    State(state): State<AdminState>,
    Extension(who): Extension<Principal>,
    AdminPath(name): AdminPath<String>,
) -> Result<Json<Enabled>, AdminError> {
    let stored = || async { Ok::<_, AdminError>(state.store.destinations().await?.iter().any(|d| d.name == name)) };
    if !state.destinations.contains(&name) && !stored().await? {
        return Err(AdminError::UnknownDestination);
    }
    let audit = Audit::new(who.name, Action::Enable, target::destination(&name));
    let was_disabled = state.store.audited(audit).enable_destination(name, state.clock.now()).await?;
    Ok(Json(Enabled { was_disabled }))
}
