//! Message attempts (`v1.message-attempt.list-by-msg`, `list-by-endpoint`, `get`): a
//! message's tries at its endpoints, newest first, read from the gateway's own attempt rows
//! (`docs/design/outbound-api.md` §3.3). A message or endpoint of another application is
//! 404. The lists take Svix's filters (`status`, `status_code_class`, `channel`,
//! `event_types`, `before`, `after`, `endpoint_id` by message, `with_content`), applied by
//! the store beside the iterator; a value that does not parse is 422 at its `query` loc.
//! Also the endpoint's deliveries by status (`v1.endpoint.get-stats`), the endpoints a
//! message was sent to (`list-attempted-destinations`) and the messages sent to an
//! endpoint (`list-attempted-messages`).

use std::sync::Arc;

use axum::{
    Router,
    extract::{Path, RawQuery},
    response::Response,
    routing::get,
};
use idemgate_core::outbound::{
    field::{Channel, EventTypeName, Loc},
    id::AttemptId,
    status::{MessageStatus, StatusClass},
};
use idemgate_store::outbound::{
    Lookup,
    attempt::{
        Attempt, AttemptFilter, AttemptIterator, AttemptQuery, AttemptedDestination, AttemptedMessage,
        AttemptedMessageQuery,
    },
    message::MessageQuery,
};

use super::{
    ApiState, Shared, body, messages,
    pagination::Page,
    wire::{
        EndpointMessageOut, EndpointStats, ListResponse, MessageAttemptOut, MessageEndpointOut, TriggerType, WireTime,
    },
};
use crate::answer::{Done, OutboundAnswer, api_not_found};

pub(super) fn routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route("/app/{app_id}/attempt/msg/{msg_id}", get(by_message).fallback(api_not_found))
        .route("/app/{app_id}/attempt/endpoint/{endpoint_id}", get(by_endpoint).fallback(api_not_found))
        .route("/app/{app_id}/msg/{msg_id}/attempt/{attempt_id}", get(read).fallback(api_not_found))
        .route("/app/{app_id}/endpoint/{endpoint_id}/stats", get(stats).fallback(api_not_found))
        .route("/app/{app_id}/msg/{msg_id}/endpoint", get(destinations).fallback(api_not_found))
        .route("/app/{app_id}/endpoint/{endpoint_id}/msg", get(attempted_messages).fallback(api_not_found))
}

async fn by_message(
    state: Shared,
    Path((app, msg)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, OutboundAnswer> {
    let query = query.as_deref();
    let mut filtered = attempt_query(query)?;
    filtered.filter.endpoint = body::param(query, "endpoint_id").map(|ep| Lookup::endpoint(&ep));
    let with_content = body::flag(query, "with_content", true)?;
    let page = state.store.attempts_by_message(Lookup::application(&app), Lookup::message(&msg), filtered).await?;
    Ok(Done::Ok.with(ListResponse::of(page, |attempt| listed(attempt, with_content))))
}

async fn by_endpoint(
    state: Shared,
    Path((app, ep)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, OutboundAnswer> {
    let query = query.as_deref();
    let filtered = attempt_query(query)?;
    let with_content = body::flag(query, "with_content", true)?;
    let page = state.store.attempts_by_endpoint(Lookup::application(&app), Lookup::endpoint(&ep), filtered).await?;
    Ok(Done::Ok.with(ListResponse::of(page, |attempt| listed(attempt, with_content))))
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

/// `GET …/endpoint/{endpoint_id}/msg`: the messages sent to the endpoint (those with a
/// delivery to it), newest first, each with that delivery's status and, while it waits,
/// `nextAttempt`; filtered by `status` (the delivery's), `channel`, `event_types`,
/// `before` and `after`.
async fn attempted_messages(
    state: Shared,
    Path((app, ep)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, OutboundAnswer> {
    let query = query.as_deref();
    let page = Page::from_query(query)?;
    let with_content = body::flag(query, "with_content", true)?;
    let filter = AttemptedMessageQuery {
        messages: MessageQuery {
            limit: usize::from(page.limit),
            iterator: page.iterator,
            before_ms: messages::time(query, "before")?,
            after_ms: messages::time(query, "after")?,
            event_types: event_types(query)?,
            channel: channel(query)?,
        },
        status: status(query)?,
    };
    let found = state.store.attempted_messages(Lookup::application(&app), Lookup::endpoint(&ep), filter).await?;
    let mut data = Vec::with_capacity(found.data.len());
    for sent in found.data {
        data.push(endpoint_message_out(sent, with_content)?);
    }
    Ok(Done::Ok.with(ListResponse {
        data,
        iterator: found.iterator,
        prev_iterator: found.prev_iterator,
        done: found.done,
    }))
}

fn endpoint_message_out(sent: AttemptedMessage, with_content: bool) -> Result<EndpointMessageOut, OutboundAnswer> {
    Ok(EndpointMessageOut {
        message: messages::message_out(sent.message, with_content)?,
        status: sent.status.into(),
        next_attempt: sent.next_attempt_ms.map(WireTime),
    })
}

/// The page and filters an attempt list's query asks for; an iterator that is not an
/// attempt id, or a filter's value that does not parse, is refused at its `query` loc.
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
    let status_code_class = code(query, "status_code_class")?
        .map(|code| {
            StatusClass::from_code(code).ok_or_else(|| not_one_of("status_code_class", "0, 100, 200, 300, 400, 500"))
        })
        .transpose()?;
    let filter = AttemptFilter {
        status: status(query)?,
        status_code_class,
        channel: channel(query)?,
        event_types: event_types(query)?,
        endpoint: None,
        before_ms: messages::time(query, "before")?,
        after_ms: messages::time(query, "after")?,
    };
    Ok(AttemptQuery { limit: usize::from(page.limit), iterator, filter })
}

/// The integer query parameter `name`, if given.
fn code(query: Option<&str>, name: &str) -> Result<Option<i64>, OutboundAnswer> {
    body::param(query, name)
        .map(|text| {
            text.parse::<i64>().map_err(|_| {
                OutboundAnswer::invalid(&["query", name], "value is not a valid integer", "type_error.integer")
            })
        })
        .transpose()
}

/// The query parameter `name` is not one of the `allowed` values.
fn not_one_of(name: &str, allowed: &str) -> OutboundAnswer {
    OutboundAnswer::invalid(&["query", name], format!("value is not one of {allowed}"), "type_error.enum")
}

/// `status`: a `MessageStatus` code (0 success, 1 pending, 2 fail, 3 sending).
fn status(query: Option<&str>) -> Result<Option<MessageStatus>, OutboundAnswer> {
    code(query, "status")?
        .map(|code| MessageStatus::from_code(code).ok_or_else(|| not_one_of("status", "0, 1, 2, 3")))
        .transpose()
}

/// `channel`, by the channel rule.
fn channel(query: Option<&str>) -> Result<Option<String>, OutboundAnswer> {
    let Some(text) = body::param(query, "channel") else { return Ok(None) };
    Ok(Some(Channel::parse(&text, Loc::query("channel"))?.as_str().to_owned()))
}

/// `event_types` (repeated or comma-separated), each by the event type name rule; none
/// given is every type.
fn event_types(query: Option<&str>) -> Result<Option<Vec<String>>, OutboundAnswer> {
    let names = body::params(query, "event_types");
    if names.is_empty() {
        return Ok(None);
    }
    let mut checked = Vec::with_capacity(names.len());
    for name in names {
        checked.push(EventTypeName::parse(&name, Loc::query("event_types"))?.as_str().to_owned());
    }
    Ok(Some(checked))
}

/// A listed attempt: without content its response reads `{}`, as Svix's lists show it.
fn listed(attempt: Attempt, with_content: bool) -> MessageAttemptOut {
    let mut out = attempt_out(attempt);
    if !with_content {
        "{}".clone_into(&mut out.response);
    }
    out
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
