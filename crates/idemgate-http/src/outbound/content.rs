//! The content expunges (`v1.message.expunge-content`, `v1.message-attempt.expunge-content`):
//! a message's payload, or one attempt's stored response, removed for good, `204`. The
//! message's receipt, ids, status, jobs and attempts stay: a repeat of its `eventId` is
//! still judged by the fingerprint it was accepted with, and answered with the original
//! message, whose payload then reads `{"expired":true}`. Its deliveries still waiting end
//! `dead` ("content expunged") rather than send an empty body. Both need the `admin` role
//! (Svix's server takes an organisation's token for them, never an application's).
//! Each is audited under the caller, in the expunge's transaction.

use std::sync::Arc;

use axum::{
    Router,
    extract::Path,
    response::{IntoResponse, Response},
    routing::delete,
};
use idemgate_core::outbound::id::AttemptId;
use idemgate_store::outbound::Lookup;

use super::{ApiState, Shared, auth::By};
use crate::answer::{OutboundAnswer, api_not_found};

pub(super) fn routes() -> Router<Arc<ApiState>> {
    Router::new().route("/app/{app_id}/msg/{msg_id}/content", delete(expunge_message).fallback(api_not_found)).route(
        "/app/{app_id}/msg/{msg_id}/attempt/{attempt_id}/content",
        delete(expunge_attempt).fallback(api_not_found),
    )
}

async fn expunge_message(
    state: Shared,
    By(by): By,
    Path((app, msg)): Path<(String, String)>,
) -> Result<Response, OutboundAnswer> {
    let (app, msg) = (Lookup::application(&app), Lookup::message(&msg));
    state.store.expunge_message_content(app, msg, &by, state.now_ms()).await?;
    Ok(OutboundAnswer::NoContent.into_response())
}

async fn expunge_attempt(
    state: Shared,
    By(by): By,
    Path((app, msg, attempt)): Path<(String, String, String)>,
) -> Result<Response, OutboundAnswer> {
    let row = AttemptId::parse(&attempt).ok().and_then(|id| id.row()).ok_or(OutboundAnswer::NotFound)?;
    let (app, msg) = (Lookup::application(&app), Lookup::message(&msg));
    state.store.expunge_attempt_content(app, msg, row, &by, state.now_ms()).await?;
    Ok(OutboundAnswer::NoContent.into_response())
}
