//! Alerts: which conditions of the queue to tell an operator about, decided as a pure
//! function of a health snapshot, the alerts already recorded and the time.
//!
//! The gateway's checker reads a [`Snapshot`] and the [`AlertRecord`]s from the store,
//! calls [`decide`], and stores each [`Action`] as an event of the reserved source
//! [`ALERT_SOURCE`] whose identity ([`Alert::identity`]) is a function of (condition,
//! target, since) alone: two gateway instances noticing the same condition store it once
//! (the receipt decides), and a crash between noticing and storing stores it on the next
//! check. Rate limiting is part of the decision: a condition that stays true is one alert,
//! its end one recovery notice, and a condition that comes back within `min_interval` of
//! the last alert of its (condition, target) waits for the rest of that interval.
//!
//! A destination's health is the enum [`DestinationState`], so another state (a paused
//! destination of a circuit breaker) is one more variant and one more arm in
//! [`DestinationState::condition`].

use serde_json::{Value, json};

use crate::UnixTime;

/// The source every alert is stored under; a configured source may not take this id.
pub const ALERT_SOURCE: &str = "idemgate-alerts";

/// The target of [`Condition::OldestWaiting`]: the queue as a whole.
pub const QUEUE_TARGET: &str = "queue";

/// What an alert is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Condition {
    /// Jobs of one destination went dead.
    DeadJobs,
    /// A destination was disabled (it answered 410).
    DestinationDisabled,
    /// A destination was paused by its circuit breaker.
    DestinationPaused,
    /// The oldest job waiting to be delivered is older than the threshold.
    OldestWaiting,
}

impl Condition {
    /// Every condition, in the order of [`Self::name`].
    pub const ALL: [Self; 4] =
        [Self::DeadJobs, Self::DestinationDisabled, Self::DestinationPaused, Self::OldestWaiting];

    /// The name in an alert's identity, its body and the store.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::DeadJobs => "dead-jobs",
            Self::DestinationDisabled => "destination-disabled",
            Self::DestinationPaused => "destination-paused",
            Self::OldestWaiting => "oldest-waiting",
        }
    }

    /// The condition named `name` ([`Self::name`]), if any.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|condition| condition.name() == name)
    }
}

/// Whether a destination takes deliveries, as the store holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DestinationState {
    /// Delivered to.
    Active,
    /// Disabled (a 410) since then, until an operator enables it.
    Disabled {
        /// When it was disabled.
        since: UnixTime,
    },
    /// Paused by its circuit breaker since then, until a probe succeeds.
    Paused {
        /// When it was paused.
        since: UnixTime,
    },
}

impl DestinationState {
    /// The condition this state is, with since when, if it is one.
    #[must_use]
    pub const fn condition(self) -> Option<(Condition, UnixTime)> {
        match self {
            Self::Active => None,
            Self::Disabled { since } => Some((Condition::DestinationDisabled, since)),
            Self::Paused { since } => Some((Condition::DestinationPaused, since)),
        }
    }
}

/// The dead jobs of one destination that went dead within the look-back window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadJobs {
    /// How many.
    pub count: u64,
    /// When the first of them went dead.
    pub first: UnixTime,
    /// When the last of them went dead.
    pub last: UnixTime,
}

/// One destination's health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationHealth {
    /// The destination's name.
    pub name: String,
    /// Whether it takes deliveries.
    pub state: DestinationState,
    /// Its jobs that went dead within the window; `None` when none did.
    pub dead: Option<DeadJobs>,
}

/// What the checker read from the store at one time. The alert destination is not in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Every destination with recent dead jobs or a state other than active (others may
    /// be included as [`DestinationState::Active`] without dead jobs).
    pub destinations: Vec<DestinationHealth>,
    /// When the oldest job still waiting to be delivered was created.
    pub oldest_waiting: Option<UnixTime>,
}

/// The last alert of one (condition, target), as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertRecord {
    /// What it is about.
    pub condition: Condition,
    /// The destination (or [`QUEUE_TARGET`]).
    pub target: String,
    /// Since when the condition held.
    pub since: UnixTime,
    /// When the alert was stored.
    pub opened_at: UnixTime,
    /// When its recovery notice was stored; `None` while it is open.
    pub resolved_at: Option<UnixTime>,
}

/// Which conditions are watched, and how often an alert may be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// Alert on dead jobs.
    pub dead_jobs: bool,
    /// Alert on disabled destinations.
    pub destination_disabled: bool,
    /// Alert on paused destinations.
    pub destination_paused: bool,
    /// Alert when the oldest waiting job is older than this many seconds; `None`: never.
    pub oldest_waiting: Option<i64>,
    /// At most one alert per (condition, target) within this many seconds; also how long
    /// no job of a destination must go dead for its dead-jobs alert to resolve.
    pub min_interval: i64,
}

impl Rules {
    fn watches(&self, condition: Condition) -> bool {
        match condition {
            Condition::DeadJobs => self.dead_jobs,
            Condition::DestinationDisabled => self.destination_disabled,
            Condition::DestinationPaused => self.destination_paused,
            Condition::OldestWaiting => self.oldest_waiting.is_some(),
        }
    }

    /// The start of the window in which a dead job keeps its destination's alert open.
    #[must_use]
    pub const fn dead_since(&self, now: UnixTime) -> UnixTime {
        UnixTime(now.0.saturating_sub(self.min_interval))
    }
}

/// One alert, opened or resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    /// What it is about.
    pub condition: Condition,
    /// The destination (or [`QUEUE_TARGET`]).
    pub target: String,
    /// Since when the condition held.
    pub since: UnixTime,
    /// Bounded counts about it (never payloads or secrets), by name.
    pub details: Vec<(&'static str, i64)>,
}

/// What the checker does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send `alert.opened`.
    Open(Alert),
    /// Send `alert.resolved`.
    Resolve(Alert),
}

impl Action {
    /// The alert either way.
    #[must_use]
    pub const fn alert(&self) -> &Alert {
        match self {
            Self::Open(alert) | Self::Resolve(alert) => alert,
        }
    }

    /// The event type and the body's `type`: `alert.opened` or `alert.resolved`.
    #[must_use]
    pub const fn event_type(&self) -> &'static str {
        match self {
            Self::Open(_) => "alert.opened",
            Self::Resolve(_) => "alert.resolved",
        }
    }

    /// The event's identity: `<condition>:<target>:<since>` (since in Unix seconds) for an
    /// opened alert, with `:resolved` after it for its recovery notice.
    #[must_use]
    pub fn identity(&self) -> String {
        let alert = self.alert();
        let opened = format!("{}:{}:{}", alert.condition.name(), alert.target, alert.since.0);
        match self {
            Self::Open(_) => opened,
            Self::Resolve(_) => format!("{opened}:resolved"),
        }
    }

    /// The JSON body sent to the alert destination.
    #[must_use]
    pub fn body(&self) -> Value {
        let alert = self.alert();
        let details: serde_json::Map<String, Value> =
            alert.details.iter().map(|(name, value)| ((*name).to_owned(), json!(value))).collect();
        json!({
            "type": self.event_type(),
            "condition": alert.condition.name(),
            "target": alert.target,
            "since": alert.since.rfc3339().to_string(),
            "details": details,
        })
    }

    /// The record the store keeps once this action is stored at `now`, replacing `last`
    /// (the record of its condition and target, if any).
    #[must_use]
    pub fn record(&self, last: Option<&AlertRecord>, now: UnixTime) -> AlertRecord {
        let alert = self.alert();
        let (opened_at, resolved_at) = match (self, last) {
            (Self::Open(_), _) => (now, None),
            (Self::Resolve(_), Some(last)) => (last.opened_at, Some(now)),
            (Self::Resolve(_), None) => (now, Some(now)),
        };
        AlertRecord {
            condition: alert.condition,
            target: alert.target.clone(),
            since: alert.since,
            opened_at,
            resolved_at,
        }
    }
}

/// The conditions that hold in `snapshot` at `now` by `rules`, each with its target,
/// since when and its details.
fn holding(rules: &Rules, snapshot: &Snapshot, now: UnixTime) -> Vec<Alert> {
    let mut holding = Vec::new();
    for destination in &snapshot.destinations {
        if let Some(dead) = destination.dead {
            holding.push(Alert {
                condition: Condition::DeadJobs,
                target: destination.name.clone(),
                since: dead.first,
                details: vec![
                    ("dead_jobs", i64::try_from(dead.count).unwrap_or(i64::MAX)),
                    ("last_dead_at", dead.last.0),
                ],
            });
        }
        if let Some((condition, since)) = destination.state.condition() {
            holding.push(Alert { condition, target: destination.name.clone(), since, details: Vec::new() });
        }
    }
    if let (Some(threshold), Some(oldest)) = (rules.oldest_waiting, snapshot.oldest_waiting) {
        let age = now.0.saturating_sub(oldest.0);
        if age >= threshold {
            holding.push(Alert {
                condition: Condition::OldestWaiting,
                target: QUEUE_TARGET.to_owned(),
                since: oldest,
                details: vec![("age_seconds", age), ("threshold_seconds", threshold)],
            });
        }
    }
    holding.retain(|alert| rules.watches(alert.condition));
    holding
}

/// Which alerts to open and which to resolve at `now`, from what `snapshot` shows and the
/// `records` kept so far (the last alert of each (condition, target)).
///
/// A holding condition opens an alert unless its (condition, target) has one open, or
/// its last alert was opened less than `min_interval` ago (it is then opened on a later
/// check, if it still holds), or that last alert was of this very occurrence (same since:
/// a stale view of an alert another instance already resolved). An open alert whose
/// condition no longer holds (or is no longer watched) is resolved. Dead jobs hold while
/// a job of the destination went dead within the last `min_interval`.
#[must_use]
pub fn decide(rules: &Rules, snapshot: &Snapshot, records: &[AlertRecord], now: UnixTime) -> Vec<Action> {
    let holding = holding(rules, snapshot, now);
    let record = |condition: Condition, target: &str| {
        records.iter().find(|record| record.condition == condition && record.target == target)
    };
    let mut actions = Vec::new();
    for alert in &holding {
        let may_open = match record(alert.condition, &alert.target) {
            None => true,
            Some(last) => {
                last.resolved_at.is_some()
                    && last.since != alert.since
                    && now.0.saturating_sub(last.opened_at.0) >= rules.min_interval
            }
        };
        if may_open {
            actions.push(Action::Open(alert.clone()));
        }
    }
    for open in records.iter().filter(|record| record.resolved_at.is_none()) {
        let holds = holding.iter().any(|alert| alert.condition == open.condition && alert.target == open.target);
        if !holds {
            actions.push(Action::Resolve(Alert {
                condition: open.condition,
                target: open.target.clone(),
                since: open.since,
                details: Vec::new(),
            }));
        }
    }
    actions
}

#[cfg(test)]
mod tests;
