//! Message attempts of the outbound API: a message's tries at its endpoints, read from the
//! gateway's `attempts` rows newest first by message, by endpoint and one by one, each
//! only within the application the path names.

use std::time::Duration;

use bytes::Bytes;
use idemgate_core::{
    UnixTime,
    outbound::{id::AttemptId, status::MessageStatus},
    retry::{Attempted, Decision},
};
use idemgate_store::{
    jobs::AttemptRecord,
    outbound::{
        ListQuery, Lookup, OutboundError, Resource,
        attempt::{AttemptIterator, AttemptQuery, EndpointStats},
        message::{Accepted, MessageIn},
    },
};

use crate::{
    TestStore, on_both, ops,
    outbound_applications::{NOW, app_in},
    outbound_endpoints::new_endpoint,
};

pub const LEASE: Duration = Duration::from_secs(30);

pub fn tried(started_at_ms: i64, status: Option<u16>) -> AttemptRecord {
    AttemptRecord {
        started_at: UnixTime(started_at_ms / 1000),
        latency: Duration::from_millis(12),
        status,
        error: status.is_none().then(|| "connection refused".to_owned()),
        response_prefix: status.map(|code| format!("answer {code}")),
        outcome: if status.is_some_and(|s| (200..300).contains(&s)) { Attempted::Succeeded } else { Attempted::Failed },
    }
}

/// An application `uid` with one endpoint `{uid}-hook` and one message `{uid}-event`;
/// answers the message's id.
pub async fn app_with_message(t: &TestStore, uid: &str) -> String {
    t.create_application(app_in(uid, Some(uid)), &ops(), NOW).await.unwrap();
    let app = Lookup::application(uid);
    let new = new_endpoint(&format!("https://{uid}.example.com/hook"), Some(&format!("{uid}-hook")), NOW);
    t.create_endpoint(app.clone(), new, &ops(), NOW).await.unwrap();
    let message = MessageIn {
        event_id: Some(format!("{uid}-event")),
        event_type: "user.signup".to_owned(),
        channels: None,
        payload: Bytes::from_static(b"{}"),
        expires_at_ms: None,
        operation: None,
    };
    match t.accept_message(app, message, NOW).await.unwrap() {
        Accepted::Created(message) => message.id,
        other => panic!("not created: {other:?}"),
    }
}

/// Claims every due job at `at_ms` and finishes each with one attempt answered `status`.
pub async fn try_all(t: &TestStore, at_ms: i64, status: Option<u16>, decision: Decision) {
    let claimed = t.claim_jobs(at_ms, LEASE, 100, Vec::new()).await.unwrap();
    assert!(!claimed.is_empty());
    for job in claimed {
        t.complete_job(job, tried(at_ms, status), decision, at_ms).await.unwrap();
    }
}

on_both! {
    async fn attempts_read_newest_first_within_their_application(t: TestStore) {
        let msg = app_with_message(&t, "acme").await;
        let other_msg = app_with_message(&t, "other").await;
        try_all(&t, NOW + 1_000, Some(500), Decision::RetryAfter(Duration::from_secs(1))).await;
        try_all(&t, NOW + 10_000, Some(200), Decision::Succeeded).await;
        let acme = Lookup::application("acme");

        let page = t.attempts_by_message(acme.clone(), Lookup::message(&msg), AttemptQuery::newest(50)).await.unwrap();
        assert!(page.done);
        let codes: Vec<_> = page.data.iter().map(|a| a.status_code).collect();
        assert_eq!(codes, [Some(200), Some(500)]);
        let newest = &page.data[0];
        assert!(newest.id.starts_with("atmpt_"), "{}", newest.id);
        assert_eq!(newest.msg_id, msg);
        assert_eq!(newest.url, "https://acme.example.com/hook");
        assert_eq!(newest.response, "answer 200");
        assert_eq!(newest.duration_ms, 12);
        assert_eq!(newest.started_at_ms, NOW + 10_000);
        assert_eq!(newest.status(), MessageStatus::Success);
        assert_eq!(page.data[1].status(), MessageStatus::Fail);

        // By eventId, by endpoint (id or uid), and one page at a time.
        let by_event = t.attempts_by_message(acme.clone(), Lookup::message("acme-event"), AttemptQuery::newest(50)).await.unwrap();
        assert_eq!(by_event.data, page.data);
        let by_uid = t.attempts_by_endpoint(acme.clone(), Lookup::endpoint("acme-hook"), AttemptQuery::newest(50)).await.unwrap();
        assert_eq!(by_uid.data, page.data);
        let by_id = t.attempts_by_endpoint(acme.clone(), Lookup::endpoint(&newest.endpoint_id), AttemptQuery::newest(50)).await.unwrap();
        assert_eq!(by_id.data, page.data);
        let first = t.attempts_by_message(acme.clone(), Lookup::message(&msg), AttemptQuery::newest(1)).await.unwrap();
        assert_eq!((first.data.as_slice(), first.done), (&page.data[..1], false));
        let next = AttemptIterator::parse(first.iterator.as_deref().unwrap());
        let second = t.attempts_by_message(acme.clone(), Lookup::message(&msg), AttemptQuery { iterator: next, ..AttemptQuery::newest(1) }).await.unwrap();
        assert_eq!((second.data.as_slice(), second.done), (&page.data[1..], true));
        let back = AttemptIterator::parse(second.prev_iterator.as_deref().unwrap());
        let again = t.attempts_by_message(acme.clone(), Lookup::message(&msg), AttemptQuery { iterator: back, ..AttemptQuery::newest(1) }).await.unwrap();
        assert_eq!(again.data, first.data);

        // One attempt, by the row its id names.
        let row = AttemptId::parse(&newest.id).unwrap().row().unwrap();
        assert_eq!(t.attempt(acme.clone(), Lookup::message(&msg), row).await.unwrap().as_ref(), Some(newest));

        // Another application's message, endpoint or attempt is not found under this one.
        let err = t.attempts_by_message(acme.clone(), Lookup::message(&other_msg), AttemptQuery::newest(50)).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Message)), "{err:?}");
        let err = t.attempts_by_endpoint(acme.clone(), Lookup::endpoint("other-hook"), AttemptQuery::newest(50)).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Endpoint)), "{err:?}");
        let other = Lookup::application("other");
        assert_eq!(t.attempt(other.clone(), Lookup::message(&other_msg), row).await.unwrap(), None);
        let err = t.attempt(other, Lookup::message(&msg), row).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Message)), "{err:?}");
        let mine = t.attempts_by_message(Lookup::application("other"), Lookup::message(&other_msg), AttemptQuery::newest(50)).await.unwrap();
        assert_eq!(mine.data.len(), 2);
        assert!(mine.data.iter().all(|a| a.msg_id == other_msg && a.url == "https://other.example.com/hook"));
    }

    async fn endpoint_stats_count_its_messages_deliveries_by_status(t: TestStore) {
        app_with_message(&t, "acme").await;
        app_with_message(&t, "other").await;
        let (acme, hook) = (Lookup::application("acme"), Lookup::endpoint("acme-hook"));
        let stats = |since, until| t.endpoint_stats(acme.clone(), hook.clone(), since, until);
        assert_eq!(stats(NOW, NOW + 1).await.unwrap(), EndpointStats { pending: 1, ..EndpointStats::default() });
        try_all(&t, NOW + 1_000, Some(500), Decision::RetryAfter(Duration::from_secs(1))).await;
        assert_eq!(stats(NOW, NOW + 1).await.unwrap(), EndpointStats { pending: 1, ..EndpointStats::default() });
        try_all(&t, NOW + 10_000, Some(200), Decision::Succeeded).await;
        assert_eq!(stats(NOW, NOW + 1).await.unwrap(), EndpointStats { success: 1, ..EndpointStats::default() });
        // The range is [since, until): a message at `until` is outside it.
        assert_eq!(stats(NOW - 10, NOW).await.unwrap(), EndpointStats::default());
        assert_eq!(stats(NOW + 1, NOW + 100).await.unwrap(), EndpointStats::default());
        let err = t.endpoint_stats(acme.clone(), Lookup::endpoint("other-hook"), NOW, NOW + 1).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Endpoint)), "{err:?}");
    }

    async fn a_messages_destinations_read_with_their_deliverys_status(t: TestStore) {
        let msg = app_with_message(&t, "acme").await;
        let other_msg = app_with_message(&t, "other").await;
        let acme = Lookup::application("acme");
        let read = || t.attempted_destinations(acme.clone(), Lookup::message(&msg), ListQuery::first(50));
        try_all(&t, NOW + 1_000, Some(500), Decision::RetryAfter(Duration::from_secs(1))).await;
        let page = read().await.unwrap();
        assert!(page.done);
        let shown: Vec<_> = page.data.iter().map(|d| (d.endpoint.uid.as_deref(), d.status, d.next_attempt_ms)).collect();
        assert_eq!(shown, [(Some("acme-hook"), MessageStatus::Pending, Some(NOW + 2_000))]);
        try_all(&t, NOW + 10_000, Some(200), Decision::Succeeded).await;
        let page = read().await.unwrap();
        let shown: Vec<_> = page.data.iter().map(|d| (d.endpoint.uid.as_deref(), d.status, d.next_attempt_ms)).collect();
        assert_eq!(shown, [(Some("acme-hook"), MessageStatus::Success, None)]);
        let err = t.attempted_destinations(acme, Lookup::message(&other_msg), ListQuery::first(50)).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Message)), "{err:?}");
    }
}
