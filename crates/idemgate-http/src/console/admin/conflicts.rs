//! The conflicts: the conflicting bodies recorded, and their series over the last hour
//! or day.

use axum::{Json, extract::State};
use idemgate_store::views::ConflictFilter;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{AdminQuery, When, resolve},
    openapi::ReadRefusals,
    series::SeriesQuery,
};
use crate::{
    answer::AdminError,
    console::{
        state::AdminState,
        views::{self, ConflictsPage, Window},
    },
};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new().routes(routes!(conflict_series)).routes(routes!(list_conflicts))
}

#[derive(Debug, Serialize, ToSchema)]
struct ConflictBucket {
    source: String,
    /// Where the bucket starts (unix seconds).
    start: i64,
    /// Identities whose receipt met another body for the first time in it.
    conflicts: u64,
}

/// Conflicting repeats (same identity, other bytes) over the last hour (per minute) or day
/// (per half hour), by source, counted when each other body was first seen; buckets
/// without any are left out.
#[utoipa::path(get, path = "/admin/v1/conflicts/series", params(SeriesQuery),
    responses((status = 200, body = Vec<ConflictBucket>), ReadRefusals))]
async fn conflict_series(
    State(state): State<AdminState>,
    AdminQuery(query): AdminQuery<SeriesQuery>,
) -> Result<Json<Vec<ConflictBucket>>, AdminError> {
    let window = query.window.unwrap_or(Window::Hour);
    let series = state.store.conflict_series(window.since(state.clock.now()), window.span().1).await?;
    Ok(Json(
        series
            .into_iter()
            .map(|b| ConflictBucket { source: b.source, start: b.start.0, conflicts: b.conflicts })
            .collect(),
    ))
}

/// Filters of the conflict listing.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ConflictsQuery {
    /// Only this source.
    source: Option<String>,
    /// Only this identity (exactly).
    identity: Option<String>,
    /// Only bodies last seen at or after: unix seconds, RFC 3339, a date or a duration back
    /// from now (`1h`).
    #[param(value_type = Option<String>)]
    since: Option<When>,
    /// Only bodies first seen before, in the same forms.
    #[param(value_type = Option<String>)]
    until: Option<When>,
    /// The cursor: `next_after` of the previous page.
    after: Option<String>,
    /// Page size (1 to 500, default 50).
    limit: Option<usize>,
}

/// List the conflicting bodies recorded (deliveries refused `409`: an identity already
/// recorded with other bytes), newest first seen first: each with its event, the body's
/// hash (never the body), when it was first and last seen, and how often.
#[utoipa::path(get, path = "/admin/v1/conflicts", params(ConflictsQuery),
    responses((status = 200, body = ConflictsPage), ReadRefusals))]
async fn list_conflicts(
    State(state): State<AdminState>,
    AdminQuery(query): AdminQuery<ConflictsQuery>,
) -> Result<Json<ConflictsPage>, AdminError> {
    let after = match query.after.as_deref() {
        None => None,
        Some(text) => Some(views::parse_conflict_cursor(text).ok_or(AdminError::BadRequest("bad_cursor"))?),
    };
    let now = state.clock.now();
    let filter = ConflictFilter {
        source: query.source,
        identity: query.identity,
        since: resolve(query.since, now),
        until: resolve(query.until, now),
        after,
        limit: query.limit.unwrap_or(50).clamp(1, 500),
    };
    Ok(Json(views::conflicts_page(&state.store, filter).await?))
}
