//! `/app/{app_id}/msg…`: publishing a message (202 `MessageOut` once the commit of the
//! message and its jobs is durable), reading one, and listing an application's messages,
//! newest first.
//!
//! A repeat of an `eventId` with the same event type, channels and payload is answered
//! with the original message; with anything else it is 409 and nothing is stored
//! (`docs/design/outbound-api.md` §3.10). An `application` in the body creates the
//! application named by the path's uid when it does not exist, as Svix does. A payload
//! that its event type's schema refuses is 422 and nothing is stored (`payload_schema`).
//!
//! `send-example` (`v1.endpoint.send-example`) publishes a message of an event type with
//! the example of its schema (`schemas["1"].examples[exampleIndex]`, the first by
//! default; `{"success": true}` for `svix.ping`, as Svix's) through the same path, to the
//! one endpoint of the path whatever its filters, answered 200 `MessageOut`.

use std::sync::Arc;

use axum::{
    Extension, Router,
    body::Bytes,
    extract::{Path, RawQuery},
    response::Response,
    routing::{get, post},
};
use idemgate_core::outbound::field::{Channel, EventId, EventTypeName, Loc, parse_list};
use idemgate_store::{
    audit::Actor,
    outbound::{
        Lookup, OutboundError, Resource,
        message::{self as store, Accepted, MessageQuery},
    },
};
use serde_json::value::RawValue;

use super::{
    ApiState, By, Shared, applications, body,
    pagination::Page,
    payload_schema,
    wire::{DEFAULT_PAYLOAD_RETENTION_DAYS, EventExampleIn, ListResponse, MessageIn, MessageOut, Payload, WireTime},
};
use crate::{
    answer::{Done, OutboundAnswer, api_not_found},
    idempotency::Operation,
};

/// The most channels a message is sent on.
const MAX_CHANNELS: usize = 5;
/// The shortest `payloadRetentionPeriod`, in days.
const MIN_RETENTION_DAYS: i64 = 5;
const HOUR_MS: i64 = 3_600_000;

pub(super) fn routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route("/app/{app_id}/msg", get(list).post(create).fallback(api_not_found))
        .route("/app/{app_id}/msg/{msg_id}", get(read).fallback(api_not_found))
        .route("/app/{app_id}/endpoint/{endpoint_id}/send-example", post(send_example).fallback(api_not_found))
}

/// The event type whose example is a fixed payload (Svix's `SVIX_PING_EVENT_TYPE_NAME`).
const PING_EVENT_TYPE: &str = "svix.ping";
/// The example of [`PING_EVENT_TYPE`].
const PING_PAYLOAD: &str = r#"{"success": true}"#;

/// `POST …/endpoint/{endpoint_id}/send-example`: a message of the event type carrying
/// its schema's example, to that endpoint alone; 200 `MessageOut` once durable. An event
/// type that does not exist is 404; one without that example 400 `invalid_scheme`, as Svix.
async fn send_example(
    state: Shared,
    Path((app, ep)): Path<(String, String)>,
    operation: Option<Extension<Operation>>,
    bytes: Bytes,
) -> Result<Response, OutboundAnswer> {
    let input: EventExampleIn = body::json(&bytes)?;
    // The type's name is judged before the payload, as the route always did.
    EventTypeName::parse(&input.event_type, Loc::body("eventType"))?;
    if input.payload.is_some() {
        return Err(OutboundAnswer::invalid(
            &["body", "payload"],
            "a custom example payload is not served",
            "value_error",
        ));
    }
    let index = usize::try_from(input.example_index.unwrap_or(0)).unwrap_or(usize::MAX);
    let (app, ep) = (Lookup::application(&app), Lookup::endpoint(&ep));
    let message = send_example_to(&state, (app, ep), &input.event_type, index, operation_text(operation)).await?;
    Ok(Done::Ok.with(message_out(message, true)?))
}

/// Publishes the example `index` of `event_type` to the endpoint `ep` of `app` alone
/// (`send-example`, and the portal's "Send test event"), once durable. An event type that
/// does not exist is 404; one without that example 400 `invalid_scheme`, as Svix.
pub(crate) async fn send_example_to(
    state: &ApiState,
    (app, ep): (Lookup, Lookup),
    event_type: &str,
    index: usize,
    operation: Option<String>,
) -> Result<store::Message, OutboundAnswer> {
    let event_type = EventTypeName::parse(event_type, Loc::body("eventType"))?;
    let schemas = if event_type.as_str() == PING_EVENT_TYPE {
        None
    } else {
        state.store.event_type(event_type.as_str().to_owned()).await?.ok_or(OutboundAnswer::NotFound)?.schemas
    };
    let payload =
        example_payload(event_type.as_str(), schemas.as_deref(), index).ok_or(OutboundAnswer::BadRequest {
            code: "invalid_scheme",
            detail: "Unable to generate example message from event-type schema",
        })?;
    let now = state.now_ms();
    let message = store::MessageIn {
        event_id: None,
        event_type: event_type.as_str().to_owned(),
        channels: None,
        payload: Bytes::from(payload),
        expires_at_ms: Some(now.saturating_add(DEFAULT_PAYLOAD_RETENTION_DAYS.saturating_mul(24 * HOUR_MS))),
        operation,
    };
    match state.store.accept_message_to(app, ep, message, now).await? {
        Accepted::Created(message) | Accepted::Duplicate(message) => Ok(message),
        // A message without an `eventId` has its own receipt: it cannot conflict.
        Accepted::Conflict => Err(OutboundAnswer::Unavailable),
    }
}

/// The publishing operation an `Idempotency-Key` names, as the store takes it
/// ([`store::MessageIn::operation`]).
fn operation_text(operation: Option<Extension<Operation>>) -> Option<String> {
    operation.map(|Extension(op)| format!("{}\n{}\n{}", op.scope, op.key, op.expires_at_ms))
}

/// The example `index` of the event type `name` whose `schemas` are given: what
/// `send-example` sends and the portal's catalog shows. [`PING_PAYLOAD`] for
/// [`PING_EVENT_TYPE`], else [`example`] of its schemas.
pub(crate) fn example_payload(name: &str, schemas: Option<&str>, index: usize) -> Option<String> {
    if name == PING_EVENT_TYPE { Some(PING_PAYLOAD.to_owned()) } else { example(schemas, index) }
}

/// The example `index` of an event type's `schemas` (the JSON text of an object of
/// versions): `schemas["1"].examples[index]`, as JSON text, when it is an object (a
/// message's payload is one).
fn example(schemas: Option<&str>, index: usize) -> Option<String> {
    let schemas: serde_json::Value = serde_json::from_str(schemas?).ok()?;
    let example = schemas.get("1")?.get("examples")?.as_array()?.get(index)?;
    example.is_object().then(|| example.to_string())
}

async fn create(
    state: Shared,
    By(by): By,
    Path(app): Path<String>,
    RawQuery(query): RawQuery,
    operation: Option<Extension<Operation>>,
    bytes: Bytes,
) -> Result<Response, OutboundAnswer> {
    let with_content = body::flag(query.as_deref(), "with_content", true)?;
    let input: MessageIn = body::json(&bytes)?;
    let event_type = EventTypeName::parse(&input.event_type, Loc::body("eventType"))?;
    let event_id = input.event_id.as_deref().map(|id| EventId::parse(id, Loc::body("eventId"))).transpose()?;
    let channels = input
        .channels
        .as_deref()
        .map(|list| parse_list(list, &Loc::body("channels"), (1, MAX_CHANNELS), Channel::parse))
        .transpose()?;
    let retention_ms = retention_ms(&input)?;
    let payload = input
        .payload
        .raw()
        .ok_or_else(|| OutboundAnswer::invalid(&["body", "payload"], "field required", "value_error.missing"))?;
    payload_schema::check_payload(&state, event_type.as_str(), payload).await?;
    let now = state.now_ms();
    let message = store::MessageIn {
        event_id: event_id.map(|id| id.as_str().to_owned()),
        event_type: event_type.as_str().to_owned(),
        channels: channels.map(|list| list.iter().map(|channel| channel.as_str().to_owned()).collect()),
        payload: Bytes::copy_from_slice(payload.as_bytes()),
        expires_at_ms: Some(now.saturating_add(retention_ms)),
        operation: operation_text(operation),
    };
    let lookup = Lookup::application(&app);
    let accepted = match state.store.accept_message(lookup.clone(), message.clone(), now).await {
        Err(OutboundError::NotFound(Resource::Application)) if input.application.is_some() => {
            create_application(&state, &lookup, input.application, &by).await?;
            state.store.accept_message(lookup, message, now).await?
        }
        other => other?,
    };
    match accepted {
        Accepted::Created(message) | Accepted::Duplicate(message) => {
            Ok(Done::Accepted.with(message_out(message, with_content)?))
        }
        Accepted::Conflict => Err(OutboundAnswer::Conflict {
            code: "conflict",
            detail: "A message with this eventId already exists with another payload",
        }),
    }
}

/// How long the store keeps the message's payload: `payloadRetentionHours` (1 hour to 90
/// days) when given, else `payloadRetentionPeriod` (5 to 90 days, 90 by default). The
/// store's retention sweep drops it then, keeping the message and its receipt.
fn retention_ms(input: &MessageIn) -> Result<i64, OutboundAnswer> {
    let out_of = |member: &str, low: i64, high: i64| {
        OutboundAnswer::invalid(
            &["body", member],
            format!("ensure this value is between {low} and {high}"),
            "value_error.number",
        )
    };
    if let Some(hours) = input.payload_retention_hours {
        let most = DEFAULT_PAYLOAD_RETENTION_DAYS * 24;
        return if (1..=most).contains(&hours) {
            Ok(hours * HOUR_MS)
        } else {
            Err(out_of("payloadRetentionHours", 1, most))
        };
    }
    let days = input.payload_retention_period;
    if !(MIN_RETENTION_DAYS..=DEFAULT_PAYLOAD_RETENTION_DAYS).contains(&days) {
        return Err(out_of("payloadRetentionPeriod", MIN_RETENTION_DAYS, DEFAULT_PAYLOAD_RETENTION_DAYS));
    }
    Ok(days * 24 * HOUR_MS)
}

/// Creates the application a message's (or an app portal access's) path names by uid,
/// from the body's `application`, made by `by`; another request that created it first is
/// as good.
pub(super) async fn create_application(
    state: &ApiState,
    lookup: &Lookup,
    application: Option<super::wire::ApplicationIn>,
    by: &Actor,
) -> Result<(), OutboundAnswer> {
    let (Lookup::Uid(path_uid), Some(application)) = (lookup, application) else {
        return Err(OutboundAnswer::NotFound);
    };
    let mut input = applications::checked(application).map_err(|mut err| {
        err.loc = Loc::body("application").key(err.loc.parts().last().map_or("", String::as_str));
        OutboundAnswer::from(err)
    })?;
    match &input.uid {
        Some(uid) if uid != path_uid => {
            return Err(OutboundAnswer::invalid(
                &["body", "application", "uid"],
                "the application's uid must be the one in the path",
                "value_error",
            ));
        }
        _ => input.uid = Some(path_uid.clone()),
    }
    match state.store.create_application(input, by, state.now_ms()).await {
        Ok(_) | Err(OutboundError::UidTaken(_)) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

async fn read(
    state: Shared,
    Path((app, msg)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, OutboundAnswer> {
    let with_content = body::flag(query.as_deref(), "with_content", true)?;
    let found =
        state.store.message(Lookup::application(&app), Lookup::message(&msg)).await?.ok_or(OutboundAnswer::NotFound)?;
    Ok(Done::Ok.with(message_out(found, with_content)?))
}

async fn list(state: Shared, Path(app): Path<String>, RawQuery(query): RawQuery) -> Result<Response, OutboundAnswer> {
    let query = query.as_deref();
    let page = Page::from_query(query)?;
    let with_content = body::flag(query, "with_content", true)?;
    let types = body::params(query, "event_types");
    let filter = MessageQuery {
        limit: usize::from(page.limit),
        iterator: page.iterator,
        before_ms: time(query, "before")?,
        after_ms: time(query, "after")?,
        event_types: (!types.is_empty()).then_some(types),
        channel: body::param(query, "channel"),
    };
    let found = state.store.list_messages(Lookup::application(&app), filter).await?;
    let mut data = Vec::with_capacity(found.data.len());
    for message in found.data {
        data.push(message_out(message, with_content)?);
    }
    Ok(Done::Ok.with(ListResponse {
        data,
        iterator: found.iterator,
        prev_iterator: found.prev_iterator,
        done: found.done,
    }))
}

/// The RFC 3339 time of the query parameter `name`, as unix milliseconds.
pub(super) fn time(query: Option<&str>, name: &str) -> Result<Option<i64>, OutboundAnswer> {
    body::param(query, name)
        .map(|text| {
            serde_json::from_value::<WireTime>(serde_json::Value::String(text)).map(|at| at.0).map_err(|_| {
                OutboundAnswer::invalid(&["query", name], "invalid datetime format", "value_error.datetime")
            })
        })
        .transpose()
}

/// A stored message as `MessageOut`: its payload as stored, `{}` without content, and
/// `{"expired":true}` once purged or expunged.
pub(super) fn message_out(message: store::Message, with_content: bool) -> Result<MessageOut, OutboundAnswer> {
    let payload = match message.payload {
        _ if !with_content => Payload::WithoutContent,
        None => Payload::Expired,
        Some(bytes) => {
            let text = String::from_utf8(bytes).map_err(|_| OutboundAnswer::Unavailable)?;
            Payload::Raw(RawValue::from_string(text).map_err(|_| OutboundAnswer::Unavailable)?)
        }
    };
    Ok(MessageOut {
        event_id: message.event_id,
        event_type: message.event_type,
        payload,
        channels: message.channels,
        id: message.id,
        timestamp: WireTime(message.created_at_ms),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_example_is_an_object_of_version_1s_examples() {
        let schemas = r#"{"1":{"type":"object","examples":[{"n":1},{"n":2},3]},"2":{"examples":[{"v":2}]}}"#;
        assert_eq!(example(Some(schemas), 0).as_deref(), Some(r#"{"n":1}"#));
        assert_eq!(example(Some(schemas), 1).as_deref(), Some(r#"{"n":2}"#));
        assert_eq!(example(Some(schemas), 2), None, "not an object");
        assert_eq!(example(Some(schemas), 3), None, "no such example");
        assert_eq!(example(Some(r#"{"2":{"examples":[{"v":2}]}}"#), 0), None, "no version 1");
        assert_eq!(example(Some(r#"{"1":{"type":"object"}}"#), 0), None);
        assert_eq!(example(None, 0), None);
    }
}
