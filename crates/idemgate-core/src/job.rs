//! A delivery job's states and the legal moves between them.
//!
//! `pending` → `running` (claimed under a lease) → `succeeded`, `retrying` (next attempt at
//! T, then `running` again), or `dead` (attempts exhausted or a final answer). `superseded`
//! marks a job whose event is older than state already seen for its ordering key. `dead`
//! and `superseded` jobs can be replayed, which makes them `pending` again; so can
//! `succeeded` ones (a deliberate resend with the same `webhook-id`).

use std::{fmt, str::FromStr, time::Duration};

use crate::retry::{DeadReason, Decision};

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobState {
    /// Due, waiting for a worker.
    Pending,
    /// Claimed by a worker whose lease has not expired.
    Running,
    /// Delivered: the destination answered 2xx.
    Succeeded,
    /// Failed transiently; due again at its next attempt time.
    Retrying,
    /// Given up: attempts exhausted or a final answer. Replayable.
    Dead,
    /// Not delivered because a newer version for its ordering key was already seen.
    Superseded,
}

impl JobState {
    /// Every state, in lifecycle order.
    pub const ALL: [JobState; 6] =
        [Self::Pending, Self::Running, Self::Succeeded, Self::Retrying, Self::Dead, Self::Superseded];

    /// The queue's states, which the `idemgate_jobs` gauge counts: the work waiting or
    /// under way, and the dead jobs an operator may replay; not the history (succeeded,
    /// superseded), which only a read of every job could count.
    pub const QUEUE: [JobState; 4] = [Self::Pending, Self::Running, Self::Retrying, Self::Dead];

    /// The state's stored name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Retrying => "retrying",
            Self::Dead => "dead",
            Self::Superseded => "superseded",
        }
    }

    /// Whether a worker may claim a job in this state (when it is due).
    #[must_use]
    pub fn is_claimable(self) -> bool {
        matches!(self, Self::Pending | Self::Retrying)
    }

    /// Whether the job will not move again unless replayed.
    #[must_use]
    pub fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Dead | Self::Superseded)
    }

    /// Whether an operator's replay may make it `pending` again. Running and waiting jobs
    /// are already on their way, so replaying them would only race the worker.
    #[must_use]
    pub fn is_replayable(self) -> bool {
        self.is_final()
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A state name that is not one of [`JobState::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown job state (expected one of pending, running, succeeded, retrying, dead, superseded)")]
pub struct UnknownState;

impl FromStr for JobState {
    type Err = UnknownState;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|state| state.as_str() == text).ok_or(UnknownState)
    }
}

/// What a job becomes after an attempt, the same on every backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// Its new state.
    pub state: JobState,
    /// When it is next due, in milliseconds.
    pub next_attempt_at_ms: i64,
    /// The error kept with it.
    pub error: Option<String>,
}

impl Transition {
    /// The move `decision` makes at `now_ms` for an attempt that failed with `attempt_error`
    /// (if it did). A retry is due `now_ms` plus its delay, rounded up to the millisecond.
    #[must_use]
    pub fn after_attempt(decision: Decision, attempt_error: Option<&str>, now_ms: i64) -> Self {
        let (state, next_attempt_at_ms, error) = match decision {
            Decision::Succeeded => (JobState::Succeeded, now_ms, None),
            Decision::RetryAfter(delay) => {
                (JobState::Retrying, due_ms(now_ms, delay), attempt_error.map(str::to_owned))
            }
            Decision::Dead(reason @ DeadReason::AttemptsExhausted) => {
                let last = attempt_error.map_or(String::new(), |error| format!("; last attempt: {error}"));
                (JobState::Dead, now_ms, Some(format!("{}{last}", reason.describe())))
            }
            Decision::Dead(reason @ DeadReason::Refused) => {
                let why = attempt_error.map_or(String::new(), |error| format!(": {error}"));
                (JobState::Dead, now_ms, Some(format!("{}{why}", reason.describe())))
            }
            Decision::Dead(reason) => (JobState::Dead, now_ms, Some(reason.describe())),
            Decision::DisableDestination => {
                (JobState::Retrying, now_ms, Some("destination answered 410 Gone and was disabled".to_owned()))
            }
        };
        Self { state, next_attempt_at_ms, error }
    }
}

/// `delay` after `now_ms`, in milliseconds rounded up: a due time is never earlier than
/// its delay allows.
fn due_ms(now_ms: i64, delay: Duration) -> i64 {
    let delay = i64::try_from(delay.as_nanos().div_ceil(1_000_000)).unwrap_or(i64::MAX);
    now_ms.saturating_add(delay)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_decision_moves_the_job() {
        let now = 10_000;
        assert_eq!(
            Transition::after_attempt(Decision::Succeeded, Some("ignored"), now),
            Transition { state: JobState::Succeeded, next_attempt_at_ms: now, error: None }
        );
        assert_eq!(
            Transition::after_attempt(Decision::RetryAfter(Duration::from_micros(1_500)), Some("timeout"), now),
            Transition { state: JobState::Retrying, next_attempt_at_ms: now + 2, error: Some("timeout".to_owned()) }
        );
        assert_eq!(
            Transition::after_attempt(Decision::Dead(DeadReason::FinalStatus(422)), None, now),
            Transition { state: JobState::Dead, next_attempt_at_ms: now, error: Some("final status 422".to_owned()) }
        );
        assert_eq!(
            Transition::after_attempt(Decision::Dead(DeadReason::AttemptsExhausted), Some("status 501"), now).error,
            Some("attempts exhausted; last attempt: status 501".to_owned()),
            "a dead job names what its last attempt came to"
        );
        assert_eq!(
            Transition::after_attempt(Decision::Dead(DeadReason::Refused), Some("transform failed: x"), now).error,
            Some("refused permanently: transform failed: x".to_owned()),
            "a refused job says why, in the attempt's words"
        );
        let gone = Transition::after_attempt(Decision::DisableDestination, None, now);
        assert_eq!((gone.state, gone.next_attempt_at_ms), (JobState::Retrying, now));
        assert_eq!(gone.error.as_deref(), Some("destination answered 410 Gone and was disabled"));
    }

    #[test]
    fn a_retry_is_never_due_early_and_never_overflows() {
        assert_eq!(due_ms(0, Duration::from_nanos(1)), 1);
        assert_eq!(due_ms(5, Duration::from_millis(3)), 8);
        assert_eq!(due_ms(i64::MAX - 1, Duration::from_secs(1)), i64::MAX);
        assert_eq!(due_ms(0, Duration::MAX), i64::MAX);
    }

    #[test]
    fn names_round_trip() {
        for state in JobState::ALL {
            assert_eq!(state.as_str().parse(), Ok(state));
        }
        assert_eq!("done".parse::<JobState>(), Err(UnknownState));
    }

    #[test]
    fn only_finished_jobs_are_replayable_and_only_waiting_ones_claimable() {
        let replayable: Vec<_> = JobState::ALL.into_iter().filter(|s| s.is_replayable()).collect();
        assert_eq!(replayable, [JobState::Succeeded, JobState::Dead, JobState::Superseded]);
        let claimable: Vec<_> = JobState::ALL.into_iter().filter(|s| s.is_claimable()).collect();
        assert_eq!(claimable, [JobState::Pending, JobState::Retrying]);
    }
}
