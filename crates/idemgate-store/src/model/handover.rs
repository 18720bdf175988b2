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
//! `sqlite/lock.rs`). A hand-over is only *offered*: for the destinations the worker says
//! it can start at once ([`Handover::new`]'s `eligible`: not FIFO, not throttled, no
//! breaker), and only while its channel has room, reserved before the accept and used or
//! dropped after it. The store also leases a job only when its destination is neither
//! disabled nor paused. Everything else is stored `pending` and claimed as before.
//!
//! Eligibility is read at each accept: a reload that makes a destination FIFO or
//! throttled applies to the jobs accepted after it, while those already handed over are
//! delivered, as the jobs of a claim batch in hand are.
//!
//! Only the SQLite store hands over; on PostgreSQL every job waits for a claim.

use std::{sync::Arc, time::Duration};

use idemgate_core::{ReceiptKey, UnixTime};
use tokio::sync::mpsc;

use crate::{
    inbox::IncomingEvent,
    jobs::ClaimedJob,
    model::{inbox::outgoing_id, jobs::lease_until},
};

/// Whether the worker can start a destination's job the moment it gets it.
pub type Eligible = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// What the worker holds for a job offered to it (its room in flight, say): kept by the
/// offer, then handed over with the job, or dropped with the offer when there is no job.
pub type Ticket = Box<dyn Send + Sync>;

/// [`Eligible`] with the ticket the worker holds for the job: `None` when it cannot start
/// one of the destination's jobs the moment it gets it.
pub type Hold = Arc<dyn Fn(&str) -> Option<Ticket> + Send + Sync>;

/// A handed-over job and the ticket the worker took for it.
type Handed = (ClaimedJob, Ticket);

/// The jobs an accept stored leased to this process's worker: (destination, job id).
pub(crate) type Leased = Vec<(String, i64)>;

/// The accepting side: offers room for the jobs of one event at a time.
#[derive(Clone)]
pub struct Handover {
    sender: mpsc::Sender<Handed>,
    hold: Hold,
    lease: Duration,
}

impl std::fmt::Debug for Handover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handover").field("room", &self.sender.capacity()).field("lease", &self.lease).finish()
    }
}

/// The worker's side: the handed-over jobs, each leased for the hand-over's lease.
#[derive(Debug)]
pub struct HandedOver(mpsc::Receiver<Handed>);

impl Handover {
    /// A hand-over holding at most `room` jobs not yet taken, leasing each for `lease` (the
    /// worker's own lease), for the destinations `eligible` accepts.
    #[must_use]
    pub fn new(room: usize, lease: Duration, eligible: Eligible) -> (Self, HandedOver) {
        Self::holding(room, lease, Arc::new(move |name: &str| eligible(name).then(|| Box::new(()) as Ticket)))
    }

    /// [`Self::new`] for the destinations `hold` gives a ticket for, each job handed over
    /// with its ticket ([`HandedOver::recv_held`]).
    #[must_use]
    pub fn holding(room: usize, lease: Duration, hold: Hold) -> (Self, HandedOver) {
        let (sender, receiver) = mpsc::channel(room.max(1));
        (Self { sender, hold, lease }, HandedOver(receiver))
    }

    /// Reserves room, and takes a ticket, for the eligible ones among `destinations`;
    /// `None` when there are none or there is no room (or the worker has stopped taking jobs).
    pub(crate) fn offer(&self, destinations: &[String]) -> Option<Offer> {
        let mut reserved = Vec::new();
        for name in destinations {
            // Room first: a ticket taken for a job with no room would be held for nothing.
            let Ok(room) = self.sender.clone().try_reserve_owned() else { break };
            if let Some(ticket) = (self.hold)(name) {
                reserved.push((name.clone(), room, ticket));
            }
        }
        (!reserved.is_empty()).then_some(Offer { reserved, lease: self.lease })
    }
}

impl HandedOver {
    /// The next handed-over job; `None` once [`Self::close`] was called and every job
    /// reserved before it has been taken (or its accept ended without it).
    pub async fn recv(&mut self) -> Option<ClaimedJob> {
        self.recv_held().await.map(|(job, _)| job)
    }

    /// [`Self::recv`] with the job's ticket.
    pub async fn recv_held(&mut self) -> Option<(ClaimedJob, Ticket)> {
        self.0.recv().await
    }

    /// A job already waiting, without waiting for one.
    pub fn try_recv(&mut self) -> Option<ClaimedJob> {
        self.0.try_recv().ok().map(|(job, _)| job)
    }

    /// Takes no more offers; the jobs of offers already made still arrive.
    pub fn close(&mut self) {
        self.0.close();
    }
}

/// Room reserved for one event's jobs: the destinations to lease, and the lease.
pub(crate) struct Offer {
    reserved: Vec<(String, mpsc::OwnedPermit<Handed>, Ticket)>,
    lease: Duration,
}

impl Offer {
    /// The destinations whose jobs may be stored leased.
    pub(crate) fn destinations(&self) -> impl Iterator<Item = &str> {
        self.reserved.iter().map(|(name, _, _)| name.as_str())
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
            let Some(at) = reserved.iter().position(|(name, _, _)| *name == destination) else { continue };
            let (destination, permit, ticket) = reserved.swap_remove(at);
            permit.send((event.job(key, id, destination), ticket));
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
