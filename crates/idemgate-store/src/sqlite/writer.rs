//! The writer: one thread that owns the write connection and commits what callers submit
//! through a bounded queue.
//!
//! Funnelling every write through one owner serialises receipts in this process without
//! locks in the callers, and gives one place where many deliveries share one transaction
//! and one flush (group commit). Across processes, `BEGIN IMMEDIATE` and the primary key
//! keep the same guarantee.
//!
//! A caller's [`Submission`] is either a [`QueuedDelivery`] (a delivery and its effect)
//! or a [`QueuedWrite`] (any other write, such as a queue move). The writer takes what is
//! waiting as one [`Batch`], runs each member on its own savepoint, holds each member's
//! [`HeldAnswer`] until the commit has returned, and only then answers them all.

use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    path::{Path, PathBuf},
    sync::{
        Arc, PoisonError, RwLock,
        atomic::{AtomicU64, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use idemgate_core::{Outcome, ReceiptKey, outcome::FailureCause};
use rusqlite::{Connection, Transaction, TransactionBehavior};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::{
    SqliteError, SqliteReader, StoreOptions,
    handover::{Handover, Offer},
    jobs,
    lock::WriterLock,
    migrations, open_connection,
    pool::ReadPool,
    receive::{Effect, Received, failed, receive_in_savepoint},
    savepoint::Savepoint,
};
use crate::{HandlerError, ReceiveRequest, StoreError, model::receive::conflict_not_recorded};

/// The effect of a first delivery, run inside the receipt's transaction. Whatever it
/// writes through the connection commits together with the receipt, or not at all.
pub type Handler = Box<dyn FnOnce(&Connection) -> Result<Value, HandlerError> + Send>;

/// What a caller puts on the writer's queue.
enum Submission {
    /// A delivery to receive.
    Delivery(QueuedDelivery),
    /// Any other write.
    Write(Box<dyn QueuedWrite>),
}

/// A delivery waiting for its batch: the request, the effect of its first delivery, and
/// where what became of it goes.
struct QueuedDelivery {
    request: ReceiveRequest,
    effect: Effect,
    reply: oneshot::Sender<Received>,
}

/// A write waiting for its batch (queue moves, idempotency records, an application's own
/// tables), its result type hidden. It runs on its own savepoint of the batch's
/// transaction, or is aborted if the batch cannot run it; either way its caller is
/// answered once the batch's fate is known.
trait QueuedWrite: Send {
    /// Runs the write; says whether it succeeded, and returns the reply that answers its
    /// caller once the batch's fate is known.
    fn run(self: Box<Self>, conn: &Connection) -> (bool, WriteReply);
    /// Answers the caller without running.
    fn abort(self: Box<Self>);
}

/// Sends a write's result to its caller; called with whether its changes are durable.
type WriteReply = Box<dyn FnOnce(bool) + Send>;

/// The one [`QueuedWrite`]: a closure on the write connection, and the channel its
/// result goes to.
struct WriteFn<F, T> {
    write: F,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<F, T, E> QueuedWrite for WriteFn<F, T>
where
    F: FnOnce(&Connection) -> Result<T, E> + Send,
    T: Send + 'static,
    E: Into<StoreError>,
{
    fn run(self: Box<Self>, conn: &Connection) -> (bool, WriteReply) {
        let WriteFn { write, reply } = *self;
        let result = write(conn).map_err(Into::into);
        let succeeded = result.is_ok();
        let reply: WriteReply = Box::new(move |durable| {
            let _ = reply.send(match result {
                Ok(_) if !durable => Err(StoreError::NotCommitted),
                other => other,
            });
        });
        (succeeded, reply)
    }

    fn abort(self: Box<Self>) {
        let _ = self.reply.send(Err(StoreError::NotCommitted));
    }
}

/// The submissions the writer commits together, in one transaction.
type Batch = Vec<Submission>;

/// A batch member's answer, held until the batch's commit has returned.
enum HeldAnswer {
    /// A delivery's outcome (and the jobs it leased) as its savepoint left it, for the
    /// delivery of `key`.
    Delivery { reply: oneshot::Sender<Received>, received: Received, key: ReceiptKey },
    /// A write's reply, and whether its savepoint was released into the transaction.
    Write { reply: WriteReply, released: bool },
}

/// The SQLite store's write side. Cheap to share behind an `Arc`; dropping the last handle
/// (or [`SqliteStore::close`]) stops the writer after what is already queued.
#[derive(Debug)]
pub struct SqliteStore {
    queue: mpsc::Sender<Submission>,
    writer: Option<thread::JoinHandle<()>>,
    path: PathBuf,
    options: StoreOptions,
    stats: Arc<WriterStats>,
    readers: Arc<ReadPool>,
    /// Where accepted jobs go at once, when this process's worker takes them.
    handover: RwLock<Option<Handover>>,
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `path`, applies migrations and starts
    /// the writer thread.
    ///
    /// It holds the writers' lock beside the file until the writer has stopped, so that a
    /// restore cannot replace the file under it; while a restore runs, this fails with
    /// [`SqliteError::Restoring`] (unavailable: try again). Opened by the only writer, the
    /// store first makes the jobs that a gone process held under a lease due again.
    pub fn open(path: &Path, options: StoreOptions) -> Result<Self, StoreError> {
        let (lock, alone) = WriterLock::writer(path)?;
        let mut conn = open_connection(path, true, &options)?;
        migrations::migrate(&mut conn)?;
        if alone {
            let expired = jobs::expire_leases(&conn)?;
            if expired > 0 {
                tracing::info!(jobs = expired, "jobs leased by a process that is gone are due again");
            }
            lock.share(path)?;
        }
        tune_writer(&conn).map_err(|cause| SqliteError::Open { path: path.to_owned(), cause })?;
        let (queue, submitted) = mpsc::channel(options.queue_capacity.max(1));
        let stats = Arc::new(WriterStats::default());
        let writer_stats = Arc::clone(&stats);
        let writer = thread::Builder::new()
            .name("idemgate-sqlite-writer".into())
            .spawn(move || {
                run_writer(conn, submitted, options, &writer_stats);
                drop(lock);
            })
            .map_err(|_| StoreError::Unavailable)?;
        let readers = Arc::new(ReadPool::new(path.to_owned(), options));
        let handover = RwLock::default();
        Ok(Self { queue, writer: Some(writer), path: path.to_owned(), options, stats, readers, handover })
    }

    /// From now on, jobs this store accepts go to `handover` (a worker's), or again wait for
    /// a claim (`None`).
    pub(crate) fn hand_over_to(&self, handover: Option<Handover>) {
        *self.handover.write().unwrap_or_else(PoisonError::into_inner) = handover;
    }

    /// Room in the hand-over for the jobs of `destinations` its worker can start at once.
    pub(super) fn offer(&self, destinations: &[String]) -> Option<Offer> {
        self.handover.read().unwrap_or_else(PoisonError::into_inner).as_ref()?.offer(destinations)
    }

    /// Submissions (deliveries and writes) waiting for the writer right now. A test hook
    /// (the batching tests wait for a queue to fill), not part of the store's surface.
    #[doc(hidden)]
    #[must_use]
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }

    /// What the writer has committed so far. A test hook (the batching tests count
    /// commits), not part of the store's surface.
    #[doc(hidden)]
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
        self.submit(request, Effect::Handler(handler)).await.outcome
    }

    /// Queues one delivery for the writer; returns what became of it once its batch's
    /// commit has returned.
    pub(super) async fn submit(&self, request: ReceiveRequest, effect: Effect) -> Received {
        let (reply, answer) = oneshot::channel();
        let delivery = Submission::Delivery(QueuedDelivery { request, effect, reply });
        let unavailable = || Outcome::Failed { cause: FailureCause::Unavailable }.into();
        if self.queue.send(delivery).await.is_err() {
            return unavailable();
        }
        answer.await.unwrap_or_else(|_| unavailable())
    }

    /// Runs `write` on the writer connection, e.g. to create an application's tables at
    /// start-up. It commits with the writer's current batch if `write` returns `Ok`, and is
    /// rolled back alone if it returns an error; the answer comes once the commit is durable.
    pub async fn write<T, E, F>(&self, write: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        E: Into<StoreError>,
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let write = Submission::Write(Box::new(WriteFn { write, reply }));
        self.queue.send(write).await.map_err(|_| StoreError::Unavailable)?;
        answer.await.map_err(|_| StoreError::Unavailable)?
    }

    /// Whether the store can take its write lock now: the writer is running and no other
    /// process holds the database past `busy_timeout`. Used by readiness checks.
    pub(crate) async fn ping(&self) -> Result<(), StoreError> {
        self.write(|_| Ok::<_, StoreError>(())).await
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

    /// Runs `read` on one of the store's kept read connections, on the calling thread: for
    /// point reads on a hot path (an `Idempotency-Key` replay), where handing the read to
    /// another thread costs more than the read. Those connections never wait for a lock
    /// (`busy_timeout` zero): a read that would wait fails at once, and its caller takes the
    /// writing path instead.
    pub(crate) fn read_now<T>(
        &self,
        read: impl FnOnce(&SqliteReader) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.readers.with(read)
    }

    /// Stops taking submissions, lets the writer finish what is queued, and waits for it.
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

/// Pages of the database the writer keeps in memory, in KiB. SQLite's default (2 MiB) holds
/// only the top of the receipts' B-tree once it passes some ten thousand receipts, and
/// every lookup and insert below it then reads its page back from the OS; the memory is
/// taken only as pages are read.
const WRITER_CACHE_KIB: i64 = 64 * 1024;

/// Statements the writer keeps prepared: every statement of the receive path, the queue's
/// and the idempotency layer's, with room to spare (rusqlite's default keeps 16, and an
/// evicted statement is parsed again the next time).
const WRITER_STATEMENTS: usize = 64;

fn tune_writer(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB)?;
    // The savepoint each batch member runs on keeps the pages it changes in a sub-journal,
    // for its rollback. SQLite spills that journal to a temporary file past 64 KiB and then
    // writes it with a syscall per page; in memory it is a copy, and it never outgrows what
    // one delivery changes.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.set_prepared_statement_cache_capacity(WRITER_STATEMENTS);
    Ok(())
}

fn run_writer(
    mut conn: Connection,
    mut submitted: mpsc::Receiver<Submission>,
    options: StoreOptions,
    stats: &WriterStats,
) {
    while let Some(first) = submitted.blocking_recv() {
        let mut batch = vec![first];
        gather(&mut submitted, &mut batch, &options);
        commit_batch(&mut conn, batch, stats);
    }
}

/// Adds the submissions already waiting (up to `max_batch`, waiting at most `batch_wait`
/// for more) to `batch`.
fn gather(submitted: &mut mpsc::Receiver<Submission>, batch: &mut Batch, options: &StoreOptions) {
    let deadline = Instant::now() + options.batch_wait;
    while batch.len() < options.max_batch.max(1) {
        match submitted.try_recv() {
            Ok(submission) => batch.push(submission),
            Err(mpsc::error::TryRecvError::Empty) if Instant::now() < deadline => {
                thread::sleep(Duration::from_micros(50));
            }
            Err(_) => break,
        }
    }
}

/// Group commit: one transaction and one fsync for the whole batch, one savepoint per
/// member so that a failing handler or write rolls back alone. No answer leaves before
/// the commit returned; if the commit fails, nothing of the batch is stored and every
/// member is answered as failed (but see [`conflict_stands`]).
fn commit_batch(conn: &mut Connection, batch: Batch, stats: &WriterStats) {
    let deliveries = batch.iter().filter(|s| matches!(s, Submission::Delivery(_))).count() as u64;
    let started = Instant::now();
    metrics::histogram!("idemgate_commit_batch_writes").record(batch.len() as f64);
    let mut held = Vec::with_capacity(batch.len());
    let committed = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
        Ok(tx) => {
            for submission in batch {
                held.push(match submission {
                    Submission::Delivery(QueuedDelivery { request, effect, reply }) => {
                        let received = receive_in_savepoint(&tx, &request, effect);
                        HeldAnswer::Delivery { reply, received, key: request.key }
                    }
                    Submission::Write(write) => write_in_savepoint(&tx, write),
                });
            }
            tx.commit().map_err(|err| tracing::warn!(error = %err, "batch commit failed; nothing of it is stored"))
        }
        Err(err) => {
            tracing::warn!(error = %err, "cannot begin the writer's transaction; the batch fails");
            for submission in batch {
                match submission {
                    Submission::Delivery(QueuedDelivery { request, reply, .. }) => {
                        held.push(HeldAnswer::Delivery { reply, received: failed().into(), key: request.key });
                    }
                    Submission::Write(write) => write.abort(),
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
        Err(()) => held.iter().map(|member| conflict_stands(member, &held)).collect(),
    };
    for (i, member) in held.into_iter().enumerate() {
        match member {
            HeldAnswer::Delivery { reply, received, .. } => {
                // A conflict that stands leased nothing: only an applied delivery does.
                let _ = reply.send(if committed.is_ok() || stands[i] { received } else { failed().into() });
            }
            HeldAnswer::Write { reply, released } => reply(committed.is_ok() && released),
        }
    }
}

/// Whether a member keeps its answer although its batch's commit failed. Nothing of the
/// batch is stored, so every member fails, except a conflict with a receipt committed
/// before this batch: that receipt still stands and the repeat is still a conflict; only
/// its record is lost, and the answer is 409 as on PostgreSQL (ARCHITECTURE.md). A conflict
/// with a receipt applied earlier in the same batch fails with it: that receipt was never
/// stored.
fn conflict_stands(member: &HeldAnswer, batch: &[HeldAnswer]) -> bool {
    let HeldAnswer::Delivery { received: Received { outcome: Outcome::Conflict, .. }, key, .. } = member else {
        return false;
    };
    let applied_in_batch = batch.iter().any(|other| {
        matches!(other, HeldAnswer::Delivery { received: Received { outcome: Outcome::Applied { .. }, .. }, key: k, .. } if k == key)
    });
    if !applied_in_batch {
        conflict_not_recorded(key, &"the batch's commit failed");
    }
    !applied_in_batch
}

/// Runs one write on its own savepoint. A write that fails, panics or cannot be released
/// is rolled back alone. A write that cannot run at all is dropped, and its caller learns
/// that the store is unavailable.
fn write_in_savepoint(tx: &Transaction<'_>, write: Box<dyn QueuedWrite>) -> HeldAnswer {
    let aborted = |write: Box<dyn QueuedWrite>| {
        write.abort();
        HeldAnswer::Write { reply: Box::new(|_| {}), released: false }
    };
    if tx.is_autocommit() {
        return aborted(write);
    }
    let Ok(savepoint) = Savepoint::open(tx) else { return aborted(write) };
    match catch_unwind(AssertUnwindSafe(|| write.run(&savepoint))) {
        Ok((true, reply)) => {
            let released = savepoint.release().is_ok();
            HeldAnswer::Write { reply, released }
        }
        Ok((false, reply)) => HeldAnswer::Write { reply, released: false },
        Err(_) => {
            // The write and its reply are gone with the panic: the caller sees the writer's
            // channel closed, which it reports as unavailable.
            tracing::error!("a write on the store panicked; rolled back");
            HeldAnswer::Write { reply: Box::new(|_| {}), released: false }
        }
    }
}
