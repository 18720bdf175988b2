//! Subscriptions in the store: an event whose filter failed gets its job stored `dead`
//! with the reason, an event that matched nothing is stored without jobs and listed as
//! unmatched, and a replay to a named destination creates the missing job or replays the
//! finished one.

use std::time::Duration;

use idemgate_core::{Outcome, UnixTime, retry::Decision};
use idemgate_store::{
    inbox::IncomingEvent,
    jobs::{AttemptRecord, ReplayTo, ReplayedTo},
    views::{EventFilter, UNMATCHED},
};

use crate::{T0, TestStore, event, key, ms, on_both, request};

fn unmatched() -> EventFilter {
    EventFilter { state: Some(UNMATCHED.to_owned()), limit: 10, ..EventFilter::default() }
}

on_both! {
    async fn a_failed_filter_stores_a_dead_job_with_its_reason_beside_the_others(t: TestStore) {
        let failed = IncomingEvent {
            dead: vec![("billing".to_owned(), "filter failed: cannot index a value that way".to_owned())],
            ..event("f1", b"{}", &["app"])
        };
        assert!(matches!(t.accept(request("f1", b"{}"), failed.clone()).await, Outcome::Applied { .. }));
        let jobs = t.jobs(key("f1")).await.unwrap();
        let states: Vec<_> = jobs.iter().map(|j| (j.destination.as_str(), j.state.as_str())).collect();
        assert_eq!(states, [("app", "pending"), ("billing", "dead")]);
        assert_eq!(jobs[1].last_error.as_deref(), Some("filter failed: cannot index a value that way"));
        assert_eq!(jobs[1].attempts, 0);
        let claimed = t.claim_jobs(ms(T0) + 1000, Duration::from_secs(30), 10, Vec::new()).await.unwrap();
        assert_eq!(claimed.iter().map(|j| j.destination.as_str()).collect::<Vec<_>>(), ["app"], "a dead job is never claimed");

        let long = IncomingEvent { dead: vec![("billing".to_owned(), "x".repeat(10_000))], ..event("f2", b"{}", &[]) };
        t.accept(request("f2", b"{}"), long).await;
        let reason = t.jobs(key("f2")).await.unwrap()[0].last_error.clone().unwrap();
        assert!(reason.len() <= 256, "the reason is bounded: {}", reason.len());

        assert!(matches!(t.accept(request("f1", b"{}"), failed).await, Outcome::Duplicate { .. }));
        assert_eq!(t.jobs(key("f1")).await.unwrap().len(), 2, "a repeat stores nothing");
    }

    async fn an_unmatched_event_is_listed_and_replayed_to_a_named_destination(t: TestStore) {
        assert!(matches!(t.accept(request("u1", b"{\"a\":1}"), event("u1", b"{\"a\":1}", &[])).await, Outcome::Applied { .. }));
        t.accept(request("m1", b"{}"), event("m1", b"{}", &["app"])).await;
        assert!(t.jobs(key("u1")).await.unwrap().is_empty(), "stored with its receipt and no job");
        assert_eq!(t.event_body(key("u1")).await.unwrap().as_deref(), Some(&b"{\"a\":1}"[..]), "the original bytes");
        assert_eq!(t.event_body(key("nope")).await.unwrap(), None);
        let listed = t.list_events(unmatched()).await.unwrap();
        assert_eq!(listed.iter().map(|e| e.identity.as_str()).collect::<Vec<_>>(), ["u1"]);
        assert!(listed[0].jobs.is_empty());
        let not_to_app = EventFilter { destination: Some("app".to_owned()), ..unmatched() };
        assert_eq!(t.list_events(not_to_app).await.unwrap().len(), 1, "m1 has a job for app");
        let not_to_billing = EventFilter { destination: Some("billing".to_owned()), ..unmatched() };
        assert_eq!(t.list_events(not_to_billing).await.unwrap().len(), 2, "neither has one for billing");

        assert!(matches!(t.accept(request("u1", b"{\"a\":1}"), event("u1", b"{\"a\":1}", &["app"])).await, Outcome::Duplicate { .. }));
        assert!(t.jobs(key("u1")).await.unwrap().is_empty(), "a repeat decides nothing again");

        let only_unmatched = ReplayTo { destination: "billing".to_owned(), unmatched_only: true, ..ReplayTo::default() };
        let now = UnixTime(T0.0 + 5);
        assert_eq!(t.replay_to(only_unmatched.clone(), now).await.unwrap(), ReplayedTo { created: 1, replayed: 0 });
        let jobs = t.jobs(key("u1")).await.unwrap();
        assert_eq!((jobs[0].destination.as_str(), jobs[0].state.as_str()), ("billing", "pending"));
        assert_eq!(t.replay_to(only_unmatched, now).await.unwrap(), ReplayedTo::default(), "no longer unmatched");
        assert!(t.list_events(unmatched()).await.unwrap().is_empty());

        let claimed = t.claim_jobs(ms(now), Duration::from_secs(30), 10, Vec::new()).await.unwrap();
        let billing = claimed.into_iter().find(|j| j.destination == "billing").unwrap();
        assert_eq!(billing.body, &b"{\"a\":1}"[..], "the stored original");
        let ok = AttemptRecord { started_at: now, latency: Duration::from_millis(1), status: Some(200), error: None, response_prefix: None, outcome: idemgate_core::retry::Attempted::Succeeded };
        t.complete_job(billing, ok, Decision::Succeeded, ms(now)).await.unwrap();

        let to_billing = ReplayTo { destination: "billing".to_owned(), ..ReplayTo::default() };
        assert_eq!(t.replay_to(to_billing.clone(), now).await.unwrap(), ReplayedTo { created: 1, replayed: 1 }, "m1's created, u1's replayed");
        assert_eq!(t.replay_to(to_billing, now).await.unwrap(), ReplayedTo::default(), "pending jobs are left alone");
        let one = ReplayTo { destination: "audit".to_owned(), identity: Some("m1".to_owned()), ..ReplayTo::default() };
        assert_eq!(t.replay_to(one, now).await.unwrap(), ReplayedTo { created: 1, replayed: 0 });
        assert_eq!(t.jobs(key("u1")).await.unwrap().len(), 1, "only the selected event");
    }
}
