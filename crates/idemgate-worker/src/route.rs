//! The worker's destinations: a [`Route`] per destination, how it is protected, and the
//! [`RouteTable`] a configuration reload replaces while the worker runs. Each claim (or
//! hand-over) reads one snapshot of it, and every job it brings is delivered and decided on
//! that snapshot: an attempt in flight finishes on the destination (URL, secret, retry
//! schedule) it started with. The table also keeps the store's hand-over set
//! ([`Eligible`]) in step with the routes: the destinations whose jobs start at once.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
};

use arc_swap::ArcSwap;
use idemgate_core::{breaker::BreakerPolicy, retry::RetryPolicy};
use idemgate_jq::Program;
use idemgate_store::sqlite::handover::Eligible;

use crate::Deliver;

/// One destination as the worker sees it.
#[derive(Debug, Clone)]
pub struct Route {
    /// Performs the attempts.
    pub deliver: Arc<dyn Deliver>,
    /// Decides what follows a failed attempt.
    pub policy: RetryPolicy,
    /// Deliver events of one ordering key strictly one after the other.
    pub fifo: bool,
    /// The body the destination gets instead of the stored original: this jq program's one
    /// output as compact JSON (`application/json`), made before `deliver` is called, so
    /// every kind of destination gets it and signs what it sends. A transform that fails
    /// on an event makes its job dead (a permanent refusal) with the reason.
    pub transform: Option<Program>,
    /// How the destination is protected from too many attempts.
    pub protection: Protection,
}

impl Route {
    /// Whether a job of this route can start the moment the worker has it: it waits for
    /// no earlier event (FIFO) and for no limit or breaker.
    pub(crate) fn starts_at_once(&self) -> bool {
        !self.fifo && self.protection == Protection::default()
    }
}

/// How a destination is protected: a rate limit and a cap on attempts in flight, and a
/// circuit breaker, all three held by the store over every instance.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Protection {
    /// Most attempts started per second, with a burst.
    pub rate_limit: Option<RateLimit>,
    /// Most attempts in flight at once.
    pub max_in_flight: Option<usize>,
    /// When to pause the destination, and how often to probe it then.
    pub breaker: Option<BreakerPolicy>,
}

/// Attempts per second, and how many may start at once after a quiet spell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Attempts started per second, on average; more than zero.
    pub per_second: f64,
    /// Attempts that may start at once; at least 1.
    pub burst: u32,
}

/// The worker's destinations by name, replaceable while it runs, and the set of those
/// whose jobs the store may hand over ([`Eligible`]), kept in step with them. Clones share
/// one table.
#[derive(Clone, Default)]
pub struct RouteTable(Arc<Table>);

#[derive(Default)]
struct Table {
    routes: ArcSwap<HashMap<String, Route>>,
    /// The routes that start at once, less those held back.
    eligible: Eligible,
    /// Destinations the hand-over offers nothing for now: a job of theirs waits for room.
    held_back: Mutex<HashSet<String>>,
}

impl RouteTable {
    /// A table of `routes`.
    #[must_use]
    pub fn new(routes: HashMap<String, Route>) -> Self {
        let table = Self::default();
        table.replace(routes);
        table
    }

    /// Replaces the routes: the next claim batch (and hand-over) uses them, the batches in
    /// hand keep theirs.
    pub fn replace(&self, routes: HashMap<String, Route>) {
        let held_back = self.0.held_back.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.0.routes.store(Arc::new(routes));
        self.publish(&held_back);
    }

    /// The routes now, unchanged for as long as the snapshot is held.
    #[must_use]
    pub fn snapshot(&self) -> Arc<HashMap<String, Route>> {
        self.0.routes.load_full()
    }

    /// The destinations the store may hand jobs over for, as this table keeps them.
    pub(crate) fn eligible(&self) -> Eligible {
        self.0.eligible.clone()
    }

    /// Holds `name` back from the hand-over (`true`) or lets it be offered again.
    pub(crate) fn hold_back(&self, name: &str, held: bool) {
        let mut held_back = self.0.held_back.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let changed = if held { held_back.insert(name.to_owned()) } else { held_back.remove(name) };
        if changed {
            self.publish(&held_back);
        }
    }

    /// Writes the eligible set: the routes that start at once, less those `held_back`.
    fn publish(&self, held_back: &HashSet<String>) {
        let routes = self.0.routes.load();
        let eligible = routes
            .iter()
            .filter(|(name, route)| route.starts_at_once() && !held_back.contains(name.as_str()))
            .map(|(name, _)| name.clone());
        self.0.eligible.replace(eligible.collect());
    }
}

impl std::fmt::Debug for RouteTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.snapshot().keys()).finish()
    }
}
