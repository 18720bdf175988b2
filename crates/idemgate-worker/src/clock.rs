//! The worker's notion of now, injectable so retry timing is tested without sleeping.

use std::sync::atomic::{AtomicI64, Ordering};

use idemgate_core::UnixTime;

/// Where the worker reads the time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time.
    fn now(&self) -> UnixTime;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> UnixTime {
        let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        UnixTime(i64::try_from(secs).unwrap_or(i64::MAX))
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock standing at `start`.
    #[must_use]
    pub fn at(start: UnixTime) -> Self {
        Self(AtomicI64::new(start.0))
    }

    /// Moves the clock forward by `secs`.
    pub fn advance(&self, secs: i64) {
        self.0.fetch_add(secs, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> UnixTime {
        UnixTime(self.0.load(Ordering::SeqCst))
    }
}
