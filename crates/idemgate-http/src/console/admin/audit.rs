//! The audit log of every state-changing admin action.

use axum::{Json, extract::State};
use idemgate_store::audit::{Action, AuditFilter};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    extract::{AdminQuery, When, resolve},
    openapi::{AuditAction, ReadRefusals},
};
use crate::{
    answer::AdminError,
    console::{
        state::AdminState,
        views::{self, AuditEntry},
    },
};

/// The routes of this resource.
pub(super) fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new().routes(routes!(list_audit))
}

/// Filters of the audit log.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct AuditQuery {
    /// Only actions at or after: unix seconds, RFC 3339, a date or a duration back from
    /// now (`1h`).
    #[param(value_type = Option<String>)]
    since: Option<When>,
    /// Only this token's actions (`cli`: the command line's).
    token: Option<String>,
    /// Only this action: replay, replay_to, retry or enable.
    #[param(value_type = Option<AuditAction>, inline)]
    action: Option<String>,
    /// At most this many (1 to 500, default 100).
    limit: Option<usize>,
}

/// The audit log: every state-changing admin action (API, dashboard, CLI), newest first.
#[utoipa::path(get, path = "/admin/v1/audit", params(AuditQuery),
    responses((status = 200, body = Vec<AuditEntry>), ReadRefusals))]
async fn list_audit(
    State(state): State<AdminState>,
    AdminQuery(query): AdminQuery<AuditQuery>,
) -> Result<Json<Vec<AuditEntry>>, AdminError> {
    let action = match query.action.as_deref() {
        None => None,
        Some(name) => Some(Action::parse(name).ok_or(AdminError::BadRequest("unknown_action"))?),
    };
    let filter = AuditFilter {
        since: resolve(query.since, state.clock.now()),
        token: query.token,
        action,
        limit: query.limit.unwrap_or(100).clamp(1, 500),
    };
    Ok(Json(views::audit(&state.store, filter).await?))
}
