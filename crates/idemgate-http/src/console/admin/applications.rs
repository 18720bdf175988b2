//! The sending side's applications, read-only: the listing with each application's
//! endpoint counts and the counts that say something is wrong, one application with its
//! endpoints, its latest messages, one message with its deliveries and attempts, and an
//! endpoint's latest attempts. Endpoints are the customer's, changed through `/api/v1`;
//! nothing here shows a signing secret or a custom header's value.

use axum::{Json, extract::State};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{AdminPath, AdminQuery},
    openapi::{LookupRefusals, ReadRefusals},
};
use crate::{
    answer::AdminError,
    console::{
        applications::{
            self, ApplicationDetail, ApplicationsPage, AttemptsPage, MessageDetail, MessagesPage, ViewError,
        },
        state::AdminState,
    },
};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_applications))
        .routes(routes!(show_application))
        .routes(routes!(list_messages))
        .routes(routes!(show_message))
        .routes(routes!(endpoint_attempts))
}

impl From<ViewError> for AdminError {
    fn from(err: ViewError) -> Self {
        match err {
            ViewError::NotFound => Self::UnknownApplication,
            ViewError::BadCursor => Self::BadRequest("bad_cursor"),
            ViewError::Store(err) => Self::Store(err),
        }
    }
}

/// A page of a listing by id.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct AfterQuery {
    /// The cursor: `next_after` of the previous page.
    after: Option<String>,
    /// Page size (1 to 250, default 50).
    limit: Option<usize>,
}

/// A page of a listing newest first.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct BeforeQuery {
    /// The cursor: `next_before` of the previous page.
    before: Option<String>,
    /// Page size (1 to 250, default 50).
    limit: Option<usize>,
}

/// Default page size.
const PAGE: usize = 50;

/// List the applications, by id, each with its endpoint counts: how many endpoints, how
/// many disabled or paused, how many with retrying or dead jobs, and their jobs by state.
#[utoipa::path(get, path = "/admin/v1/applications", params(AfterQuery),
    responses((status = 200, body = ApplicationsPage), ReadRefusals))]
async fn list_applications(
    State(state): State<AdminState>,
    AdminQuery(query): AdminQuery<AfterQuery>,
) -> Result<Json<ApplicationsPage>, AdminError> {
    let page =
        applications::applications_page(&state.store, query.after, query.limit.unwrap_or(PAGE), state.clock.now())
            .await?;
    Ok(Json(page))
}

/// One application (by id or uid) with its endpoints: URL, state, filters, rate limit,
/// custom header names (never values, never secrets), jobs by state, health.
#[utoipa::path(get, path = "/admin/v1/applications/{app}", params(("app" = String, Path, description = "Its id or uid")),
    responses((status = 200, body = ApplicationDetail), LookupRefusals))]
async fn show_application(
    State(state): State<AdminState>,
    AdminPath(app): AdminPath<String>,
) -> Result<Json<ApplicationDetail>, AdminError> {
    Ok(Json(applications::application_detail(&state.store, &app, state.clock.now()).await?))
}

/// The application's messages, newest first, each with its deliveries by status.
#[utoipa::path(get, path = "/admin/v1/applications/{app}/messages",
    params(("app" = String, Path, description = "Its id or uid"), BeforeQuery),
    responses((status = 200, body = MessagesPage), LookupRefusals))]
async fn list_messages(
    State(state): State<AdminState>,
    AdminPath(app): AdminPath<String>,
    AdminQuery(query): AdminQuery<BeforeQuery>,
) -> Result<Json<MessagesPage>, AdminError> {
    let page = applications::messages_page(&state.store, &app, query.before, query.limit.unwrap_or(PAGE)).await?;
    Ok(Json(page))
}

/// One message (by id or `eventId`): its payload unless retention purged it, its
/// deliveries (one per endpoint) and its attempts with status code and duration.
#[utoipa::path(get, path = "/admin/v1/applications/{app}/messages/{msg}",
    params(("app" = String, Path, description = "Its id or uid"), ("msg" = String, Path, description = "Its id or eventId")),
    responses((status = 200, body = MessageDetail), LookupRefusals))]
async fn show_message(
    State(state): State<AdminState>,
    AdminPath((app, msg)): AdminPath<(String, String)>,
) -> Result<Json<MessageDetail>, AdminError> {
    Ok(Json(applications::message_detail(&state.store, &app, &msg).await?))
}

/// An endpoint's (by id or uid) attempts, newest first: message, status code, duration.
#[utoipa::path(get, path = "/admin/v1/applications/{app}/endpoints/{endpoint}/attempts",
    params(("app" = String, Path, description = "Its id or uid"), ("endpoint" = String, Path, description = "Its id or uid"), AfterQuery),
    responses((status = 200, body = AttemptsPage), LookupRefusals))]
async fn endpoint_attempts(
    State(state): State<AdminState>,
    AdminPath((app, endpoint)): AdminPath<(String, String)>,
    AdminQuery(query): AdminQuery<AfterQuery>,
) -> Result<Json<AttemptsPage>, AdminError> {
    let limit = query.limit.unwrap_or(PAGE);
    Ok(Json(applications::endpoint_attempts(&state.store, (&app, &endpoint), query.after.as_deref(), limit).await?))
}
