//! Time as a value. The core never reads a clock; the edge passes `now` in, so tolerance
//! windows and expiries are deterministic in tests.

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
