//! The worker's room for attempts in flight: the overall bound, each uncapped
//! destination's share of it, and what one attempt holds of them until it ends.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::WorkerOptions;

/// The worker's room for attempts in flight: the overall bound, and the share of it each
/// destination without an in-flight cap of its own may hold, kept across claims and
/// reloads. Clones of a worker share it.
pub(crate) struct Room {
    pub(crate) overall: Arc<Semaphore>,
    pub(crate) share: usize,
    pub(crate) shares: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// What held the last claim back; the end of an attempt it waits for wakes the loop.
    pub(crate) short: Mutex<Short>,
    /// Wakes the claim loop: an attempt it waits for was recorded.
    pub(crate) freed: Notify,
}

/// What held a claim back: the overall bound (so any attempt's end makes room), or these
/// destinations' own room or rate.
#[derive(Default)]
pub(crate) struct Short {
    pub(crate) overall: bool,
    pub(crate) destinations: HashSet<String>,
}

/// The room reserved before a claim: the limits to claim with by destination, the permits
/// of the destinations with an in-flight cap, and the destinations held back by their room
/// or rate.
pub(crate) struct Reserved {
    pub(crate) limits: HashMap<String, usize>,
    pub(crate) permits: HashMap<String, Vec<OwnedSemaphorePermit>>,
    pub(crate) short: HashSet<String>,
}

/// The room one attempt holds until it ends: a place in the overall bound and, for a route
/// it knows, one in its destination's cap or share.
pub(crate) struct Held {
    pub(crate) _overall: OwnedSemaphorePermit,
    pub(crate) _own: Option<OwnedSemaphorePermit>,
}

impl Room {
    pub(crate) fn new(options: &WorkerOptions) -> Self {
        Self {
            overall: Arc::new(Semaphore::new(options.max_in_flight.max(1))),
            share: options.destination_max_in_flight.max(1),
            shares: Mutex::default(),
            short: Mutex::default(),
            freed: Notify::new(),
        }
    }

    /// Destination `name`'s share of the room (for a destination without a cap of its own).
    pub(crate) fn share_of(&self, name: &str) -> Arc<Semaphore> {
        let mut shares = self.shares.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(shares.entry(name.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(self.share))))
    }

    /// Room for one attempt of `name` (uncapped; its share when `routed`) now, or `None`
    /// when there is none.
    pub(crate) fn hold(&self, name: &str, routed: bool) -> Option<Held> {
        let own = if routed { Some(self.share_of(name).try_acquire_owned().ok()?) } else { None };
        let overall = Arc::clone(&self.overall).try_acquire_owned().ok()?;
        Some(Held { _overall: overall, _own: own })
    }

    /// [`Self::hold`], waiting for the room: first the destination's share, then the
    /// overall place, so that a job waiting for its destination holds no place of others.
    pub(crate) async fn wait_for(&self, name: &str, routed: bool) -> Option<Held> {
        let own = if routed { Some(self.share_of(name).acquire_owned().await.ok()?) } else { None };
        let overall = Arc::clone(&self.overall).acquire_owned().await.ok()?;
        Some(Held { _overall: overall, _own: own })
    }

    /// Remembers what held the last claim back.
    pub(crate) fn held_back(&self, short: Short) {
        *self.short.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = short;
    }

    /// Whether the claim loop waits for the end of an attempt of `destination`.
    pub(crate) fn waits_for(&self, destination: &str) -> bool {
        let short = self.short.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        short.overall || short.destinations.contains(destination)
    }
}
