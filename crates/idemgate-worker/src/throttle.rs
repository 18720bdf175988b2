//! Throttling a destination: its rate limit (governor's GCRA on the worker's clock) and
//! its in-flight cap (a semaphore), kept per destination name by the worker across claims
//! and reloads that keep its settings; what a claim reserves of them; and what the store is
//! told of whether a destination is throttled.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU8, Ordering},
    },
    time::Duration,
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::{
    Clock,
    route::{RateLimit, Route},
};

/// The rate limiter: governor's GCRA (well kept, lock-free, and driven by the worker's
/// clock here, so that tests move time instead of sleeping).
pub(crate) type Limiter = governor::RateLimiter<
    governor::state::NotKeyed,
    governor::state::InMemoryState,
    LimiterClock,
    governor::middleware::NoOpMiddleware<Duration>,
>;

/// The worker's clock as governor's clock, to the millisecond.
#[derive(Clone)]
pub(crate) struct LimiterClock(Arc<dyn Clock>);

impl governor::clock::Clock for LimiterClock {
    type Instant = Duration;

    fn now(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.0.now_ms()).unwrap_or(0))
    }
}

/// One destination's limiter and in-flight permits, kept across batches and reloads.
pub(crate) struct Throttle {
    /// The settings they were made for; other settings make a new throttle.
    pub(crate) settings: (Option<RateLimit>, Option<usize>),
    pub(crate) limiter: Option<Limiter>,
    pub(crate) in_flight: Option<Arc<Semaphore>>,
    /// Whether the last claim was cut short by the limits.
    pub(crate) throttled: AtomicBool,
    /// What the store was last told: [`UNRECORDED`], [`RECORDED_CLEAR`] or [`RECORDED_THROTTLED`].
    pub(crate) recorded: AtomicU8,
}

/// A throttle whose state the store has not been told yet.
pub(crate) const UNRECORDED: u8 = 0;
/// The store was told the destination is not throttled.
pub(crate) const RECORDED_CLEAR: u8 = 1;
/// The store was told the destination is throttled.
pub(crate) const RECORDED_THROTTLED: u8 = 2;

/// What to tell the store, given what it was told last: `None` when nothing changed.
pub(crate) fn recording(recorded: u8, throttled: bool) -> Option<u8> {
    let now = if throttled { RECORDED_THROTTLED } else { RECORDED_CLEAR };
    (recorded != now).then_some(now)
}

impl Throttle {
    pub(crate) fn new(settings: (Option<RateLimit>, Option<usize>), clock: &Arc<dyn Clock>) -> Self {
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
pub(crate) fn reserve(cap: &Arc<Semaphore>, limiter: Option<&Limiter>, most: usize) -> Vec<OwnedSemaphorePermit> {
    let mut permits: Vec<_> = std::iter::from_fn(|| Arc::clone(cap).try_acquire_owned().ok()).take(most).collect();
    if let Some(limiter) = limiter {
        let allowed = (0..permits.len()).take_while(|_| limiter.check().is_ok()).count();
        permits.truncate(allowed);
    }
    permits
}

/// The worker's throttles by destination name.
#[derive(Clone, Default)]
pub(crate) struct Throttles(Arc<Mutex<HashMap<String, Arc<Throttle>>>>);

impl Throttles {
    /// The destinations whose last claim was cut short by their limits, by name, in order.
    pub(crate) fn throttled(&self) -> Vec<String> {
        let all = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut names: Vec<_> =
            all.iter().filter(|(_, t)| t.throttled.load(Ordering::Relaxed)).map(|(name, _)| name.clone()).collect();
        names.sort();
        names
    }

    /// The throttles of `routes` that need one, made or kept; those of destinations gone or
    /// unthrottled are dropped. Also returns the names of dropped throttles the store was
    /// told were throttled, to be cleared there.
    pub(crate) fn for_routes(
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

#[cfg(test)]
mod tests {
    use super::{RECORDED_CLEAR, RECORDED_THROTTLED, UNRECORDED, recording};

    #[test]
    pub(crate) fn the_store_hears_of_a_throttle_once_and_then_only_of_changes() {
        assert_eq!(recording(UNRECORDED, false), Some(RECORDED_CLEAR), "a new throttle corrects a stale row");
        assert_eq!(recording(UNRECORDED, true), Some(RECORDED_THROTTLED));
        assert_eq!(recording(RECORDED_CLEAR, false), None);
        assert_eq!(recording(RECORDED_THROTTLED, true), None);
        assert_eq!(recording(RECORDED_CLEAR, true), Some(RECORDED_THROTTLED));
        assert_eq!(recording(RECORDED_THROTTLED, false), Some(RECORDED_CLEAR));
    }
}
