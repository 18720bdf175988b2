//! The alert checker's store operations: the health snapshot (dead jobs within a window,
//! disabled destinations, the oldest waiting job, the alert destination left out) and the
//! records of the last alert of each (condition, target).

use std::time::Duration;

use idemgate_core::{
    UnixTime,
    alert::{AlertRecord, Condition, DeadJobs, DestinationState},
    retry::{DeadReason, Decision},
};
use idemgate_store::jobs::AttemptRecord;

use crate::{T0, TestStore, accept_at, ms, on_both};

fn attempt(status: u16) -> AttemptRecord {
    AttemptRecord {
        started_at: T0,
        latency: Duration::from_millis(1),
        status: Some(status),
        outcome: idemgate_core::retry::Attempted::of(idemgate_core::retry::AttemptResult::Status {
            status,
            retry_after: None,
        }),
        error: None,
        response_prefix: None,
    }
}

fn at(offset: i64) -> UnixTime {
    UnixTime(T0.0 + offset)
}

on_both! {
    async fn the_snapshot_shows_recent_dead_jobs_disabled_destinations_and_the_oldest_waiting_job(t: TestStore) {
        for identity in ["e1", "e2", "e3"] {
            accept_at(&t, identity, &["app", "gone", "alerts"], T0).await;
        }
        let mut claimed = t.claim_jobs(ms(T0), Duration::from_secs(30), 100, Vec::new()).await.unwrap();
        claimed.sort_by_key(|job| job.id);
        let mut dead_at = 10;
        for job in claimed {
            let (status, decision, now) = match job.destination.as_str() {
                "gone" => (410, Decision::DisableDestination, at(5)),
                _ => {
                    dead_at += 10;
                    (400, Decision::Dead(DeadReason::FinalStatus(400)), at(dead_at))
                }
            };
            t.complete_job(job, attempt(status), decision, ms(now)).await.unwrap();
        }
        accept_at(&t, "late", &["app", "alerts"], at(100)).await;

        let snapshot = t.alert_snapshot("alerts".to_owned(), T0).await.unwrap();
        let names: Vec<_> = snapshot.destinations.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["app", "gone"], "the alert destination is left out");
        let (app, gone) = (&snapshot.destinations[0], &snapshot.destinations[1]);
        assert_eq!(app.state, DestinationState::Active);
        let dead = app.dead.unwrap();
        assert_eq!(dead.count, 3);
        assert!(dead.first >= at(20) && dead.last <= at(dead_at) && dead.first < dead.last, "{dead:?}");
        assert_eq!((gone.state, gone.dead), (DestinationState::Disabled { since: at(5) }, None));
        assert_eq!(snapshot.oldest_waiting, Some(T0), "gone's jobs wait (retrying) since T0");

        let later = t.alert_snapshot("alerts".to_owned(), at(dead_at + 1)).await.unwrap();
        assert!(later.destinations.iter().all(|d| d.dead.is_none()), "dead before the window: {later:?}");
        let with_alerts = t.alert_snapshot("nothing".to_owned(), T0).await.unwrap();
        let alerts = with_alerts.destinations.iter().find(|d| d.name == "alerts").unwrap();
        assert_eq!(alerts.dead.map(|d: DeadJobs| d.count), Some(3));

        assert!(t.enable_destination("gone".to_owned(), at(200)).await.unwrap());
        let enabled = t.alert_snapshot("alerts".to_owned(), at(dead_at + 1)).await.unwrap();
        assert!(enabled.destinations.iter().all(|d| d.state == DestinationState::Active), "{enabled:?}");
    }

    async fn the_last_alert_of_each_condition_and_target_is_kept_and_replaced(t: TestStore) {
        assert!(t.alert_records().await.unwrap().is_empty());
        let opened = AlertRecord {
            condition: Condition::DeadJobs,
            target: "app".to_owned(),
            since: at(1),
            opened_at: at(2),
            resolved_at: None,
        };
        let other = AlertRecord { condition: Condition::DestinationDisabled, ..opened.clone() };
        t.record_alert(opened.clone()).await.unwrap();
        t.record_alert(other.clone()).await.unwrap();
        t.record_alert(opened.clone()).await.unwrap();
        assert_eq!(t.alert_records().await.unwrap(), [opened.clone(), other.clone()], "recording twice keeps one");
        let resolved = AlertRecord { resolved_at: Some(at(9)), ..opened.clone() };
        t.record_alert(resolved.clone()).await.unwrap();
        let again = AlertRecord { since: at(50), opened_at: at(51), resolved_at: None, ..opened };
        assert_eq!(t.alert_records().await.unwrap(), [resolved, other.clone()]);
        t.record_alert(again.clone()).await.unwrap();
        assert_eq!(t.alert_records().await.unwrap(), [again, other]);
    }
}
