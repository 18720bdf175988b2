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

use idemgate_core::{
    Outcome, ReceiptKey,
    outcome::{FailureCause, Repeat},
};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::{SqliteReader, StoreOptions, lock::WriterLock, migrations, open_connection};
use crate::{
    HandlerError, ReceiveRequest, StoreError,
    model::{conflict_not_recorded, parse_result},
};

/// The effect of a first delivery, run inside the receipt's transaction. Whatever it
/// writes through the connection commits together with the receipt, or not at all.
pub type Handler = Box<dyn FnOnce(&Connection) -> Result<Value, HandlerError> + Send>;
/// Other write work (queue moves, idempotency records, an application's own tables). It
/// runs on its own savepoint of the batch's transaction, or is aborted if the batch cannot
/// run it; either way its caller is answered once the batch's fate is known.
trait WriteJob: Send {
    /// Runs the work; says whether it succeeded, and returns how to answer its caller
    /// given whether its changes are durable.
    fn run(self: Box<Self>, conn: &Connection) -> (bool, Finish);
    /// Answers the caller without running.
    fn abort(self: Box<Self>);
}

type Write = Box<dyn WriteJob>;
/// Sends a write's answer; called with whether its changes are durable.
type Finish = Box<dyn FnOnce(bool) + Send>;

struct Job<F, T> {
    work: F,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<F, T, E> WriteJob for Job<F, T>
where
    F: FnOnce(&Connection) -> Result<T, E> + Send,
    T: Send + 'static,
    E: Into<StoreError>,
{
    fn run(self: Box<Self>, conn: &Connection) -> (bool, Finish) {
        let Job { work, reply } = *self;
        let result = work(conn).map_err(Into::into);
        let succeeded = result.is_ok();
        let finish: Finish = Box::new(move |durable| {
            let _ = reply.send(match result {
                Ok(_) if !durable => Err(StoreError::NotCommitted),
                other => other,
            });
        });
        (succeeded, finish)
    }

    fn abort(self: Box<Self>) {
        let _ = self.reply.send(Err(StoreError::NotCommitted));
    }
}

enum Command {
    Receive(Work),
    Write(Write),
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
    ///
    /// It holds the writers' lock beside the file until the writer has stopped, so that a
    /// restore cannot replace the file under it; while a restore runs, this fails with
    /// [`StoreError::Restoring`] (unavailable: try again).
    pub fn open(path: &Path, options: StoreOptions) -> Result<Self, StoreError> {
        let lock = WriterLock::shared(path)?;
        let mut conn = open_connection(path, true, &options)?;
        migrations::migrate(&mut conn)?;
        let (commands, inbox) = mpsc::channel(options.queue_capacity.max(1));
        let stats = Arc::new(WriterStats::default());
        let writer_stats = Arc::clone(&stats);
        let writer = thread::Builder::new()
            .name("idemgate-sqlite-writer".into())
            .spawn(move || {
                run_writer(conn, inbox, options, &writer_stats);
                drop(lock);
            })
            .map_err(|_| StoreError::Unavailable)?;
        Ok(Self { commands, writer: Some(writer), path: path.to_owned(), options, stats })
    }

    /// Commands waiting for the writer right now.
    #[must_use]
    pub fn queued(&self) -> usize {
        self.commands.max_capacity() - self.commands.capacity()
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
        self.receive_boxed(request, Box::new(handler)).await
    }

    /// [`Self::receive`] for a handler that is already boxed (no second box).
    pub(crate) async fn receive_boxed(&self, request: ReceiveRequest, handler: Handler) -> Outcome {
        let (reply, answer) = oneshot::channel();
        let command = Command::Receive(Work { request, handler, reply });
        let unavailable = Outcome::Failed { cause: FailureCause::Unavailable };
        if self.commands.send(command).await.is_err() {
            return unavailable;
        }
        answer.await.unwrap_or(unavailable)
    }

    /// Runs `work` on the writer connection, e.g. to create an application's tables at
    /// start-up. It commits with the writer's current batch if `work` returns `Ok`, and is
    /// rolled back alone if it returns an error; the answer comes once the commit is durable.
    pub async fn write<T, E, F>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        E: Into<StoreError>,
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Write = Box::new(Job { work, reply });
        self.commands.send(Command::Write(job)).await.map_err(|_| StoreError::Unavailable)?;
        answer.await.map_err(|_| StoreError::Unavailable)?
    }

    /// Whether the store can take its write lock now: the writer is running and no other
    /// process holds the database past `busy_timeout`. Used by readiness checks.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.write(|_| Ok::<_, StoreError>(())).await
    }

    /// Opens a read connection to the same file.
    pub fn reader(&self) -> Result<SqliteReader, StoreError> {
        SqliteReader::open_with(&self.path, &self.options)
    }

    /// Runs `read` on a fresh read connection, off the async threads.
    pub(crate) async fn read<T, F>(&self, read: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&SqliteReader) -> Result<T, StoreError> + Send + 'static,
    {
        let (path, options) = (self.path.clone(), self.options);
        tokio::task::spawn_blocking(move || read(&SqliteReader::open_with(&path, &options)?))
            .await
            .map_err(|_| StoreError::Unavailable)?
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
    while let Some(first) = inbox.blocking_recv() {
        let mut batch = vec![first];
        gather(&mut inbox, &mut batch, &options);
        commit_batch(&mut conn, batch, stats);
    }
}

/// Adds the commands already waiting (up to `max_batch`, waiting at most `batch_wait` for
/// more) to `batch`.
fn gather(inbox: &mut mpsc::Receiver<Command>, batch: &mut Vec<Command>, options: &StoreOptions) {
    let deadline = Instant::now() + options.batch_wait;
    while batch.len() < options.max_batch.max(1) {
        match inbox.try_recv() {
            Ok(command) => batch.push(command),
            Err(mpsc::error::TryRecvError::Empty) if Instant::now() < deadline => {
                thread::sleep(Duration::from_micros(50));
            }
            Err(_) => break,
        }
    }
}

/// A batch member's answer, held until the batch's commit has returned.
enum Pending {
    Receive(oneshot::Sender<Outcome>, Outcome, ReceiptKey),
    Write(Finish, bool),
}

/// Group commit: one transaction and one fsync for the whole batch, one savepoint per
/// command so that a failing handler or write rolls back alone. No answer leaves before
/// the commit returned; if the commit fails, nothing of the batch is stored and every
/// member is answered as failed (but see [`after_failed_commit`]).
fn commit_batch(conn: &mut Connection, batch: Vec<Command>, stats: &WriterStats) {
    let deliveries = batch.iter().filter(|c| matches!(c, Command::Receive(_))).count() as u64;
    let started = Instant::now();
    metrics::histogram!("idemgate_commit_batch_size").record(batch.len() as f64);
    let mut pending = Vec::with_capacity(batch.len());
    let committed = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(mut tx) => {
            for command in batch {
                pending.push(match command {
                    Command::Receive(Work { request, handler, reply }) => {
                        let outcome = receive_in_savepoint(&mut tx, &request, handler);
                        Pending::Receive(reply, outcome, request.key)
                    }
                    Command::Write(job) => write_in_savepoint(&mut tx, job),
                });
            }
            tx.commit().map_err(|err| tracing::warn!(error = %err, "batch commit failed; nothing of it is stored"))
        }
        Err(err) => {
            tracing::warn!(error = %err, "cannot begin the writer's transaction; the batch fails");
            for command in batch {
                match command {
                    Command::Receive(work) => pending.push(Pending::Receive(work.reply, failed(), work.request.key)),
                    Command::Write(job) => job.abort(),
                }
            }
            Err(())
        }
    };
    metrics::histogram!("idemgate_commit_seconds").record(started.elapsed().as_secs_f64());
    if committed.is_err() {
        metrics::counter!("idemgate_store_errors_total").increment(1);
    }
    if committed.is_ok() && deliveries > 0 {
        stats.batches.fetch_add(1, Ordering::Relaxed);
        stats.deliveries.fetch_add(deliveries, Ordering::Relaxed);
    }
    let stands: Vec<bool> = match committed {
        Ok(()) => Vec::new(),
        Err(()) => pending.iter().map(|member| conflict_stands(member, &pending)).collect(),
    };
    for (i, member) in pending.into_iter().enumerate() {
        match member {
            Pending::Receive(reply, outcome, _) => {
                let _ = reply.send(if committed.is_ok() || stands[i] { outcome } else { failed() });
            }
            Pending::Write(finish, released) => finish(committed.is_ok() && released),
        }
    }
}

/// Whether a member keeps its answer although its batch's commit failed. Nothing of the
/// batch is stored, so every member fails, except a conflict with a receipt committed
/// before this batch: that receipt still stands and the repeat is still a conflict; only
/// its record is lost, and the answer is 409 as on PostgreSQL (ARCHITECTURE.md). A conflict
/// with a receipt applied earlier in the same batch fails with it: that receipt was never
/// stored.
fn conflict_stands(member: &Pending, batch: &[Pending]) -> bool {
    let Pending::Receive(_, Outcome::Conflict, key) = member else { return false };
    let applied_in_batch =
        batch.iter().any(|other| matches!(other, Pending::Receive(_, Outcome::Applied { .. }, k) if k == key));
    if !applied_in_batch {
        conflict_not_recorded(key, &"the batch's commit failed");
    }
    !applied_in_batch
}

/// Runs one write on its own savepoint. A write that fails, panics or cannot be released
/// is rolled back alone. A write that cannot run at all is dropped, and its caller learns
/// that the store is unavailable.
fn write_in_savepoint(tx: &mut Transaction<'_>, job: Write) -> Pending {
    let aborted = |job: Write| {
        job.abort();
        Pending::Write(Box::new(|_| {}), false)
    };
    if tx.is_autocommit() {
        return aborted(job);
    }
    let Ok(savepoint) = tx.savepoint() else { return aborted(job) };
    match catch_unwind(AssertUnwindSafe(|| job.run(&savepoint))) {
        Ok((true, finish)) => {
            let released = savepoint.commit().is_ok();
            Pending::Write(finish, released)
        }
        Ok((false, finish)) => Pending::Write(finish, false),
        Err(_) => {
            // The job and its reply are gone with the panic: the caller sees the writer's
            // channel closed, which it reports as unavailable.
            tracing::error!("a write on the store panicked; rolled back");
            Pending::Write(Box::new(|_| {}), false)
        }
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
        if Repeat::judge(&hash, &request.body_hash) == Repeat::Duplicate {
            return Ok(Outcome::Duplicate { result: parse_result(&result)? });
        }
        record_conflict(&savepoint, request);
        if let Err(err) = savepoint.commit() {
            conflict_not_recorded(key, &err);
        }
        return Ok(Outcome::Conflict);
    }
    if request.dedupe_body && !insert_body_receipt(&savepoint, request)? {
        // The savepoint is dropped: nothing of this delivery is kept.
        return Ok(Outcome::Duplicate { result: parse_result(&body_receipt_result(&savepoint, request)?)? });
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
    // Cached statements: the writer runs these for every delivery, so they are parsed once.
    savepoint
        .prepare_cached(
            "INSERT INTO receipts (source, identity, body_sha256, outcome, result, received_at)
         VALUES (?1, ?2, ?3, 'applied', ?4, ?5)",
        )?
        .execute(params![
            key.source.as_str(),
            key.identity.as_str(),
            &request.body_hash.0[..],
            result.to_string(),
            request.received_at.0
        ])?;
    savepoint.commit()?;
    Ok(Outcome::Applied { result })
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

/// Remembers a conflicting repeat for the operator.
///
/// Failing to record it does not change the answer, on either backend: the conflict is a
/// fact of the stored receipt, which is untouched, and nothing was applied. A `503` instead
/// would have the sender retry the same refused bytes for as long as the record fails,
/// then give up (or disable the endpoint) without ever learning they conflict; the
/// operator learns of it from an error log line and `idemgate_conflicts_unrecorded_total`.
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
        Err(err) => conflict_not_recorded(key, &err),
    }
}
