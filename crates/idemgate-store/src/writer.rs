//! The writer: one thread that owns the write connection and executes work from a channel.
//!
//! Funnelling every write through one owner serialises receipts in this process without
//! locks in the callers, and gives a single place where many deliveries can later share
//! one transaction and one flush (group commit). Across processes, `BEGIN IMMEDIATE` and
//! the primary key keep the same guarantee.

use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    path::{Path, PathBuf},
    thread,
};

use idemgate_core::{BodyHash, Outcome, ReceiptKey, UnixTime, outcome::FailureCause};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::{HandlerError, StoreError, StoreOptions, migrations, sqlite::open_connection};

/// The effect of a first delivery, run inside the receipt's transaction. Whatever it
/// writes through the connection commits together with the receipt, or not at all.
type Handler = Box<dyn FnOnce(&Connection) -> Result<Value, HandlerError> + Send>;
/// Arbitrary write work, e.g. creating an application's own tables.
type Exclusive = Box<dyn FnOnce(&mut Connection) + Send>;

enum Command {
    Receive { request: ReceiveRequest, handler: Handler, reply: oneshot::Sender<Outcome> },
    Exclusive(Exclusive),
}

/// One authenticated, parsed delivery offered to the store.
#[derive(Debug, Clone)]
pub struct ReceiveRequest {
    /// (source, identity): what the receipt is unique on.
    pub key: ReceiptKey,
    /// SHA-256 of the raw body bytes.
    pub body_hash: BodyHash,
    /// When the delivery arrived.
    pub received_at: UnixTime,
}

/// The SQLite store's write side. Cheap to share behind an `Arc`; dropping the last handle
/// (or [`SqliteStore::close`]) stops the writer after the work already queued.
#[derive(Debug)]
pub struct SqliteStore {
    commands: mpsc::Sender<Command>,
    writer: Option<thread::JoinHandle<()>>,
    path: PathBuf,
    options: StoreOptions,
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `path`, applies migrations and starts
    /// the writer thread.
    pub fn open(path: &Path, options: StoreOptions) -> Result<Self, StoreError> {
        let mut conn = open_connection(path, true, &options)?;
        migrations::migrate(&mut conn)?;
        let (commands, inbox) = mpsc::channel(options.queue_capacity.max(1));
        let writer = thread::Builder::new()
            .name("idemgate-sqlite-writer".into())
            .spawn(move || run_writer(conn, inbox))
            .map_err(|_| StoreError::Unavailable)?;
        Ok(Self { commands, writer: Some(writer), path: path.to_owned(), options })
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Offers one delivery: exactly one of applied / duplicate / conflict / failed.
    ///
    /// `handler` runs only for the first delivery of an identity, inside the transaction
    /// that inserts the receipt; its result becomes the receipt's stored result. An error
    /// or panic from it rolls everything back and yields `Failed`. The returned outcome is
    /// known only after the commit is durable.
    pub async fn receive<H>(&self, request: ReceiveRequest, handler: H) -> Outcome
    where
        H: FnOnce(&Connection) -> Result<Value, HandlerError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let command = Command::Receive { request, handler: Box::new(handler), reply };
        let unavailable = Outcome::Failed { cause: FailureCause::Unavailable };
        if self.commands.send(command).await.is_err() {
            return unavailable;
        }
        answer.await.unwrap_or(unavailable)
    }

    /// Runs `work` on the writer connection in its own immediate transaction, e.g. to
    /// create an application's tables at start-up. Commits if `work` returns `Ok`.
    pub async fn write<T, E, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        E: Into<StoreError>,
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Exclusive = Box::new(move |conn| {
            let _ = reply.send(in_transaction(conn, work));
        });
        self.commands.send(Command::Exclusive(job)).await.map_err(|_| StoreError::Unavailable)?;
        answer.await.map_err(|_| StoreError::Unavailable)?
    }

    /// Whether the store can take its write lock now: the writer is running and no other
    /// process holds the database past `busy_timeout`. Used by readiness checks.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.write(|_| Ok::<_, StoreError>(())).await
    }

    /// Opens a read connection to the same file.
    pub fn reader(&self) -> Result<crate::SqliteReader, StoreError> {
        crate::SqliteReader::open_with(&self.path, &self.options)
    }

    /// Stops accepting work, lets the writer finish what is queued, and waits for it.
    pub async fn close(mut self) {
        let writer = self.writer.take();
        drop(self);
        if let Some(writer) = writer {
            let _ = tokio::task::spawn_blocking(move || writer.join()).await;
        }
    }
}

fn in_transaction<T, E: Into<StoreError>>(
    conn: &mut Connection,
    work: impl FnOnce(&Connection) -> Result<T, E>,
) -> Result<T, StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let value = work(&tx).map_err(Into::into)?;

    tx.commit()?;
    Ok(value)
}

fn run_writer(mut conn: Connection, mut inbox: mpsc::Receiver<Command>) {
    while let Some(command) = inbox.blocking_recv() {
        match command {
            Command::Receive { request, handler, reply } => {
                let _ = reply.send(receive(&mut conn, &request, handler));
            }
            Command::Exclusive(job) => job(&mut conn),
        }
    }
}

/// The receipt transaction for one delivery. Errors become `Failed { Store }`: the
/// transaction was dropped, so SQLite rolled it back.
fn receive(conn: &mut Connection, request: &ReceiveRequest, handler: Handler) -> Outcome {
    match try_receive(conn, request, handler) {
        Ok(outcome) => outcome,
        Err(err) => {
            tracing::warn!(source = %request.key.source, identity = %request.key.identity, error = %err, "receipt transaction failed");
            Outcome::Failed { cause: FailureCause::Store }
        }
    }
}

fn try_receive(conn: &mut Connection, request: &ReceiveRequest, handler: Handler) -> Result<Outcome, StoreError> {
    let key = &request.key;
    // IMMEDIATE takes the write lock now: no other connection can insert this receipt
    // between the lookup below and our insert.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if let Some((hash, result)) = existing_receipt(&tx, key)? {
        drop(tx);
        if hash == request.body_hash.0 {
            return Ok(Outcome::Duplicate { result: parse_result(&result)? });
        }
        record_conflict(conn, request);
        return Ok(Outcome::Conflict);
    }
    let result = match catch_unwind(AssertUnwindSafe(|| handler(&tx))) {
        Ok(Ok(result)) => result,
        Ok(Err(HandlerError::Refused(reason))) => {
            tracing::info!(source = %key.source, identity = %key.identity, reason, "handler refused the event; rolled back");
            return Ok(Outcome::Refused { reason });
        }
        Ok(Err(err)) => {
            tracing::warn!(source = %key.source, identity = %key.identity, error = %err, "handler failed; rolled back");
            return Ok(Outcome::Failed { cause: FailureCause::Handler });
        }
        Err(_) => {
            tracing::error!(source = %key.source, identity = %key.identity, "handler panicked; rolled back");
            return Ok(Outcome::Failed { cause: FailureCause::Handler });
        }
    };
    tx.execute(
        "INSERT INTO receipts (source, identity, body_sha256, outcome, result, received_at)
         VALUES (?1, ?2, ?3, 'applied', ?4, ?5)",
        params![
            key.source.as_str(),
            key.identity.as_str(),
            &request.body_hash.0[..],
            result.to_string(),
            request.received_at.0
        ],
    )?;
    tx.commit()?;
    Ok(Outcome::Applied { result })
}

fn existing_receipt(conn: &Connection, key: &ReceiptKey) -> Result<Option<(Vec<u8>, String)>, StoreError> {
    let row = conn
        .query_row(
            "SELECT body_sha256, result FROM receipts WHERE source = ?1 AND identity = ?2",
            params![key.source.as_str(), key.identity.as_str()],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    Ok(row)
}

pub(crate) fn parse_result(text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|_| StoreError::Malformed("receipt result is not json"))
}

/// Remembers a conflicting repeat for the operator. Failing to record it does not change
/// the answer: the receipt is untouched either way.
fn record_conflict(conn: &Connection, request: &ReceiveRequest) {
    let key = &request.key;
    let recorded = conn.execute(
        "INSERT INTO conflicts (source, identity, body_sha256, first_seen_at, last_seen_at, seen_count)
         VALUES (?1, ?2, ?3, ?4, ?4, 1)
         ON CONFLICT (source, identity, body_sha256)
         DO UPDATE SET last_seen_at = excluded.last_seen_at, seen_count = seen_count + 1",
        params![key.source.as_str(), key.identity.as_str(), &request.body_hash.0[..], request.received_at.0],
    );
    match recorded {
        Ok(_) => {
            tracing::warn!(source = %key.source, identity = %key.identity, "conflicting repeat refused")
        }
        Err(err) => {
            tracing::error!(source = %key.source, identity = %key.identity, error = %err, "could not record conflict")
        }
    }
}
