//! The counts per source: receipts, conflicts, jobs by state.

use axum::{Json, extract::State};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{AdminQuery, When, resolve},
    openapi::ReadRefusals,
};
use crate::{
    answer::AdminError,
    console::{
        state::AdminState,
        views::{self, SourceCounts},
    },
};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new().routes(routes!(stats))
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct StatsQuery {
    /// Only what arrived at or after: unix seconds, RFC 3339, a date or a duration back
    /// from now (`1h`).
    #[param(value_type = Option<String>)]
    since: Option<When>,
}

/// Counts per source: receipts, conflicts, jobs by state.
#[utoipa::path(get, path = "/admin/v1/stats", params(StatsQuery), responses((status = 200, body = Vec<SourceCounts>), ReadRefusals))]
async fn stats(
    State(state): State<AdminState>,
    AdminQuery(query): AdminQuery<StatsQuery>,
) -> Result<Json<Vec<SourceCounts>>, AdminError> {
    Ok(Json(views::source_counts(&state.store, resolve(query.since, state.clock.now())).await?))
}
