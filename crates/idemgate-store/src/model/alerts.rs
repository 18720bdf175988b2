//! What the alert checker reads and keeps: the queue's health as core's
//! [`idemgate_core::alert::Snapshot`], and the last alert of each (condition, target) as an
//! [`AlertRecord`]. The decision itself is core's ([`idemgate_core::alert::decide`]); this
//! module only turns both backends' rows into those values, once.

use std::collections::BTreeMap;

use idemgate_core::{
    UnixTime,
    alert::{AlertRecord, Condition, DeadJobs, DestinationHealth, DestinationState, Snapshot},
};

use crate::StoreError;

/// One destination's dead jobs within the window, as read: name, count, first, last.
pub(crate) type DeadRow = (String, i64, i64, i64);

/// One disabled or paused destination, as read: name, disabled at (seconds), paused at
/// (milliseconds).
pub(crate) type StateRow = (String, Option<i64>, Option<i64>);

/// The snapshot from the rows of both queries and the oldest waiting job.
pub(crate) fn snapshot(dead: Vec<DeadRow>, disabled: Vec<StateRow>, oldest_waiting: Option<i64>) -> Snapshot {
    let mut destinations: BTreeMap<String, DestinationHealth> = BTreeMap::new();
    fn entry(all: &mut BTreeMap<String, DestinationHealth>, name: String) -> &mut DestinationHealth {
        all.entry(name.clone()).or_insert(DestinationHealth { name, state: DestinationState::Active, dead: None })
    }
    for (name, count, first, last) in dead {
        let count = u64::try_from(count).unwrap_or(0);
        entry(&mut destinations, name).dead = Some(DeadJobs { count, first: UnixTime(first), last: UnixTime(last) });
    }
    for (name, disabled_at, paused_at_ms) in disabled {
        // Disabled outranks paused: nothing is probed until an operator enables it.
        let state = match (disabled_at, paused_at_ms) {
            (Some(at), _) => DestinationState::Disabled { since: UnixTime(at) },
            (None, Some(ms)) => DestinationState::Paused { since: UnixTime(ms.div_euclid(1000)) },
            (None, None) => continue,
        };
        entry(&mut destinations, name).state = state;
    }
    Snapshot { destinations: destinations.into_values().collect(), oldest_waiting: oldest_waiting.map(UnixTime) }
}

/// A stored alert row: condition, target, since, opened at, resolved at.
pub(crate) fn record(
    condition: &str,
    target: String,
    since: i64,
    opened_at: i64,
    resolved_at: Option<i64>,
) -> Result<AlertRecord, StoreError> {
    Ok(AlertRecord {
        condition: Condition::parse(condition).ok_or(StoreError::Malformed("alert condition"))?,
        target,
        since: UnixTime(since),
        opened_at: UnixTime(opened_at),
        resolved_at: resolved_at.map(UnixTime),
    })
}
