//! Message attempts (`v1.message-attempt.list-by-msg`, `list-by-endpoint`, `get`): a
//! message's tries at its endpoints, newest first, read from the gateway's own attempt rows
//! (`docs/design/outbound-api.md` §3.3). A message or endpoint of another application is
//! 404. Of the lists' filters only `limit` and `iterator` are read so far. Also the
//! endpoint's deliveries by status (`v1.endpoint.get-stats`) and the endpoints a message
//! was sent to (`list-attempted-destinations`).

use std::sync::Arc;

use axum::{
    Router,
    extract::{Path, RawQuery},
    response::Response,
    routing::get,
};
use idemgate_core::outbound::id::AttemptId;
use idemgate_store::outbound::{
    Lookup,
    attempt::{Attempt, AttemptIterator, AttemptQuery, AttemptedDestination},
};

use super::{
    ApiState, Shared, messages,
    pagination::Page,
    wire::{EndpointStats, ListResponse, MessageAttemptOut, MessageEndpointOut, TriggerType, WireTime},
};
use crate::answer::{Done, OutboundAnswer, api_not_found};

pub(super) fn routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route("/app/{app_id}/attempt/msg/{msg_id}", get(by_message).fallback(api_not_found))
        .route("/app/{app_id}/attempt/endpoint/{endpoint_id}", get(by_endpoint).fallback(api_not_found))
        .route("/app/{app_id}/msg/{msg_id}/attempt/{attempt_id}", get(read).fallback(api_not_found))
        .route("/app/{app_id}/endpoint/{endpoint_id}/stats", get(stats).fallback(api_not_found))
        .route("/app/{app_id}/msg/{msg_id}/endpoint", get(destinations).fallback(api_not_found))
}

async fn by_message(
    state: Shared,
    Path((app, msg)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, OutboundAnswer> {
    let query = attempt_query(query.as_deref())?;
    let page = state.store.attempts_by_message(Lookup::application(&app), Lookup::message(&msg), query).await?;
    Ok(Done::Ok.with(ListResponse::of(page, attempt_out)))
}

async fn by_endpoint(
    state: Shared,
    Path((app, ep)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, OutboundAnswer> {
    let query = attempt_query(query.as_deref())?;
    let page = state.store.attempts_by_endpoint(Lookup::application(&app), Lookup::endpoint(&ep), query).await?;
    Ok(Done::Ok.with(ListResponse::of(page, attempt_out)))
}

async fn read(
    state: Shared,
    Path((app, msg, attempt)): Path<(String, String, String)>,
) -> Result<Response, OutboundAnswer> {
    let row = AttemptId::parse(&attempt).ok().and_then(|id| id.row()).ok_or(OutboundAnswer::NotFound)?;
    let found = state
        .store
        .attempt(Lookup::application(&app), Lookup::message(&msg), row)
        .await?
        .ok_or(OutboundAnswer::NotFound)?;
    Ok(Done::Ok.with(attempt_out(found)))
}

/// How far back `stats` reaches unless `since` is given.
const STATS_DEFAULT_SPAN_MS: i64 = 28 * 86_400_000;

/// `GET …/endpoint/{endpoint_id}/stats`: `until` defaults to now and may not be after it,
/// `since` to 28 days before `until` (400 `invalid_range` otherwise, as Svix's server).
async fn stats(
    state: Shared,
    Path((app, ep)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, OutboundAnswer> {
    let now = state.now_ms();
    let until = messages::time(query.as_deref(), "until")?.unwrap_or(now);
    let since = messages::time(query.as_deref(), "since")?.unwrap_or(until.saturating_sub(STATS_DEFAULT_SPAN_MS));
    if until > now || since > until {
        return Err(OutboundAnswer::BadRequest {
            code: "invalid_range",
            detail: "since must not be after until, nor until after now",
        });
    }
    let found = state.store.endpoint_stats(Lookup::application(&app), Lookup::endpoint(&ep), since, until).await?;
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    Ok(Done::Ok.with(EndpointStats {
        success: count(found.success),
        pending: count(found.pending),
        sending: count(found.sending),
        fail: count(found.fail),
        canceled: 0,
    }))
}

/// `GET …/msg/{msg_id}/endpoint`: the endpoints the message was sent to, by id.
async fn destinations(
    state: Shared,
    Path((app, msg)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, OutboundAnswer> {
    let page = Page::from_query(query.as_deref())?;
    let found =
        state.store.attempted_destinations(Lookup::application(&app), Lookup::message(&msg), page.list_query()).await?;
    Ok(Done::Ok.with(ListResponse::of(found, destination_out)))
}

fn destination_out(destination: AttemptedDestination) -> MessageEndpointOut {
    let endpoint = destination.endpoint;
    MessageEndpointOut {
        id: endpoint.id,
        url: endpoint.url,
        description: endpoint.description,
        created_at: WireTime(endpoint.created_at_ms),
        updated_at: WireTime(endpoint.updated_at_ms),
        uid: endpoint.uid,
        disabled: endpoint.disabled,
        event_types: endpoint.event_types,
        channels: endpoint.channels,
        throttle_rate: endpoint.throttle_rate,
        status: destination.status.into(),
        next_attempt: destination.next_attempt_ms.map(WireTime),
    }
}

/// The page a list's query asks for; an iterator that is not an attempt id is refused.
fn attempt_query(query: Option<&str>) -> Result<AttemptQuery, OutboundAnswer> {
    let page = Page::from_query(query)?;
    let iterator = page
        .iterator
        .as_deref()
        .map(|text| {
            AttemptIterator::parse(text)
                .ok_or_else(|| OutboundAnswer::invalid(&["query", "iterator"], "invalid iterator", "value_error"))
        })
        .transpose()?;
    Ok(AttemptQuery { limit: usize::from(page.limit), iterator })
}

/// A stored attempt as `MessageAttemptOut`; no answer reads as status code 0, as Svix's.
fn attempt_out(attempt: Attempt) -> MessageAttemptOut {
    MessageAttemptOut {
        status: attempt.status().into(),
        id: attempt.id,
        msg_id: attempt.msg_id,
        endpoint_id: attempt.endpoint_id,
        url: attempt.url,
        response: attempt.response,
        response_status_code: attempt.status_code.and_then(|code| i16::try_from(code).ok()).unwrap_or(0),
        response_duration_ms: attempt.duration_ms,
        timestamp: WireTime(attempt.started_at_ms),
        trigger_type: if attempt.manual { TriggerType::Manual } else { TriggerType::Scheduled },
    }
}
