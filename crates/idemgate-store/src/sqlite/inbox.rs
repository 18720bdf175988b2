//! The gateway's inbox: an accepted event and one delivery job per destination, written
//! inside the receipt's transaction so that a receipt never exists without its work.

use idemgate_core::{Outcome, ReceiptKey, UnixTime, job::JobState};
use rusqlite::{Connection, OptionalExtension, params};

use super::{
    SqliteStore,
    handover::{HandedEvent, Leased},
    receive::{Effect, Produced, Received},
};
use crate::{
    HandlerError, ReceiveRequest, StoreError,
    inbox::{IncomingEvent, JobRecord, Ordering, StoredEvent, Version},
    model::{
        inbox::{log_superseded, outgoing_id, stored_headers},
        jobs::bounded,
    },
};

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
    accept_leasing(conn, event, destinations, None).map(|(accepted, _)| accepted)
}

/// The jobs to store already leased to this process's worker (a hand-over's offer): their
/// destinations, and the lease's end in seconds.
pub(super) struct Leases {
    destinations: Vec<String>,
    until: i64,
}

/// The gateway's effect as the writer runs it: the event, and the jobs to store leased.
pub(super) struct EventEffect {
    event: IncomingEvent,
    leases: Option<Leases>,
}

/// [`accept_event`], storing the jobs of `leases`' destinations already leased (unless
/// the destination is disabled or paused). Also returns those leased: (destination, job id).
fn accept_leasing(
    conn: &Connection,
    event: &NewEvent<'_>,
    destinations: &[&str],
    leases: Option<&Leases>,
) -> Result<(AcceptedEvent, Leased), rusqlite::Error> {
    let headers = stored_headers(event.headers);
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
        outgoing_id(event.outgoing_id, event.key),
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
    let mut leased = Vec::new();
    for destination in destinations {
        let lease = leases.filter(|l| !superseded && l.destinations.iter().any(|name| name == destination));
        if let Some(lease) = lease
            && insert_leased(conn, event_id, destination, event.received_at, lease.until)?
        {
            leased.push(((*destination).to_owned(), conn.last_insert_rowid()));
            continue;
        }
        insert.execute(params![event_id, destination, state.as_str(), event.received_at.0])?;
    }
    Ok((AcceptedEvent { event_id, superseded }, leased))
}

/// Stores a job as its first claim would leave it (`running`, attempt 1, lease token 1,
/// leased until `until`), unless its destination is disabled or paused; says whether it did.
fn insert_leased(
    conn: &Connection,
    event_id: i64,
    destination: &str,
    received_at: UnixTime,
    until: i64,
) -> Result<bool, rusqlite::Error> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO jobs (event_id, destination, state, attempts, next_attempt_at_ms, lease_until, lease_token,
                               created_at, updated_at)
             SELECT ?1, ?2, 'running', 1, ?3 * 1000, ?4, 1, ?3, ?3
             WHERE NOT EXISTS (SELECT 1 FROM destinations d WHERE d.name = ?2
                                 AND (d.disabled_at IS NOT NULL OR d.paused_at_ms IS NOT NULL))",
        )?
        .execute(params![event_id, destination, received_at.0, until])?;
    Ok(inserted == 1)
}

impl SqliteStore {
    /// Offers one gateway delivery: the receipt, the event and one job per destination,
    /// or the receipt found (duplicate or conflict); see [`crate::Store::accept`].
    ///
    /// While a worker takes hand-overs ([`crate::Store::hand_over_to`]), the jobs of the
    /// destinations it has room for are stored leased and, once the commit is durable,
    /// handed to it.
    pub(crate) async fn accept(&self, request: ReceiveRequest, event: IncomingEvent) -> Outcome {
        let Some(offer) = self.offer(&event.destinations) else {
            return self.submit(request, Effect::Event(Box::new(EventEffect { event, leases: None }))).await.outcome;
        };
        let key = request.key.clone();
        let handed = HandedEvent::of(&event);
        let leases = Leases {
            destinations: offer.destinations().map(str::to_owned).collect(),
            until: offer.lease_until(request.received_at),
        };
        let Received { outcome, leased } =
            self.submit(request, Effect::Event(Box::new(EventEffect { event, leases: Some(leases) }))).await;
        // Applied means this delivery's savepoint was committed, durably: the jobs exist.
        if matches!(outcome, Outcome::Applied { .. }) {
            offer.hand_over(&key, &handed, leased);
        }
        outcome
    }
}

/// The gateway's effect, on the writer thread inside the receipt's savepoint: the event,
/// its jobs (those of `effect`'s leases stored leased) and its dead jobs. Returns the
/// receipt's result and the jobs leased.
pub(super) fn store_event(
    conn: &Connection,
    request: &ReceiveRequest,
    effect: EventEffect,
) -> Result<Produced, HandlerError> {
    let EventEffect { event, leases } = effect;
    let (key, received_at) = (&request.key, request.received_at);
    if let Some(reason) = event.refusal {
        return Err(HandlerError::Refused(reason));
    }
    let new = NewEvent {
        key,
        outgoing_id: event.outgoing_id.as_deref(),
        event_type: event.event_type.as_deref(),
        content_type: event.content_type.as_deref(),
        headers: &event.headers,
        body: &event.body,
        ordering: event.ordering.as_ref(),
        received_at,
    };
    let destinations: Vec<&str> = event.destinations.iter().map(String::as_str).collect();
    // Only the rare superseded case is logged here, on the writer thread; every outcome is
    // logged and counted by the inbound pipeline once the commit has returned.
    let (accepted, leased) = accept_leasing(conn, &new, &destinations, leases.as_ref())?;
    if accepted.superseded {
        log_superseded(key);
    }
    if !event.dead.is_empty() {
        let mut insert = conn.prepare_cached(
            "INSERT INTO jobs (event_id, destination, state, next_attempt_at_ms, last_error, created_at, updated_at)
             VALUES (?1, ?2, 'dead', ?3 * 1000, ?4, ?3, ?3)",
        )?;
        for (destination, reason) in &event.dead {
            insert.execute(params![accepted.event_id, destination, received_at.0, bounded(Some(reason))])?;
        }
    }
    Ok(Produced { result: event.result, leased })
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
        .prepare_cached(
            "SELECT version_int, version_text FROM ordering_versions WHERE source = ?1 AND ordering_key = ?2",
        )?
        .query_row(params![source, ordering.key], |row| {
            Ok((row.get::<_, Option<i64>>(0)?, row.get::<_, Option<String>>(1)?))
        })
        .optional()?;
    let seen = seen.and_then(|(int, text)| Version::from_columns(int, text));
    if seen.as_ref().is_some_and(|seen| ordering.version.is_older_than(seen)) {
        return Ok(false);
    }
    let (int, text) = ordering.version.columns();
    conn.prepare_cached(
        "INSERT INTO ordering_versions (source, ordering_key, version_int, version_text, event_id)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (source, ordering_key) DO UPDATE SET
            version_int = excluded.version_int, version_text = excluded.version_text, event_id = excluded.event_id",
    )?
    .execute(params![source, ordering.key, int, text, event_id])?;
    Ok(true)
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
