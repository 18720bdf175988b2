//! Group commit on PostgreSQL: deliveries that arrive while another batch is being
//! written wait for the next one, and a batch is one transaction and one commit.
//!
//! SQLite's writer thread groups because it is the only writer. Here any number of
//! connections could write at once, but every transaction pays for its own commit (a WAL
//! flush) and its own round trips; under load that, not the statements, is what a
//! delivery costs. So a store keeps one queue: a delivery that finds fewer than
//! [`WRITERS`] batches running starts one (a spawned task, so that no caller's
//! cancellation can cut a batch short), and each task writes whatever has queued up
//! meanwhile, until the queue is empty.
//!
//! A batch accepts all its deliveries in one statement (`receipt::accept_all`: the
//! accept's CTEs over arrays, so the server starts one executor, not one per
//! delivery), then answers the repeats, then commits; only then does any caller learn its
//! outcome. The batch does not isolate its deliveries with
//! savepoints: the statement only fails when the database does, and a failed statement
//! aborts the transaction for the deliveries after it whatever savepoints were taken, so
//! on any error the whole batch is rolled back and each delivery runs again alone, on
//! the path a delivery takes without grouping (with its retries). Receipts are inserted
//! in key order, so two instances' batches lock keys in the same order and cannot
//! deadlock on each other.

use std::sync::{Arc, Mutex, PoisonError};

use deadpool_postgres::Pool;
use idemgate_core::Outcome;
use tokio::sync::oneshot;

use super::receipt::{AcceptParams, accept_all, repeat};
use crate::{ReceiveRequest, StoreError, inbox::IncomingEvent};

/// The most deliveries one transaction takes; more wait for the next.
const MAX_BATCH: usize = 128;

/// How many batches of one store may be in flight at once: one PostgreSQL backend runs a
/// batch's statements one after another, so a second lets the server use a second core
/// while the first batch commits.
const WRITERS: usize = 2;

/// One queue of deliveries waiting for a batch, shared by a store's clones.
pub(super) struct Group {
    pool: Pool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    waiting: Vec<Pending>,
    /// How many batch tasks are running; each ends only once `waiting` is empty.
    running: usize,
}

struct Pending {
    request: ReceiveRequest,
    event: IncomingEvent,
    reply: oneshot::Sender<Reply>,
}

/// Ends a batch task that did not end by itself (its runtime shut down, or it panicked):
/// the waiting deliveries are answered as never written, and the next delivery starts a
/// task again, rather than waiting for one that is gone.
struct Running<'a> {
    group: &'a Group,
    done: bool,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if !self.done {
            let mut state = self.group.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.running -= 1;
            if state.running == 0 {
                state.waiting.clear();
            }
        }
    }
}

/// What a batch tells one waiting delivery.
pub(super) enum Reply {
    /// Committed with the batch: the delivery's outcome.
    Done(Outcome),
    /// The batch was rolled back; the delivery is handed back to run alone.
    Alone(Box<(ReceiveRequest, IncomingEvent)>),
}

impl Group {
    pub(super) fn new(pool: Pool) -> Arc<Self> {
        Arc::new(Self { pool, state: Mutex::new(State::default()) })
    }

    /// Queues one delivery and waits for its batch; `None` when it was never written
    /// (the runtime went away), so the caller runs it alone.
    pub(super) async fn offer(self: &Arc<Self>, request: ReceiveRequest, event: IncomingEvent) -> Option<Reply> {
        let (reply, answer) = oneshot::channel();
        let start = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.waiting.push(Pending { request, event, reply });
            let start = state.running < WRITERS;
            if start {
                state.running += 1;
            }
            start
        };
        if start {
            let group = Arc::clone(self);
            tokio::spawn(async move { group.run().await });
        }
        answer.await.ok()
    }

    /// Writes batches until nobody waits.
    async fn run(&self) {
        let mut running = Running { group: self, done: false };
        loop {
            let batch = {
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                if state.waiting.is_empty() {
                    // Under the lock, so that a delivery queued after this look starts
                    // the next task.
                    state.running -= 1;
                    running.done = true;
                    return;
                }
                let take = state.waiting.len().min(MAX_BATCH);
                state.waiting.drain(..take).collect::<Vec<_>>()
            };
            self.write(batch).await;
        }
    }

    async fn write(&self, mut batch: Vec<Pending>) {
        batch.sort_by(|a, b| {
            (a.request.key.source.as_str(), a.request.key.identity.as_str())
                .cmp(&(b.request.key.source.as_str(), b.request.key.identity.as_str()))
        });
        let started = std::time::Instant::now();
        match self.commit(&batch).await {
            Ok(outcomes) => {
                // The same series as SQLite's writer: one sample per group commit.
                metrics::histogram!("idemgate_commit_batch_writes").record(batch.len() as f64);
                metrics::histogram!("idemgate_commit_seconds").record(started.elapsed().as_secs_f64());
                for (pending, outcome) in batch.into_iter().zip(outcomes) {
                    // A caller that gave up no longer listens; its delivery is committed.
                    let _ = pending.reply.send(Reply::Done(outcome));
                }
            }
            Err(err) => {
                tracing::debug!(error = %err, size = batch.len(), "group commit rolled back; each delivery runs alone");
                for pending in batch {
                    let _ = pending.reply.send(Reply::Alone(Box::new((pending.request, pending.event))));
                }
            }
        }
    }

    /// One transaction for the whole batch: every accept sent at once, then the repeats
    /// answered in it, then one commit. The outcomes are in the batch's order.
    async fn commit(&self, batch: &[Pending]) -> Result<Vec<Outcome>, StoreError> {
        let mut client = self.pool.get().await?;
        let tx = client.transaction().await?;
        let params: Vec<AcceptParams<'_>> = batch.iter().map(|p| AcceptParams::new(&p.request, &p.event)).collect();
        let inserted = accept_all(&tx, &params).await?;
        let mut outcomes = Vec::with_capacity(batch.len());
        for (pending, inserted) in batch.iter().zip(inserted) {
            outcomes.push(if inserted {
                Outcome::Applied { result: pending.event.result.clone() }
            } else {
                // The receipt was there (committed, or inserted for an earlier delivery of
                // this batch).
                repeat(&tx, &pending.request).await?
            });
        }
        tx.commit().await?;
        Ok(outcomes)
    }
}
