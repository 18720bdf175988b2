//! The outbound API's data (`docs/design/outbound-api.md` §3.2): applications, event
//! types, endpoints with their sealed secrets, and messages, as both backends take and
//! return them, one module per resource; here what they share: the typed error, how a
//! path names a row (id or uid), pagination, the outbound version, and fresh ids.
//!
//! Ids are text in the rows: core's id types ([`idemgate_core::outbound::id`]) make and
//! check them; the store compares them as bytes, which is their time order.

pub mod app_token;
pub mod application;
pub mod attempt;
pub mod endpoint;
pub mod event_type;
pub mod message;
pub mod redelivery;

use std::{collections::BTreeMap, fmt};

use idemgate_core::outbound::id::{ApplicationId, EndpointId, MessageId, PAYLOAD_LEN};

use crate::{ErrorKind, StoreError};

/// What an outbound operation refuses, or the store's own failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutboundError {
    /// The row named (or the application it belongs to) does not exist or is deleted.
    #[error("{0} not found")]
    NotFound(Resource),
    /// Another live row of this kind (in the same application) has this uid.
    #[error("another {0} has this uid")]
    UidTaken(Resource),
    /// An event type with this name exists (archived or not).
    #[error("an event type with this name exists")]
    EventTypeExists,
    /// A rotation sealed its secret for a `seq` that is no longer the next one (another
    /// rotation came first): read the secrets again and seal for the new next `seq`.
    #[error("the endpoint's secrets changed since the new secret was sealed")]
    StaleSecret,
    /// The endpoint is disabled: nothing is sent to it (a resend, a recovery or an example
    /// is refused rather than left waiting).
    #[error("the endpoint is disabled")]
    EndpointDisabled,
    /// The message's payload was purged: there is nothing to send again.
    #[error("the message's payload is gone")]
    PayloadGone,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl OutboundError {
    /// `err` as [`Self::UidTaken`] when a unique index refused the row, else as a store error.
    pub(crate) fn unique(err: impl Into<StoreError>, resource: Resource) -> Self {
        let err = err.into();
        if err.kind() == ErrorKind::UniqueViolation { Self::UidTaken(resource) } else { Self::Store(err) }
    }
}

/// The kinds of rows the outbound API serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// An application.
    Application,
    /// An endpoint.
    Endpoint,
    /// An event type.
    EventType,
    /// A message.
    Message,
    /// A message attempt.
    Attempt,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Application => "application",
            Self::Endpoint => "endpoint",
            Self::EventType => "event type",
            Self::Message => "message",
            Self::Attempt => "message attempt",
        })
    }
}

/// How a path names a row: its id, or the caller's uid (an `eventId` for a message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The row's id.
    Id(String),
    /// The row's uid.
    Uid(String),
}

impl Lookup {
    /// An application's path segment: an id when it starts with `app_`, else a uid.
    #[must_use]
    pub fn application(text: &str) -> Self {
        Self::of(text, ApplicationId::is_id_text(text))
    }

    /// An endpoint's path segment: an id when it starts with `ep_`, else a uid.
    #[must_use]
    pub fn endpoint(text: &str) -> Self {
        Self::of(text, EndpointId::is_id_text(text))
    }

    /// A message's path segment: an id when it starts with `msg_`, else an `eventId`.
    #[must_use]
    pub fn message(text: &str) -> Self {
        Self::of(text, MessageId::is_id_text(text))
    }

    fn of(text: &str, is_id: bool) -> Self {
        if is_id { Self::Id(text.to_owned()) } else { Self::Uid(text.to_owned()) }
    }

    /// The column it is looked up in (`uid_column` for a uid) and the value.
    pub(crate) fn column<'a>(&'a self, uid_column: &'static str) -> (&'static str, &'a str) {
        match self {
            Self::Id(id) => ("id", id),
            Self::Uid(uid) => (uid_column, uid),
        }
    }

    /// The uid it names, if it names one.
    pub(crate) fn uid(&self) -> Option<&str> {
        match self {
            Self::Uid(uid) => Some(uid),
            Self::Id(_) => None,
        }
    }
}

/// The order of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Oldest (or first by name) first: Svix's default.
    #[default]
    Ascending,
    /// Newest (or last by name) first.
    Descending,
}

/// One page's request: at most `limit` rows after `iterator` in `order`. An iterator
/// starting with `-` is a previous-page iterator (Svix's `prevIterator`): the rows before
/// it, still answered in `order`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    /// Most rows answered (the caller bounds it: Svix's 1–250).
    pub limit: usize,
    /// Where the previous page ended (a row's id, or an event type's name).
    pub iterator: Option<String>,
    /// Which way the list goes.
    pub order: Order,
}

impl ListQuery {
    /// The first page of `limit` rows in ascending order.
    #[must_use]
    pub fn first(limit: usize) -> Self {
        Self { limit, iterator: None, order: Order::Ascending }
    }

    /// The statement's walk: (start after this key, ascending?, whether the rows come back
    /// reversed and must be turned around).
    pub(crate) fn cursor(&self) -> Cursor {
        let ascending = self.order == Order::Ascending;
        match self.iterator.as_deref() {
            Some(prev) if prev.starts_with('-') => {
                Cursor { after: Some(prev[1..].to_owned()), ascending: !ascending, reversed: true }
            }
            other => Cursor { after: other.map(str::to_owned), ascending, reversed: false },
        }
    }
}

/// A list statement's walk over its key (see [`ListQuery::cursor`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cursor {
    pub(crate) after: Option<String>,
    pub(crate) ascending: bool,
    pub(crate) reversed: bool,
}

impl Cursor {
    /// The comparison and the order of the statement's key column.
    pub(crate) fn sql(&self) -> (&'static str, &'static str) {
        if self.ascending { (">", "ASC") } else { ("<", "DESC") }
    }
}

/// One page of a list, as Svix answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The rows, at most the query's limit.
    pub data: Vec<T>,
    /// The last row's key: where the next page starts.
    pub iterator: Option<String>,
    /// `-` and the first row's key: where the previous page ends.
    pub prev_iterator: Option<String>,
    /// No rows follow this page.
    pub done: bool,
}

impl<T> Page<T> {
    /// The page of `rows`, read with `limit + 1` so that one more row tells whether any follow.
    pub(crate) fn of(mut rows: Vec<T>, limit: usize, cursor: &Cursor, key: impl Fn(&T) -> String) -> Self {
        let done = rows.len() <= limit;
        rows.truncate(limit);
        if cursor.reversed {
            rows.reverse();
        }
        let iterator = rows.last().map(&key);
        let prev_iterator = rows.first().map(|row| format!("-{}", key(row)));
        Self { data: rows, iterator, prev_iterator, done }
    }
}

/// A row written by a `PUT`: created (201) or updated (200).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upserted<T> {
    /// The row as stored.
    pub value: T,
    /// Whether it was created.
    pub created: bool,
}

/// Text → text metadata, as stored (JSON text).
pub type Metadata = BTreeMap<String, String>;

/// JSON text of a value the store wrote itself.
pub(crate) fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// A stored JSON text as `T`.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(text: &str, what: &'static str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|_| StoreError::Malformed(what))
}

/// A stored nullable JSON text as `T`.
pub(crate) fn from_json_opt<T: serde::de::DeserializeOwned>(
    text: Option<String>,
    what: &'static str,
) -> Result<Option<T>, StoreError> {
    text.map(|text| from_json(&text, what)).transpose()
}

/// 15 bytes from the OS random source, for an id created now.
fn random_payload() -> Result<[u8; PAYLOAD_LEN], StoreError> {
    let mut bytes = [0; PAYLOAD_LEN];
    getrandom::fill(&mut bytes).map_err(|_| StoreError::Config("the OS random source failed"))?;
    Ok(bytes)
}

/// A new application id created at `now_ms`.
pub(crate) fn new_application_id(now_ms: i64) -> Result<String, StoreError> {
    ApplicationId::generate(now_ms, random_payload()?)
        .map(|id| id.to_string())
        .map_err(|_| StoreError::Config("the time is outside the ids' range"))
}

/// A new message id created at `now_ms`.
pub(crate) fn new_message_id(now_ms: i64) -> Result<String, StoreError> {
    MessageId::generate(now_ms, random_payload()?)
        .map(|id| id.to_string())
        .map_err(|_| StoreError::Config("the time is outside the ids' range"))
}

/// A new endpoint id created at `now_ms`, for the caller to seal the endpoint's first
/// secret under before it creates the endpoint (the id is the sealing's associated data).
pub fn new_endpoint_id(now_ms: i64) -> Result<EndpointId, StoreError> {
    EndpointId::generate(now_ms, random_payload()?)
        .map_err(|_| StoreError::Config("the time is outside the ids' range"))
}
