//! A destination's limits, shared by every gateway instance on one store: its rate limit
//! (a token bucket with a burst) and its cap on attempts in flight.
//!
//! This is only the arithmetic. The store keeps one [`Bucket`] per destination and counts
//! the attempts in flight as the destination's jobs leased now (a lease that expires, as a
//! killed instance's do, frees its place); a claim reads both under the destination's row
//! lock, takes at most [`Limits::room`] of its jobs, and writes back [`Limits::spent`] in
//! the same transaction, so instances take turns and together start no more than one
//! process would.
//!
//! The level is kept in millionths of a token, so that refilling and spending are integer
//! arithmetic, exact on every instance: in any span of `t` seconds a destination starts at
//! most `burst + per_second × t` attempts.

/// Millionths of a token: the unit of a [`Bucket`]'s level.
pub const UNITS_PER_TOKEN: i64 = 1_000_000;

/// Attempts per second, and how many may start at once after a quiet spell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Attempts started per second, on average; more than zero.
    pub per_second: f64,
    /// Attempts that may start at once (the bucket's size); at least 1.
    pub burst: u32,
}

impl Rate {
    /// The units the bucket gains per millisecond, rounded down (never faster than the
    /// rate), at least one.
    fn units_per_ms(self) -> i64 {
        let units = (self.per_second * 1_000.0).floor();
        // Saturating: a rate beyond i64 refills the bucket at once anyway.
        #[allow(clippy::cast_possible_truncation)]
        let units = units as i64;
        units.max(1)
    }

    /// The bucket's size in units.
    fn capacity(self) -> i64 {
        i64::from(self.burst.max(1)) * UNITS_PER_TOKEN
    }
}

/// A destination's token bucket as the store keeps it: its level in units at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// Units of tokens left (see [`UNITS_PER_TOKEN`]).
    pub level: i64,
    /// When the level was last brought up to date, in milliseconds.
    pub at_ms: i64,
}

impl Bucket {
    /// The bucket at `now_ms`, refilled at `rate` for the time since, up to its size. A full
    /// bucket when there is none yet. A `now_ms` before the bucket's time (another
    /// instance's claim read a later clock) refills nothing and keeps the later time.
    #[must_use]
    pub fn at(bucket: Option<Self>, rate: Rate, now_ms: i64) -> Self {
        let capacity = rate.capacity();
        let Some(bucket) = bucket else { return Self { level: capacity, at_ms: now_ms } };
        let elapsed = now_ms.saturating_sub(bucket.at_ms).max(0);
        let level = bucket.level.saturating_add(elapsed.saturating_mul(rate.units_per_ms())).min(capacity);
        Self { level, at_ms: bucket.at_ms.max(now_ms) }
    }

    /// The whole tokens in the bucket.
    #[must_use]
    pub fn tokens(self) -> usize {
        usize::try_from(self.level.max(0) / UNITS_PER_TOKEN).unwrap_or(usize::MAX)
    }
}

/// A destination's limits; none, and it is limited by nothing here.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    /// Most attempts started per second, with a burst.
    pub rate: Option<Rate>,
    /// Most attempts in flight at once.
    pub max_in_flight: Option<usize>,
}

impl Limits {
    /// How many attempts may start at `now_ms`, given the stored `bucket` and the
    /// attempts `in_flight` now: the bucket's whole tokens and the cap's free places,
    /// whichever is fewer (`usize::MAX` when neither limits).
    #[must_use]
    pub fn room(&self, bucket: Option<Bucket>, in_flight: usize, now_ms: i64) -> usize {
        let tokens = self.rate.map_or(usize::MAX, |rate| Bucket::at(bucket, rate, now_ms).tokens());
        let places = self.max_in_flight.map_or(usize::MAX, |cap| cap.saturating_sub(in_flight));
        tokens.min(places)
    }

    /// The bucket to store after `taken` attempts started at `now_ms` (`None` without a
    /// rate limit). Only the attempts started spend a token.
    #[must_use]
    pub fn spent(&self, bucket: Option<Bucket>, taken: usize, now_ms: i64) -> Option<Bucket> {
        let rate = self.rate?;
        let bucket = Bucket::at(bucket, rate, now_ms);
        let spent = i64::try_from(taken).unwrap_or(i64::MAX).saturating_mul(UNITS_PER_TOKEN);
        Some(Bucket { level: bucket.level.saturating_sub(spent), at_ms: bucket.at_ms })
    }
}

#[cfg(test)]
mod tests {
    use super::{Bucket, Limits, Rate, UNITS_PER_TOKEN};

    const T0: i64 = 1_700_000_000_000;

    fn limits(per_second: f64, burst: u32, cap: Option<usize>) -> Limits {
        Limits { rate: Some(Rate { per_second, burst }), max_in_flight: cap }
    }

    #[test]
    fn a_new_bucket_is_full_and_refills_at_the_rate_up_to_the_burst() {
        let l = limits(2.0, 3, None);
        assert_eq!(l.room(None, 0, T0), 3);
        let empty = l.spent(None, 3, T0);
        assert_eq!(empty, Some(Bucket { level: 0, at_ms: T0 }));
        assert_eq!(l.room(empty, 0, T0 + 499), 0);
        assert_eq!(l.room(empty, 0, T0 + 500), 1);
        assert_eq!(l.room(empty, 0, T0 + 1_000), 2);
        assert_eq!(l.room(empty, 0, T0 + 60_000), 3, "never more than the burst");
    }

    #[test]
    fn only_the_attempts_started_spend_tokens() {
        let l = limits(1.0, 4, None);
        let after = l.spent(None, 1, T0);
        assert_eq!(l.room(after, 0, T0), 3);
    }

    #[test]
    fn an_earlier_clock_refills_nothing_and_keeps_the_later_time() {
        let rate = Rate { per_second: 10.0, burst: 5 };
        let bucket = Bucket { level: 0, at_ms: T0 };
        assert_eq!(Bucket::at(Some(bucket), rate, T0 - 5_000), bucket);
    }

    #[test]
    fn the_cap_counts_the_attempts_in_flight_and_the_fewer_wins() {
        let l = limits(100.0, 100, Some(4));
        assert_eq!(l.room(None, 0, T0), 4);
        assert_eq!(l.room(None, 3, T0), 1);
        assert_eq!(l.room(None, 9, T0), 0, "more in flight than the cap (it was lowered): none");
        let capped = Limits { rate: None, max_in_flight: Some(2) };
        assert_eq!(capped.room(None, 1, T0), 1);
        assert_eq!(capped.spent(None, 1, T0), None, "no bucket without a rate");
        assert_eq!(Limits::default().room(None, 1_000, T0), usize::MAX);
    }

    #[test]
    fn a_fractional_rate_refills_exactly() {
        let l = limits(0.5, 1, None);
        let empty = l.spent(None, 1, T0);
        assert_eq!(l.room(empty, 0, T0 + 1_999), 0);
        assert_eq!(l.room(empty, 0, T0 + 2_000), 1);
        let third = limits(3.0, 1, None);
        let empty = third.spent(None, 1, T0);
        assert_eq!(third.room(empty, 0, T0 + 333), 0, "333 ms hold 999 000 units");
        assert_eq!(third.room(empty, 0, T0 + 334), 1);
        assert_eq!(empty.map(|b| b.level), Some(0));
        assert_eq!(UNITS_PER_TOKEN, 1_000_000);
    }

    /// Claims at arbitrary times, each taking all it may: over any span of `t` ms no more
    /// than `burst + per_second × t / 1000` start.
    #[test]
    fn no_span_starts_more_than_the_burst_and_the_rate() {
        let (per_second, burst) = (7.0, 3);
        let l = limits(per_second, burst, None);
        let mut bucket = None;
        let mut starts = Vec::new();
        let mut now = T0;
        let mut seed = 17_u64;
        for _ in 0..2_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            now += i64::try_from(seed >> 56).unwrap_or(0);
            let room = l.room(bucket, 0, now);
            bucket = l.spent(bucket, room, now);
            starts.extend(std::iter::repeat_n(now, room));
        }
        for (i, &from) in starts.iter().enumerate() {
            for span in [0_i64, 1, 100, 999, 1_000, 5_000] {
                let within = starts[i..].iter().take_while(|&&at| at <= from + span).count();
                #[allow(clippy::cast_precision_loss)]
                let most = f64::from(burst) + per_second * span as f64 / 1_000.0;
                #[allow(clippy::cast_precision_loss)]
                let within_f = within as f64;
                assert!(within_f <= most, "{within} starts within {span} ms of {from}");
            }
        }
    }
}
