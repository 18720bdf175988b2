#![allow(clippy::unwrap_used)]

use super::*;

const T0: UnixTime = UnixTime(1_700_000_000);
const MIN: i64 = 900;

fn rules() -> Rules {
    Rules {
        dead_jobs: true,
        destination_disabled: true,
        destination_paused: true,
        oldest_waiting: Some(600),
        min_interval: MIN,
    }
}

fn at(offset: i64) -> UnixTime {
    UnixTime(T0.0 + offset)
}

fn dead(name: &str, count: u64, first: i64, last: i64) -> DestinationHealth {
    DestinationHealth {
        name: name.to_owned(),
        state: DestinationState::Active,
        dead: Some(DeadJobs { count, first: at(first), last: at(last) }),
    }
}

fn disabled(name: &str, since: i64) -> DestinationHealth {
    DestinationHealth { name: name.to_owned(), state: DestinationState::Disabled { since: at(since) }, dead: None }
}

fn snapshot(destinations: Vec<DestinationHealth>) -> Snapshot {
    Snapshot { destinations, oldest_waiting: None }
}

/// Applies `decide` at `now` to `records` as the checker would, returning the identities sent.
fn step(records: &mut Vec<AlertRecord>, snapshot: &Snapshot, now: UnixTime) -> Vec<String> {
    let actions = decide(&rules(), snapshot, records, now);
    for action in &actions {
        let alert = action.alert();
        let index = records.iter().position(|r| r.condition == alert.condition && r.target == alert.target);
        let record = action.record(index.map(|i| &records[i]), now);
        match index {
            Some(i) => records[i] = record,
            None => records.push(record),
        }
    }
    actions.iter().map(Action::identity).collect()
}

#[test]
fn dead_jobs_open_one_alert_however_many_die_and_resolve_after_a_quiet_interval() {
    let mut records = Vec::new();
    let sent = step(&mut records, &snapshot(vec![dead("billing", 1, 0, 0)]), at(5));
    assert_eq!(sent, [format!("dead-jobs:billing:{}", T0.0)]);
    for (count, now) in [(40, 10), (500, 300), (900, 800)] {
        let sent = step(&mut records, &snapshot(vec![dead("billing", count, 0, now - 1)]), at(now));
        assert!(sent.is_empty(), "more dead jobs within the window send nothing: {sent:?}");
    }
    // The last one died at 799; nothing died since, and the window no longer holds any.
    let sent = step(&mut records, &snapshot(Vec::new()), at(799 + MIN));
    assert_eq!(sent, [format!("dead-jobs:billing:{}:resolved", T0.0)]);
    assert!(step(&mut records, &snapshot(Vec::new()), at(2000)).is_empty(), "resolved once");
    let again = step(&mut records, &snapshot(vec![dead("billing", 1, 3000, 3000)]), at(3001));
    assert_eq!(again, [format!("dead-jobs:billing:{}", T0.0 + 3000)], "a new outage is a new alert");
}

#[test]
fn a_disabled_destination_opens_one_alert_and_its_enabling_one_notice() {
    let mut records = Vec::new();
    let sent = step(&mut records, &snapshot(vec![disabled("gone", 3)]), at(4));
    assert_eq!(sent, [format!("destination-disabled:gone:{}", T0.0 + 3)]);
    assert!(step(&mut records, &snapshot(vec![disabled("gone", 3)]), at(100)).is_empty());
    let sent = step(&mut records, &snapshot(Vec::new()), at(200));
    assert_eq!(sent, [format!("destination-disabled:gone:{}:resolved", T0.0 + 3)]);
}

#[test]
fn a_condition_back_within_min_interval_waits_for_the_rest_of_it() {
    let mut records = Vec::new();
    step(&mut records, &snapshot(vec![disabled("flappy", 0)]), at(1));
    step(&mut records, &snapshot(Vec::new()), at(10));
    for now in [20, 500, MIN] {
        assert!(step(&mut records, &snapshot(vec![disabled("flappy", 15)]), at(now)).is_empty(), "held at {now}");
    }
    let sent = step(&mut records, &snapshot(vec![disabled("flappy", 15)]), at(MIN + 1));
    assert_eq!(sent, [format!("destination-disabled:flappy:{}", T0.0 + 15)]);
}

#[test]
fn a_stale_view_of_an_occurrence_already_resolved_does_not_reopen_it() {
    let records = vec![AlertRecord {
        condition: Condition::DestinationDisabled,
        target: "gone".to_owned(),
        since: at(0),
        opened_at: at(1),
        resolved_at: Some(at(5)),
    }];
    assert!(decide(&rules(), &snapshot(vec![disabled("gone", 0)]), &records, at(MIN * 3)).is_empty());
}

#[test]
fn the_oldest_waiting_job_alerts_past_its_threshold_and_resolves_when_drained() {
    let mut records = Vec::new();
    let waiting = Snapshot { destinations: Vec::new(), oldest_waiting: Some(at(0)) };
    assert!(step(&mut records, &waiting, at(599)).is_empty(), "under the threshold");
    let sent = step(&mut records, &waiting, at(600));
    assert_eq!(sent, [format!("oldest-waiting:queue:{}", T0.0)]);
    let actions = decide(&rules(), &waiting, &[], at(700));
    assert_eq!(
        actions[0].body(),
        json!({
            "type": "alert.opened",
            "condition": "oldest-waiting",
            "target": "queue",
            "since": "2023-11-14T22:13:20Z",
            "details": {"age_seconds": 700, "threshold_seconds": 600},
        })
    );
    assert!(step(&mut records, &waiting, at(5000)).is_empty());
    let sent = step(&mut records, &snapshot(Vec::new()), at(5001));
    assert_eq!(sent, [format!("oldest-waiting:queue:{}:resolved", T0.0)]);
}

#[test]
fn conditions_that_are_not_watched_send_nothing_and_resolve_what_was_open() {
    let quiet = Rules {
        dead_jobs: false,
        destination_disabled: false,
        destination_paused: false,
        oldest_waiting: None,
        min_interval: MIN,
    };
    let all = Snapshot { destinations: vec![dead("a", 3, 0, 1), disabled("b", 0)], oldest_waiting: Some(at(0)) };
    assert!(decide(&quiet, &all, &[], at(10_000)).is_empty());
    let open = AlertRecord {
        condition: Condition::DeadJobs,
        target: "a".to_owned(),
        since: at(0),
        opened_at: at(1),
        resolved_at: None,
    };
    let actions = decide(&quiet, &all, &[open], at(10_000));
    assert_eq!(actions.iter().map(Action::identity).collect::<Vec<_>>(), [format!("dead-jobs:a:{}:resolved", T0.0)]);
    assert_eq!(actions[0].body()["type"], "alert.resolved");
}

#[test]
fn conditions_round_trip_through_their_names() {
    for condition in Condition::ALL {
        assert_eq!(Condition::parse(condition.name()), Some(condition));
    }
    assert_eq!(Condition::parse("dead"), None);
    assert_eq!(rules().dead_since(at(1000)), at(1000 - MIN));
}
