//! Throttling a destination: its rate limit and in-flight cap, which the store holds for
//! every instance (core's `limit`, applied in the claim's transaction), and this worker's
//! own in-flight permits, kept per destination name across claims and reloads that keep
//! its settings; what a claim reserves of them; and what the store is told of whether a
//! destination is throttled.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU8, Ordering},
    },
};

use idemgate_core::limit::{Limits, Rate};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::route::{RateLimit, Route};

/// One destination's limits and this worker's in-flight permits, kept across batches and
/// reloads.
pub(crate) struct Throttle {
    /// The settings they were made for; other settings make a new throttle.
    pub(crate) settings: (Option<RateLimit>, Option<usize>),
    /// This worker's permits of the in-flight cap (the store holds the cap over every
    /// instance; a worker never holds more than all of it either).
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
    pub(crate) fn new(settings: (Option<RateLimit>, Option<usize>)) -> Self {
        let in_flight = settings.1.map(|cap| Arc::new(Semaphore::new(cap)));
        Self { settings, in_flight, throttled: AtomicBool::new(false), recorded: AtomicU8::new(UNRECORDED) }
    }

    /// The limits the store holds the destination to, over every instance.
    pub(crate) fn limits(&self) -> Limits {
        let rate = self.settings.0.map(|rate| Rate { per_second: rate.per_second, burst: rate.burst.max(1) });
        Limits { rate, max_in_flight: self.settings.1 }
    }
}

/// Reserves as many permits of `cap` (the destination's own in-flight cap, this worker's
/// share of it) as are free, at most `most`: a permit per job that may start.
pub(crate) fn reserve(cap: &Arc<Semaphore>, most: usize) -> Vec<OwnedSemaphorePermit> {
    std::iter::from_fn(|| Arc::clone(cap).try_acquire_owned().ok()).take(most).collect()
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
    pub(crate) fn for_routes(&self, routes: &HashMap<String, Route>) -> (Vec<(String, Arc<Throttle>)>, Vec<String>) {
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
                let throttle = all.entry(name.clone()).or_insert_with(|| Arc::new(Throttle::new(settings)));
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
