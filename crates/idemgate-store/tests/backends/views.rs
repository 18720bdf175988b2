//! The operator's views: listings with filters and a cursor, one event's attempts,
//! counts per source, dead jobs, conflicts (recent, and listed with filters and a cursor), destinations, attempt series, waiting queues,
//! one event's payload and the job gauges.

use std::time::Duration;

use idemgate_core::{
    BodyHash, UnixTime,
    retry::{Attempted, Decision},
};
use idemgate_store::{
    Store,
    jobs::AttemptRecord,
    maintenance::Retention,
    views::{AttemptBucket, ConflictBucket, ConflictFilter, ConflictRow, EventFilter, FailedAttempt, WaitingQueue},
};

use crate::{T0, TestStore, accept_at, event, ms, on_both, request};

fn timed(secs: i64, latency_ms: u64, status: Option<u16>) -> AttemptRecord {
    AttemptRecord { latency: Duration::from_millis(latency_ms), ..at(secs, status) }
}

fn at(secs: i64, status: Option<u16>) -> AttemptRecord {
    AttemptRecord {
        started_at: UnixTime(T0.0 + secs),
        latency: Duration::from_millis(3),
        status,
        error: status.map_or(Some("connection refused".to_owned()), |s| Some(format!("status {s}"))),
        response_prefix: None,
        outcome: if status.is_some_and(|s| (200..300).contains(&s)) { Attempted::Succeeded } else { Attempted::Failed },
    }
}

/// Up to ten conflicts `filter` selects.
async fn all(store: &Store, filter: ConflictFilter) -> Vec<ConflictRow> {
    store.list_conflicts(ConflictFilter { limit: 10, ..filter }).await.unwrap()
}

/// Each conflict's identity and body hash.
fn keys(rows: &[ConflictRow]) -> Vec<(String, BodyHash)> {
    rows.iter().map(|c| (c.identity.clone(), c.body_hash)).collect()
}

on_both! {
    async fn listings_filter_page_and_count(t: TestStore) {
        for n in 0..5 {
            accept_at(&t, &format!("e{n}"), &["app", "audit"], UnixTime(T0.0 + n)).await;
        }
        t.accept(request("e0", b"other"), event("e0", b"other", &["app"])).await;
        let jobs = t.claim_jobs(ms(UnixTime(T0.0 + 10)), Duration::from_secs(30), 1, Vec::new()).await.unwrap();
        let dead = jobs[0].clone();
        let attempt = AttemptRecord { started_at: T0, latency: Duration::from_millis(7), status: Some(404), error: None, response_prefix: Some("no such hook".to_owned()), outcome: Attempted::Failed };
        t.complete_job(dead.clone(), attempt, Decision::Dead(idemgate_core::retry::DeadReason::FinalStatus(404)), ms(T0)).await.unwrap();

        let all = t.list_events(EventFilter { limit: 3, ..EventFilter::default() }).await.unwrap();
        let ids: Vec<_> = all.iter().map(|e| e.identity.as_str()).collect();
        assert_eq!(ids, ["e4", "e3", "e2"], "newest first");
        assert_eq!(all[0].jobs, [("app".to_owned(), "pending".to_owned()), ("audit".to_owned(), "pending".to_owned())]);
        let next = t.list_events(EventFilter { limit: 3, before_id: Some(all[2].id), ..EventFilter::default() }).await.unwrap();
        assert_eq!(next.iter().map(|e| e.identity.as_str()).collect::<Vec<_>>(), ["e1", "e0"]);
        let dead_only = EventFilter { state: Some("dead".to_owned()), limit: 10, ..EventFilter::default() };
        let listed = t.list_events(dead_only).await.unwrap();
        assert_eq!(listed.iter().map(|e| e.identity.as_str()).collect::<Vec<_>>(), [dead.key.identity.as_str()]);
        let window = EventFilter { since: Some(UnixTime(T0.0 + 1)), until: Some(UnixTime(T0.0 + 3)), limit: 10, ..EventFilter::default() };
        assert_eq!(t.list_events(window).await.unwrap().len(), 2);
        let by_prefix = EventFilter { identity_prefix: Some("e".to_owned()), limit: 10, ..EventFilter::default() };
        assert_eq!(t.list_events(by_prefix).await.unwrap().len(), 5);
        let exact = EventFilter { identity_prefix: Some("e3".to_owned()), limit: 10, ..EventFilter::default() };
        assert_eq!(t.list_events(exact).await.unwrap().iter().map(|e| e.identity.as_str()).collect::<Vec<_>>(), ["e3"]);
        let typed = EventFilter { event_type: Some("order.created".to_owned()), limit: 10, ..EventFilter::default() };
        assert_eq!(t.list_events(typed).await.unwrap().len(), 5);
        let other_type = EventFilter { event_type: Some("order.paid".to_owned()), limit: 10, ..EventFilter::default() };
        assert!(t.list_events(other_type).await.unwrap().is_empty());

        let attempts = t.attempts("test".to_owned(), dead.key.identity.to_string()).await.unwrap();
        assert_eq!(attempts.len(), 1);
        assert_eq!((attempts[0].status, attempts[0].latency_ms, attempts[0].attempt), (Some(404), 7, 1));
        assert_eq!(attempts[0].response_prefix.as_deref(), Some("no such hook"));
        let dead_record = t.jobs(dead.key.clone()).await.unwrap().into_iter().find(|j| j.id == dead.id).unwrap();
        assert_eq!(dead_record.last_error.as_deref(), Some("final status 404"));
        let dead_jobs = t.dead_jobs(10).await.unwrap();
        assert_eq!(dead_jobs.len(), 1);
        assert_eq!(dead_jobs[0].reason.as_deref(), Some(idemgate_core::retry::DeadReason::FinalStatus(404).describe().as_str()));

        let stats = t.stats(None).await.unwrap();
        assert_eq!(stats.len(), 1);
        assert_eq!((stats[0].receipts, stats[0].conflicts), (5, 1));
        assert_eq!(stats[0].jobs, [("dead".to_owned(), 1), ("pending".to_owned(), 9)]);
        assert_eq!(t.stats(Some(UnixTime(T0.0 + 3))).await.unwrap()[0].receipts, 2);
        assert_eq!(t.recent_conflicts(10).await.unwrap()[0].identity, "e0");
        let destinations = t.destinations().await.unwrap();
        assert_eq!(destinations.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(), ["app", "audit"]);
        assert!(destinations.iter().all(|d| d.disabled.is_none()));
        assert_eq!(t.job_states().await.unwrap(), [("dead".to_owned(), 1), ("pending".to_owned(), 9)]);
        assert_eq!(t.queue_states().await.unwrap(), [("dead".to_owned(), 1), ("pending".to_owned(), 9)]);
        assert_eq!(t.oldest_waiting_job().await.unwrap(), Some(T0));
    }

    async fn a_destination_shows_since_when_it_is_disabled_and_its_latest_success_and_failure(t: TestStore) {
        for identity in ["e1", "e2", "e3"] {
            accept_at(&t, identity, &["app", "gone"], T0).await;
        }
        let lease = Duration::from_secs(30);
        let mut claimed = t.claim_jobs(ms(T0), lease, 100, Vec::new()).await.unwrap();
        claimed.sort_by_key(|j| j.id);
        let mut app_seen = 0;
        for job in claimed {
            let (attempt, decision) = match job.destination.as_str() {
                "gone" => (at(5, Some(410)), Decision::DisableDestination),
                _ => {
                    app_seen += 1;
                    match app_seen {
                        1 => (at(1, Some(200)), Decision::Succeeded),
                        2 => (at(2, Some(503)), Decision::RetryAfter(Duration::from_secs(60))),
                        _ => (at(3, None), Decision::RetryAfter(Duration::from_secs(60))),
                    }
                }
            };
            t.complete_job(job, attempt, decision, ms(UnixTime(T0.0 + 5))).await.unwrap();
        }
        let all = t.destinations().await.unwrap();
        let app = all.iter().find(|d| d.name == "app").unwrap();
        assert_eq!((app.disabled.as_deref(), app.disabled_at), (None, None));
        assert_eq!(app.last_success, Some(UnixTime(T0.0 + 1)));
        let refused = FailedAttempt { at: UnixTime(T0.0 + 3), status: None, error: Some("connection refused".to_owned()) };
        assert_eq!(app.last_failure.as_ref(), Some(&refused), "the newest failure, not the 503 before it");
        assert_eq!(app.jobs, [("retrying".to_owned(), 2), ("succeeded".to_owned(), 1)]);
        let gone = all.iter().find(|d| d.name == "gone").unwrap();
        assert_eq!((gone.disabled.as_deref(), gone.disabled_at), (Some("410 Gone"), Some(UnixTime(T0.0 + 5))));
        assert_eq!(gone.last_success, None);
        assert_eq!(gone.last_failure.as_ref().map(|f| (f.at, f.status)), Some((UnixTime(T0.0 + 5), Some(410))));
    }

    async fn attempt_series_count_successes_failures_and_latency_per_bucket(t: TestStore) {
        for identity in ["e1", "e2", "e3"] {
            accept_at(&t, identity, &["app"], T0).await;
        }
        let mut claimed = t.claim_jobs(ms(T0), Duration::from_secs(30), 10, Vec::new()).await.unwrap();
        claimed.sort_by_key(|j| j.id);
        let attempts = [timed(1, 4, Some(200)), timed(2, 11, Some(503)), timed(65, 30, None)];
        for (job, attempt) in claimed.into_iter().zip(attempts) {
            let decision = if attempt.status == Some(200) { Decision::Succeeded } else { Decision::RetryAfter(Duration::from_secs(60)) };
            t.complete_job(job, attempt, decision, ms(UnixTime(T0.0 + 70))).await.unwrap();
        }
        let bucket = |start: i64, succeeded, failed, mean_latency_ms, max_latency_ms| AttemptBucket {
            destination: "app".to_owned(),
            start: UnixTime(T0.0 + start),
            succeeded,
            failed,
            mean_latency_ms,
            max_latency_ms,
        };
        assert_eq!(
            t.attempt_series(T0, 60).await.unwrap(),
            [bucket(0, 1, 1, 7, 11), bucket(60, 0, 1, 30, 30)],
            "the mean is rounded down on both backends"
        );
        assert_eq!(
            t.attempt_series(UnixTime(T0.0 + 2), 60).await.unwrap(),
            [bucket(2, 0, 1, 11, 11), bucket(62, 0, 1, 30, 30)],
            "buckets start at `since`; earlier attempts are left out"
        );
        assert!(t.attempt_series(UnixTime(T0.0 + 66), 60).await.unwrap().is_empty());
        let waiting = WaitingQueue { destination: "app".to_owned(), depth: 2, oldest: T0 };
        assert_eq!(t.waiting_queues().await.unwrap(), [waiting], "the two retrying jobs; the succeeded one is done");
    }

    async fn an_events_payload_is_read_by_its_id_until_retention_purges_it(t: TestStore) {
        accept_at(&t, "p1", &[], T0).await;
        let id = t.list_events(EventFilter { limit: 1, ..EventFilter::default() }).await.unwrap()[0].id;
        let payload = t.event_payload(id).await.unwrap().unwrap();
        assert_eq!((payload.source.as_str(), payload.identity.as_str()), ("test", "p1"));
        assert_eq!(payload.content_type.as_deref(), Some("application/json"));
        assert_eq!(payload.headers, [("x-trace".to_owned(), "abc".to_owned())]);
        assert_eq!(payload.body.as_deref(), Some(&b"{\"n\":\"p1\"}"[..]));
        assert_eq!(t.event_payload(id + 1).await.unwrap(), None);

        let keep = Retention { source: "test".to_owned(), receipts: Duration::from_secs(86_400), payloads: Duration::from_secs(10) };
        assert_eq!(t.purge(UnixTime(T0.0 + 100), vec![keep]).await.unwrap().payloads, 1);
        let purged = t.event_payload(id).await.unwrap().unwrap();
        assert_eq!(purged.body, None, "the payload is gone");
        assert_eq!(purged.headers.len(), 1, "the headers stay with the event");
    }

    async fn conflicts_are_counted_per_bucket_when_first_seen(t: TestStore) {
        for (identity, at) in [("c1", 0), ("c2", 0), ("c3", 70)] {
            accept_at(&t, identity, &[], T0).await;
            t.accept(crate::request_at(identity, b"other", UnixTime(T0.0 + at)), event(identity, b"other", &[])).await;
        }
        t.accept(crate::request_at("c1", b"third", UnixTime(T0.0 + 75)), event("c1", b"third", &[])).await;
        t.accept(crate::request_at("c2", b"other", UnixTime(T0.0 + 80)), event("c2", b"other", &[])).await;
        let bucket = |start: i64, conflicts| ConflictBucket { source: "test".to_owned(), start: UnixTime(T0.0 + start), conflicts };
        assert_eq!(
            t.conflict_series(T0, 60).await.unwrap(),
            [bucket(0, 2), bucket(60, 2)],
            "c1 and c2 first, then c3 and c1's third body; c2's repeat is no new conflict"
        );
        assert_eq!(t.conflict_series(UnixTime(T0.0 + 1), 3600).await.unwrap(), [bucket(1, 2)]);
    }

    async fn conflicts_list_with_their_event_filters_and_a_cursor(t: TestStore) {
        for (identity, at) in [("c1", 0), ("c2", 10), ("c3", 20)] {
            accept_at(&t, identity, &[], T0).await;
            t.accept(crate::request_at(identity, b"other", UnixTime(T0.0 + at)), event(identity, b"other", &[])).await;
        }
        t.accept(crate::request_at("c1", b"third", UnixTime(T0.0 + 30)), event("c1", b"third", &[])).await;
        t.accept(crate::request_at("c1", b"other", UnixTime(T0.0 + 40)), event("c1", b"other", &[])).await;
        let (other, third) = (BodyHash::of(b"other"), BodyHash::of(b"third"));

        let rows = all(&t, ConflictFilter::default()).await;
        assert_eq!(keys(&rows), [("c1".to_owned(), third), ("c3".to_owned(), other), ("c2".to_owned(), other), ("c1".to_owned(), other)], "newest first seen first");
        let c1 = rows.iter().find(|c| c.identity == "c1" && c.body_hash == other).unwrap();
        assert_eq!((c1.first_seen_at, c1.last_seen_at, c1.seen_count), (T0, UnixTime(T0.0 + 40), 2), "{c1:?}");
        let event_id = t.list_events(EventFilter { identity_prefix: Some("c1".to_owned()), limit: 1, ..EventFilter::default() }).await.unwrap()[0].id;
        assert_eq!(c1.event_id, Some(event_id), "each conflict names the event it contradicts");
        assert_eq!(t.recent_conflicts(10).await.unwrap()[0].event_id, Some(event_id), "the recent ones too");

        let only_c1 = all(&t, ConflictFilter { source: Some("test".to_owned()), identity: Some("c1".to_owned()), ..ConflictFilter::default() }).await;
        assert_eq!(keys(&only_c1), [("c1".to_owned(), third), ("c1".to_owned(), other)]);
        assert!(all(&t, ConflictFilter { source: Some("elsewhere".to_owned()), ..ConflictFilter::default() }).await.is_empty());
        assert!(all(&t, ConflictFilter { identity: Some("c".to_owned()), ..ConflictFilter::default() }).await.is_empty(), "an identity matches exactly");
        let seen_late = all(&t, ConflictFilter { since: Some(UnixTime(T0.0 + 20)), ..ConflictFilter::default() }).await;
        assert_eq!(keys(&seen_late), [("c1".to_owned(), third), ("c3".to_owned(), other), ("c1".to_owned(), other)], "last seen at or after since");
        let first_early = all(&t, ConflictFilter { until: Some(UnixTime(T0.0 + 20)), ..ConflictFilter::default() }).await;
        assert_eq!(keys(&first_early), [("c2".to_owned(), other), ("c1".to_owned(), other)], "first seen before until");

        let mut paged = Vec::new();
        let mut after = None;
        loop {
            let page = t.list_conflicts(ConflictFilter { after: after.clone(), limit: 3, ..ConflictFilter::default() }).await.unwrap();
            paged.extend(keys(&page));
            if page.len() < 3 { break; }
            after = page.last().map(ConflictRow::cursor);
        }
        assert_eq!(paged, keys(&rows), "pages of 3 list each conflict once, in order");
    }
}
