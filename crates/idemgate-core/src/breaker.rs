//! The circuit breaker of a destination: when its attempts keep failing, the destination
//! is *paused*, so that a destination that is down costs one probe per interval instead of
//! every job's attempts, and resumes by itself on the first attempt that gets an answer.
//!
//! This is only the decision; the store keeps a [`BreakerState`] per destination (shared by
//! every gateway instance), folds each recorded attempt into it in the same write, and lets
//! a claim take one probe job of a paused destination when [`BreakerState::probe`] says so.
//!
//! What counts: an attempt the destination answered deliberately (a 2xx, a final 4xx, a
//! permanent refusal) shows it is up, and resumes it; a retried failure (5xx, timeout,
//! connection, temporary refusal) or the last attempt of a schedule counts as a failure;
//! a `410 Gone` disables the destination by other means and leaves the breaker as it is.

use std::time::Duration;

use crate::retry::{DeadReason, Decision};

/// When a destination is paused, and how often it is probed then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerPolicy {
    /// Pause after this many consecutive failed attempts.
    pub pause_after_failures: Option<u32>,
    /// Pause once attempts have failed without a break for this long.
    pub pause_after: Option<Duration>,
    /// While paused, one job is attempted (a probe) once per this interval.
    pub probe_interval: Duration,
}

/// A paused destination: since when, and when its next probe is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pause {
    /// When it was paused, in milliseconds.
    pub at_ms: i64,
    /// When the next probe may be claimed, in milliseconds.
    pub next_probe_at_ms: i64,
    /// The probe interval it was paused with, in milliseconds (kept so that a claim, which
    /// knows no policy, can move the probe time on).
    pub probe_interval_ms: i64,
}

/// A destination's breaker as the store keeps it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BreakerState {
    /// Consecutive failed attempts.
    pub failures: u32,
    /// Since when attempts have failed without a break, in milliseconds.
    pub failing_since_ms: Option<i64>,
    /// Set while the destination is paused.
    pub paused: Option<Pause>,
}

/// What one attempt says about its destination's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The destination answered: it is up.
    Answered,
    /// The attempt failed in a way a later attempt may not.
    Failed,
    /// Says nothing for the breaker (a `410 Gone` disables the destination instead).
    Neither,
}

impl Verdict {
    /// What an attempt decided as `decision` says.
    #[must_use]
    pub fn of(decision: Decision) -> Self {
        match decision {
            Decision::Succeeded | Decision::Dead(DeadReason::FinalStatus(_) | DeadReason::Refused) => Self::Answered,
            Decision::RetryAfter(_) | Decision::Dead(DeadReason::AttemptsExhausted) => Self::Failed,
            Decision::DisableDestination => Self::Neither,
        }
    }
}

/// Whether a claim may take jobs of a destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Not paused: as many as are due.
    Open,
    /// Paused and a probe is due: at most one job, and if one is taken the breaker becomes
    /// this state (the next probe moved on by the interval).
    Probe(BreakerState),
    /// Paused, no probe due: none.
    Closed,
}

/// `ms` plus `delay` in milliseconds, saturating.
fn after_ms(ms: i64, delay: Duration) -> i64 {
    ms.saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX))
}

impl BreakerState {
    /// Whether the destination is paused.
    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.paused.is_some()
    }

    /// The state after an attempt decided as `decision` at `now_ms`, and the decision its
    /// job is moved by. `policy` is the destination's breaker, if it has one; without one
    /// it is never paused, but a paused state (from before the breaker was configured
    /// away) still resumes on an answer.
    ///
    /// While the destination is paused afterwards, a job whose schedule is exhausted is
    /// not made dead: it waits as retrying, so that a destination that is down spends
    /// only its probes, and the jobs are delivered once it is back.
    #[must_use]
    pub fn record(self, decision: Decision, policy: Option<&BreakerPolicy>, now_ms: i64) -> (Self, Decision) {
        let next = match Verdict::of(decision) {
            Verdict::Answered => Self::default(),
            Verdict::Neither => self,
            Verdict::Failed => {
                let failures = self.failures.saturating_add(1);
                let failing_since_ms = self.failing_since_ms.unwrap_or(now_ms);
                let paused = self.paused.or_else(|| {
                    let policy = policy?;
                    let by_count = policy.pause_after_failures.is_some_and(|n| failures >= n);
                    let by_time = policy.pause_after.is_some_and(|d| after_ms(failing_since_ms, d) <= now_ms);
                    (by_count || by_time).then(|| Pause {
                        at_ms: now_ms,
                        next_probe_at_ms: after_ms(now_ms, policy.probe_interval),
                        probe_interval_ms: after_ms(0, policy.probe_interval),
                    })
                });
                Self { failures, failing_since_ms: Some(failing_since_ms), paused }
            }
        };
        let decision = match decision {
            Decision::Dead(DeadReason::AttemptsExhausted) if next.is_paused() => Decision::RetryAfter(Duration::ZERO),
            other => other,
        };
        (next, decision)
    }

    /// Whether a claim at `now_ms` may take jobs of this destination.
    #[must_use]
    pub fn probe(self, now_ms: i64) -> Claim {
        match self.paused {
            None => Claim::Open,
            Some(pause) if pause.next_probe_at_ms <= now_ms => Claim::Probe(Self {
                paused: Some(Pause { next_probe_at_ms: now_ms.saturating_add(pause.probe_interval_ms), ..pause }),
                ..self
            }),
            Some(_) => Claim::Closed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RETRY: Decision = Decision::RetryAfter(Duration::from_secs(5));
    const EXHAUSTED: Decision = Decision::Dead(DeadReason::AttemptsExhausted);

    fn policy(failures: Option<u32>, after: Option<u64>) -> BreakerPolicy {
        BreakerPolicy {
            pause_after_failures: failures,
            pause_after: after.map(Duration::from_secs),
            probe_interval: Duration::from_secs(30),
        }
    }

    fn fail(state: BreakerState, policy: &BreakerPolicy, now_ms: i64) -> BreakerState {
        state.record(RETRY, Some(policy), now_ms).0
    }

    #[test]
    fn pauses_after_the_configured_count_of_consecutive_failures() {
        let policy = policy(Some(3), None);
        let mut state = BreakerState::default();
        for n in 1..=2 {
            state = fail(state, &policy, n * 1000);
            assert!(!state.is_paused(), "paused after {n}");
        }
        assert_eq!(state.failures, 2);
        assert_eq!(state.failing_since_ms, Some(1000));
        state = fail(state, &policy, 3000);
        assert_eq!(state.paused, Some(Pause { at_ms: 3000, next_probe_at_ms: 33_000, probe_interval_ms: 30_000 }));
    }

    #[test]
    fn an_answer_in_between_starts_the_count_again() {
        let policy = policy(Some(2), None);
        let state = fail(BreakerState::default(), &policy, 1);
        let (state, decision) = state.record(Decision::Succeeded, Some(&policy), 2);
        assert_eq!((state, decision), (BreakerState::default(), Decision::Succeeded));
        let state = fail(state, &policy, 3);
        assert!(!state.is_paused());
        let (state, _) = state.record(Decision::Dead(DeadReason::FinalStatus(422)), Some(&policy), 4);
        assert_eq!(state, BreakerState::default(), "a final 4xx is an answer: the destination is up");
    }

    #[test]
    fn pauses_after_failing_for_the_configured_time() {
        let policy = policy(None, Some(120));
        let mut state = fail(BreakerState::default(), &policy, 10_000);
        state = fail(state, &policy, 129_999);
        assert!(!state.is_paused());
        state = fail(state, &policy, 130_000);
        assert_eq!(state.paused.map(|p| p.at_ms), Some(130_000));
        assert_eq!(state.failing_since_ms, Some(10_000));
    }

    #[test]
    fn without_a_policy_it_counts_but_never_pauses() {
        let mut state = BreakerState::default();
        for n in 0..100 {
            state = state.record(RETRY, None, n).0;
        }
        assert_eq!((state.failures, state.paused), (100, None));
    }

    #[test]
    fn a_paused_destination_is_probed_once_per_interval_and_resumes_on_an_answer() {
        let policy = policy(Some(1), None);
        let paused = fail(BreakerState::default(), &policy, 0);
        assert_eq!(paused.probe(29_999), Claim::Closed);
        let Claim::Probe(probing) = paused.probe(31_000) else { panic!("a probe is due") };
        assert_eq!(probing.paused.map(|p| p.next_probe_at_ms), Some(61_000), "the next probe is an interval later");
        assert_eq!(probing.probe(60_999), Claim::Closed);
        let still = fail(probing, &policy, 31_500);
        assert_eq!(still.paused, probing.paused, "a failed probe keeps it paused, the probe time as it is");
        let (resumed, _) = still.record(Decision::Succeeded, Some(&policy), 62_000);
        assert_eq!(resumed.probe(62_000), Claim::Open);
        assert_eq!(BreakerState::default().probe(0), Claim::Open);
    }

    #[test]
    fn jobs_are_not_made_dead_while_paused() {
        let policy = policy(Some(2), None);
        let (state, decision) = BreakerState::default().record(EXHAUSTED, Some(&policy), 0);
        assert_eq!(decision, EXHAUSTED, "not paused yet: the schedule decides");
        let (state, decision) = state.record(EXHAUSTED, Some(&policy), 1);
        assert!(state.is_paused());
        assert_eq!(decision, Decision::RetryAfter(Duration::ZERO), "the attempt that pauses it keeps its job");
        let (_, decision) = state.record(Decision::Dead(DeadReason::FinalStatus(400)), Some(&policy), 2);
        assert_eq!(decision, Decision::Dead(DeadReason::FinalStatus(400)), "a final answer still decides");
    }

    #[test]
    fn a_gone_destination_leaves_the_breaker_alone() {
        let policy = policy(Some(5), None);
        let state = fail(BreakerState::default(), &policy, 0);
        let (after, decision) = state.record(Decision::DisableDestination, Some(&policy), 1);
        assert_eq!((after, decision), (state, Decision::DisableDestination));
    }
}
