//! Message attempts: a message's tries at one endpoint, read from the gateway's own
//! `attempts` rows through their jobs (`docs/design/outbound-api.md` §3.3). An attempt's
//! public id is derived from its row ([`AttemptId::for_row`]), so nothing new is stored.
//! Also the endpoint's deliveries (its jobs) counted by status ([`EndpointStats`]).

use idemgate_core::{
    job::JobState,
    outbound::{
        id::AttemptId,
        status::{MessageStatus, StatusClass},
    },
};

use super::{Cursor, Lookup, message::Message};
use crate::StoreError;

/// One attempt (`MessageAttemptOut`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// `atmpt_…`, derived from its row and start.
    pub id: String,
    /// The message it carried.
    pub msg_id: String,
    /// The endpoint it went to.
    pub endpoint_id: String,
    /// The endpoint's URL (as it is now; the row does not keep the URL of the time).
    pub url: String,
    /// The start of the destination's answer, as stored; empty without one.
    pub response: String,
    /// The answer's status; `None`: no answer.
    pub status_code: Option<u16>,
    /// How long it took, milliseconds.
    pub duration_ms: i64,
    /// When it started, unix milliseconds.
    pub started_at_ms: i64,
    /// Whether it was made because of a resend or a recovery (Svix's `Manual` trigger)
    /// rather than by the schedule.
    pub manual: bool,
}

impl Attempt {
    /// Its status: a 2xx answer succeeded, anything else failed.
    #[must_use]
    pub fn status(&self) -> MessageStatus {
        MessageStatus::of_attempt(self.status_code)
    }
}

/// Where a page of attempts starts: after (or, for a previous page, before) this attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptIterator {
    /// The page after this attempt (older ones).
    Next(i64),
    /// The page before this attempt (newer ones), Svix's `-` iterator.
    Previous(i64),
}

impl AttemptIterator {
    /// The iterator a caller sent: an attempt id, `-` and one for the page before; `None`
    /// for text that is not an attempt id this store made.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let (previous, id) = match text.strip_prefix('-') {
            Some(id) => (true, id),
            None => (false, text),
        };
        let row = AttemptId::parse(id).ok()?.row()?;
        Some(if previous { Self::Previous(row) } else { Self::Next(row) })
    }
}

/// One page of attempts, newest first, of those `filter` admits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptQuery {
    /// Most attempts answered.
    pub limit: usize,
    /// Where the previous page ended.
    pub iterator: Option<AttemptIterator>,
    /// Which attempts the list holds (every one by default). Applied in the statement,
    /// beside the iterator, so a walk under a filter never skips or repeats one.
    pub filter: AttemptFilter,
}

/// Which attempts a list holds (Svix's query filters of the attempt lists); `None` (or
/// empty) admits every attempt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttemptFilter {
    /// Only attempts of this status ([`MessageStatus::of_attempt`]: an attempt is a
    /// success or a failure, so `pending` and `sending` admit none).
    pub status: Option<MessageStatus>,
    /// Only attempts whose answer's status is in this class (no answer: class 0).
    pub status_code_class: Option<StatusClass>,
    /// Only attempts of messages on this channel.
    pub channel: Option<String>,
    /// Only attempts of messages of these types.
    pub event_types: Option<Vec<String>>,
    /// Only attempts at this endpoint (the list by message); one that is not an endpoint
    /// of the application is [`super::OutboundError::NotFound`].
    pub endpoint: Option<Lookup>,
    /// Only attempts started before this time, unix milliseconds.
    pub before_ms: Option<i64>,
    /// Only attempts started after this time, unix milliseconds.
    pub after_ms: Option<i64>,
}

impl AttemptFilter {
    /// The status filter's wire code: `None` when no filter.
    pub(crate) fn outcome(&self) -> Option<i64> {
        self.status.map(|status| i64::from(status.code()))
    }

    /// The status codes admitted, both ends included (no answer counts as 0).
    pub(crate) fn codes(&self) -> (Option<i64>, Option<i64>) {
        let range = self.status_code_class.map(StatusClass::codes);
        (range.map(|(low, _)| i64::from(low)), range.map(|(_, high)| i64::from(high)))
    }

    /// The start times admitted, in the seconds the attempts are stored in: (after,
    /// before), exclusive; an attempt's start is known to the second only.
    pub(crate) fn started(&self) -> (Option<i64>, Option<i64>) {
        (self.after_ms.map(|at| at.div_euclid(1000)), self.before_ms.map(|at| (at + 999).div_euclid(1000)))
    }
}

impl AttemptQuery {
    /// The first `limit` attempts, newest first.
    #[must_use]
    pub fn newest(limit: usize) -> Self {
        Self { limit, iterator: None, filter: AttemptFilter::default() }
    }

    /// The walk over attempt rows (newest first) and the row it starts after.
    pub(crate) fn walk(&self) -> (Cursor, Option<i64>) {
        match self.iterator {
            Some(AttemptIterator::Previous(row)) => {
                (Cursor { after: None, ascending: true, reversed: true }, Some(row))
            }
            Some(AttemptIterator::Next(row)) => (Cursor { after: None, ascending: false, reversed: false }, Some(row)),
            None => (Cursor { after: None, ascending: false, reversed: false }, None),
        }
    }
}

/// The conditions both backends add for an [`AttemptFilter`], numbered from parameter
/// `first`: the status code ([`MessageStatus::code`]: 0 a 2xx answer, 2 anything else), the
/// class's lowest and highest code, the start's bounds in seconds (after, before). The
/// message's channel and event types are written per backend (JSON differs). `mark` is
/// the parameters' sign (`?`, `$`) and `cast` what follows each (PostgreSQL's `::bigint`).
pub(crate) fn filter_sql(first: usize, mark: char, cast: &str) -> String {
    let p = |n: usize| format!("{mark}{}{cast}", first + n);
    let code = "coalesce(a.status, 0)";
    format!(
        "({s} IS NULL OR ({s} = 0 AND {code} BETWEEN 200 AND 299) OR ({s} = 2 AND {code} NOT BETWEEN 200 AND 299))
         AND ({lo} IS NULL OR {code} BETWEEN {lo} AND {hi})
         AND ({after} IS NULL OR a.started_at > {after}) AND ({before} IS NULL OR a.started_at < {before})",
        s = p(0),
        lo = p(1),
        hi = p(2),
        after = p(3),
        before = p(4),
    )
}

/// The columns both backends select for an attempt (attempts `a`, jobs `j`, messages `m`,
/// endpoints `ep`): the row, its start (seconds), the message, the endpoint, its URL, the
/// answer's start, its status, the duration and whether it was triggered by hand.
pub(crate) const COLUMNS: &str =
    "a.id, a.started_at, m.id, j.destination, ep.url, a.response_prefix, a.status, a.latency_ms, a.manual";

/// The rows an attempt statement reads, joined: each attempt through its job to the
/// message (whose event the job delivers) and the endpoint (its destination).
pub(crate) const FROM: &str = "attempts a JOIN jobs j ON j.id = a.job_id
     JOIN messages m ON m.event_row = j.event_id JOIN endpoints ep ON ep.id = j.destination";

/// An attempt's row as both backends read it (its start in seconds, as the gateway stores it).
pub(crate) struct AttemptRow {
    pub(crate) row: i64,
    pub(crate) started_at_s: i64,
    pub(crate) msg_id: String,
    pub(crate) endpoint_id: String,
    pub(crate) url: String,
    pub(crate) response: Option<String>,
    pub(crate) status: Option<i64>,
    pub(crate) duration_ms: i64,
    pub(crate) manual: bool,
}

/// The public id of the attempt stored as `row`, started at `started_at_s`.
pub(crate) fn attempt_id(started_at_s: i64, row: i64) -> Result<String, StoreError> {
    AttemptId::for_row(started_at_s.saturating_mul(1000), row)
        .map(|id| id.to_string())
        .map_err(|_| StoreError::Malformed("an attempt row cannot be named"))
}

impl AttemptRow {
    /// The attempt, named by its row and start.
    pub(crate) fn attempt(self) -> Result<Attempt, StoreError> {
        let started_at_ms = self.started_at_s.saturating_mul(1000);
        let id = AttemptId::for_row(started_at_ms, self.row)
            .map_err(|_| StoreError::Malformed("an attempt row cannot be named"))?;
        Ok(Attempt {
            id: id.to_string(),
            msg_id: self.msg_id,
            endpoint_id: self.endpoint_id,
            url: self.url,
            response: self.response.unwrap_or_default(),
            status_code: self.status.and_then(|code| u16::try_from(code).ok()),
            duration_ms: self.duration_ms,
            started_at_ms,
            manual: self.manual,
        })
    }
}

/// An endpoint's deliveries (its messages' jobs) by status, for messages created in a
/// time range (`EndpointStats`; §3.3's table).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Delivered.
    pub success: u64,
    /// Waiting for an attempt.
    pub pending: u64,
    /// An attempt under way.
    pub sending: u64,
    /// Given up.
    pub fail: u64,
}

impl EndpointStats {
    /// Counts `count` jobs in the state stored as `state`; an unknown state is a malformed row.
    pub(crate) fn add(&mut self, state: &str, count: i64) -> Result<(), StoreError> {
        let state: JobState = state.parse().map_err(|_| StoreError::Malformed("a job's state is unknown"))?;
        let count = u64::try_from(count).unwrap_or(0);
        let slot = match MessageStatus::of_job(state) {
            MessageStatus::Success => &mut self.success,
            MessageStatus::Pending => &mut self.pending,
            MessageStatus::Sending => &mut self.sending,
            MessageStatus::Fail => &mut self.fail,
        };
        *slot += count;
        Ok(())
    }
}

/// An endpoint a message was sent to (`MessageEndpointOut`), with its delivery's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptedDestination {
    /// The endpoint (deleted ones too: the delivery happened).
    pub endpoint: super::endpoint::Endpoint,
    /// The delivery's status.
    pub status: MessageStatus,
    /// When a waiting delivery is tried next, unix milliseconds.
    pub next_attempt_ms: Option<i64>,
}

impl AttemptedDestination {
    /// The endpoint with its job's stored state and due time.
    pub(crate) fn of(endpoint: super::endpoint::Endpoint, state: &str, due_ms: i64) -> Result<Self, StoreError> {
        let state: JobState = state.parse().map_err(|_| StoreError::Malformed("a job's state is unknown"))?;
        let waiting = matches!(state, JobState::Pending | JobState::Retrying);
        Ok(Self { endpoint, status: MessageStatus::of_job(state), next_attempt_ms: waiting.then_some(due_ms) })
    }
}

/// A message sent to one endpoint (`EndpointMessageOut`), with that delivery's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptedMessage {
    /// The message.
    pub message: Message,
    /// The delivery's (the job's) status.
    pub status: MessageStatus,
    /// When a waiting delivery is tried next, unix milliseconds.
    pub next_attempt_ms: Option<i64>,
}

impl AttemptedMessage {
    /// The message with its job's stored state and due time.
    pub(crate) fn of(message: Message, state: &str, due_ms: i64) -> Result<Self, StoreError> {
        let state: JobState = state.parse().map_err(|_| StoreError::Malformed("a job's state is unknown"))?;
        let waiting = matches!(state, JobState::Pending | JobState::Retrying);
        Ok(Self { message, status: MessageStatus::of_job(state), next_attempt_ms: waiting.then_some(due_ms) })
    }
}

/// One page of the messages sent to an endpoint, newest first: `messages` filters them
/// (time window, event types, channel, iterator: a message id) and `status` the
/// delivery's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptedMessageQuery {
    /// The page and the messages' filters.
    pub messages: super::message::MessageQuery,
    /// Only deliveries of this status.
    pub status: Option<MessageStatus>,
}

impl AttemptedMessageQuery {
    /// The job states the status filter admits, as their stored names; `None`: all.
    pub(crate) fn states(&self) -> Option<Vec<String>> {
        self.status.map(|status| status.job_states().into_iter().map(|state| state.as_str().to_owned()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attempt_iterator_is_an_attempt_id_made_from_a_row() {
        let id = AttemptId::for_row(1_700_000_000_000, 42).unwrap_or_else(|_| unreachable!()).to_string();
        assert_eq!(AttemptIterator::parse(&id), Some(AttemptIterator::Next(42)));
        assert_eq!(AttemptIterator::parse(&format!("-{id}")), Some(AttemptIterator::Previous(42)));
        assert_eq!(AttemptIterator::parse("msg_2aSpRbSEq4Hmp4yeztwBqfXEBDe"), None);
        assert_eq!(AttemptIterator::parse("nonsense"), None);
    }

    #[test]
    fn stats_count_jobs_by_their_message_status() {
        let mut stats = EndpointStats::default();
        for (state, count) in
            [("succeeded", 2), ("pending", 1), ("retrying", 3), ("running", 1), ("dead", 4), ("superseded", 1)]
        {
            stats.add(state, count).unwrap_or_else(|_| unreachable!());
        }
        assert_eq!(stats, EndpointStats { success: 2, pending: 4, sending: 1, fail: 5 });
        assert!(stats.add("lost", 1).is_err());
    }
}
