//! The gateway's events as the store takes and gives them back: an incoming event with its
//! ordering guard, and a stored event with its delivery jobs.

use std::sync::Arc;

use idemgate_core::{ReceiptKey, UnixTime};

use super::headers_text;

/// A gateway event as offered to [`crate::Store::accept`], owned so that it can move to
/// whichever backend stores it. The receipt's key, hash and time come with the
/// [`crate::ReceiveRequest`].
#[derive(Debug, Clone)]
pub struct IncomingEvent {
    /// The result stored with the receipt and returned to every repeat.
    pub result: serde_json::Value,
    /// The `webhook-id` destinations get for this event, fixed here for good; `None`: the
    /// identity itself.
    pub outgoing_id: Option<String>,
    /// The event type, when the source names where it is.
    pub event_type: Option<String>,
    /// The original `Content-Type`.
    pub content_type: Option<String>,
    /// The original headers on the source's allowlist.
    pub headers: Vec<(String, String)>,
    /// The raw body bytes exactly as received.
    pub body: bytes::Bytes,
    /// The ordering key and version, when the source has a guard and the event has both.
    pub ordering: Option<Ordering>,
    /// One job is stored for each.
    pub destinations: Arc<[String]>,
    /// Destinations whose subscription filter failed on this event, each with the reason:
    /// one job is stored for each, already `dead` with that reason (bounded), so the
    /// operator sees it and can replay it.
    pub dead: Vec<(String, String)>,
    /// Set when a first delivery must be refused (say, an event type the source does not
    /// accept). It applies only when no receipt exists, so that a repeat of an event
    /// accepted earlier is still answered as a duplicate.
    pub refusal: Option<&'static str>,
}

/// Where an event stands among the events of its ordering key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ordering {
    /// E.g. the id of the object the event is about.
    pub key: String,
    /// E.g. the object's `updated` timestamp or sequence number.
    pub version: Version,
}

/// An ordering version: integers compare numerically, strings lexicographically (so
/// RFC 3339 timestamps of one format compare in time order). The two never compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Version {
    /// A JSON integer.
    Int(i64),
    /// A JSON string.
    Text(String),
}

impl Version {
    pub(crate) fn is_older_than(&self, seen: &Version) -> bool {
        match (self, seen) {
            (Self::Int(a), Self::Int(b)) => a < b,
            (Self::Text(a), Self::Text(b)) => a < b,
            _ => false,
        }
    }

    /// The version as its two stored columns (`version_int`, `version_text`), one of them set.
    pub(crate) fn columns(&self) -> (Option<i64>, Option<&str>) {
        match self {
            Self::Int(v) => (Some(*v), None),
            Self::Text(v) => (None, Some(v.as_str())),
        }
    }

    /// The version stored in those columns, if either is set.
    pub(crate) fn from_columns(int: Option<i64>, text: Option<String>) -> Option<Self> {
        int.map(Self::Int).or(text.map(Self::Text))
    }
}

/// The `webhook-id` an event is stored with: the one chosen for it, or its identity.
pub(crate) fn outgoing_id<'a>(chosen: Option<&'a str>, key: &'a ReceiptKey) -> &'a str {
    chosen.unwrap_or(key.identity.as_str())
}

/// An event's headers as stored: their JSON text, or nothing when there are none.
pub(crate) fn stored_headers(headers: &[(String, String)]) -> Option<String> {
    (!headers.is_empty()).then(|| headers_text(headers))
}

/// Tells the operator that an event came older than its ordering key's newest version, so
/// its jobs were stored `superseded` (every other outcome is logged by the inbound pipeline).
pub(crate) fn log_superseded(key: &ReceiptKey) {
    tracing::info!(source = %key.source, identity = %key.identity, "older than its ordering key's newest version: superseded");
}

/// A stored event as the operator sees it (the body is not included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// The event's row id.
    pub id: i64,
    /// The event type, if the source names one.
    pub event_type: Option<String>,
    /// The original content type.
    pub content_type: Option<String>,
    /// Length of the stored body.
    pub body_len: usize,
    /// When it arrived.
    pub received_at: UnixTime,
}

/// A delivery job's current state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRecord {
    /// The job's row id.
    pub id: i64,
    /// The destination it delivers to.
    pub destination: String,
    /// `pending`, `running`, `succeeded`, `retrying`, `dead` or `superseded`.
    pub state: String,
    /// Attempts made so far.
    pub attempts: u32,
    /// When the next attempt is due.
    pub next_attempt_at: UnixTime,
    /// The last attempt's error, or why the job is dead (bounded).
    pub last_error: Option<String>,
}
