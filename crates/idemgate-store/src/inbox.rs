//! The gateway's inbox: an accepted event and one delivery job per destination, written
//! inside the receipt's transaction so that a receipt never exists without its work.

use std::sync::Arc;

use idemgate_core::{ReceiptKey, UnixTime, job::JobState};
use rusqlite::{Connection, OptionalExtension, params};

use crate::StoreError;

/// An event to keep until every destination has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent<'a> {
    /// (source, identity); the receipt with this key is inserted in the same transaction.
    pub key: &'a ReceiptKey,
    /// The `webhook-id` sent to destinations on every attempt; `None`: the identity.
    pub outgoing_id: Option<&'a str>,
    /// The event type, when the source names where it is.
    pub event_type: Option<&'a str>,
    /// The original `Content-Type`, passed on to destinations.
    pub content_type: Option<&'a str>,
    /// The original headers on the source's allowlist, passed on to destinations.
    pub headers: &'a [(String, String)],
    /// The raw body bytes exactly as received.
    pub body: &'a [u8],
    /// The ordering key and version, when the source configures an ordering guard.
    pub ordering: Option<&'a Ordering>,
    /// When it arrived.
    pub received_at: UnixTime,
}

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
    fn is_older_than(&self, seen: &Version) -> bool {
        match (self, seen) {
            (Self::Int(a), Self::Int(b)) => a < b,
            (Self::Text(a), Self::Text(b)) => a < b,
            _ => false,
        }
    }
}

/// What became of an accepted event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceptedEvent {
    /// The event's row id.
    pub event_id: i64,
    /// True when a newer version of its ordering key was already seen: its jobs were
    /// stored as `superseded` and will not be delivered unless replayed.
    pub superseded: bool,
}

/// Stores `event` and a job for each of `destinations`, due at once (or `superseded`).
/// Call it from a handler, on the receipt transaction's connection: this is also the
/// outbox for an application's own side effects.
pub fn accept_event(
    conn: &Connection,
    event: &NewEvent<'_>,
    destinations: &[&str],
) -> Result<AcceptedEvent, rusqlite::Error> {
    let headers = (!event.headers.is_empty()).then(|| serde_json::json!(event.headers).to_string());
    // Cached: the writer runs this for every event, so it is parsed once per connection.
    conn.prepare_cached(
        "INSERT INTO events (source, identity, event_type, content_type, body, received_at, headers, ordering_key,
                             outgoing_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        event.key.source.as_str(),
        event.key.identity.as_str(),
        event.event_type,
        event.content_type,
        event.body,
        event.received_at.0,
        headers,
        event.ordering.map(|o| o.key.as_str()),
        event.outgoing_id.unwrap_or(event.key.identity.as_str()),
    ])?;
    let event_id = conn.last_insert_rowid();
    let superseded = match event.ordering {
        Some(ordering) => !advance_version(conn, event.key.source.as_str(), ordering, event_id)?,
        None => false,
    };
    let state = if superseded { JobState::Superseded } else { JobState::Pending };
    let mut insert = conn.prepare_cached(
        "INSERT INTO jobs (event_id, destination, state, next_attempt_at_ms, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4 * 1000, ?4, ?4)",
    )?;
    for destination in destinations {
        insert.execute(params![event_id, destination, state.as_str(), event.received_at.0])?;
    }
    Ok(AcceptedEvent { event_id, superseded })
}

/// Records `ordering` as the newest version of its key unless a newer one was seen;
/// returns whether the event is current (not older than what was seen).
fn advance_version(
    conn: &Connection,
    source: &str,
    ordering: &Ordering,
    event_id: i64,
) -> Result<bool, rusqlite::Error> {
    let seen = conn
        .query_row(
            "SELECT version_int, version_text FROM ordering_versions WHERE source = ?1 AND ordering_key = ?2",
            params![source, ordering.key],
            |row| Ok((row.get::<_, Option<i64>>(0)?, row.get::<_, Option<String>>(1)?)),
        )
        .optional()?;
    let seen = seen.and_then(|(int, text)| int.map(Version::Int).or(text.map(Version::Text)));
    if seen.as_ref().is_some_and(|seen| ordering.version.is_older_than(seen)) {
        return Ok(false);
    }
    let (int, text) = match &ordering.version {
        Version::Int(v) => (Some(*v), None),
        Version::Text(v) => (None, Some(v.as_str())),
    };
    conn.execute(
        "INSERT INTO ordering_versions (source, ordering_key, version_int, version_text, event_id)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (source, ordering_key) DO UPDATE SET
            version_int = excluded.version_int, version_text = excluded.version_text, event_id = excluded.event_id",
        params![source, ordering.key, int, text, event_id],
    )?;
    Ok(true)
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

/// The event stored under `key`, if any.
pub fn event(conn: &Connection, key: &ReceiptKey) -> Result<Option<StoredEvent>, StoreError> {
    let row = conn
        .query_row(
            "SELECT id, event_type, content_type, length(body), received_at
             FROM events WHERE source = ?1 AND identity = ?2",
            params![key.source.as_str(), key.identity.as_str()],
            |row| {
                Ok(StoredEvent {
                    id: row.get(0)?,
                    event_type: row.get(1)?,
                    content_type: row.get(2)?,
                    body_len: row.get(3)?,
                    received_at: UnixTime(row.get(4)?),
                })
            },
        )
        .optional()?;
    Ok(row)
}

/// The jobs of the event stored under `key`, by destination.
pub fn jobs(conn: &Connection, key: &ReceiptKey) -> Result<Vec<JobRecord>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT j.id, j.destination, j.state, j.attempts, j.next_attempt_at_ms / 1000, j.last_error
         FROM jobs j JOIN events e ON e.id = j.event_id
         WHERE e.source = ?1 AND e.identity = ?2 ORDER BY j.destination",
    )?;
    let rows = stmt.query_map(params![key.source.as_str(), key.identity.as_str()], |row| {
        Ok(JobRecord {
            id: row.get(0)?,
            destination: row.get(1)?,
            state: row.get(2)?,
            attempts: row.get(3)?,
            next_attempt_at: UnixTime(row.get(4)?),
            last_error: row.get(5)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}
