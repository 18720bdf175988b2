//! One delivery inside the writer's batch: the receipt lookup (a repeat is a duplicate or
//! a conflict), then the body receipt, the handler and the receipt insert on one savepoint
//! of the batch's transaction, so that a failing delivery rolls back alone.

use std::panic::{AssertUnwindSafe, catch_unwind};

use idemgate_core::{Outcome, ReceiptKey, outcome::FailureCause};
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde_json::Value;

use super::{
    Handler,
    handover::Leased,
    inbox::{EventEffect, store_event},
    outbound::message::{MessageEffect, store_message},
    savepoint::Savepoint,
};
use crate::{
    HandlerError, ReceiveRequest, StoreError,
    model::receive::{conflict_not_recorded, conflict_refused, duplicate_of, parse_result},
};

/// What a first delivery does inside the receipt's transaction: an application's handler,
/// or the gateway's event, stored with its jobs (some leased to this process's worker).
pub(super) enum Effect {
    /// An application's own effect.
    Handler(Handler),
    /// The gateway's event (boxed as a handler is: a queue slot stays small).
    Event(Box<EventEffect>),
    /// A message of the outbound API: its event, jobs and message row.
    Message(Box<MessageEffect>),
}

/// What a first delivery's effect produced: the receipt's result, and the jobs it stored
/// leased to this process's worker.
pub(super) struct Produced {
    pub(super) result: Value,
    pub(super) leased: Leased,
}

impl Effect {
    fn run(self, conn: &Connection, request: &ReceiveRequest) -> Result<Produced, HandlerError> {
        match self {
            Self::Handler(handler) => Ok(Produced { result: handler(conn)?, leased: Leased::new() }),
            Self::Event(event) => store_event(conn, request, *event),
            Self::Message(message) => store_message(conn, request, *message),
        }
    }
}

/// What became of one delivery on the writer: its outcome, and the jobs its effect stored
/// leased (none unless it was applied), to hand over once the commit is durable.
pub(super) struct Received {
    pub(super) outcome: Outcome,
    pub(super) leased: Leased,
}

impl From<Outcome> for Received {
    fn from(outcome: Outcome) -> Self {
        Self { outcome, leased: Leased::new() }
    }
}

/// The one statement that writes a receipt on SQLite: ?1 source, ?2 identity, ?3 body
/// hash, ?4 result, ?5 time received. The writer runs it after finding no receipt in the
/// same transaction; seeding a benchmark store appends `ON CONFLICT DO NOTHING`.
pub(super) const INSERT_RECEIPT: &str =
    "INSERT INTO receipts (source, identity, body_sha256, outcome, result, received_at)
     VALUES (?1, ?2, ?3, 'applied', ?4, ?5)";

/// A delivery that failed in the store: rolled back, the sender may retry.
pub(super) fn failed() -> Outcome {
    Outcome::Failed { cause: FailureCause::Store }
}

/// One delivery inside the batch's transaction. Errors become `Failed { Store }`: the
/// savepoint was dropped, so SQLite rolled this delivery back.
pub(super) fn receive_in_savepoint(tx: &Transaction<'_>, request: &ReceiveRequest, effect: Effect) -> Received {
    // Some errors (a full disk, an I/O error) end the whole transaction. Running the rest
    // would then commit them one by one outside the batch; they fail instead.
    if tx.is_autocommit() {
        return failed().into();
    }
    match try_receive(tx, request, effect) {
        Ok(received) => received,
        Err(err) => {
            tracing::warn!(source = %request.key.source, identity = %request.key.identity, error = %err, "receipt savepoint failed");
            failed().into()
        }
    }
}

fn try_receive(tx: &Transaction<'_>, request: &ReceiveRequest, effect: Effect) -> Result<Received, StoreError> {
    let key = &request.key;
    // A lookup changes nothing, so a repeat (a duplicate) is answered without a savepoint:
    // one statement instead of four.
    if let Some((hash, result)) = existing_receipt(tx, key)? {
        if let Some(duplicate) = duplicate_of(&hash, &result, &request.body_hash)? {
            return Ok(duplicate.into());
        }
        let savepoint = Savepoint::open(tx)?;
        conflict_refused(key, record_conflict(&savepoint, request));
        if let Err(err) = savepoint.release() {
            conflict_not_recorded(key, &err);
        }
        return Ok(Outcome::Conflict.into());
    }
    let savepoint = Savepoint::open(tx)?;
    if request.dedupe_body && !insert_body_receipt(&savepoint, request)? {
        // The savepoint is dropped: nothing of this delivery is kept.
        return Ok(Outcome::Duplicate { result: parse_result(&body_receipt_result(&savepoint, request)?)? }.into());
    }
    let Produced { result, leased } = match catch_unwind(AssertUnwindSafe(|| effect.run(&savepoint, request))) {
        Ok(Ok(produced)) => produced,
        Ok(Err(HandlerError::Refused(reason))) => {
            tracing::info!(source = %key.source, identity = %key.identity, reason, "handler refused the event; rolled back");
            return Ok(Outcome::Refused { reason }.into());
        }
        Ok(Err(err)) => {
            tracing::warn!(source = %key.source, identity = %key.identity, error = %err, "handler failed; rolled back");
            return Ok(Outcome::Failed { cause: FailureCause::Handler }.into());
        }
        Err(_) => {
            tracing::error!(source = %key.source, identity = %key.identity, "handler panicked; rolled back");
            return Ok(Outcome::Failed { cause: FailureCause::Handler }.into());
        }
    };
    // Cached statements: the writer runs these for every delivery, so they are parsed once.
    savepoint.prepare_cached(INSERT_RECEIPT)?.execute(params![
        key.source.as_str(),
        key.identity.as_str(),
        &request.body_hash.0[..],
        result.to_string(),
        request.received_at.0
    ])?;
    savepoint.release()?;
    Ok(Received { outcome: Outcome::Applied { result }, leased })
}

fn existing_receipt(conn: &Connection, key: &ReceiptKey) -> Result<Option<(Vec<u8>, String)>, StoreError> {
    let row = conn
        .prepare_cached("SELECT body_sha256, result FROM receipts WHERE source = ?1 AND identity = ?2")?
        .query_row(params![key.source.as_str(), key.identity.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;

    Ok(row)
}

/// Claims (source, body hash) for this delivery's identity; false if another identity
/// holds it. The primary key decides; the receipt it refers to follows in the same
/// savepoint (the foreign key is checked at commit).
fn insert_body_receipt(conn: &Connection, request: &ReceiveRequest) -> Result<bool, StoreError> {
    let key = &request.key;
    let inserted = conn
        .prepare_cached(
            "INSERT INTO body_receipts (source, body_sha256, identity) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
        )?
        .execute(params![key.source.as_str(), &request.body_hash.0[..], key.identity.as_str()])?;
    Ok(inserted == 1)
}

/// The stored result of the event that first came with these bytes.
fn body_receipt_result(conn: &Connection, request: &ReceiveRequest) -> Result<String, StoreError> {
    let result = conn
        .prepare_cached(
            "SELECT r.result FROM body_receipts b JOIN receipts r ON r.source = b.source AND r.identity = b.identity
             WHERE b.source = ?1 AND b.body_sha256 = ?2",
        )?
        .query_row(params![request.key.source.as_str(), &request.body_hash.0[..]], |row| row.get(0))?;
    Ok(result)
}

/// Remembers a conflicting repeat for the operator (see [`conflict_refused`] for a failure).
fn record_conflict(conn: &Connection, request: &ReceiveRequest) -> Result<usize, rusqlite::Error> {
    let key = &request.key;
    conn.execute(
        "INSERT INTO conflicts (source, identity, body_sha256, first_seen_at, last_seen_at, seen_count)
         VALUES (?1, ?2, ?3, ?4, ?4, 1)
         ON CONFLICT (source, identity, body_sha256)
         DO UPDATE SET last_seen_at = excluded.last_seen_at, seen_count = seen_count + 1",
        params![key.source.as_str(), key.identity.as_str(), &request.body_hash.0[..], request.received_at.0],
    )
}
