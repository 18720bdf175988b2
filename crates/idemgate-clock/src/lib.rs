//! Where idemgate reads the time. The core's decisions take the time as a value
//! ([`UnixTime`] or milliseconds); the edge reads it here, once per step, from a [`Clock`]
//! it was given, so tolerance windows, schedules, expiries and replays are deterministic in
//! tests with a [`ManualClock`].
//!
//! This is its own crate, below every crate that reads the time, because the client
//! depends on nothing but the core and must not pull the store in for a clock.

use std::sync::atomic::{AtomicI64, Ordering};

pub use idemgate_core::UnixTime;

/// Where the edge reads the time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;

    /// Seconds since the Unix epoch.
    fn now(&self) -> UnixTime {
        UnixTime(self.now_ms().div_euclid(1000))
    }
}

/// The system's wall clock: the one place in idemgate that reads the time of day.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        let elapsed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
    }
}

/// A clock that moves only when told to, for deterministic tests.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock standing at `start`.
    #[must_use]
    pub fn at(start: UnixTime) -> Self {
        Self(AtomicI64::new(start.0.saturating_mul(1000)))
    }

    /// Moves the clock forward by `secs` seconds.
    pub fn advance(&self, secs: i64) {
        self.advance_ms(secs.saturating_mul(1000));
    }

    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced() {
        let clock = ManualClock::at(UnixTime(1_800_000_000));
        assert_eq!(clock.now(), UnixTime(1_800_000_000));
        clock.advance_ms(1_500);
        assert_eq!((clock.now_ms(), clock.now()), (1_800_000_001_500, UnixTime(1_800_000_001)));
    }
}
