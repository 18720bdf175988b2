//! A delivery job's states and the legal moves between them.
//!
//! `pending` → `running` (claimed under a lease) → `succeeded`, `retrying` (next attempt at
//! T, then `running` again), or `dead` (attempts exhausted or a final answer). `superseded`
//! marks a job whose event is older than state already seen for its ordering key. `dead`
//! and `superseded` jobs can be replayed, which makes them `pending` again; so can
//! `succeeded` ones (a deliberate resend with the same `webhook-id`).

use std::{fmt, str::FromStr};

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

#[cfg(test)]
mod tests {
    use super::*;

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
