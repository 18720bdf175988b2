//! The worker loop: claim due jobs, deliver them concurrently, complete each with the
//! retry policy's decision; sleep briefly when nothing is due; on shutdown, stop claiming
//! and finish what is in hand.
//!
//! The destinations are a [`RouteTable`] that a configuration reload replaces while the
//! worker runs. Each claim batch reads one snapshot of it, and every job of the batch is
//! delivered and decided on that snapshot: an attempt in flight finishes on the
//! destination (URL, secret, retry schedule) it started with.
//!
//! Each route may be protected ([`Protection`]): a rate limit and a cap on attempts in
//! flight, kept per destination name by the worker (not per batch, and across a reload
//! that keeps the destination's settings), and a circuit breaker, which the store keeps.
//! Before a claim the worker reserves, for each throttled destination, the in-flight
//! permits and rate-limit tokens of the jobs it can start now, and asks the store for at
//! most that many of its jobs: a claimed job starts at once, and never waits under its
//! lease for its turn. (A reserved token whose job the claim did not find is spent: a
//! destination below its rate loses some of its burst, never its rate.)
//!
//! Whether a destination is throttled is worker state, but the CLI and the admin API run
//! elsewhere: the worker records it in the store (`Store::mark_throttled`) when it changes
//! (and once for each throttle it makes, so a restart corrects what a killed process left
//! behind), never per claim.
//!
//! Each attempt is a span (`crate::trace`), the child of the delivery that stored its event.

use std::{
    collections::HashMap,
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
    handover::{HandedOver, Handover},
    jobs::{AttemptRecord, Breakers, ClaimedJob, Completion},
};
use opentelemetry::{
    KeyValue,
    trace::{Span, SpanKind, Status},
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

use crate::{
    AttemptOutcome, Clock, Deliver, SystemClock,
    trace::{AttemptTrace, Claim},
};

/// A job, how its attempt went and what follows, as the store records it.
type Attempted = (ClaimedJob, AttemptRecord, Decision);

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

    /// Reserves what `most` jobs need to start now: as many in-flight permits as are free,
    /// and as many rate-limit tokens as there are permits. Returns the permits (or, without
    /// a cap, `None`) and how many jobs may start.
    fn reserve(&self, most: usize) -> (Option<Vec<OwnedSemaphorePermit>>, usize) {
        let permits = self.in_flight.as_ref().map(|semaphore| {
            std::iter::from_fn(|| Arc::clone(semaphore).try_acquire_owned().ok()).take(most).collect::<Vec<_>>()
        });
        let mut allowed = permits.as_ref().map_or(most, Vec::len);
        if let Some(limiter) = &self.limiter {
            allowed = (0..allowed).take_while(|_| limiter.check().is_ok()).count();
        }
        (
            permits.map(|mut p| {
                p.truncate(allowed);
                p
            }),
            allowed,
        )
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

/// The worker's destinations by name, replaceable while it runs. Clones share one table.
#[derive(Clone, Default)]
pub struct RouteTable(Arc<ArcSwap<HashMap<String, Route>>>);

impl RouteTable {
    /// A table of `routes`.
    #[must_use]
    pub fn new(routes: HashMap<String, Route>) -> Self {
        Self(Arc::new(ArcSwap::from_pointee(routes)))
    }

    /// Replaces the routes: the next claim batch uses them, the batches in hand keep theirs.
    pub fn replace(&self, routes: HashMap<String, Route>) {
        self.0.store(Arc::new(routes));
    }

    /// The routes now, unchanged for as long as the snapshot is held.
    #[must_use]
    pub fn snapshot(&self) -> Arc<HashMap<String, Route>> {
        self.0.load_full()
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
    /// Most jobs claimed (and delivered concurrently) at once.
    pub batch: usize,
    /// Pause between polls when nothing is due.
    pub poll_interval: Duration,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        Self { lease: Duration::from_secs(60), batch: 32, poll_interval: Duration::from_millis(500) }
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

    /// Claims the jobs due now, delivers them, and returns how many it handled.
    ///
    /// Attempts run concurrently; their results are recorded in groups as they finish
    /// (whatever has finished by the time the previous group is recorded), so a batch
    /// costs a few store writes rather than one per job, and a slow destination does not
    /// hold back the recording of fast ones.
    pub async fn tick(&self) -> Result<usize, StoreError> {
        let routes = self.routes.snapshot();
        let fifo = routes.iter().filter(|(_, r)| r.fifo).map(|(name, _)| name.clone()).collect();
        let breakers = breakers_of(&routes);
        let (throttles, dropped) = self.throttles.for_routes(&routes, &self.clock);
        for name in dropped {
            // A destination whose limits changed gets a new throttle, which records itself.
            if let Err(err) = self.store.mark_throttled(name, None).await {
                tracing::warn!(error = %err, "could not record that a destination is no longer throttled");
            }
        }
        let mut limits = HashMap::new();
        let mut permits: HashMap<String, Vec<OwnedSemaphorePermit>> = HashMap::new();
        for (name, throttle) in &throttles {
            let (held, allowed) = throttle.reserve(self.options.batch);
            limits.insert(name.clone(), allowed);
            if let Some(held) = held {
                permits.insert(name.clone(), held);
            }
        }
        // Span times are the wall clock's, as the tracer's own are.
        let started = SystemTime::now();
        let jobs = self
            .store
            .claim_jobs_limited(self.clock.now_ms(), self.options.lease, self.options.batch, fifo, limits.clone())
            .await?;
        let claim = Claim { started, ended: SystemTime::now() };
        for (name, throttle) in &throttles {
            let allowed = limits.get(name).copied().unwrap_or(0);
            let claimed = jobs.iter().filter(|job| &job.destination == name).count();
            let held_back = allowed < self.options.batch && claimed == allowed;
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
        let count = jobs.len();
        self.deliver(jobs, &routes, &breakers, permits, claim).await;
        Ok(count)
    }

    /// Delivers `jobs` concurrently on `routes`, each holding its destination's in-flight
    /// permit from `permits` while it runs, and records their results in groups as they
    /// finish (whatever has finished by the time the previous group is recorded).
    async fn deliver(
        &self,
        jobs: Vec<ClaimedJob>,
        routes: &Arc<HashMap<String, Route>>,
        breakers: &Breakers,
        mut permits: HashMap<String, Vec<OwnedSemaphorePermit>>,
        claim: Claim,
    ) {
        let (finished, mut results) = tokio::sync::mpsc::unbounded_channel();
        for job in jobs {
            let permit = permits.get_mut(&job.destination).and_then(Vec::pop);
            let (worker, routes, finished) = (self.clone(), Arc::clone(routes), finished.clone());
            tokio::spawn(async move {
                let done = worker.attempt(job, &routes, claim).await;
                drop(permit);
                let _ = finished.send(done);
            });
        }
        drop(permits);
        drop(finished);
        while let Some(first) = results.recv().await {
            let mut group = vec![first];
            while let Ok(more) = results.try_recv() {
                group.push(more);
            }
            if let Err(err) = self.record(group, breakers).await {
                tracing::warn!(error = %err, "could not record delivery attempts; their leases expire and they are retried");
            }
        }
    }

    /// Delivers the jobs this process's store hands over, a group at a time (what has
    /// arrived, up to a batch), until `stop`: then it takes no more offers, and returns once
    /// the jobs of offers already made are delivered and recorded.
    async fn deliver_handed(&self, mut handed: HandedOver, mut stop: watch::Receiver<bool>) {
        let mut stopping = false;
        loop {
            if !stopping && *stop.borrow() {
                handed.close();
                stopping = true;
            }
            let first = tokio::select! {
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
            let started = SystemTime::now();
            let mut jobs = vec![first];
            while jobs.len() < self.options.batch {
                let Some(more) = handed.try_recv() else { break };
                jobs.push(more);
            }
            let routes = self.routes.snapshot();
            let breakers = breakers_of(&routes);
            // The job was leased in its accept's transaction; the `claim` span is its arrival.
            let claim = Claim { started, ended: started };
            self.deliver(jobs, &routes, &breakers, HashMap::new(), claim).await;
        }
    }

    /// A hand-over from this process's store to this worker: for the destinations whose
    /// jobs it can start the moment it gets them (no FIFO order, no rate limit or in-flight
    /// cap, no breaker), as its routes say at each accept. Room for two batches.
    fn handover(&self) -> (Handover, HandedOver) {
        let routes = self.routes.clone();
        let eligible = Arc::new(move |name: &str| routes.snapshot().get(name).is_some_and(Route::starts_at_once));
        Handover::new(2 * self.options.batch, self.options.lease, eligible)
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
        tokio::join!(self.claim_until(stop.clone()), self.deliver_handed(handed, stop));
        self.store.hand_over_to(None);
    }

    /// Claims and delivers due jobs until `stop`, then finishes the jobs in hand.
    async fn claim_until(&self, mut stop: watch::Receiver<bool>) {
        let mut failing: Option<String> = None;
        while !*stop.borrow() {
            let handled = match self.tick().await {
                Ok(handled) => {
                    if failing.take().is_some() {
                        tracing::info!("claiming jobs works again");
                    }
                    handled
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
            if handled == 0 {
                // A dropped sender can never say stop again: treat it as stop.
                if let Ok(Err(_)) = tokio::time::timeout(self.options.poll_interval, stop.changed()).await {
                    break;
                }
            }
        }
    }
}

/// The breakers of `routes` that have one, by destination.
fn breakers_of(routes: &HashMap<String, Route>) -> Breakers {
    routes.iter().filter_map(|(name, r)| r.protection.breaker.map(|b| (name.clone(), b))).collect()
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
        Ok(body) => Ok(ClaimedJob { body, content_type: Some("application/json".to_owned()), ..job.clone() }),
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
