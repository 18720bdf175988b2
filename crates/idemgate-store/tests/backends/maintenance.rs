//! Retention: old finished events go with their receipts; young receipts, unfinished
//! work and the newest version of an ordering key stay; payloads may go sooner.

use std::time::Duration;

use idemgate_core::{UnixTime, retry::Decision};
use idemgate_store::{
    inbox::Version,
    jobs::AttemptRecord,
    maintenance::{PurgeReport, Retention},
};

use crate::{T0, TestStore, accept_at, key, ms, on_both, ordered, request_at, source};

const DAY: i64 = 86_400;

fn policy() -> Vec<Retention> {
    vec![Retention {
        source: "test".to_owned(),
        receipts: Duration::from_secs(30 * DAY as u64),
        payloads: Duration::from_secs(7 * DAY as u64),
    }]
}

on_both! {
    async fn purge_forgets_old_finished_events_and_keeps_what_still_matters(t: TestStore) {
        accept_at(&t, "old-done", &["app"], T0).await;
        accept_at(&t, "old-waiting", &["app"], T0).await;
        accept_at(&t, "mid-done", &["app"], UnixTime(T0.0 + 20 * DAY)).await;
        let newest = ordered("old-newest", b"n", "k", Version::Int(1));
        assert!(matches!(t.accept(request_at("old-newest", b"n", T0), newest).await, idemgate_core::Outcome::Applied { .. }));
        for job in t.claim_jobs(ms(UnixTime(T0.0 + 20 * DAY)), Duration::from_secs(30), 100, Vec::new()).await.unwrap() {
            if job.key.identity.as_str() == "old-waiting" {
                continue;
            }
            let attempt = AttemptRecord { started_at: T0, latency: Duration::ZERO, status: Some(200), error: None, response_prefix: None, outcome: idemgate_core::retry::Attempted::Succeeded };
            t.complete_job(job, attempt, Decision::Succeeded, ms(T0)).await.unwrap();
        }
        let now = UnixTime(T0.0 + 31 * DAY);
        let preview = t.purge_dry_run(now, policy()).await.unwrap();
        let expected = PurgeReport { receipts: 1, events: 1, payloads: 2, conflicts: 0 };
        assert_eq!(preview, expected, "old-done goes; mid-done and old-newest lose their payloads");
        assert!(t.receipt(key("old-done")).await.unwrap().is_some(), "a dry run changes nothing");
        assert_eq!(t.purge(now, policy()).await.unwrap(), expected);
        let kept: Vec<_> = t.receipts(source()).await.unwrap().into_iter().map(|r| r.key.identity.to_string()).collect();
        assert_eq!(kept, ["mid-done", "old-newest", "old-waiting"]);
        assert_eq!(t.event(key("mid-done")).await.unwrap().unwrap().body_len, 0);
        assert_eq!(t.event(key("old-waiting")).await.unwrap().unwrap().body_len, 19, "unfinished work keeps its payload");
        assert_eq!(t.purge(now, policy()).await.unwrap(), PurgeReport::default(), "a second purge finds nothing");
    }
}
