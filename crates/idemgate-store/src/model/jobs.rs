//! The delivery queue's values: a claimed job, the record of one attempt, whether a
//! completion took effect, and which finished jobs a replay selects.
//!
//! The queue's rules, the same on both backends: a job is due when it is pending or
//! retrying and its time (kept in milliseconds) has come, or running with an expired
//! lease; jobs of disabled destinations wait, and for destinations delivered in order
//! (FIFO) only the oldest unfinished job of each ordering key is due. A claim bumps the
//! job's `lease_token`; a completion names the token it was given and changes the job only
//! if the token is still current and the job still `running`, so a worker whose lease
//! expired and was taken over cannot overwrite the newer attempt. A retry is due at the
//! completion's time plus its delay, to the millisecond. A replay makes finished jobs
//! `pending` again with a fresh schedule; the event, its identity and so its `webhook-id`
//! stay the same. A retry-now makes waiting (pending or retrying) jobs due at once and
//! changes nothing else: the attempts so far count, and the schedule continues from there.

use std::time::Duration;

use idemgate_core::{
    ReceiptKey, UnixTime,
    job::{JobState, Transition},
    retry::Decision,
};

use super::{ms, second_of, secs};
use crate::StoreError;

/// Longest error text and response prefix kept per attempt.
pub const MAX_ATTEMPT_TEXT: usize = 256;

/// A job a worker now holds, with what it needs to deliver it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedJob {
    /// The job's row id.
    pub id: i64,
    /// The fencing token of this claim.
    pub lease_token: i64,
    /// This attempt's number, from 1.
    pub attempt: u32,
    /// The destination's name.
    pub destination: String,
    /// The event's (source, identity).
    pub key: ReceiptKey,
    /// The `webhook-id` fixed for the event when it was accepted.
    pub outgoing_id: String,
    /// The event's type, when its source has one.
    pub event_type: Option<String>,
    /// The original body bytes.
    pub body: Vec<u8>,
    /// The original content type.
    pub content_type: Option<String>,
    /// The original headers from the source's allowlist.
    pub headers: Vec<(String, String)>,
}

/// What one attempt came to, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    /// When it started.
    pub started_at: UnixTime,
    /// How long it took.
    pub latency: Duration,
    /// The destination's status, if it answered.
    pub status: Option<u16>,
    /// A bounded error text (timeout, connection refused, …).
    pub error: Option<String>,
    /// A bounded prefix of the response body.
    pub response_prefix: Option<String>,
}

/// Whether a completion took effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// The job moved on.
    Recorded,
    /// The lease had been taken over: the attempt is recorded, the job is untouched.
    Stale,
}

/// Which finished jobs a replay makes `pending` again, or which waiting jobs a retry-now
/// makes due.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayFilter {
    /// Only this source.
    pub source: Option<String>,
    /// Only this event identity.
    pub identity: Option<String>,
    /// Only this destination.
    pub destination: Option<String>,
    /// Only jobs in this state: for a replay one of the finished ones (default `dead`), for
    /// a retry-now `pending` or `retrying` (default both).
    pub state: Option<JobState>,
    /// Only events received at or after this time.
    pub since: Option<UnixTime>,
    /// Only events received before this time.
    pub until: Option<UnixTime>,
}

/// An attempt's text cut to [`MAX_ATTEMPT_TEXT`] characters.
pub(crate) fn bounded(text: Option<&str>) -> Option<String> {
    text.map(|t| t.chars().take(MAX_ATTEMPT_TEXT).collect())
}

/// Until when a job claimed at `now_ms` for `lease` is held, in whole seconds.
pub(crate) fn lease_until(now_ms: i64, lease: Duration) -> i64 {
    second_of(now_ms).saturating_add(secs(lease))
}

/// What recording one finished attempt writes, the same on both backends: the attempt's
/// row, its texts bounded, and its job's next state by core's [`Transition`].
pub(crate) struct Recording {
    /// How long the attempt took.
    pub(crate) latency_ms: i64,
    /// The attempt's error text, bounded.
    pub(crate) error: Option<String>,
    /// The response's prefix, bounded.
    pub(crate) response_prefix: Option<String>,
    /// The job's next state.
    pub(crate) state: &'static str,
    /// When the job is next due.
    pub(crate) next_attempt_at_ms: i64,
    /// The error kept with the job, bounded.
    pub(crate) last_error: Option<String>,
    /// The destination answered `410 Gone`: it is disabled.
    pub(crate) disables_destination: bool,
}

impl Recording {
    /// What `attempt`, decided as `decision` at `now_ms`, writes.
    pub(crate) fn of(attempt: &AttemptRecord, decision: Decision, now_ms: i64) -> Self {
        let next = Transition::after_attempt(decision, attempt.error.as_deref(), now_ms);
        Self {
            latency_ms: ms(attempt.latency),
            error: bounded(attempt.error.as_deref()),
            response_prefix: bounded(attempt.response_prefix.as_deref()),
            state: next.state.as_str(),
            next_attempt_at_ms: next.next_attempt_at_ms,
            last_error: bounded(next.error.as_deref()),
            disables_destination: decision == Decision::DisableDestination,
        }
    }
}

impl ReplayFilter {
    fn replayed_state(&self) -> Result<JobState, StoreError> {
        let state = self.state.unwrap_or(JobState::Dead);
        if state.is_replayable() {
            Ok(state)
        } else {
            Err(StoreError::Filter("only succeeded, dead or superseded jobs can be replayed"))
        }
    }

    /// The values both backends' retry-now query binds as its first six parameters; the
    /// state, if any, is one of the waiting ones.
    pub(crate) fn waiting_bindings(&self) -> Result<FilterBindings<'_>, StoreError> {
        match self.state {
            Some(state) if !state.is_claimable() => {
                Err(StoreError::Filter("only pending or retrying jobs can be retried now"))
            }
            state => Ok(self.with_state(state.map(JobState::as_str))),
        }
    }

    /// The values both backends' replay query binds as its first six parameters.
    pub(crate) fn bindings(&self) -> Result<FilterBindings<'_>, StoreError> {
        Ok(self.with_state(Some(self.replayed_state()?.as_str())))
    }

    fn with_state(&self, state: Option<&'static str>) -> FilterBindings<'_> {
        FilterBindings {
            state,
            source: self.source.as_deref(),
            identity: self.identity.as_deref(),
            destination: self.destination.as_deref(),
            since: self.since.map(|t| t.0),
            until: self.until.map(|t| t.0),
        }
    }
}

/// A [`ReplayFilter`] as the six values its query binds, in order: state, source,
/// identity, destination, since, until; no state is any the query allows.
pub(crate) struct FilterBindings<'a> {
    pub state: Option<&'static str>,
    pub source: Option<&'a str>,
    pub identity: Option<&'a str>,
    pub destination: Option<&'a str>,
    pub since: Option<i64>,
    pub until: Option<i64>,
}
