//! The hand-over: jobs this process accepts go straight to this process's worker, already
//! leased to it, instead of waiting in the queue for the worker's next claim.
//!
//! Why: the accepting process has the event in hand when it stores the job, and its own
//! worker is the one that would claim it a moment later. A claim costs a share of a writer
//! transaction per job (the due query, the lease's update, the event's row read back);
//! the hand-over writes the lease with the job, in the receipt's transaction, and passes
//! the job over in memory once that commit is durable.
//!
//! Nothing about the queue's rules changes: a handed-over job is a `running` job with a
//! lease, exactly as a claim leaves it. If the process dies before the attempt is
//! recorded, the lease expires and any worker claims the job again, as for a claimed job
//! whose worker died (on SQLite at once, when the restarted writer opens the store alone:
//! `sqlite/lock.rs`).
//!
//! A hand-over is only *offered*: for the destinations in the worker's [`Eligible`] set
//! (those it can start at once: not FIFO, not throttled, no breaker, and not waiting for
//! room), and only while the channel has room, reserved before the accept and used or
//! dropped after it. The store also leases a job only when its destination is neither
//! disabled nor paused. Everything else is stored `pending` and claimed as before. The
//! worker takes its room for a job (its place in flight) when it receives it.
//!
//! The set is plain data the worker replaces (on start, on a reload, and while a
//! destination waits for room), read at each accept: a reload that makes a destination
//! FIFO or throttled applies to the jobs accepted after it, while those already handed
//! over are delivered, as the jobs of a claim batch in hand are.
//!
//! Only the SQLite store hands over; on PostgreSQL every job waits for a claim.

use std::{collections::HashSet, sync::Arc, time::Duration};

use arc_swap::ArcSwap;
use idemgate_core::{ReceiptKey, UnixTime};
use tokio::sync::mpsc;

use crate::{
    inbox::IncomingEvent,
    jobs::ClaimedJob,
    model::{inbox::outgoing_id, jobs::lease_until},
};

/// The destinations whose jobs the worker can start the moment it gets them, by name: a
/// set the worker replaces when that changes, read by the store at each accept. Clones
/// share one set.
#[derive(Clone, Default)]
pub struct Eligible(Arc<ArcSwap<HashSet<String>>>);

impl Eligible {
    /// A set of `names`.
    #[must_use]
    pub fn of<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        let eligible = Self::default();
        eligible.replace(names.into_iter().map(Into::into).collect());
        eligible
    }

    /// Replaces the set: the accepts that start from now on read `names`.
    pub fn replace(&self, names: HashSet<String>) {
        self.0.store(Arc::new(names));
    }
}

impl std::fmt::Debug for Eligible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.load().iter()).finish()
    }
}

/// The jobs an accept stored leased to this process's worker: (destination, job id).
pub(crate) type Leased = Vec<(String, i64)>;

/// The accepting side: offers room for the jobs of one event at a time.
#[derive(Debug, Clone)]
pub struct Handover {
    sender: mpsc::Sender<ClaimedJob>,
    eligible: Eligible,
    lease: Duration,
}

/// The worker's side: the handed-over jobs, each leased for the hand-over's lease.
#[derive(Debug)]
pub struct HandedOver(mpsc::Receiver<ClaimedJob>);

impl Handover {
    /// A hand-over holding at most `room` jobs not yet taken, leasing each for `lease` (the
    /// worker's own lease), for the destinations in `eligible` at each accept.
    #[must_use]
    pub fn new(room: usize, lease: Duration, eligible: Eligible) -> (Self, HandedOver) {
        let (sender, receiver) = mpsc::channel(room.max(1));
        (Self { sender, eligible, lease }, HandedOver(receiver))
    }

    /// Reserves room for the eligible ones among `destinations`; `None` when there are none
    /// or there is no room (or the worker has stopped taking jobs).
    pub(crate) fn offer(&self, destinations: &[String]) -> Option<Offer> {
        let eligible = self.eligible.0.load();
        let mut reserved = Vec::new();
        for name in destinations.iter().filter(|name| eligible.contains(name.as_str())) {
            let Ok(room) = self.sender.clone().try_reserve_owned() else { break };
            reserved.push((name.clone(), room));
        }
        (!reserved.is_empty()).then_some(Offer { reserved, lease: self.lease })
    }
}

impl HandedOver {
    /// The next handed-over job; `None` once [`Self::close`] was called and every job
    /// reserved before it has been taken (or its accept ended without it).
    pub async fn recv(&mut self) -> Option<ClaimedJob> {
        self.0.recv().await
    }

    /// A job already waiting, without waiting for one.
    pub fn try_recv(&mut self) -> Option<ClaimedJob> {
        self.0.try_recv().ok()
    }

    /// Takes no more offers; the jobs of offers already made still arrive.
    pub fn close(&mut self) {
        self.0.close();
    }
}

/// Room reserved for one event's jobs: the destinations to lease, and the lease.
pub(crate) struct Offer {
    reserved: Vec<(String, mpsc::OwnedPermit<ClaimedJob>)>,
    lease: Duration,
}

impl Offer {
    /// The destinations whose jobs may be stored leased.
    pub(crate) fn destinations(&self) -> impl Iterator<Item = &str> {
        self.reserved.iter().map(|(name, _)| name.as_str())
    }

    /// The lease's end (in seconds, as the queue keeps it) for an event received at `received_at`.
    pub(crate) fn lease_until(&self, received_at: UnixTime) -> i64 {
        lease_until(received_at.0.saturating_mul(1000), self.lease)
    }

    /// Passes the jobs stored leased (destination, job id) to the worker, built from
    /// `event` as a claim would read them back. Call it only once their commit is durable.
    pub(crate) fn hand_over(self, key: &ReceiptKey, event: &HandedEvent, leased: Leased) {
        let mut reserved = self.reserved;
        for (destination, id) in leased {
            let Some(at) = reserved.iter().position(|(name, _)| *name == destination) else { continue };
            let (destination, permit) = reserved.swap_remove(at);
            permit.send(event.job(key, id, destination));
            metrics::counter!("idemgate_jobs_handed_over_total").increment(1);
        }
    }
}

/// What a handed-over job carries of its event, kept from the [`IncomingEvent`] before it
/// moves to the writer.
pub(crate) struct HandedEvent {
    outgoing_id: Option<String>,
    event_type: Option<String>,
    body: bytes::Bytes,
    content_type: Option<String>,
    headers: Vec<(String, String)>,
}

impl HandedEvent {
    pub(crate) fn of(event: &IncomingEvent) -> Self {
        Self {
            outgoing_id: event.outgoing_id.clone(),
            event_type: event.event_type.clone(),
            // A copy: the delivery's bytes may be a slice of its connection's read buffer,
            // which a job waiting here would otherwise keep whole.
            body: bytes::Bytes::copy_from_slice(&event.body),
            content_type: event.content_type.clone(),
            headers: event.headers.clone(),
        }
    }

    /// The job as the first claim of job `id` would return it.
    fn job(&self, key: &ReceiptKey, id: i64, destination: String) -> ClaimedJob {
        ClaimedJob {
            id,
            lease_token: 1,
            attempt: 1,
            destination,
            key: key.clone(),
            outgoing_id: outgoing_id(self.outgoing_id.as_deref(), key).to_owned(),
            event_type: self.event_type.clone(),
            body: self.body.clone(),
            content_type: self.content_type.clone(),
            headers: self.headers.clone(),
        }
    }
}
