//! The writer: one thread that owns the write connection and executes work from a channel.
//!
//! Funnelling every write through one owner serialises receipts in this process without
//! locks in the callers, and gives a single place where many deliveries can later share
//! one transaction and one flush (group commit). Across processes, `BEGIN IMMEDIATE` and
//! the primary key keep the same guarantee.

use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use idemgate_core::{BodyHash, Outcome, ReceiptKey, UnixTime, outcome::FailureCause};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
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
    stats: Arc<WriterStats>,
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `path`, applies migrations and starts
    /// the writer thread.
    pub fn open(path: &Path, options: StoreOptions) -> Result<Self, StoreError> {
        let mut conn = open_connection(path, true, &options)?;
        migrations::migrate(&mut conn)?;
        let (commands, inbox) = mpsc::channel(options.queue_capacity.max(1));
        let stats = Arc::new(WriterStats::default());
        let writer_stats = Arc::clone(&stats);
        let writer = thread::Builder::new()
            .name("idemgate-sqlite-writer".into())
            .spawn(move || run_writer(conn, inbox, options, &writer_stats))
            .map_err(|_| StoreError::Unavailable)?;
        Ok(Self { commands, writer: Some(writer), path: path.to_owned(), options, stats })
    }

    /// What the writer has committed so far.
    #[must_use]
    pub fn stats(&self) -> &WriterStats {
        &self.stats
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

/// Counts of what the writer committed, for tests and benchmarks.
#[derive(Debug, Default)]
pub struct WriterStats {
    batches: AtomicU64,
    deliveries: AtomicU64,
}

impl WriterStats {
    /// Receipt transactions committed (each holds one or more deliveries).
    pub fn batches(&self) -> u64 {
        self.batches.load(Ordering::Relaxed)
    }

    /// Deliveries answered from committed batches.
    pub fn deliveries(&self) -> u64 {
        self.deliveries.load(Ordering::Relaxed)
    }
}

/// One delivery waiting for its batch.
struct Work {
    request: ReceiveRequest,
    handler: Handler,
    reply: oneshot::Sender<Outcome>,
}

fn run_writer(mut conn: Connection, mut inbox: mpsc::Receiver<Command>, options: StoreOptions, stats: &WriterStats) {
    let mut next = None;
    while let Some(command) = next.take().or_else(|| inbox.blocking_recv()) {
        match command {
            Command::Exclusive(job) => job(&mut conn),
            Command::Receive { request, handler, reply } => {
                let mut batch = vec![Work { request, handler, reply }];
                next = gather(&mut inbox, &mut batch, &options);
                commit_batch(&mut conn, batch, stats);
            }
        }
    }
}

/// Adds the deliveries already waiting (up to `max_batch`, waiting at most `batch_wait`
/// for more) to `batch`. Returns a non-delivery command met on the way, to run after it.
fn gather(inbox: &mut mpsc::Receiver<Command>, batch: &mut Vec<Work>, options: &StoreOptions) -> Option<Command> {
    let deadline = Instant::now() + options.batch_wait;
    while batch.len() < options.max_batch.max(1) {
        match inbox.try_recv() {
            Ok(Command::Receive { request, handler, reply }) => batch.push(Work { request, handler, reply }),
            Ok(other) => return Some(other),
            Err(mpsc::error::TryRecvError::Empty) if Instant::now() < deadline => {
                thread::sleep(Duration::from_micros(50));
            }
            Err(_) => break,
        }
    }
    None
}

/// Group commit: one transaction and one fsync for the whole batch, one savepoint per
/// delivery so that a failing or refusing handler rolls back its own delivery only. No
/// answer leaves before the commit returned; if the commit fails, every delivery of the
/// batch is answered as failed (nothing of it is stored).
fn commit_batch(conn: &mut Connection, batch: Vec<Work>, stats: &WriterStats) {
    let size = batch.len() as u64;
    let mut answers = Vec::with_capacity(batch.len());
    let committed = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(mut tx) => {
            for Work { request, handler, reply } in batch {
                answers.push((reply, receive_in_savepoint(&mut tx, &request, handler)));
            }
            tx.commit().map_err(|err| tracing::warn!(error = %err, "batch commit failed; every delivery in it failed"))
        }
        Err(err) => {
            tracing::warn!(error = %err, "cannot begin the receipt transaction");
            answers.extend(batch.into_iter().map(|work| (work.reply, failed())));
            Err(())
        }
    };
    if committed.is_ok() {
        stats.batches.fetch_add(1, Ordering::Relaxed);
        stats.deliveries.fetch_add(size, Ordering::Relaxed);
    }
    for (reply, outcome) in answers {
        let _ = reply.send(if committed.is_ok() { outcome } else { failed() });
    }
}

fn failed() -> Outcome {
    Outcome::Failed { cause: FailureCause::Store }
}

/// One delivery inside the batch's transaction. Errors become `Failed { Store }`: the
/// savepoint was dropped, so SQLite rolled this delivery back.
fn receive_in_savepoint(tx: &mut Transaction<'_>, request: &ReceiveRequest, handler: Handler) -> Outcome {
    // Some errors (a full disk, an I/O error) end the whole transaction. Running the rest
    // would then commit them one by one outside the batch; they fail instead.
    if tx.is_autocommit() {
        return failed();
    }
    match try_receive(tx, request, handler) {
        Ok(outcome) => outcome,
        Err(err) => {
            tracing::warn!(source = %request.key.source, identity = %request.key.identity, error = %err, "receipt savepoint failed");
            failed()
        }
    }
}

fn try_receive(tx: &mut Transaction<'_>, request: &ReceiveRequest, handler: Handler) -> Result<Outcome, StoreError> {
    let key = &request.key;
    let savepoint = tx.savepoint()?;
    if let Some((hash, result)) = existing_receipt(&savepoint, key)? {
        if hash == request.body_hash.0 {
            return Ok(Outcome::Duplicate { result: parse_result(&result)? });
        }
        record_conflict(&savepoint, request);
        savepoint.commit()?;
        return Ok(Outcome::Conflict);
    }
    let result = match catch_unwind(AssertUnwindSafe(|| handler(&savepoint))) {
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
    savepoint.execute(
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
    savepoint.commit()?;
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
