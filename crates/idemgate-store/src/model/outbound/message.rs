//! Messages: what an application publishes, stored as a receipt on (the application's
//! source, the `eventId` or the message id), an event holding the payload's bytes, the
//! message row, and one job per endpoint it goes to (`docs/design/outbound-api.md` §3.3).

use idemgate_core::{BodyHash, Identity, ReceiptKey, SourceName, outbound::id::ApplicationId};

use super::{Cursor, ListQuery, Order};
use crate::StoreError;

/// A message as published (`MessageIn`, its payload's raw bytes as received).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageIn {
    /// The caller's id for it, unique within the application: a repeat with the same
    /// payload is answered with the original message.
    pub event_id: Option<String>,
    /// Its event type.
    pub event_type: String,
    /// Its channels.
    pub channels: Option<Vec<String>>,
    /// The payload's raw JSON bytes, never re-serialised.
    pub payload: bytes::Bytes,
    /// When its payload may be purged, unix milliseconds.
    pub expires_at_ms: Option<i64>,
    /// The operation that publishes it, when an `Idempotency-Key` names one (the API's
    /// layer hands it over as `idempotency::Operation`: scope, key and the record's
    /// expiry). Without an `eventId` it is the receipt's identity, so a run of the same
    /// operation after a take-over (its first run died after the commit and before the
    /// key's record was completed) answers the message the first run stored instead of
    /// storing a second.
    pub operation: Option<String>,
}

/// Which endpoints a message goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addressed {
    /// Every enabled, live endpoint of the application whose filters admit it.
    Subscribers,
    /// This endpoint (id or uid) of the application alone, whatever its filters (an
    /// example message, `send-example`); missing or deleted is
    /// [`super::OutboundError::NotFound`], disabled [`super::OutboundError::EndpointDisabled`].
    Endpoint(super::Lookup),
}

/// Why a message addressed to one endpoint is refused inside its transaction: the endpoint
/// was deleted, or disabled, since it was looked up.
pub(crate) const ENDPOINT_GONE: &str = "endpoint not found";
/// See [`ENDPOINT_GONE`].
pub(crate) const ENDPOINT_DISABLED: &str = "endpoint disabled";

/// The endpoint ids of `endpoints` (the application's enabled, live ones) that a message
/// of `event_type` on `channels` goes to as `to` says; `to_id` is the id an
/// [`Addressed::Endpoint`] was found to have.
pub(crate) fn destinations<'a>(
    endpoints: &'a [super::endpoint::Endpoint],
    to_id: Option<&str>,
    event_type: &str,
    channels: Option<&[String]>,
) -> Vec<&'a str> {
    endpoints
        .iter()
        .filter(|ep| match to_id {
            Some(id) => ep.id == id,
            None => ep.receives(event_type, channels),
        })
        .map(|ep| ep.id.as_str())
        .collect()
}

/// The refusal of a message whose effect refused with `reason`.
pub(crate) fn refused(reason: &str) -> super::OutboundError {
    match reason {
        ENDPOINT_GONE => super::OutboundError::NotFound(super::Resource::Endpoint),
        ENDPOINT_DISABLED => super::OutboundError::EndpointDisabled,
        _ => refused_app(),
    }
}

/// A stored message (`MessageOut`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// `msg_…`; also its `webhook-id`.
    pub id: String,
    /// The application's id.
    pub app_id: String,
    /// See [`MessageIn`].
    pub event_id: Option<String>,
    /// See [`MessageIn`].
    pub event_type: String,
    /// See [`MessageIn`].
    pub channels: Option<Vec<String>>,
    /// The payload's bytes; `None` once purged.
    pub payload: Option<Vec<u8>>,
    /// When it was accepted, unix milliseconds.
    pub created_at_ms: i64,
}

/// What became of a published message, once the commit is durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accepted {
    /// Stored, with its jobs.
    Created(Message),
    /// A repeat of an `eventId` with the same fingerprint: the original message; nothing
    /// was written.
    Duplicate(Message),
    /// A repeat of an `eventId` with another fingerprint: refused and recorded as a
    /// conflict; nothing else was written.
    Conflict,
}

/// One page of an application's messages: newest first, between `after_ms` and
/// `before_ms`, of `event_types` (all when `None`) on `channel` (any when `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageQuery {
    /// Most messages answered.
    pub limit: usize,
    /// Where the previous page ended (a message id, or `-` and one for the page before).
    pub iterator: Option<String>,
    /// Only messages created before this time, unix milliseconds.
    pub before_ms: Option<i64>,
    /// Only messages created after this time, unix milliseconds.
    pub after_ms: Option<i64>,
    /// Only messages of these types.
    pub event_types: Option<Vec<String>>,
    /// Only messages on this channel.
    pub channel: Option<String>,
}

impl MessageQuery {
    /// The first `limit` messages, newest first, of every type and channel.
    #[must_use]
    pub fn newest(limit: usize) -> Self {
        Self { limit, iterator: None, before_ms: None, after_ms: None, event_types: None, channel: None }
    }

    /// The walk over message ids: newest first.
    pub(crate) fn cursor(&self) -> Cursor {
        ListQuery { limit: self.limit, iterator: self.iterator.clone(), order: Order::Descending }.cursor()
    }

    /// The ids bounding the time window: (above this id, below this id).
    pub(crate) fn window(&self) -> (Option<String>, Option<String>) {
        use idemgate_core::outbound::id::MessageId;
        let above = self.after_ms.and_then(|at| MessageId::last_at(at).ok()).map(|id| id.to_string());
        let below = self.before_ms.and_then(|at| MessageId::first_at(at).ok()).map(|id| id.to_string());
        (above, below)
    }
}

/// The columns SQLite selects for a [`Message`] (messages `m` joined with their events
/// `e`): its fields in order, then whether the payload was purged. PostgreSQL reads the
/// same fields with the payload from its own table (`postgres/outbound/message.rs`).
pub(crate) const COLUMNS: &str =
    "m.id, m.app_id, m.event_id, m.event_type, m.channels, e.body, m.created_at, e.payload_purged";

/// The message's fingerprint, what a repeat of its `eventId` is judged by: SHA-256 over
/// the event type, the sorted channels and the payload's raw bytes, each part
/// length-prefixed so that no two messages' parts read the same.
#[must_use]
pub fn fingerprint(event_type: &str, channels: Option<&[String]>, payload: &[u8]) -> BodyHash {
    let mut sorted: Vec<&str> = channels.unwrap_or_default().iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut bytes = Vec::with_capacity(payload.len() + 64);
    let mut part = |part: &[u8]| {
        bytes.extend_from_slice(&(part.len() as u64).to_be_bytes());
        bytes.extend_from_slice(part);
    };
    part(event_type.as_bytes());
    part(&(sorted.len() as u64).to_be_bytes());
    for channel in sorted {
        part(channel.as_bytes());
    }
    part(payload);
    BodyHash::of(&bytes)
}

/// The receipt's source for an application's messages: `app_` and its id's 20 bytes in
/// hex (a source name is lowercase; an id's base62 is not).
pub(crate) fn source_of(app_id: &str) -> Result<SourceName, StoreError> {
    let id = ApplicationId::parse(app_id).map_err(|_| StoreError::Malformed("application id"))?;
    let hex: String = id.ksuid().bytes().iter().map(|b| format!("{b:02x}")).collect();
    SourceName::new(format!("app_{hex}")).map_err(|_| StoreError::Malformed("application source"))
}

/// The receipt's key of a message: its application's source and its `eventId`, or its
/// own id when it has none. An `eventId` longer than an identity is taken by its SHA-256.
/// Without an `eventId`, the publishing operation ([`MessageIn::operation`]) names it when
/// there is one.
pub(crate) fn receipt_key(app_id: &str, input: &MessageIn, msg_id: &str) -> Result<ReceiptKey, StoreError> {
    let operation =
        input.operation.as_deref().map(|operation| format!("op-{}", BodyHash::of(operation.as_bytes()).to_hex()));
    let identity = input.event_id.as_deref().or(operation.as_deref()).unwrap_or(msg_id);
    let identity = Identity::new(identity)
        .or_else(|_| Identity::new(format!("sha256-{}", BodyHash::of(identity.as_bytes()).to_hex())))
        .map_err(|_| StoreError::Malformed("message identity"))?;
    Ok(ReceiptKey { source: source_of(app_id)?, identity })
}

/// The receipt's result for a message: its id, so a repeat finds it.
pub(crate) fn receipt_result(msg_id: &str) -> serde_json::Value {
    serde_json::json!({ "message": msg_id })
}

/// The message id a receipt's result names.
pub(crate) fn message_of(result: &serde_json::Value) -> Result<String, StoreError> {
    result.get("message").and_then(|id| id.as_str()).map(str::to_owned).ok_or(StoreError::Malformed("message receipt"))
}

/// Why a message's waiting deliveries ended when its content was expunged: nothing is
/// left to send, and an empty body is never sent in its place.
pub const CONTENT_EXPUNGED: &str = "content expunged";

/// Why a message's waiting deliveries ended when its payload's retention ran out.
pub const PAYLOAD_EXPIRED: &str = "payload expired";

/// What an attempt's response reads once expunged, as Svix's server stores it.
pub const RESPONSE_EXPUNGED: &str = "EXPUNGED";

/// The content type of every message's event.
pub(crate) const CONTENT_TYPE: &str = "application/json";

/// A store error for a message whose accept failed as `cause` (nothing was stored).
pub(crate) fn failed(cause: idemgate_core::outcome::FailureCause) -> StoreError {
    match cause {
        idemgate_core::outcome::FailureCause::Unavailable => StoreError::Unavailable,
        _ => StoreError::NotCommitted,
    }
}

/// A message refused by its effect: its application was deleted since it was looked up.
pub(crate) fn refused_app() -> super::OutboundError {
    super::OutboundError::NotFound(super::Resource::Application)
}
