//! The worker loop: claim due jobs, deliver them concurrently, complete each with the
//! retry policy's decision; sleep briefly when nothing is due; on shutdown, stop claiming
//! and finish what is in hand.
//!
//! Delivery is a pipeline, not a sequence of batches: each attempt runs as a task of its
//! own and is recorded when it ends, and the loop claims again as soon as there is room,
//! without waiting for the attempts of its last claim. The room is bounded twice
//! ([`WorkerOptions::max_in_flight`] attempts in flight overall, and per destination its
//! own `max_in_flight` or else [`WorkerOptions::destination_max_in_flight`]), so a
//! destination that hangs or times out holds only its own share, and the others' jobs
//! are claimed and started as if it were not there.
//!
//! The destinations are a [`RouteTable`] that a configuration reload replaces while the
//! worker runs. Each claim (or hand-over) reads one snapshot of it, and every job it brings is
//! delivered and decided on that snapshot: an attempt in flight finishes on the
//! destination (URL, secret, retry schedule) it started with.
//!
//! Each route may be protected ([`Protection`]): a rate limit and a cap on attempts in
//! flight, kept per destination name by the worker (not per batch, and across a reload
//! that keeps the destination's settings), and a circuit breaker, which the store keeps.
//! Before a claim the worker reserves the room of the jobs it can start now: places in the
//! overall bound, each capped destination's in-flight permits and each throttled one's
//! rate-limit tokens; a destination without a cap is limited to the free places of its
//! share, which its attempts take as they start (so a claim waiting for the store never
//! keeps the hand-over from a destination; a hand-over racing the claim can take the
//! share over by what that claim found). It asks the store for at most that many jobs,
//! naming each destination short of room with what it has left: a claimed job starts at
//! once, and never waits under its lease for its turn. A job handed over by the store
//! (`deliver_handed`) comes with the room the worker took for it when the accept offered
//! it. (A reserved token whose job the claim did not find is spent: a destination below
//! its rate loses some of its burst, never its rate.)
//!
//! Whether a destination is throttled is worker state, but the CLI and the admin API run
//! elsewhere: the worker records it in the store (`Store::mark_throttled`) when it changes
//! (and once for each throttle it makes, so a restart corrects what a killed process left
//! behind), never per claim.
//!
//! Each attempt is a span (`crate::trace`), the child of the delivery that stored its event.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU8, Ordering},
    },
    time::{Duration, SystemTime},
};

use arc_swap::ArcSwap;

use idemgate_core::{
    breaker::BreakerPolicy,
    retry::{AttemptResult, DeadReason, Decision, RetryPolicy},
};
use idemgate_jq::Program;
use idemgate_store::{
    Store, StoreError,
    jobs::{AttemptRecord, Breakers, ClaimedJob, Completion},
    sqlite::handover::{Eligible, HandedOver, Handover},
};
use opentelemetry::{
    KeyValue,
    trace::{Span, SpanKind, Status},
};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, watch};

use crate::{
    AttemptOutcome, Clock, Deliver, SystemClock,
    trace::{AttemptTrace, Claim},
};

/// A job, how its attempt went and what follows, as the store records it.
type Attempted = (ClaimedJob, AttemptRecord, Decision);

/// A finished attempt on its way to the store, with its destination's breaker and whether
/// the destination is FIFO (the snapshot's, as the attempt used it).
type Finished = ((Attempted, AttemptTrace), Option<BreakerPolicy>, bool);

/// Where attempts send themselves when they end, to be recorded.
type Sink = mpsc::UnboundedSender<Finished>;

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
    fn starts_at_once(&self) -> bool {
        !self.fifo && self.protection == Protection::default()
    }
}

/// How a destination is protected: a rate limit and a cap on attempts in flight (held by
/// this worker), and a circuit breaker (kept in the store, shared by every instance).
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

/// The rate limiter: governor's GCRA (well kept, lock-free, and driven by the worker's
/// clock here, so that tests move time instead of sleeping).
type Limiter = governor::RateLimiter<
    governor::state::NotKeyed,
    governor::state::InMemoryState,
    LimiterClock,
    governor::middleware::NoOpMiddleware<Duration>,
>;

/// The worker's clock as governor's clock, to the millisecond.
#[derive(Clone)]
struct LimiterClock(Arc<dyn Clock>);

impl governor::clock::Clock for LimiterClock {
    type Instant = Duration;

    fn now(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.0.now_ms()).unwrap_or(0))
    }
}

/// One destination's limiter and in-flight permits, kept across batches and reloads.
struct Throttle {
    /// The settings they were made for; other settings make a new throttle.
    settings: (Option<RateLimit>, Option<usize>),
    limiter: Option<Limiter>,
    in_flight: Option<Arc<Semaphore>>,
    /// Whether the last claim was cut short by the limits.
    throttled: AtomicBool,
    /// What the store was last told: [`UNRECORDED`], [`RECORDED_CLEAR`] or [`RECORDED_THROTTLED`].
    recorded: AtomicU8,
}

/// A throttle whose state the store has not been told yet.
const UNRECORDED: u8 = 0;
/// The store was told the destination is not throttled.
const RECORDED_CLEAR: u8 = 1;
/// The store was told the destination is throttled.
const RECORDED_THROTTLED: u8 = 2;

/// What to tell the store, given what it was told last: `None` when nothing changed.
fn recording(recorded: u8, throttled: bool) -> Option<u8> {
    let now = if throttled { RECORDED_THROTTLED } else { RECORDED_CLEAR };
    (recorded != now).then_some(now)
}

impl Throttle {
    fn new(settings: (Option<RateLimit>, Option<usize>), clock: &Arc<dyn Clock>) -> Self {
        let limiter = settings.0.and_then(|rate| {
            let period = Duration::try_from_secs_f64(1.0 / rate.per_second)
                .unwrap_or(Duration::MAX)
                .max(Duration::from_nanos(1));
            let burst = std::num::NonZeroU32::new(rate.burst.max(1))?;
            let quota = governor::Quota::with_period(period)?.allow_burst(burst);
            Some(governor::RateLimiter::direct_with_clock(quota, LimiterClock(Arc::clone(clock))))
        });
        let in_flight = settings.1.map(|cap| Arc::new(Semaphore::new(cap)));
        Self { settings, limiter, in_flight, throttled: AtomicBool::new(false), recorded: AtomicU8::new(UNRECORDED) }
    }
}

/// Reserves what `most` jobs need to start now: as many permits of `cap` (the
/// destination's own in-flight cap) as are free, and as many of `limiter`'s tokens as there
/// are permits. Returns a permit per job that may start.
fn reserve(cap: &Arc<Semaphore>, limiter: Option<&Limiter>, most: usize) -> Vec<OwnedSemaphorePermit> {
    let mut permits: Vec<_> = std::iter::from_fn(|| Arc::clone(cap).try_acquire_owned().ok()).take(most).collect();
    if let Some(limiter) = limiter {
        let allowed = (0..permits.len()).take_while(|_| limiter.check().is_ok()).count();
        permits.truncate(allowed);
    }
    permits
}

/// The worker's room for attempts in flight: the overall bound, and the share of it each
/// destination without an in-flight cap of its own may hold, kept across claims and
/// reloads. Clones of a worker share it.
struct Room {
    overall: Arc<Semaphore>,
    share: usize,
    shares: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// What held the last claim back; the end of an attempt it waits for wakes the loop.
    short: Mutex<Short>,
    /// Wakes the claim loop: an attempt it waits for was recorded.
    freed: Notify,
}

/// What held a claim back: the overall bound (so any attempt's end makes room), or these
/// destinations' own room or rate.
#[derive(Default)]
struct Short {
    overall: bool,
    destinations: HashSet<String>,
}

/// The room reserved before a claim: the limits to claim with by destination, the permits
/// of the destinations with an in-flight cap, and the destinations held back by their room
/// or rate.
struct Reserved {
    limits: HashMap<String, usize>,
    permits: HashMap<String, Vec<OwnedSemaphorePermit>>,
    short: HashSet<String>,
}

/// The room one attempt holds until it ends: a place in the overall bound and, for a route
/// it knows, one in its destination's cap or share.
struct Held {
    _overall: OwnedSemaphorePermit,
    _own: Option<OwnedSemaphorePermit>,
}

impl Room {
    fn new(options: &WorkerOptions) -> Self {
        Self {
            overall: Arc::new(Semaphore::new(options.max_in_flight.max(1))),
            share: options.destination_max_in_flight.max(1),
            shares: Mutex::default(),
            short: Mutex::default(),
            freed: Notify::new(),
        }
    }

    /// Destination `name`'s share of the room (for a destination without a cap of its own).
    fn share_of(&self, name: &str) -> Arc<Semaphore> {
        let mut shares = self.shares.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(shares.entry(name.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(self.share))))
    }

    /// Room for one attempt of `name` (uncapped; its share when `routed`) now, or `None`
    /// when there is none.
    fn hold(&self, name: &str, routed: bool) -> Option<Held> {
        let own = if routed { Some(self.share_of(name).try_acquire_owned().ok()?) } else { None };
        let overall = Arc::clone(&self.overall).try_acquire_owned().ok()?;
        Some(Held { _overall: overall, _own: own })
    }

    /// [`Self::hold`], waiting for the room: first the destination's share, then the
    /// overall place, so that a job waiting for its destination holds no place of others.
    async fn wait_for(&self, name: &str, routed: bool) -> Option<Held> {
        let own = if routed { Some(self.share_of(name).acquire_owned().await.ok()?) } else { None };
        let overall = Arc::clone(&self.overall).acquire_owned().await.ok()?;
        Some(Held { _overall: overall, _own: own })
    }

    /// Remembers what held the last claim back.
    fn held_back(&self, short: Short) {
        *self.short.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = short;
    }

    /// Whether the claim loop waits for the end of an attempt of `destination`.
    fn waits_for(&self, destination: &str) -> bool {
        let short = self.short.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        short.overall || short.destinations.contains(destination)
    }
}

/// The worker's throttles by destination name.
#[derive(Clone, Default)]
struct Throttles(Arc<Mutex<HashMap<String, Arc<Throttle>>>>);

impl Throttles {
    /// The throttles of `routes` that need one, made or kept; those of destinations gone or
    /// unthrottled are dropped. Also returns the names of dropped throttles the store was
    /// told were throttled, to be cleared there.
    fn for_routes(
        &self,
        routes: &HashMap<String, Route>,
        clock: &Arc<dyn Clock>,
    ) -> (Vec<(String, Arc<Throttle>)>, Vec<String>) {
        let mut all = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut dropped = Vec::new();
        all.retain(|name, throttle| {
            let keep = routes
                .get(name)
                .is_some_and(|r| (r.protection.rate_limit, r.protection.max_in_flight) == throttle.settings);
            if !keep && throttle.recorded.load(Ordering::Relaxed) == RECORDED_THROTTLED {
                dropped.push(name.clone());
            }
            keep
        });
        let kept = routes
            .iter()
            .filter(|(_, route)| route.protection.rate_limit.is_some() || route.protection.max_in_flight.is_some())
            .map(|(name, route)| {
                let settings = (route.protection.rate_limit, route.protection.max_in_flight);
                let throttle = all.entry(name.clone()).or_insert_with(|| Arc::new(Throttle::new(settings, clock)));
                (name.clone(), Arc::clone(throttle))
            })
            .collect();
        (kept, dropped)
    }
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
    fn eligible(&self) -> Eligible {
        self.0.eligible.clone()
    }

    /// Holds `name` back from the hand-over (`true`) or lets it be offered again.
    fn hold_back(&self, name: &str, held: bool) {
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

/// How the worker claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerOptions {
    /// How long a claim holds a job; a worker that dies loses its jobs for this long.
    /// Must exceed the longest destination timeout.
    pub lease: Duration,
    /// Most jobs claimed at once (the loop claims again as soon as there is room).
    pub batch: usize,
    /// Pause between polls when nothing is due.
    pub poll_interval: Duration,
    /// Most attempts in flight at once, over every destination (by default four batches).
    pub max_in_flight: usize,
    /// Most attempts in flight at once to one destination without a `max_in_flight` of its
    /// own: its share of [`Self::max_in_flight`] (by default a quarter, a batch), all a
    /// destination that hangs can hold.
    pub destination_max_in_flight: usize,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(60),
            batch: 32,
            poll_interval: Duration::from_millis(500),
            max_in_flight: 128,
            destination_max_in_flight: 32,
        }
    }
}

/// Delivers the store's due jobs to their routes.
#[derive(Clone)]
pub struct Worker {
    store: Store,
    routes: RouteTable,
    options: WorkerOptions,
    clock: Arc<dyn Clock>,
    draw: Arc<dyn Fn() -> f64 + Send + Sync>,
    throttles: Throttles,
    room: Arc<Room>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("routes", &self.routes).field("options", &self.options).finish()
    }
}

impl Worker {
    /// A worker on the system clock with uniform random jitter.
    #[must_use]
    pub fn new(store: impl Into<Store>, routes: HashMap<String, Route>, options: WorkerOptions) -> Self {
        Self {
            store: store.into(),
            routes: RouteTable::new(routes),
            options,
            clock: Arc::new(SystemClock),
            draw: Arc::new(fastrand::f64),
            throttles: Throttles::default(),
            room: Arc::new(Room::new(&options)),
        }
    }

    /// Replaces the clock (tests use a [`crate::ManualClock`]).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The worker's destinations, to replace them while it runs.
    #[must_use]
    pub fn routes(&self) -> RouteTable {
        self.routes.clone()
    }

    /// Replaces the jitter draw, a function returning values in [0, 1).
    #[must_use]
    pub fn with_draw(mut self, draw: Arc<dyn Fn() -> f64 + Send + Sync>) -> Self {
        self.draw = draw;
        self
    }

    /// Claims the jobs due now that there is room for, delivers them, and returns how many
    /// it handled once all of them are recorded.
    ///
    /// Attempts run concurrently; their results are recorded in groups as they finish
    /// (whatever has finished by the time the previous group is recorded), so a batch
    /// costs a few store writes rather than one per job, and a slow destination does not
    /// hold back the recording of fast ones.
    pub async fn tick(&self) -> Result<usize, StoreError> {
        let (sink, finished) = mpsc::unbounded_channel();
        let claimed = self.claim(&sink).await;
        drop(sink);
        self.record_all(finished).await;
        claimed
    }

    /// Claims the jobs due now that there is room for and starts their attempts, each of
    /// which sends itself to `sink` when it ends; returns how many it claimed.
    async fn claim(&self, sink: &Sink) -> Result<usize, StoreError> {
        let routes = self.routes.snapshot();
        let fifo = routes.iter().filter(|(_, r)| r.fifo).map(|(name, _)| name.clone()).collect();
        let (throttles, dropped) = self.throttles.for_routes(&routes, &self.clock);
        for name in dropped {
            // A destination whose limits changed gets a new throttle, which records itself.
            if let Err(err) = self.store.mark_throttled(name, None).await {
                tracing::warn!(error = %err, "could not record that a destination is no longer throttled");
            }
        }
        let mut overall: Vec<_> = std::iter::from_fn(|| Arc::clone(&self.room.overall).try_acquire_owned().ok())
            .take(self.options.batch)
            .collect();
        let most = overall.len();
        if most == 0 {
            self.room.held_back(Short { overall: true, destinations: HashSet::new() });
            return Ok(0);
        }
        let Reserved { limits, mut permits, short } = self.reserve_room(&routes, &throttles, most);
        self.room.held_back(Short { overall: most < self.options.batch, destinations: short });
        // Span times are the wall clock's, as the tracer's own are.
        let started = SystemTime::now();
        let jobs =
            self.store.claim_jobs_limited(self.clock.now_ms(), self.options.lease, most, fifo, limits.clone()).await?;
        let claim = Claim { started, ended: SystemTime::now() };
        self.note_throttled(&throttles, &limits, &jobs, most).await;
        let count = jobs.len();
        for job in jobs {
            let own = match permits.get_mut(&job.destination) {
                Some(capped) => capped.pop(),
                None if routes.contains_key(&job.destination) => {
                    self.room.share_of(&job.destination).try_acquire_owned().ok()
                }
                None => None,
            };
            let Some(overall) = overall.pop() else { break };
            self.start(job, &routes, claim, Held { _overall: overall, _own: own }, sink);
        }
        Ok(count)
    }

    /// Reserves, for each route, room for at most `most` of its jobs: its own in-flight cap's
    /// permits and its rate limit's tokens; a destination without a cap is limited to the
    /// free places of its share, taken as its attempts start (so that a claim waiting for
    /// the store never keeps the hand-over from them; one that races it can take the share
    /// over by what it claimed). Returns the limits to claim with (each throttled
    /// destination's, and any destination's below `most`), the cap's permits by
    /// destination, and the destinations held back below `most`.
    fn reserve_room(
        &self,
        routes: &HashMap<String, Route>,
        throttles: &[(String, Arc<Throttle>)],
        most: usize,
    ) -> Reserved {
        let (mut limits, mut permits, mut short) = (HashMap::new(), HashMap::new(), HashSet::new());
        for name in routes.keys() {
            let throttle = throttles.iter().find(|(throttled, _)| throttled == name).map(|(_, t)| t);
            let limiter = throttle.and_then(|t| t.limiter.as_ref());
            let allowed = if let Some(cap) = throttle.and_then(|t| t.in_flight.as_ref()) {
                let held = reserve(cap, limiter, most);
                let allowed = held.len();
                permits.insert(name.clone(), held);
                allowed
            } else {
                let free = self.room.share_of(name).available_permits().min(most);
                limiter.map_or(free, |limiter| (0..free).take_while(|_| limiter.check().is_ok()).count())
            };
            if allowed < most {
                short.insert(name.clone());
            }
            // Naming only the destinations it must limit keeps PostgreSQL's claim on its one
            // statement while no destination is short of room.
            if throttle.is_some() || allowed < most {
                limits.insert(name.clone(), allowed);
            }
        }
        Reserved { limits, permits, short }
    }

    /// Whether each throttled destination was held back by its limits in this claim: kept
    /// by the worker, and told to the store when it changed.
    async fn note_throttled(
        &self,
        throttles: &[(String, Arc<Throttle>)],
        limits: &HashMap<String, usize>,
        jobs: &[ClaimedJob],
        most: usize,
    ) {
        for (name, throttle) in throttles {
            let allowed = limits.get(name).copied().unwrap_or(0);
            let claimed = jobs.iter().filter(|job| &job.destination == name).count();
            let held_back = allowed < most && claimed == allowed;
            // With nothing allowed, the claim could not tell: the last answer stands.
            let throttled = if allowed == 0 { throttle.throttled.load(Ordering::Relaxed) } else { held_back };
            throttle.throttled.store(throttled, Ordering::Relaxed);
            metrics::gauge!("idemgate_destination_throttled", "destination" => name.clone()).set(if throttled {
                1.0
            } else {
                0.0
            });
            if held_back {
                metrics::counter!("idemgate_destination_throttled_total", "destination" => name.clone()).increment(1);
            }
            if let Some(now) = recording(throttle.recorded.load(Ordering::Relaxed), throttled) {
                let since = throttled.then(|| self.clock.now_ms());
                match self.store.mark_throttled(name.clone(), since).await {
                    Ok(()) => throttle.recorded.store(now, Ordering::Relaxed),
                    // Left unrecorded, so the next claim tries again.
                    Err(err) => tracing::warn!(error = %err, "could not record whether a destination is throttled"),
                }
            }
        }
    }

    /// Starts the attempt of `job` on `routes` as a task of its own, holding `held` (its
    /// room) until the attempt ends; the finished attempt goes to `sink` to be recorded.
    fn start(
        &self,
        job: ClaimedJob,
        routes: &Arc<HashMap<String, Route>>,
        claim: Claim,
        held: impl Send + 'static,
        sink: &Sink,
    ) {
        let route = routes.get(&job.destination);
        let (breaker, fifo) = (route.and_then(|r| r.protection.breaker), route.is_some_and(|r| r.fifo));
        let (worker, routes, sink) = (self.clone(), Arc::clone(routes), sink.clone());
        tokio::spawn(async move {
            let done = worker.attempt(job, &routes, claim).await;
            drop(held);
            let _ = sink.send((done, breaker, fifo));
        });
    }

    /// Records the attempts arriving on `finished` in groups (whatever has arrived by the
    /// time the previous group is recorded), until every attempt that could send one has.
    /// A group with an attempt the claim loop waits for (one of a destination its last
    /// claim was short of room for, or of a FIFO destination, whose next event is due once
    /// this one is recorded) wakes the loop.
    async fn record_all(&self, mut finished: mpsc::UnboundedReceiver<Finished>) {
        while let Some(first) = finished.recv().await {
            let mut group = vec![first];
            while let Ok(more) = finished.try_recv() {
                group.push(more);
            }
            let mut breakers = Breakers::new();
            let mut wake = false;
            let attempts: Vec<_> = group
                .into_iter()
                .map(|(done, breaker, fifo)| {
                    let destination = &done.0.0.destination;
                    if let Some(breaker) = breaker {
                        breakers.insert(destination.clone(), breaker);
                    }
                    wake |= fifo || self.room.waits_for(destination);
                    done
                })
                .collect();
            if let Err(err) = self.record(attempts, &breakers).await {
                tracing::warn!(error = %err, "could not record delivery attempts; their leases expire and they are retried");
            }
            if wake {
                self.room.freed.notify_one();
            }
        }
    }

    /// Delivers the jobs this process's store hands over, until `stop`: then it takes no
    /// more offers, and returns once the jobs of offers already made are started (or wait
    /// for room in tasks of their own).
    async fn deliver_handed(&self, mut handed: HandedOver, mut stop: watch::Receiver<bool>, sink: Sink) {
        let mut stopping = false;
        loop {
            if !stopping && *stop.borrow() {
                handed.close();
                stopping = true;
            }
            let job = tokio::select! {
                job = handed.recv() => match job {
                    Some(job) => job,
                    None => return,
                },
                changed = stop.changed(), if !stopping => {
                    if changed.is_err() {
                        // A dropped sender can never say stop again: treat it as stop.
                        handed.close();
                        stopping = true;
                    }
                    continue;
                }
            };
            // The job was leased in its accept's transaction; the `claim` span is its arrival.
            let started = SystemTime::now();
            let claim = Claim { started, ended: started };
            let routes = self.routes.snapshot();
            let routed = routes.contains_key(&job.destination);
            if let Some(held) = self.room.hold(&job.destination, routed) {
                self.start(job, &routes, claim, held, &sink);
                continue;
            }
            // No room now (the destination is at its share, or the worker at its bound):
            // the job waits for it, and its destination is offered nothing more meanwhile.
            self.routes.hold_back(&job.destination, true);
            let (worker, sink) = (self.clone(), sink.clone());
            tokio::spawn(async move {
                let held = worker.room.wait_for(&job.destination, routed).await;
                worker.routes.hold_back(&job.destination, false);
                match held {
                    Some(held) => worker.start(job, &worker.routes.snapshot(), claim, held, &sink),
                    // The worker's room never closes; were it closed, the lease expires
                    // and a claim delivers the job.
                    None => tracing::warn!(job = job.id, "no room for a handed-over job; it waits for its lease"),
                }
            });
        }
    }

    /// A hand-over from this process's store to this worker, for the destinations its
    /// route table holds eligible: those whose jobs it can start the moment it gets them
    /// (no FIFO order, no rate limit or in-flight cap, no breaker) and that no job waits
    /// for room for. Room for two batches.
    fn handover(&self) -> (Handover, HandedOver) {
        Handover::new(2 * self.options.batch, self.options.lease, self.routes.eligible())
    }

    /// The destinations whose last claim was cut short by their rate limit or in-flight
    /// cap, by name (this worker's view: each instance throttles on its own).
    #[must_use]
    pub fn throttled(&self) -> Vec<String> {
        let all = self.throttles.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut names: Vec<_> =
            all.iter().filter(|(_, t)| t.throttled.load(Ordering::Relaxed)).map(|(name, _)| name.clone()).collect();
        names.sort();
        names
    }

    /// Delivers one job on its batch's `routes` and decides what follows; recording is
    /// left to [`Self::record`].
    async fn attempt(
        &self,
        mut job: ClaimedJob,
        routes: &HashMap<String, Route>,
        claim: Claim,
    ) -> (Attempted, AttemptTrace) {
        let trace = AttemptTrace::start(&job, claim);
        trace.carry(&mut job);
        let started_at = self.clock.now();
        let timer = std::time::Instant::now();
        let (outcome, decision) = match routes.get(&job.destination) {
            Some(route) => {
                let mut send = trace.child("send", SpanKind::Client);
                let outcome = match &route.transform {
                    None => route.deliver.deliver(&job, started_at).await,
                    Some(transform) => match transformed(&job, transform) {
                        Ok(job) => route.deliver.deliver(&job, started_at).await,
                        Err(refused) => refused,
                    },
                };
                send.set_attributes(result_attributes(&outcome.result));
                send.end();
                let decision = route.policy.decide(job.attempt, outcome.result, (self.draw)());
                (outcome, decision)
            }
            None => {
                (AttemptOutcome::failed("destination is not configured"), Decision::Dead(DeadReason::AttemptsExhausted))
            }
        };
        let record = AttemptRecord {
            started_at,
            latency: timer.elapsed(),
            status: match outcome.result {
                idemgate_core::retry::AttemptResult::Status { status, .. } => Some(status),
                _ => None,
            },
            error: outcome.error,
            response_prefix: outcome.response_prefix,
            outcome: idemgate_core::retry::Attempted::of(outcome.result),
        };
        let class = match outcome.result {
            idemgate_core::retry::AttemptResult::Status { status, .. } => match status {
                200..=299 => "2xx",
                300..=399 => "3xx",
                400..=499 => "4xx",
                _ => "5xx",
            },
            idemgate_core::retry::AttemptResult::Timeout => "timeout",
            idemgate_core::retry::AttemptResult::Connection => "connection",
            idemgate_core::retry::AttemptResult::Accepted => "accepted",
            idemgate_core::retry::AttemptResult::Refused { .. } => "refused",
        };
        metrics::counter!("idemgate_attempts_total", "destination" => job.destination.clone(), "result" => class)
            .increment(1);
        metrics::histogram!("idemgate_delivery_seconds", "destination" => job.destination.clone())
            .record(record.latency.as_secs_f64());
        let mut attributes = result_attributes(&outcome.result);
        attributes.push(KeyValue::new("decision", decision_name(decision)));
        trace.record(attributes);
        ((job, record, decision), trace)
    }

    /// Records finished attempts in one store write, with their destinations' breakers,
    /// and logs what became of each.
    async fn record(&self, group: Vec<(Attempted, AttemptTrace)>, breakers: &Breakers) -> Result<(), StoreError> {
        let (group, traces): (Vec<_>, Vec<_>) = group.into_iter().unzip();
        let described: Vec<_> = group
            .iter()
            .map(|(job, _, decision)| {
                (job.id, job.destination.clone(), job.key.identity.to_string(), job.attempt, *decision)
            })
            .collect();
        let mut writes: Vec<_> = traces.iter().map(|trace| trace.child("complete", SpanKind::Internal)).collect();
        let completed = self.store.complete_jobs_with_breakers(group, self.clock.now_ms(), breakers.clone()).await;
        for write in &mut writes {
            if completed.is_err() {
                write.set_status(Status::error("the attempt could not be recorded"));
            }
            write.end();
        }
        let completions = match completed {
            Ok(completions) => completions,
            Err(err) => {
                traces.into_iter().for_each(AttemptTrace::finish);
                return Err(err);
            }
        };
        for (((id, destination, identity, attempt, decision), completion), trace) in
            described.into_iter().zip(completions).zip(traces)
        {
            let recorded = if matches!(completion, Completion::Stale) { "stale" } else { "recorded" };
            trace.record(vec![KeyValue::new("completion", recorded)]);
            trace.finish();
            match completion {
                Completion::Recorded if decision == Decision::Succeeded => {
                    tracing::debug!(job = id, %destination, %identity, attempt, "delivered");
                }
                Completion::Recorded => {
                    tracing::info!(job = id, %destination, %identity, attempt, decision = ?decision, "delivery attempt failed");
                }
                Completion::Stale => {
                    tracing::warn!(job = id, %destination, attempt, "lease was taken over; this attempt's result is not applied");
                }
            }
        }
        Ok(())
    }

    /// Runs until `stop` turns true: then it stops claiming and returns once the jobs in
    /// hand are completed.
    ///
    /// While claims fail (the store is unreachable) it keeps polling; a failure is logged
    /// when it differs from the previous one, and the recovery once, not every poll.
    ///
    /// While it runs, the jobs its store accepts in this process for destinations it can
    /// start at once are handed to it already leased (`idemgate_store::handover`), and
    /// delivered beside the claimed ones.
    pub async fn run(&self, stop: watch::Receiver<bool>) {
        let (handover, handed) = self.handover();
        self.store.hand_over_to(Some(handover));
        let (sink, finished) = mpsc::unbounded_channel();
        tokio::join!(
            self.claim_until(stop.clone(), sink.clone()),
            self.deliver_handed(handed, stop, sink),
            self.record_all(finished),
        );
        self.store.hand_over_to(None);
    }

    /// Claims and starts due jobs until `stop`: again at once after a claim that found
    /// some, else when an attempt it waits for is recorded or after the poll interval.
    async fn claim_until(&self, mut stop: watch::Receiver<bool>, sink: Sink) {
        let mut failing: Option<String> = None;
        while !*stop.borrow() {
            let claimed = match self.claim(&sink).await {
                Ok(claimed) => {
                    if failing.take().is_some() {
                        tracing::info!("claiming jobs works again");
                    }
                    claimed
                }
                Err(err) => {
                    let text = err.to_string();
                    if failing.as_ref() != Some(&text) {
                        tracing::warn!(error = %text, "claiming jobs failed; retrying");
                        failing = Some(text);
                    }
                    0
                }
            };
            if claimed > 0 {
                continue;
            }
            tokio::select! {
                () = self.room.freed.notified() => {}
                () = tokio::time::sleep(self.options.poll_interval) => {}
                changed = stop.changed() => {
                    // A dropped sender can never say stop again: treat it as stop.
                    if changed.is_err() {
                        break;
                    }
                }
            }
        }
    }
}

/// What an attempt came to, as span attributes: the status when there is one, and the
/// kind of result.
fn result_attributes(result: &AttemptResult) -> Vec<KeyValue> {
    let (kind, status) = match result {
        AttemptResult::Status { status, .. } => ("status", Some(*status)),
        AttemptResult::Timeout => ("timeout", None),
        AttemptResult::Connection => ("connection", None),
        AttemptResult::Accepted => ("accepted", None),
        AttemptResult::Refused { .. } => ("refused", None),
    };
    let mut attributes = vec![KeyValue::new("result", kind)];
    attributes.extend(status.map(|status| KeyValue::new("http.response.status_code", i64::from(status))));
    attributes
}

/// The decision's name, without its delay or reason's details.
fn decision_name(decision: Decision) -> &'static str {
    match decision {
        Decision::Succeeded => "succeeded",
        Decision::RetryAfter(_) => "retry",
        Decision::Dead(_) => "dead",
        Decision::DisableDestination => "disable_destination",
    }
}

/// `job` with the body `transform` makes of its stored one, or the attempt's permanent
/// refusal saying why there is none (the error names the kind, never the event's values).
fn transformed(job: &ClaimedJob, transform: &Program) -> Result<ClaimedJob, AttemptOutcome> {
    match transform.transform(&job.body) {
        Ok(body) => {
            Ok(ClaimedJob { body: body.into(), content_type: Some("application/json".to_owned()), ..job.clone() })
        }
        Err(err) => Err(AttemptOutcome {
            result: AttemptResult::Refused { permanent: true },
            error: Some(err.to_string()),
            response_prefix: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::{RECORDED_CLEAR, RECORDED_THROTTLED, UNRECORDED, recording};

    #[test]
    fn the_store_hears_of_a_throttle_once_and_then_only_of_changes() {
        assert_eq!(recording(UNRECORDED, false), Some(RECORDED_CLEAR), "a new throttle corrects a stale row");
        assert_eq!(recording(UNRECORDED, true), Some(RECORDED_THROTTLED));
        assert_eq!(recording(RECORDED_CLEAR, false), None);
        assert_eq!(recording(RECORDED_THROTTLED, true), None);
        assert_eq!(recording(RECORDED_CLEAR, true), Some(RECORDED_THROTTLED));
        assert_eq!(recording(RECORDED_THROTTLED, false), Some(RECORDED_CLEAR));
    }
}
