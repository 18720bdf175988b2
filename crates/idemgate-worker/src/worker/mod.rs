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
//! The destinations are a [`RouteTable`] (`route.rs`) that a configuration reload replaces
//! while the worker runs; the room is `room.rs`, the limits `throttle.rs`; one attempt is
//! `worker/attempt.rs`, and its recording `worker/record.rs`.
//!
//! Each route may be protected ([`Protection`]): a rate limit and a cap on attempts in
//! flight, which the store holds over every instance on it (the claim reads and spends
//! them under the destination's row lock: `Store::claim_jobs_within`), and a circuit
//! breaker, which the store keeps too. Before a claim the worker reserves the room of the
//! jobs it can start now: places in the overall bound and each capped destination's
//! in-flight permits (kept per destination name, across a reload that keeps its
//! settings); the store narrows that by the shared limits; a destination without a cap is limited to the free places of its
//! share, which its attempts take as they start (so a claim waiting for the store never
//! keeps the hand-over from a destination; a hand-over racing the claim can take the
//! share over by what that claim found). It asks the store for at most that many jobs,
//! naming each destination short of room with what it has left: a claimed job starts at
//! once, and never waits under its lease for its turn. A job handed over by the store
//! (`deliver_handed`) takes its room when the worker receives it; without room, it waits
//! for it, and its destination is offered no more until then. Only a job taken spends a
//! token of its destination's rate.
//!
//! Whether a destination is throttled is worker state, but the CLI and the admin API run
//! elsewhere: the worker records it in the store (`Store::mark_throttled`) when it changes
//! (and once for each throttle it makes, so a restart corrects what a killed process left
//! behind), never per claim.
//!
//! Each attempt is a span (`crate::trace`), the child of the delivery that stored its event.

mod attempt;
mod record;

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, atomic::Ordering},
    time::{Duration, SystemTime},
};

use idemgate_core::{breaker::BreakerPolicy, outbound::label::EndpointLabels, retry::Decision};
use idemgate_store::{
    Store, StoreError,
    jobs::{AttemptRecord, Claimed, ClaimedJob},
    sqlite::handover::{HandedOver, Handover},
};
use tokio::sync::{mpsc, watch};

use crate::{
    Clock, EndpointRoutes, SystemClock,
    endpoint::ENDPOINT_PREFIX,
    room::{Held, Reserved, Room, Short},
    route::{Route, RouteTable},
    throttle::{Throttle, Throttles, UNRECORDED, recording, reserve},
    trace::{AttemptTrace, Claim},
};

/// A job, how its attempt went and what follows, as the store records it.
type Attempted = (ClaimedJob, AttemptRecord, Decision);

/// A finished attempt on its way to the store, with its destination's breaker and whether
/// the destination is FIFO (the snapshot's, as the attempt used it).
type Finished = ((Attempted, AttemptTrace), Option<BreakerPolicy>, bool);

/// Where attempts send themselves when they end, to be recorded.
type Sink = mpsc::UnboundedSender<Finished>;

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
    /// The routes of customer endpoints (`ep_…`), when the worker delivers to them.
    endpoints: Option<EndpointRoutes>,
    options: WorkerOptions,
    clock: Arc<dyn Clock>,
    draw: Arc<dyn Fn() -> f64 + Send + Sync>,
    throttles: Throttles,
    room: Arc<Room>,
    /// How endpoints show in the metrics' `destination` label.
    labels: EndpointLabels,
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
            endpoints: None,
            options,
            clock: Arc::new(SystemClock),
            draw: Arc::new(fastrand::f64),
            throttles: Throttles::default(),
            room: Arc::new(Room::new(&options)),
            labels: EndpointLabels::default(),
        }
    }

    /// Replaces the clock (tests use a [`crate::ManualClock`]).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Delivers the jobs of destinations named `ep_…` to the store's endpoints too
    /// (`endpoint/routes.rs`): their routes are read before each claim when the outbound
    /// version moved, and when a claimed job's endpoint is not cached. A configured
    /// destination of the same name comes first.
    #[must_use]
    pub fn with_endpoints(mut self, endpoints: EndpointRoutes) -> Self {
        self.endpoints = Some(endpoints);
        self
    }

    /// Shows each endpoint by its id in the metrics' `destination` label
    /// ([`EndpointLabels::PerEndpoint`]) instead of folding them all into `api` (the
    /// default, so that one time series is not made per customer).
    #[must_use]
    pub fn with_endpoint_labels(mut self, labels: EndpointLabels) -> Self {
        self.labels = labels;
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
        let configured = self.routes.snapshot();
        let routes = self.claim_routes(&configured).await;
        let fifo = routes.iter().filter(|(_, r)| r.fifo).map(|(name, _)| name.clone()).collect();
        let (throttles, dropped) = self.throttles.for_routes(&routes);
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
        let Reserved { limits, mut permits, mut short } = self.reserve_room(&routes, &throttles, most);
        self.room.held_back(Short { overall: most < self.options.batch, destinations: short.clone() });
        // A destination this worker has no room for is left out: its row is not locked for
        // a claim that takes none of its jobs.
        let shared = throttles
            .iter()
            .filter(|(name, _)| limits.get(name).is_some_and(|&mine| mine > 0))
            .map(|(name, throttle)| (name.clone(), throttle.limits()))
            .collect();
        // Span times are the wall clock's, as the tracer's own are.
        let started = SystemTime::now();
        let Claimed { jobs, room } = self
            .store
            .claim_jobs_within(self.clock.now_ms(), self.options.lease, most, fifo, limits.clone(), shared)
            .await?;
        let claim = Claim { started, ended: SystemTime::now() };
        // What the shared limits left: a destination short of it waits for an attempt's end too.
        let allowed: HashMap<String, usize> = limits
            .iter()
            .map(|(name, &mine)| (name.clone(), room.get(name).map_or(mine, |&room| room.min(mine))))
            .collect();
        let store_short: Vec<_> = allowed.iter().filter(|&(_, &n)| n < most).map(|(name, _)| name.clone()).collect();
        if store_short.iter().any(|name| !short.contains(name)) {
            short.extend(store_short);
            self.room.held_back(Short { overall: most < self.options.batch, destinations: short });
        }
        self.note_throttled(&throttles, &allowed, &jobs, most).await;
        let routes = self.route_unrouted(&configured, routes, &jobs).await;
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

    /// The routes of a claim: the `configured` ones and, when the worker delivers to
    /// endpoints, theirs, read first when the outbound version moved.
    async fn claim_routes(&self, configured: &Arc<HashMap<String, Route>>) -> Arc<HashMap<String, Route>> {
        let Some(endpoints) = &self.endpoints else { return Arc::clone(configured) };
        endpoints.refresh(self.clock.now_ms()).await;
        merged(configured, &endpoints.snapshot(), HashMap::new())
    }

    /// `routes` with a route for each claimed job's endpoint they lack: the endpoints are
    /// read again (the endpoint is newer than the last read), and one still not found gets
    /// the route of a deleted endpoint.
    async fn route_unrouted(
        &self,
        configured: &Arc<HashMap<String, Route>>,
        routes: Arc<HashMap<String, Route>>,
        jobs: &[ClaimedJob],
    ) -> Arc<HashMap<String, Route>> {
        let Some(endpoints) = &self.endpoints else { return routes };
        let unrouted = |routes: &HashMap<String, Route>| -> HashSet<String> {
            jobs.iter()
                .filter(|job| job.destination.starts_with(ENDPOINT_PREFIX) && !routes.contains_key(&job.destination))
                .map(|job| job.destination.clone())
                .collect()
        };
        if unrouted(&routes).is_empty() {
            return routes;
        }
        endpoints.refresh(self.clock.now_ms()).await;
        let cached = endpoints.snapshot();
        let deleted = unrouted(&cached).into_iter().filter(|name| !configured.contains_key(name));
        merged(configured, &cached, deleted.map(|name| (name, EndpointRoutes::deleted())).collect())
    }

    /// Reserves, for each route, room for at most `most` of its jobs in this worker: its own
    /// in-flight cap's permits (the store then holds the cap and the rate limit over every
    /// instance); a destination without a cap is limited to the
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
            let allowed = if let Some(cap) = throttle.and_then(|t| t.in_flight.as_ref()) {
                let held = reserve(cap, most);
                let allowed = held.len();
                permits.insert(name.clone(), held);
                allowed
            } else {
                self.room.share_of(name).available_permits().min(most)
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

    /// Whether each throttled destination was held back by its limits in this claim (given
    /// what they `allowed`, the worker's room and the store's shared limits together): kept
    /// by the worker, and told to the store when it changed.
    async fn note_throttled(
        &self,
        throttles: &[(String, Arc<Throttle>)],
        allowed: &HashMap<String, usize>,
        jobs: &[ClaimedJob],
        most: usize,
    ) {
        for (name, throttle) in throttles {
            let allowed = allowed.get(name).copied().unwrap_or(0);
            let claimed = jobs.iter().filter(|job| &job.destination == name).count();
            let held_back = allowed < most && claimed == allowed;
            // With nothing allowed, the claim could not tell: the last answer stands.
            let throttled = if allowed == 0 { throttle.throttled.load(Ordering::Relaxed) } else { held_back };
            throttle.throttled.store(throttled, Ordering::Relaxed);
            let label = self.labels.destination(name);
            // A folded endpoint has no gauge of its own (one would overwrite another's);
            // its throttled claims still count under the folded label.
            if label == name {
                metrics::gauge!("idemgate_destination_throttled", "destination" => name.clone()).set(if throttled {
                    1.0
                } else {
                    0.0
                });
            }
            if held_back {
                metrics::counter!("idemgate_destination_throttled_total", "destination" => label.to_owned())
                    .increment(1);
            }
            // A new throttle whose first claim was allowed nothing (another instance holds the
            // shared limits) knows nothing yet to correct the store's mark with.
            let recorded = throttle.recorded.load(Ordering::Relaxed);
            let unknown = allowed == 0 && recorded == UNRECORDED;
            if !unknown && let Some(now) = recording(recorded, throttled) {
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
            // It waits at most half its lease: an attempt started later could still be
            // running when the lease expires and a claim takes the job over, and the event
            // would reach the destination twice. A job given up is left to its lease, and
            // the claim that takes it when it expires delivers it once.
            self.routes.hold_back(&job.destination, true);
            let (worker, sink) = (self.clone(), sink.clone());
            let patience = self.options.lease / 2;
            let given_up_at =
                self.clock.now_ms().saturating_add(i64::try_from(patience.as_millis()).unwrap_or(i64::MAX));
            tokio::spawn(async move {
                let held = tokio::time::timeout(patience, worker.room.wait_for(&job.destination, routed)).await;
                worker.routes.hold_back(&job.destination, false);
                match held {
                    Ok(Some(held)) if worker.clock.now_ms() < given_up_at => {
                        worker.start(job, &worker.routes.snapshot(), claim, held, &sink);
                    }
                    // The worker's room never closes; were it closed, the lease expires
                    // and a claim delivers the job.
                    _ => tracing::info!(
                        job = job.id,
                        destination = %job.destination,
                        "no room for a handed-over job within half its lease; a claim delivers it once the lease expires"
                    ),
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
    /// cap, by name (this worker's last claim; the limits are every instance's).
    #[must_use]
    pub fn throttled(&self) -> Vec<String> {
        self.throttles.throttled()
    }

    /// Runs until `stop` turns true: then it stops claiming and returns once the jobs in
    /// hand are completed.
    ///
    /// While claims fail (the store is unreachable) it keeps polling; a failure is logged
    /// when it differs from the previous one, and the recovery once, not every poll.
    ///
    /// While it runs, the jobs its store accepts in this process for destinations it can
    /// start at once are handed to it already leased (`idemgate_store::sqlite::handover`), and
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

/// The `configured` routes over the `endpoints`' and `extra` ones (a configured
/// destination's name wins); the configured snapshot itself when there are no others.
fn merged(
    configured: &Arc<HashMap<String, Route>>,
    endpoints: &HashMap<String, Route>,
    mut extra: HashMap<String, Route>,
) -> Arc<HashMap<String, Route>> {
    if endpoints.is_empty() && extra.is_empty() {
        return Arc::clone(configured);
    }
    extra.reserve(endpoints.len() + configured.len());
    extra.extend(endpoints.iter().map(|(name, route)| (name.clone(), route.clone())));
    extra.extend(configured.iter().map(|(name, route)| (name.clone(), route.clone())));
    Arc::new(extra)
}
