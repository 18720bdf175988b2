//! Sending messages again by hand (`docs/design/outbound-api.md` §3.3): a resend of one
//! message to one endpoint, and the recovery of an endpoint's failed messages in a time
//! range. Both make the existing job of (message, endpoint) due again with the operator's
//! replay (`UNIQUE (event_id, destination)`: never a second job) and mark it manual, so
//! that its attempts from then on read as Svix's `Manual` trigger. The event, and so the
//! `webhook-id`, stay the same.

use idemgate_core::job::JobState;

/// What a resend did to the message's job for the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resent {
    /// The job is due now: a finished one replayed, a waiting one brought forward.
    Due,
    /// An attempt is under way: that attempt is the resend; nothing changed.
    Sending,
}

/// What a resend does to a job in `state`: the pure decision both backends apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Redo {
    /// Finished (succeeded, dead, superseded): replayed as the operator's replay does.
    Replay,
    /// Waiting (pending, retrying): made due now, its attempts so far kept.
    BringForward,
    /// Running: left alone.
    Leave,
}

impl Redo {
    /// The decision for a job in `state`.
    pub(crate) fn of(state: JobState) -> Self {
        if state.is_replayable() {
            Self::Replay
        } else if state.is_claimable() {
            Self::BringForward
        } else {
            Self::Leave
        }
    }

    /// What the resend answers.
    pub(crate) fn resent(self) -> Resent {
        match self {
            Self::Replay | Self::BringForward => Resent::Due,
            Self::Leave => Resent::Sending,
        }
    }
}

/// The messages a recovery sends again: those created in `[since_ms, until_ms)` whose job
/// for the endpoint is dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    /// The earliest creation time, unix milliseconds, inclusive.
    pub since_ms: i64,
    /// The latest creation time, unix milliseconds, exclusive.
    pub until_ms: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_job_is_replayed_a_waiting_one_brought_forward_a_running_one_left() {
        for state in [JobState::Succeeded, JobState::Dead, JobState::Superseded] {
            assert_eq!(Redo::of(state), Redo::Replay, "{state:?}");
        }
        for state in [JobState::Pending, JobState::Retrying] {
            assert_eq!(Redo::of(state), Redo::BringForward, "{state:?}");
        }
        assert_eq!(Redo::of(JobState::Running), Redo::Leave);
        assert_eq!(Redo::Leave.resent(), Resent::Sending);
        assert_eq!(Redo::Replay.resent(), Resent::Due);
    }
}
