//! The rejected deliveries, counted by source and reason in memory: their totals since
//! the process started and their series over the last hour or day.

use axum::{Json, extract::State};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{extract::AdminQuery, openapi::ReadRefusals, series::SeriesQuery};
use crate::console::{state::AdminState, views::Window};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new().routes(routes!(rejections)).routes(routes!(rejection_series))
}

#[derive(Debug, Serialize, ToSchema)]
struct RejectionCount {
    source: String,
    reason: String,
    count: u64,
}

/// Rejected deliveries by source and bounded reason since the process started (counts
/// only: nothing of a rejected delivery is stored).
#[utoipa::path(get, path = "/admin/v1/rejections", responses((status = 200, body = Vec<RejectionCount>), ReadRefusals))]
async fn rejections(State(state): State<AdminState>) -> Json<Vec<RejectionCount>> {
    Json(
        state
            .rejections
            .snapshot()
            .into_iter()
            .map(|(source, reason, count)| RejectionCount { source, reason: reason.to_owned(), count })
            .collect(),
    )
}

#[derive(Debug, Serialize, ToSchema)]
struct RejectionBucket {
    /// Where the bucket starts (unix seconds).
    start: i64,
    reason: String,
    count: u64,
}

/// Rejected deliveries by bounded reason over the last hour (per minute) or day (per half
/// hour), every source together; buckets without rejections are left out (counts kept in
/// memory for a day).
#[utoipa::path(get, path = "/admin/v1/rejections/series", params(SeriesQuery),
    responses((status = 200, body = Vec<RejectionBucket>), ReadRefusals))]
async fn rejection_series(
    State(state): State<AdminState>,
    AdminQuery(query): AdminQuery<SeriesQuery>,
) -> Json<Vec<RejectionBucket>> {
    let window = query.window.unwrap_or(Window::Hour);
    let series = state.rejections.series(window.since(state.clock.now()), window.span().1);
    Json(
        series
            .into_iter()
            .map(|(start, reason, count)| RejectionBucket { start, reason: reason.to_owned(), count })
            .collect(),
    )
}
