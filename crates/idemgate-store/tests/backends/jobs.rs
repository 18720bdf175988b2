//! The delivery queue: claims under a lease, fencing, retries, disabled destinations,
//! FIFO per ordering key, replays, retry-now, and many claimers at once.

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
    time::Duration,
};

use idemgate_core::{UnixTime, job::JobState, retry::Decision};
use idemgate_store::{
    Store,
    inbox::Version,
    jobs::{AttemptRecord, ClaimedJob, Completion, ReplayFilter},
};

use crate::{T0, TestStore, accept_at, key, ms, on_both, ordered, request};

const LEASE: Duration = Duration::from_secs(30);

fn attempt(status: Option<u16>) -> AttemptRecord {
    AttemptRecord {
        started_at: T0,
        latency: Duration::from_millis(12),
        status,
        error: status.is_none().then(|| "connection refused".to_owned()),
        response_prefix: Some("ok".to_owned()),
        outcome: if status.is_some_and(|s| (200..300).contains(&s)) {
            idemgate_core::retry::Attempted::Succeeded
        } else {
            idemgate_core::retry::Attempted::Failed
        },
    }
}

async fn claim(store: &Store, at: UnixTime) -> Vec<ClaimedJob> {
    store.claim_jobs(ms(at), LEASE, 100, vec!["fifo".to_owned()]).await.unwrap()
}

on_both! {
    async fn a_claimed_job_carries_its_event_and_is_not_claimed_again_while_leased(t: TestStore) {
        accept_at(&t, "e1", &["app"], T0).await;
        let claimed = claim(&t, T0).await;
        assert_eq!(claimed.len(), 1);
        let job = &claimed[0];
        assert_eq!((job.attempt, job.destination.as_str(), job.key.clone()), (1, "app", key("e1")));
        assert_eq!(job.body, &b"{\"n\":\"e1\"}"[..]);
        assert_eq!(job.content_type.as_deref(), Some("application/json"));
        assert_eq!(job.event_type.as_deref(), Some("order.created"), "for the headers of a queue destination");
        assert_eq!(job.headers, [("x-trace".to_owned(), "abc".to_owned())]);
        assert!(claim(&t, UnixTime(T0.0 + 29)).await.is_empty(), "the lease holds");
        assert_eq!(t.queue_states().await.unwrap(), [("running".to_owned(), 1)]);
        let completion = t.complete_job(job.clone(), attempt(Some(200)), Decision::Succeeded, ms(T0)).await.unwrap();
        assert_eq!(completion, Completion::Recorded);
        assert_eq!(t.queue_states().await.unwrap(), []);
        assert_eq!(t.jobs(key("e1")).await.unwrap()[0].state, "succeeded");
        assert!(claim(&t, UnixTime(T0.0 + 3600)).await.is_empty(), "a succeeded job is never due again");
    }

    async fn the_jobs_of_one_event_claimed_together_each_carry_its_body(t: TestStore) {
        accept_at(&t, "e1", &["app", "crm"], T0).await;
        let claimed = claim(&t, T0).await;
        assert_eq!(claimed.len(), 2);
        for job in &claimed {
            assert_eq!(job.body, &b"{\"n\":\"e1\"}"[..], "{}", job.destination);
        }
    }

    async fn an_expired_lease_is_taken_over_and_the_old_holder_is_fenced_off(t: TestStore) {
        accept_at(&t, "e1", &["app"], T0).await;
        let first = claim(&t, T0).await.remove(0);
        let later = UnixTime(T0.0 + 31);
        let second = claim(&t, later).await.remove(0);
        assert_eq!(second.attempt, 2);
        assert_ne!(first.lease_token, second.lease_token);
        let stale = t.complete_job(first, attempt(Some(200)), Decision::Succeeded, ms(later)).await.unwrap();
        assert_eq!(stale, Completion::Stale);
        assert_eq!(t.jobs(key("e1")).await.unwrap()[0].state, "running", "the stale holder changed nothing");
        let current = t.complete_job(second, attempt(Some(500)), Decision::Dead(idemgate_core::retry::DeadReason::FinalStatus(500)), ms(later)).await.unwrap();
        assert_eq!(current, Completion::Recorded);
        assert_eq!(t.jobs(key("e1")).await.unwrap()[0].state, "dead");
        assert_eq!(t.attempts("test".to_owned(), "e1".to_owned()).await.unwrap().len(), 2, "both attempts are recorded");
    }

    async fn a_retry_waits_for_its_time(t: TestStore) {
        accept_at(&t, "e1", &["app"], T0).await;
        let job = claim(&t, T0).await.remove(0);
        t.complete_job(job, attempt(None), Decision::RetryAfter(Duration::from_secs(60)), ms(T0)).await.unwrap();
        let record = t.jobs(key("e1")).await.unwrap().remove(0);
        assert_eq!((record.state.as_str(), record.next_attempt_at), ("retrying", UnixTime(T0.0 + 60)));
        assert!(claim(&t, UnixTime(T0.0 + 59)).await.is_empty());
        assert_eq!(claim(&t, UnixTime(T0.0 + 60)).await[0].attempt, 2);
    }

    async fn a_retry_is_never_due_before_its_delay_to_the_millisecond(t: TestStore) {
        accept_at(&t, "e1", &["app"], T0).await;
        // Late in a second, with a jittered sub-second delay: whole seconds made this due at once.
        let now = ms(T0) + 900;
        let job = t.claim_jobs(now, LEASE, 10, Vec::new()).await.unwrap().remove(0);
        let delay = Duration::from_micros(800_500);
        t.complete_job(job, attempt(None), Decision::RetryAfter(delay), now).await.unwrap();
        for early in [now, now + 100, now + 800] {
            assert!(t.claim_jobs(early, LEASE, 10, Vec::new()).await.unwrap().is_empty(), "claimable at +{} ms", early - now);
        }
        let job = t.claim_jobs(now + 801, LEASE, 10, Vec::new()).await.unwrap().remove(0);
        assert_eq!(job.attempt, 2, "due once the delay, rounded up to the millisecond, has passed");
        t.complete_job(job, attempt(None), Decision::RetryAfter(Duration::from_secs(3)), now + 1999).await.unwrap();
        assert!(t.claim_jobs(now + 4998, LEASE, 10, Vec::new()).await.unwrap().is_empty(), "a Retry-After of 3 s is 3 s");
        assert_eq!(t.claim_jobs(now + 4999, LEASE, 10, Vec::new()).await.unwrap().len(), 1);
    }

    async fn a_gone_destination_is_disabled_until_enabled(t: TestStore) {
        accept_at(&t, "e1", &["gone"], T0).await;
        accept_at(&t, "e2", &["gone", "app"], T0).await;
        for job in claim(&t, T0).await {
            let decision = match (job.destination.as_str(), job.key.identity.as_str()) {
                ("gone", "e1") => Decision::DisableDestination,
                ("gone", _) => Decision::RetryAfter(Duration::from_secs(60)),
                _ => Decision::Succeeded,
            };
            t.complete_job(job, attempt(Some(410)), decision, ms(T0)).await.unwrap();
        }
        let destinations = t.destinations().await.unwrap();
        let gone = destinations.iter().find(|d| d.name == "gone").unwrap();
        assert_eq!(gone.disabled.as_deref(), Some("410 Gone"));
        assert!(claim(&t, UnixTime(T0.0 + 3600)).await.is_empty(), "nothing of a disabled destination is claimed");
        assert!(t.enable_destination("gone".to_owned(), UnixTime(T0.0 + 10)).await.unwrap());
        assert!(!t.enable_destination("gone".to_owned(), UnixTime(T0.0 + 10)).await.unwrap(), "already enabled");
        let due: BTreeSet<_> = claim(&t, UnixTime(T0.0 + 10)).await.into_iter().map(|j| j.key.identity.to_string()).collect();
        assert_eq!(due, BTreeSet::from(["e1".to_owned(), "e2".to_owned()]));
    }

    async fn a_fifo_destination_gets_one_event_of_an_ordering_key_at_a_time(t: TestStore) {
        for (n, identity) in ["o1", "o2", "o3"].into_iter().enumerate() {
            let mut event = ordered(identity, identity.as_bytes(), "k", Version::Int(n as i64));
            event.destinations = vec!["fifo".to_owned(), "app".to_owned()].into();
            assert!(matches!(t.accept(request(identity, identity.as_bytes()), event).await, idemgate_core::Outcome::Applied { .. }));
        }
        let claimed = claim(&t, T0).await;
        let fifo: Vec<_> = claimed.iter().filter(|j| j.destination == "fifo").map(|j| j.key.identity.to_string()).collect();
        assert_eq!(fifo, ["o1"], "only the oldest unfinished event of the key");
        assert_eq!(claimed.iter().filter(|j| j.destination == "app").count(), 3, "other destinations are not held back");
        let first = claimed.into_iter().find(|j| j.destination == "fifo").unwrap();
        t.complete_job(first, attempt(Some(200)), Decision::Succeeded, ms(T0)).await.unwrap();
        let next: Vec<_> = claim(&t, T0).await.into_iter().map(|j| j.key.identity.to_string()).collect();
        assert_eq!(next, ["o2"]);
    }

    async fn replay_makes_finished_jobs_pending_again_with_their_identity(t: TestStore) {
        for identity in ["d1", "d2", "ok"] {
            accept_at(&t, identity, &["app"], T0).await;
        }
        for job in claim(&t, T0).await {
            let decision = if job.key.identity.as_str() == "ok" {
                Decision::Succeeded
            } else {
                Decision::Dead(idemgate_core::retry::DeadReason::FinalStatus(400))
            };
            t.complete_job(job, attempt(Some(400)), decision, ms(T0)).await.unwrap();
        }
        assert_eq!(t.dead_jobs(10).await.unwrap().len(), 2);
        let dead = ReplayFilter::default();
        assert_eq!(t.count_replayable(dead.clone()).await.unwrap(), 2);
        let pending = ReplayFilter { state: Some(JobState::Pending), ..ReplayFilter::default() };
        assert!(t.count_replayable(pending).await.is_err(), "only finished jobs can be replayed");
        assert_eq!(t.replay_jobs(dead.clone(), UnixTime(T0.0 + 5), 1).await.unwrap(), 1, "the limit holds");
        assert_eq!(t.replay_jobs(dead.clone(), UnixTime(T0.0 + 5), 100).await.unwrap(), 1);
        assert_eq!(t.count_replayable(dead).await.unwrap(), 0);
        let again = claim(&t, UnixTime(T0.0 + 5)).await;
        let ids: BTreeSet<_> = again.iter().map(|j| (j.key.identity.to_string(), j.attempt)).collect();
        assert_eq!(ids, BTreeSet::from([("d1".to_owned(), 1), ("d2".to_owned(), 1)]));
        let only_ok = ReplayFilter { state: Some(JobState::Succeeded), identity: Some("ok".to_owned()), ..ReplayFilter::default() };
        assert_eq!(t.replay_jobs(only_ok, UnixTime(T0.0 + 6), 100).await.unwrap(), 1);
    }

    async fn retry_now_makes_waiting_jobs_due_and_keeps_their_attempts(t: TestStore) {
        for identity in ["r1", "r2", "done"] {
            accept_at(&t, identity, &["app"], T0).await;
        }
        for job in claim(&t, T0).await {
            let decision = if job.key.identity.as_str() == "done" {
                Decision::Succeeded
            } else {
                Decision::RetryAfter(Duration::from_secs(3600))
            };
            t.complete_job(job, attempt(None), decision, ms(T0)).await.unwrap();
        }
        accept_at(&t, "fresh", &["app"], UnixTime(T0.0 + 1)).await;
        let later = UnixTime(T0.0 + 10);
        assert!(claim(&t, UnixTime(T0.0 + 9)).await.iter().all(|j| j.key.identity.as_str() == "fresh"));
        for finished in [JobState::Succeeded, JobState::Dead, JobState::Running] {
            let filter = ReplayFilter { state: Some(finished), ..ReplayFilter::default() };
            assert!(t.retry_now(filter, ms(later)).await.is_err(), "{finished} is not waiting");
        }
        let one = ReplayFilter { identity: Some("r1".to_owned()), state: Some(JobState::Retrying), ..ReplayFilter::default() };
        assert_eq!(t.retry_now(one.clone(), ms(later)).await.unwrap(), 1);
        assert_eq!(t.retry_now(one, ms(later)).await.unwrap(), 0, "a job already due is not counted again");
        let record = t.jobs(key("r1")).await.unwrap().remove(0);
        assert_eq!((record.state.as_str(), record.attempts, record.next_attempt_at), ("retrying", 1, later));
        assert_eq!(t.jobs(key("done")).await.unwrap()[0].state, "succeeded", "a finished job is left alone");
        let due = claim(&t, later).await;
        let ids: Vec<_> = due.iter().map(|j| (j.key.identity.to_string(), j.attempt)).collect();
        assert_eq!(ids, [("r1".to_owned(), 2)], "the next attempt, not a fresh schedule");
        t.complete_job(due[0].clone(), attempt(None), Decision::RetryAfter(Duration::from_secs(120)), ms(later)).await.unwrap();
        assert_eq!(t.retry_now(ReplayFilter::default(), ms(later)).await.unwrap(), 2, "r1 and r2, retrying");
        let both: BTreeSet<_> = claim(&t, later).await.into_iter().map(|j| (j.key.identity.to_string(), j.attempt)).collect();
        assert_eq!(both, BTreeSet::from([("r1".to_owned(), 3), ("r2".to_owned(), 2)]));
    }

    async fn a_bulk_replay_sends_each_job_it_selected_once_even_if_it_finishes_again_meanwhile(t: TestStore) {
        for identity in ["a", "b", "c"] {
            accept_at(&t, identity, &["app"], T0).await;
        }
        for job in claim(&t, T0).await {
            t.complete_job(job, attempt(Some(200)), Decision::Succeeded, ms(T0)).await.unwrap();
        }
        let later = UnixTime(T0.0 + 5);
        let succeeded = ReplayFilter { state: Some(JobState::Succeeded), ..ReplayFilter::default() };
        let delivered = Arc::new(Mutex::new(Vec::new()));
        let (store, seen) = (t.store.clone(), Arc::clone(&delivered));
        let replayed = t
            .replay_all(succeeded, later, 1, move |done, total| {
                let (store, seen) = (store.clone(), Arc::clone(&seen));
                async move {
                    assert!(done <= total, "{done} of {total}");
                    // A worker delivers what was just replayed; it succeeds, and so matches the filter again.
                    for job in store.claim_jobs(ms(later), LEASE, 100, Vec::new()).await.unwrap() {
                        seen.lock().unwrap().push(job.key.identity.to_string());
                        store.complete_job(job, attempt(Some(200)), Decision::Succeeded, ms(later)).await.unwrap();
                    }
                    let seen = seen.lock().unwrap();
                    assert!(seen.len() <= 3, "a job was replayed more than once: {seen:?}");
                }
            })
            .await
            .unwrap();
        assert_eq!(replayed, 3);
        let mut delivered = delivered.lock().unwrap().clone();
        delivered.sort();
        assert_eq!(delivered, ["a", "b", "c"], "each selected job exactly once");
    }

    async fn completions_recorded_together_keep_their_order_fencing_and_effects(t: TestStore) {
        for identity in ["a", "b", "c", "d"] {
            accept_at(&t, identity, &["app"], T0).await;
        }
        let mut claimed = claim(&t, T0).await;
        claimed.sort_by(|x, y| x.key.identity.as_str().cmp(y.key.identity.as_str()));
        let later = UnixTime(T0.0 + 31);
        let retaken = claim(&t, later).await;
        assert_eq!(retaken.len(), 4, "every lease expired");
        let fresh = retaken.into_iter().find(|j| j.key.identity.as_str() == "d").unwrap();
        let mut finished: Vec<_> = claimed
            .iter()
            .zip([
                Decision::Succeeded,
                Decision::RetryAfter(Duration::from_secs(5)),
                Decision::DisableDestination,
                Decision::Succeeded,
            ])
            .map(|(job, decision)| (job.clone(), attempt(Some(200)), decision))
            .collect();
        finished.push((fresh, attempt(Some(200)), Decision::Dead(idemgate_core::retry::DeadReason::FinalStatus(400))));
        let completions = t.complete_jobs(finished, ms(later)).await.unwrap();
        // The first claims were all taken over: stale, nothing changed; only the fresh claim of "d" counts.
        assert_eq!(completions, [Completion::Stale, Completion::Stale, Completion::Stale, Completion::Stale, Completion::Recorded]);
        assert_eq!(t.jobs(key("d")).await.unwrap()[0].state, "dead");
        assert_eq!(t.jobs(key("a")).await.unwrap()[0].state, "running");
        let app = t.destinations().await.unwrap().into_iter().find(|d| d.name == "app").unwrap();
        assert_eq!(app.disabled, None, "a stale 410 disables nothing: its lease was taken over");
        assert_eq!(t.attempts("test".to_owned(), "d".to_owned()).await.unwrap().len(), 2, "every attempt is recorded");
        assert!(t.complete_jobs(Vec::new(), ms(later)).await.unwrap().is_empty());
    }

    async fn many_claimers_at_once_take_each_job_exactly_once(t: TestStore) {
        for n in 0..120 {
            accept_at(&t, &format!("e{n}"), &["app", "audit"], T0).await;
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let claimers: Vec<_> = (0..6)
            .map(|_| {
                let (store, seen) = (t.store.clone(), Arc::clone(&seen));
                tokio::spawn(async move {
                    loop {
                        let jobs = store.claim_jobs(ms(T0), LEASE, 7, Vec::new()).await.unwrap();
                        if jobs.is_empty() {
                            break;
                        }
                        for job in jobs {
                            seen.lock().unwrap().push(job.id);
                            let done = store.complete_job(job, attempt(Some(200)), Decision::Succeeded, ms(T0)).await.unwrap();
                            assert_eq!(done, Completion::Recorded);
                        }
                    }
                })
            })
            .collect();
        for claimer in claimers {
            claimer.await.unwrap();
        }
        let seen = seen.lock().unwrap().clone();
        let distinct: BTreeSet<_> = seen.iter().collect();
        assert_eq!((seen.len(), distinct.len()), (240, 240), "every job claimed once, none twice");
        assert_eq!(t.job_states().await.unwrap(), [("succeeded".to_owned(), 240)]);
        assert_eq!(t.queue_states().await.unwrap(), [], "the history is not the queue");
    }
}
