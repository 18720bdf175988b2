//! A destination's rate limit and in-flight cap held over every store on one file or
//! schema (every instance): the claim reads its token bucket and its leased jobs under the
//! destination's row lock, takes no more than they leave room for, and spends a token per
//! job taken; an expired lease (a killed instance's) gives its place back.

use std::{collections::HashMap, time::Duration};

use idemgate_core::{
    UnixTime,
    limit::{Limits, Rate},
    retry::Decision,
};
use idemgate_store::{
    Store,
    jobs::{AttemptRecord, Claimed},
};

use crate::{T0, TestStore, accept_at, ms, on_both};

/// Longer than the tests' spans, but for the one about expired leases.
const LEASE: Duration = Duration::from_secs(3_600);

fn at_ms(offset_ms: i64) -> i64 {
    ms(T0) + offset_ms
}

fn limited(rate: Option<(f64, u32)>, cap: Option<usize>) -> HashMap<String, Limits> {
    let rate = rate.map(|(per_second, burst)| Rate { per_second, burst });
    HashMap::from([("api".to_owned(), Limits { rate, max_in_flight: cap })])
}

/// A claim of up to 100 jobs as a worker makes it, with `limits` shared.
async fn claim(store: &Store, now_ms: i64, limits: &HashMap<String, Limits>) -> Claimed {
    let mine = limits.keys().map(|name| (name.clone(), 100)).collect();
    store.claim_jobs_within(now_ms, LEASE, 100, Vec::new(), mine, limits.clone()).await.unwrap()
}

fn of(claimed: &Claimed, destination: &str) -> usize {
    claimed.jobs.iter().filter(|job| job.destination == destination).count()
}

fn succeeded(now: UnixTime) -> AttemptRecord {
    AttemptRecord {
        started_at: now,
        latency: Duration::from_millis(3),
        status: Some(200),
        outcome: idemgate_core::retry::Attempted::of(idemgate_core::retry::AttemptResult::Status {
            status: 200,
            retry_after: None,
        }),
        error: None,
        response_prefix: None,
    }
}

on_both! {
    async fn two_stores_on_one_backend_spend_one_bucket(t: TestStore) {
        for n in 0..12 {
            accept_at(&t, &format!("e{n}"), &["api", "free"], T0).await;
        }
        let other = t.another().await;
        let limits = limited(Some((2.0, 3)), None);

        let first = claim(&t, at_ms(0), &limits).await;
        assert_eq!((of(&first, "api"), first.room["api"]), (3, 3), "the burst");
        assert_eq!(of(&first, "free"), 12, "a destination without limits is not held back");
        let second = claim(&other, at_ms(0), &limits).await;
        assert_eq!((second.jobs.len(), second.room["api"]), (0, 0), "the other instance finds the bucket empty");
        assert_eq!(claim(&other, at_ms(499), &limits).await.jobs.len(), 0);
        assert_eq!(claim(&other, at_ms(500), &limits).await.jobs.len(), 1, "a token per half second");
        assert_eq!(claim(&t, at_ms(1_000), &limits).await.jobs.len(), 1, "and the first sees it spent");
        let late = claim(&t, at_ms(1_200), &limits).await;
        assert_eq!(late.jobs.len(), 0, "an instance whose clock is behind refills nothing");
        assert_eq!(claim(&other, at_ms(60_000), &limits).await.jobs.len(), 3, "no more than the burst after a quiet spell");
        let spare = claim(&t, at_ms(120_000), &limits).await;
        assert_eq!((spare.jobs.len(), spare.room["api"]), (3, 3), "the rest, 12 in all");
        assert_eq!(claim(&t, at_ms(120_000), &limits).await.room["api"], 0, "a token per job taken, none for jobs not found");
        assert_eq!(claim(&other, at_ms(121_000), &limits).await.room["api"], 2);
    }

    async fn the_in_flight_cap_counts_every_stores_leases_and_an_expired_one_gives_its_place_back(t: TestStore) {
        for n in 0..6 {
            accept_at(&t, &format!("e{n}"), &["api"], T0).await;
        }
        let other = t.another().await;
        let limits = limited(None, Some(2));

        let first = claim(&t, at_ms(0), &limits).await;
        assert_eq!(first.jobs.len(), 2);
        let second = claim(&other, at_ms(0), &limits).await;
        assert_eq!((second.jobs.len(), second.room["api"]), (0, 0), "both places are leased by the first");

        let mut held = first.jobs.into_iter();
        let done = held.next().unwrap();
        let recorded = t.complete_jobs(vec![(done, succeeded(T0), Decision::Succeeded)], at_ms(1_000)).await.unwrap();
        assert_eq!(recorded.len(), 1);
        let third = claim(&other, at_ms(1_000), &limits).await;
        assert_eq!(third.jobs.len(), 1, "a completed attempt frees its place for any instance");
        assert_eq!(claim(&t, at_ms(2_000), &limits).await.jobs.len(), 0);

        // The first instance dies holding its other job: its place comes back with the lease.
        assert_eq!(claim(&other, at_ms(3_599_000), &limits).await.jobs.len(), 0, "still leased");
        let after = claim(&other, at_ms(3_601_000), &limits).await;
        assert_eq!(after.room["api"], 2, "both leases (the dead one's and the third's) expired");
        assert_eq!(after.jobs.len(), 2, "the expired job and the next one");
        assert!(after.jobs.iter().any(|job| job.id == held.next().unwrap().id), "the dead instance's job is taken again");
    }

    async fn claims_racing_on_two_stores_take_no_more_than_the_limits_leave(t: TestStore) {
        for n in 0..40 {
            accept_at(&t, &format!("e{n}"), &["api"], T0).await;
        }
        let other = t.another().await;
        for (limits, most, now_ms, label) in [
            (limited(Some((0.001, 5)), None), 5, at_ms(0), "the burst"),
            (limited(Some((1_000.0, 100)), Some(3)), 3, at_ms(10_000), "the cap"),
        ] {
            let stores = [t.store.clone(), other.clone()];
            let claims: Vec<_> = (0..8)
                .map(|n| {
                    let (store, limits) = (stores[n % 2].clone(), limits.clone());
                    tokio::spawn(async move { claim(&store, now_ms, &limits).await.jobs })
                })
                .collect();
            let mut taken = Vec::new();
            for claim in claims {
                taken.extend(claim.await.unwrap());
            }
            assert_eq!(taken.len(), most, "{label}: eight claims at once, on two instances");
            let finished: Vec<_> = taken.into_iter().map(|job| (job, succeeded(T0), Decision::Succeeded)).collect();
            t.complete_jobs(finished, now_ms).await.unwrap();
        }
    }
}
