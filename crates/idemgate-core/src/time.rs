//! Time as a value. The core's decisions never read a clock; the edge passes `now` in
//! (from a [`Clock`]), so tolerance windows, schedules and expiries are deterministic in
//! tests with a [`ManualClock`].

/// Seconds since the Unix epoch, as carried by webhook timestamp headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixTime(pub i64);

impl UnixTime {
    /// The absolute distance between two instants, in seconds.
    #[must_use]
    pub fn abs_diff(self, other: UnixTime) -> u64 {
        self.0.abs_diff(other.0)
    }
}

/// Where the edge reads the time. Decisions in this crate never call it: they take the
/// time as a parameter, and the caller reads it here once per step.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;

    /// Seconds since the Unix epoch.
    fn now(&self) -> UnixTime {
        UnixTime(self.now_ms().div_euclid(1000))
    }
}

/// The system's wall clock: the one place in this crate that reads the time.
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
pub struct ManualClock(std::sync::atomic::AtomicI64);

impl ManualClock {
    /// A clock standing at `start`.
    #[must_use]
    pub fn at(start: UnixTime) -> Self {
        Self(std::sync::atomic::AtomicI64::new(start.0.saturating_mul(1000)))
    }

    /// Moves the clock forward by `secs` seconds.
    pub fn advance(&self, secs: i64) {
        self.advance_ms(secs.saturating_mul(1000));
    }

    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}
