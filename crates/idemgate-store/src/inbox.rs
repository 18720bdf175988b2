//! The gateway's inbox: an accepted event and one delivery job per destination, written
//! inside the receipt's transaction so that a receipt never exists without its work.

use idemgate_core::{ReceiptKey, UnixTime};
use rusqlite::{Connection, OptionalExtension, params};

use crate::StoreError;

/// An event to keep until every destination has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent<'a> {
    /// (source, identity); the receipt with this key is inserted in the same transaction.
    pub key: &'a ReceiptKey,
    /// The event type, when the source names where it is.
    pub event_type: Option<&'a str>,
    /// The original `Content-Type`, passed on to destinations.
    pub content_type: Option<&'a str>,
    /// The raw body bytes exactly as received.
    pub body: &'a [u8],
    /// When it arrived.
    pub received_at: UnixTime,
}

/// Stores `event` and a `pending` job for each of `destinations`, due at once.
/// Call it from a handler, on the receipt transaction's connection.
pub fn accept_event(conn: &Connection, event: &NewEvent<'_>, destinations: &[&str]) -> Result<i64, rusqlite::Error> {
    conn.execute(
        "INSERT INTO events (source, identity, event_type, content_type, body, received_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            event.key.source.as_str(),
            event.key.identity.as_str(),
            event.event_type,
            event.content_type,
            event.body,
            event.received_at.0
        ],
    )?;
    let event_id = conn.last_insert_rowid();
    let mut insert = conn.prepare_cached(
        "INSERT INTO jobs (event_id, destination, state, next_attempt_at, created_at, updated_at)
         VALUES (?1, ?2, 'pending', ?3, ?3, ?3)",
    )?;
    for destination in destinations {
        insert.execute(params![event_id, destination, event.received_at.0])?;
    }
    Ok(event_id)
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
        "SELECT j.id, j.destination, j.state, j.attempts, j.next_attempt_at
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
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}
