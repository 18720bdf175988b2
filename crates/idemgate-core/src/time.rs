//! Time as a value. The core's decisions never read a clock: the edge reads one
//! (`idemgate-clock`) and passes `now` in, so every decision on time is a pure function.

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
