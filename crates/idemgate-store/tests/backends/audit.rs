//! The audit log: each audited action is recorded with its count, in its own transaction
//! (an action refused records nothing), listed newest first under filters, and purged
//! by its own retention.

use std::time::Duration;

use idemgate_core::{UnixTime, job::JobState, retry::Decision};
use idemgate_store::{
    audit::{Action, Audit, AuditFilter, AuditRecord, target},
    jobs::{AttemptRecord, ReplayFilter, ReplayTo},
};

use crate::{T0, TestStore, accept_at, ms, on_both};

fn attempt() -> AttemptRecord {
    AttemptRecord {
        started_at: T0,
        latency: Duration::from_millis(5),
        status: Some(200),
        error: None,
        response_prefix: None,
        outcome: idemgate_core::retry::Attempted::Succeeded,
    }
}

fn rows(records: &[AuditRecord]) -> Vec<(i64, &str, &str, &str, u64)> {
    records.iter().map(|r| (r.at.0, r.token.as_str(), r.action.as_str(), r.target.as_str(), r.affected)).collect()
}

on_both! {
    async fn each_audited_action_is_recorded_with_what_it_changed_newest_first(t: TestStore) {
        for identity in ["a", "b"] {
            accept_at(&t, identity, &["app"], T0).await;
        }
        for job in t.claim_jobs(ms(T0), Duration::from_secs(30), 10, Vec::new()).await.unwrap() {
            t.complete_job(job, attempt(), Decision::Succeeded, ms(T0)).await.unwrap();
        }
        let succeeded = ReplayFilter { state: Some(JobState::Succeeded), ..ReplayFilter::default() };
        let one = ReplayFilter { source: Some("test".into()), identity: Some("a".into()), ..succeeded.clone() };
        let ops = Audit::new("ops", Action::Replay, target::filter(&one));
        assert_eq!(t.audited(ops).replay_jobs(one, UnixTime(T0.0 + 1), 100).await.unwrap(), 1);
        let all = Audit::new("ops", Action::Retry, target::filter(&ReplayFilter::default()));
        assert_eq!(t.audited(all).retry_now(ReplayFilter::default(), ms(UnixTime(T0.0 + 2))).await.unwrap(), 0);
        let bulk = Audit::new("admin", Action::Replay, target::filter(&succeeded));
        let replayed = t.audited(bulk).replay_all(succeeded, UnixTime(T0.0 + 3), 1, |_, _| async {}).await.unwrap();
        assert_eq!(replayed, 1, "b only: a is pending again");
        let to = ReplayTo { destination: "billing".into(), ..ReplayTo::default() };
        let sent = Audit::new("cli", Action::ReplayTo, target::replay_to(&to));
        assert_eq!(t.audited(sent).replay_to(to, UnixTime(T0.0 + 4)).await.unwrap().created, 2);
        let enable = Audit::new("ops", Action::Enable, target::destination("app"));
        assert!(!t.audited(enable).enable_destination("app".into(), UnixTime(T0.0 + 5)).await.unwrap());
        t.replay_jobs(ReplayFilter::default(), UnixTime(T0.0 + 6), 100).await.unwrap();
        let refused = Audit::new("ops", Action::Retry, "x".into());
        let dead = ReplayFilter { state: Some(JobState::Dead), ..ReplayFilter::default() };
        assert!(t.audited(refused).retry_now(dead, ms(UnixTime(T0.0 + 7))).await.is_err());

        let log = t.audit_log(AuditFilter::default()).await.unwrap();
        assert_eq!(
            rows(&log),
            [
                (T0.0 + 5, "ops", "enable", "destination app", 0),
                (T0.0 + 4, "cli", "replay_to", "to billing", 2),
                (T0.0 + 3, "admin", "replay", "filter state=succeeded", 1),
                (T0.0 + 2, "ops", "retry", "filter all", 0),
                (T0.0 + 1, "ops", "replay", "event test/a state=succeeded", 1),
            ],
            "an unaudited call and a refused one record nothing"
        );
        assert!(log.windows(2).all(|w| w[0].id > w[1].id));
        let by_ops = AuditFilter { token: Some("ops".into()), action: Some(Action::Replay), ..AuditFilter::default() };
        assert_eq!(rows(&t.audit_log(by_ops).await.unwrap()), [(T0.0 + 1, "ops", "replay", "event test/a state=succeeded", 1)]);
        let recent = AuditFilter { since: Some(UnixTime(T0.0 + 3)), limit: 2, ..AuditFilter::default() };
        let recent: Vec<_> = t.audit_log(recent).await.unwrap().into_iter().map(|r| r.action).collect();
        assert_eq!(recent, ["enable", "replay_to"]);
    }

    async fn the_audit_purge_keeps_what_its_retention_holds(t: TestStore) {
        for (n, at) in [(1, T0.0), (2, T0.0 + 100), (3, T0.0 + 200)] {
            let audit = Audit::new("ops", Action::Enable, target::destination(&format!("d{n}")));
            t.record_audit(audit, UnixTime(at), 1).await.unwrap();
        }
        let keep = Duration::from_secs(150);
        assert_eq!(t.purge_audit(UnixTime(T0.0 + 250), keep, true).await.unwrap(), 1, "a dry run counts");
        assert_eq!(t.audit_log(AuditFilter::default()).await.unwrap().len(), 3, "and deletes nothing");
        assert_eq!(t.purge_audit(UnixTime(T0.0 + 250), keep, false).await.unwrap(), 1, "older than 150 s: d1 only");
        let left: Vec<_> = t.audit_log(AuditFilter::default()).await.unwrap().into_iter().map(|r| r.target).collect();
        assert_eq!(left, ["destination d3", "destination d2"]);
        assert_eq!(t.purge_audit(UnixTime(T0.0 + 250), keep, false).await.unwrap(), 0);
        assert_eq!(t.purge_audit(UnixTime(T0.0 + 400), keep, false).await.unwrap(), 2);
        assert!(t.audit_log(AuditFilter::default()).await.unwrap().is_empty());
    }
}
