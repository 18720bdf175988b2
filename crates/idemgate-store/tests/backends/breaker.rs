//! Protecting destinations in the queue: a destination's circuit breaker, kept in its row
//! and shared by every instance, pauses it, lets a claim take one probe per interval,
//! resumes it on an answer; and a claim's limits per destination.

use std::{collections::HashMap, time::Duration};

use idemgate_core::{
    UnixTime,
    breaker::BreakerPolicy,
    retry::{DeadReason, Decision},
};
use idemgate_store::{
    Store,
    jobs::{AttemptRecord, Breakers, ClaimedJob, Completion},
    views::{AttemptRow, DestinationHealth},
};

use crate::{T0, TestStore, accept_at, key, ms, on_both};

const LEASE: Duration = Duration::from_secs(30);
const FAILED: Decision = Decision::RetryAfter(Duration::from_secs(1));

fn attempt(status: u16) -> AttemptRecord {
    AttemptRecord {
        started_at: T0,
        latency: Duration::from_millis(3),
        status: Some(status),
        outcome: idemgate_core::retry::Attempted::of(idemgate_core::retry::AttemptResult::Status {
            status,
            retry_after: None,
        }),
        error: (status >= 300).then(|| format!("status {status}")),
        response_prefix: None,
    }
}

fn breakers() -> Breakers {
    let policy =
        BreakerPolicy { pause_after_failures: Some(2), pause_after: None, probe_interval: Duration::from_secs(30) };
    HashMap::from([("down".to_owned(), policy)])
}

fn at(seconds: i64) -> i64 {
    ms(UnixTime(T0.0 + seconds))
}

async fn claim(store: &Store, now_ms: i64) -> Vec<ClaimedJob> {
    store.claim_jobs(now_ms, LEASE, 100, Vec::new()).await.unwrap()
}

async fn complete(store: &Store, jobs: Vec<ClaimedJob>, status: u16, decision: Decision, now_ms: i64) {
    let finished = jobs.into_iter().map(|job| (job, attempt(status), decision)).collect();
    store.complete_jobs_with_breakers(finished, now_ms, breakers()).await.unwrap();
}

async fn health(store: &Store, name: &str) -> DestinationHealth {
    store.destinations().await.unwrap().into_iter().find(|d| d.name == name).unwrap()
}

fn count(health: &DestinationHealth, state: &str) -> u64 {
    health.jobs.iter().find(|(s, _)| s == state).map_or(0, |(_, n)| *n)
}

on_both! {
    async fn a_completion_after_its_lease_was_taken_over_keeps_its_attempt_and_changes_nothing_else(t: TestStore) {
        for identity in ["a", "b", "c", "d"] {
            accept_at(&t, identity, &["down"], T0).await;
        }
        let by_identity = |jobs: Vec<ClaimedJob>| -> HashMap<String, ClaimedJob> {
            jobs.into_iter().map(|job| (job.key.identity.to_string(), job)).collect()
        };
        let mut stale = by_identity(claim(&t, at(0)).await);
        let mut current = by_identity(claim(&t, at(31)).await);
        assert_eq!((stale.len(), current.len()), (4, 4), "every lease expired and was taken over");

        let failed = vec![(current.remove("a").unwrap(), attempt(503), FAILED)];
        assert_eq!(t.complete_jobs_with_breakers(failed, at(32), breakers()).await.unwrap(), [Completion::Recorded]);
        assert_eq!(health(&t, "down").await.breaker.failures, 1);

        let late = ["b", "c"].map(|identity| (stale.remove(identity).unwrap(), attempt(503), FAILED)).to_vec();
        let late = t.complete_jobs_with_breakers(late, at(33), breakers()).await.unwrap();
        assert_eq!(late, [Completion::Stale, Completion::Stale]);
        let late_answer = vec![(stale.remove("a").unwrap(), attempt(200), Decision::Succeeded)];
        let late_answer = t.complete_jobs_with_breakers(late_answer, at(34), breakers()).await.unwrap();
        assert_eq!(late_answer, [Completion::Stale]);
        let gone = t.complete_job(stale.remove("d").unwrap(), attempt(410), Decision::DisableDestination, at(35)).await;
        assert_eq!(gone.unwrap(), Completion::Stale);

        let down = health(&t, "down").await;
        assert_eq!(down.breaker.failures, 1, "no stale failure counts and no stale answer closes the breaker");
        assert_eq!(down.breaker.paused_at, None, "two more failures would have paused it");
        assert_eq!(down.disabled, None, "a stale 410 disables nothing");
        for identity in ["b", "c", "d"] {
            assert_eq!(t.jobs(key(identity)).await.unwrap()[0].state, "running", "{identity}: the current lease's");
        }
        let kept = |rows: Vec<AttemptRow>| rows.iter().map(|row| (row.attempt, row.status)).collect::<Vec<_>>();
        assert_eq!(kept(t.attempts("test".into(), "d".into()).await.unwrap()), [(1, Some(410))], "kept as history");
        assert_eq!(kept(t.attempts("test".into(), "a".into()).await.unwrap()), [(2, Some(503)), (1, Some(200))]);
    }

    async fn a_failing_destination_is_paused_probed_once_per_interval_and_resumed_by_an_answer(t: TestStore) {
        for identity in ["a", "b", "c"] {
            accept_at(&t, identity, &["down", "up"], T0).await;
        }
        let jobs = claim(&t, at(0)).await;
        let (down, up): (Vec<_>, Vec<_>) = jobs.into_iter().partition(|job| job.destination == "down");
        assert_eq!((down.len(), up.len()), (3, 3));
        complete(&t, down, 503, FAILED, at(0)).await;
        complete(&t, up, 200, Decision::Succeeded, at(0)).await;
        let paused = health(&t, "down").await;
        assert_eq!(paused.breaker.failures, 3);
        assert_eq!(paused.breaker.paused_at, Some(T0));
        assert_eq!(paused.breaker.next_probe_at, Some(UnixTime(T0.0 + 30)));
        assert_eq!(health(&t, "up").await.breaker, Default::default(), "the other destination is not affected");
        let stored = t.breakers().await.unwrap();
        assert_eq!(stored, [("down".to_owned(), paused.breaker)], "the light read sees the same breaker");

        assert!(claim(&t, at(5)).await.is_empty(), "due, but paused: no job is claimed");
        let probe = claim(&t, at(30)).await;
        assert_eq!(probe.len(), 1, "one probe when it is due");
        assert!(claim(&t, at(30)).await.is_empty(), "the claim moved the probe time on");
        assert_eq!(health(&t, "down").await.breaker.next_probe_at, Some(UnixTime(T0.0 + 60)));

        complete(&t, probe, 503, Decision::Dead(DeadReason::AttemptsExhausted), at(31)).await;
        let still = health(&t, "down").await;
        assert_eq!(still.breaker.paused_at, Some(T0), "a failed probe keeps it paused");
        assert_eq!((count(&still, "dead"), count(&still, "retrying")), (0, 3), "no job dies while it is paused");
        assert!(claim(&t, at(59)).await.is_empty());

        let probe = claim(&t, at(60)).await;
        assert_eq!(probe.len(), 1);
        complete(&t, probe, 200, Decision::Succeeded, at(60)).await;
        let resumed = health(&t, "down").await;
        assert_eq!(resumed.breaker, Default::default(), "an answer resumes it");
        let rest = claim(&t, at(61)).await;
        assert_eq!(rest.len(), 2, "all its waiting jobs are claimed again");
        complete(&t, rest, 200, Decision::Succeeded, at(61)).await;
        assert_eq!(count(&health(&t, "down").await, "succeeded"), 3, "no job lost");
    }

    async fn enabling_a_paused_destination_resumes_it(t: TestStore) {
        accept_at(&t, "a", &["down"], T0).await;
        accept_at(&t, "b", &["down"], T0).await;
        let jobs = claim(&t, at(0)).await;
        complete(&t, jobs, 500, FAILED, at(0)).await;
        assert!(health(&t, "down").await.breaker.paused_at.is_some());
        assert!(t.enable_destination("down".to_owned(), T0).await.unwrap(), "it was paused");
        assert_eq!(health(&t, "down").await.breaker, Default::default());
        assert_eq!(claim(&t, at(2)).await.len(), 2);
    }

    async fn without_its_policy_a_destination_is_never_paused_but_an_answer_still_resumes_it(t: TestStore) {
        accept_at(&t, "a", &["down"], T0).await;
        accept_at(&t, "b", &["down"], T0).await;
        accept_at(&t, "c", &["down"], T0).await;
        let jobs = claim(&t, at(0)).await;
        let finished = jobs.into_iter().map(|job| (job, attempt(500), FAILED)).collect();
        t.complete_jobs(finished, at(0)).await.unwrap();
        let counted = health(&t, "down").await.breaker;
        assert_eq!((counted.failures, counted.paused_at), (3, None));
        let jobs = claim(&t, at(2)).await;
        assert_eq!(jobs.len(), 3);
        let mut jobs = jobs.into_iter();
        complete(&t, vec![jobs.next().unwrap(), jobs.next().unwrap()], 500, FAILED, at(2)).await;
        assert!(health(&t, "down").await.breaker.paused_at.is_some());
        let last = jobs.next().unwrap();
        t.complete_jobs(vec![(last, attempt(200), Decision::Succeeded)], at(3)).await.unwrap();
        assert_eq!(health(&t, "down").await.breaker, Default::default(), "an answer finishing late resumes it");
    }

    async fn a_claim_takes_at_most_its_limit_of_a_limited_destination(t: TestStore) {
        for n in 0..5 {
            accept_at(&t, &format!("s{n}"), &["slow", "fast"], T0).await;
        }
        let limits = HashMap::from([("slow".to_owned(), 2)]);
        let jobs = t.claim_jobs_limited(at(0), LEASE, 100, Vec::new(), limits).await.unwrap();
        let slow = jobs.iter().filter(|job| job.destination == "slow").count();
        assert_eq!((slow, jobs.len() - slow), (2, 5));
        let none = HashMap::from([("slow".to_owned(), 0)]);
        assert!(t.claim_jobs_limited(at(0), LEASE, 100, Vec::new(), none).await.unwrap().is_empty());
        let jobs = t.claim_jobs_limited(at(0), LEASE, 2, Vec::new(), HashMap::new()).await.unwrap();
        assert_eq!(jobs.len(), 2, "the batch limit still holds");
        let ids: Vec<_> = jobs.iter().map(|job| job.id).collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(ids, sorted);
    }
}

on_both! {
    async fn a_throttled_destination_is_recorded_from_its_first_throttled_claim_until_cleared(t: TestStore) {
        accept_at(&t, "a", &["limited"], T0).await;
        assert_eq!(health(&t, "limited").await.throttled_since, None, "not throttled until a worker says so");

        t.mark_throttled("limited".to_owned(), Some(at(0) + 400)).await.unwrap();
        let throttled = health(&t, "limited").await;
        assert_eq!(throttled.throttled_since, Some(T0), "to the second, like the breaker's times");
        assert_eq!((throttled.disabled_at, throttled.breaker), (None, Default::default()), "nothing else changes");
        t.mark_throttled("limited".to_owned(), Some(at(10))).await.unwrap();
        assert_eq!(health(&t, "limited").await.throttled_since, Some(T0), "an earlier since is kept");

        t.mark_throttled("limited".to_owned(), None).await.unwrap();
        assert_eq!(health(&t, "limited").await.throttled_since, None);
        t.mark_throttled("limited".to_owned(), Some(at(20))).await.unwrap();
        assert_eq!(health(&t, "limited").await.throttled_since, Some(UnixTime(T0.0 + 20)), "throttled anew");

        t.mark_throttled("idle".to_owned(), None).await.unwrap();
        assert!(t.destinations().await.unwrap().iter().all(|d| d.name != "idle"), "clearing makes no row");
        t.mark_throttled("fresh".to_owned(), Some(at(5))).await.unwrap();
        assert_eq!(health(&t, "fresh").await.throttled_since, Some(UnixTime(T0.0 + 5)), "a destination with no row yet");
    }

    async fn marking_a_paused_destination_throttled_keeps_its_breaker(t: TestStore) {
        accept_at(&t, "a", &["down"], T0).await;
        accept_at(&t, "b", &["down"], T0).await;
        let jobs = claim(&t, at(0)).await;
        complete(&t, jobs, 500, FAILED, at(0)).await;
        let paused = health(&t, "down").await.breaker;
        assert_eq!(paused.paused_at, Some(T0));
        t.mark_throttled("down".to_owned(), Some(at(1))).await.unwrap();
        let both = health(&t, "down").await;
        assert_eq!((both.breaker, both.throttled_since), (paused, Some(UnixTime(T0.0 + 1))));
        t.mark_throttled("down".to_owned(), None).await.unwrap();
        assert_eq!(health(&t, "down").await.breaker, paused, "clearing leaves the breaker too");
    }
}
