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
//!
//! Each destination's circuit breaker (core's [`idemgate_core::breaker`]) is kept in its
//! `destinations` row: a completion folds its attempts into it in the same write, given
//! the destinations' policies; a claim takes no job of a paused destination unless its
//! probe is due, then one, and moves the probe time on in the claim's write. A claim may
//! also be given a limit per destination (a throttled destination's jobs the worker can
//! start now), so that no job waits under a lease it may not outlive.
//!
//! A destination's rate limit and in-flight cap ([`Limits`], core's
//! [`idemgate_core::limit`]) are shared by every instance: its token bucket is kept in its
//! `destinations` row, and its attempts in flight are its jobs `running` under a lease that
//! has not expired (so a killed instance's places come back with its leases). A claim given
//! a destination's limits locks its row, counts them, takes no more than the room they
//! leave, and writes the bucket back spent by the jobs it took, in its one write.

use std::{collections::HashMap, time::Duration};

use idemgate_core::{
    ReceiptKey, UnixTime,
    breaker::{BreakerPolicy, BreakerState, Claim, Pause, Verdict},
    job::{JobState, Transition},
    limit::{Bucket, Limits},
    retry::{Attempted, Decision},
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
    /// The original body bytes, shared by the jobs of one event that the store hands over
    /// and by every attempt of the job: cloning it copies no bytes.
    pub body: bytes::Bytes,
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
    /// Whether the destination took the event, as the worker judged it: what every view
    /// reads (a broker's confirm is a success with neither status nor error).
    pub outcome: Attempted,
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

/// A replay to one named destination: for each selected event, the job it lacks for that
/// destination is created (`pending`), and one it has that is finished (succeeded, dead or
/// superseded) is made `pending` again; one that is waiting or running is left alone. This
/// is how an event that matched no subscription reaches a destination after all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayTo {
    /// The destination the events go to.
    pub destination: String,
    /// Only this source.
    pub source: Option<String>,
    /// Only this event identity.
    pub identity: Option<String>,
    /// Only events received at or after this time.
    pub since: Option<UnixTime>,
    /// Only events received before this time.
    pub until: Option<UnixTime>,
    /// Only events with no job at all (unmatched): jobs are created, none replayed.
    pub unmatched_only: bool,
}

/// What a [`ReplayTo`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayedTo {
    /// Jobs created for events that had none for the destination.
    pub created: usize,
    /// Finished jobs for the destination made pending again.
    pub replayed: usize,
}

/// An attempt's text cut to [`MAX_ATTEMPT_TEXT`] characters.
pub(crate) fn bounded(text: Option<&str>) -> Option<String> {
    text.map(|t| t.chars().take(MAX_ATTEMPT_TEXT).collect())
}

/// The outcome stored as `name`. The schema admits only the names [`Attempted`] writes;
/// anything else would not be a success, so it reads as a failure.
pub(crate) fn attempted(name: &str) -> Attempted {
    Attempted::parse(name).unwrap_or(Attempted::Failed)
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
    /// The attempt's outcome, by name.
    pub(crate) outcome: &'static str,
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
            outcome: attempt.outcome.as_str(),
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

/// The breaker of each destination that has one, by name: what a completion pauses by.
pub type Breakers = HashMap<String, BreakerPolicy>;

/// A destination's breaker as its row's columns: failures, failing since, paused at, next
/// probe at, probe interval (milliseconds; the last three set only while paused).
pub(crate) type BreakerColumns = (i64, Option<i64>, Option<i64>, Option<i64>, Option<i64>);

/// A breaker from its row's columns.
pub(crate) fn breaker_of(
    (failures, failing_since_ms, paused_at, next_probe, interval): BreakerColumns,
) -> BreakerState {
    BreakerState {
        failures: u32::try_from(failures).unwrap_or(u32::MAX),
        failing_since_ms,
        paused: match (paused_at, next_probe, interval) {
            (Some(at_ms), Some(next_probe_at_ms), Some(probe_interval_ms)) => {
                Some(Pause { at_ms, next_probe_at_ms, probe_interval_ms })
            }
            _ => None,
        },
    }
}

/// A breaker as its row's columns.
pub(crate) fn breaker_columns(state: &BreakerState) -> BreakerColumns {
    (
        i64::from(state.failures),
        state.failing_since_ms,
        state.paused.map(|p| p.at_ms),
        state.paused.map(|p| p.next_probe_at_ms),
        state.paused.map(|p| p.probe_interval_ms),
    )
}

/// What a claim takes per destination, the same on both backends: the worker's limits (a
/// throttled destination's jobs it can start now), none of a paused destination, and one
/// of a paused destination whose probe is due.
pub(crate) struct ClaimPlan {
    /// Most jobs per destination; destinations not named are limited only by the batch.
    pub(crate) limits: HashMap<String, usize>,
    /// The paused destinations a probe may be taken for, with their breakers after it.
    pub(crate) probes: HashMap<String, BreakerState>,
}

impl ClaimPlan {
    /// The plan at `now_ms` from the worker's `limits` and the `paused` destinations' breakers.
    pub(crate) fn new(mut limits: HashMap<String, usize>, paused: Vec<(String, BreakerState)>, now_ms: i64) -> Self {
        let mut probes = HashMap::new();
        for (name, state) in paused {
            match state.probe(now_ms) {
                Claim::Open => {}
                Claim::Closed => {
                    limits.insert(name, 0);
                }
                Claim::Probe(after) => {
                    let limit = limits.get(&name).copied().unwrap_or(1).min(1);
                    limits.insert(name.clone(), limit);
                    probes.insert(name, after);
                }
            }
        }
        Self { limits, probes }
    }

    /// The limited destinations, for the query of the others' jobs.
    pub(crate) fn limited_names(&self) -> Vec<String> {
        self.limits.keys().cloned().collect()
    }
}

/// A claim's jobs, and how many of each destination whose shared limits it was given
/// those limits let it take ([`Limits::room`], at the claim's time).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claimed {
    /// The jobs taken, leased.
    pub jobs: Vec<ClaimedJob>,
    /// By destination (each one given limits): the most the claim could take of it.
    pub room: HashMap<String, usize>,
}

/// What a claim read of the destinations whose shared limits it was given: their buckets
/// (a destination without a row or bucket yet has none) and their jobs leased now.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) limits: HashMap<String, Limits>,
    pub(crate) buckets: HashMap<String, Bucket>,
    pub(crate) in_flight: HashMap<String, usize>,
}

impl Shared {
    /// The room each limited destination has at `now_ms`; `per_destination` (the worker's
    /// own limits) is narrowed to it.
    pub(crate) fn narrow(&self, per_destination: &mut HashMap<String, usize>, now_ms: i64) -> HashMap<String, usize> {
        let mut room = HashMap::with_capacity(self.limits.len());
        for (name, limits) in &self.limits {
            let in_flight = self.in_flight.get(name).copied().unwrap_or(0);
            let free = limits.room(self.buckets.get(name).copied(), in_flight, now_ms);
            let most = per_destination.get(name).copied().unwrap_or(usize::MAX).min(free);
            per_destination.insert(name.clone(), most);
            room.insert(name.clone(), free);
        }
        room
    }

    /// The buckets to write after the claim took `claimed` at `now_ms`: each rate-limited
    /// destination's, spent by its jobs taken.
    pub(crate) fn spent(&self, claimed: &[ClaimedJob], now_ms: i64) -> Vec<(String, Bucket)> {
        let mut names: Vec<&String> = self.limits.keys().collect();
        names.sort_unstable();
        names
            .into_iter()
            .filter_map(|name| {
                let taken = claimed.iter().filter(|job| &job.destination == name).count();
                let bucket = self.limits[name].spent(self.buckets.get(name).copied(), taken, now_ms)?;
                Some((name.clone(), bucket))
            })
            .collect()
    }

    /// The limited destinations' names, sorted (the order their rows are locked in).
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.limits.keys().cloned().collect();
        names.sort_unstable();
        names
    }
}

/// The destinations `finished` closes the breakers of, when every attempt in it was
/// answered (a success, or a final refusal): then each of their breakers ends fresh,
/// whatever it was, and no decision changes, so the completion need not read the
/// breakers first. `None` when any attempt failed or disabled its destination.
pub(crate) fn closed_by_answers(finished: &[(ClaimedJob, AttemptRecord, Decision)]) -> Option<Vec<&str>> {
    if !finished.iter().all(|(_, _, decision)| Verdict::of(*decision) == Verdict::Answered) {
        return None;
    }
    let mut names: Vec<&str> = finished.iter().map(|(job, _, _)| job.destination.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    Some(names)
}

/// Folds `finished`, in order, into the breakers of their destinations (`states`, read in
/// the completion's write; missing ones are fresh), by `breakers`' policies. Returns the
/// decisions the jobs are moved by (see [`BreakerState::record`]) and the breakers that
/// changed, to be written in the same write.
pub(crate) fn fold_breakers(
    mut states: HashMap<String, BreakerState>,
    finished: &[(ClaimedJob, AttemptRecord, Decision)],
    breakers: &Breakers,
    now_ms: i64,
) -> (Vec<Decision>, Vec<(String, BreakerState)>) {
    let before = states.clone();
    let decisions = finished
        .iter()
        .map(|(job, _, decision)| {
            let state = states.entry(job.destination.clone()).or_default();
            let (next, decision) = state.record(*decision, breakers.get(&job.destination), now_ms);
            *state = next;
            decision
        })
        .collect();
    let changed =
        states.into_iter().filter(|(name, state)| before.get(name).copied().unwrap_or_default() != *state).collect();
    (decisions, changed)
}

#[cfg(test)]
mod tests {
    use std::{collections::HashMap, time::Duration};

    use idemgate_core::{
        UnixTime,
        breaker::{BreakerPolicy, BreakerState, Pause},
        retry::{DeadReason, Decision},
    };

    use super::{AttemptRecord, ClaimedJob, closed_by_answers, fold_breakers};

    fn finished(destination: &str, decision: Decision) -> (ClaimedJob, AttemptRecord, Decision) {
        let job = ClaimedJob {
            id: 1,
            lease_token: 1,
            attempt: 1,
            destination: destination.to_owned(),
            key: crate::model::key("src", "evt").expect("a valid key"),
            outgoing_id: "msg".to_owned(),
            event_type: None,
            body: bytes::Bytes::new(),
            content_type: None,
            headers: Vec::new(),
        };
        let attempt = AttemptRecord {
            started_at: UnixTime(1),
            latency: Duration::ZERO,
            status: Some(200),
            error: None,
            response_prefix: None,
            outcome: idemgate_core::retry::Attempted::Succeeded,
        };
        (job, attempt, decision)
    }

    #[test]
    fn answers_alone_close_every_breaker_they_touch_whatever_it_was() {
        let group = vec![
            finished("b", Decision::Succeeded),
            finished("a", Decision::Dead(DeadReason::FinalStatus(400))),
            finished("b", Decision::Dead(DeadReason::Refused)),
        ];
        assert_eq!(closed_by_answers(&group), Some(vec!["a", "b"]));
        let paused = BreakerState {
            failures: 7,
            failing_since_ms: Some(5),
            paused: Some(Pause { at_ms: 9, next_probe_at_ms: 10, probe_interval_ms: 1 }),
        };
        let failing = BreakerState { failures: 2, failing_since_ms: Some(5), paused: None };
        let states = HashMap::from([("a".to_owned(), paused), ("b".to_owned(), failing)]);
        let policy =
            BreakerPolicy { pause_after_failures: Some(1), pause_after: None, probe_interval: Duration::from_secs(1) };
        let breakers = HashMap::from([("a".to_owned(), policy), ("b".to_owned(), policy)]);
        let (decisions, changed) = fold_breakers(states, &group, &breakers, 100);
        assert_eq!(decisions, group.iter().map(|(_, _, d)| *d).collect::<Vec<_>>(), "no decision changes");
        assert!(changed.iter().all(|(_, state)| *state == BreakerState::default()), "{changed:?}");
        assert_eq!(changed.len(), 2);
    }

    #[test]
    fn a_failure_or_a_gone_destination_needs_the_breakers_read() {
        for decision in [
            Decision::RetryAfter(Duration::ZERO),
            Decision::Dead(DeadReason::AttemptsExhausted),
            Decision::DisableDestination,
        ] {
            let group = vec![finished("a", Decision::Succeeded), finished("a", decision)];
            assert_eq!(closed_by_answers(&group), None, "{decision:?}");
        }
    }
}
