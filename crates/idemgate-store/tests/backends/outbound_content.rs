//! What the outbound API shows and keeps of a message's content: the messages an
//! endpoint was sent (with their delivery's status), the attempt lists' filters under
//! exact pagination, the content expunges (payload, attempt response), and the payload
//! retention of the store's sweep, which keeps every message's receipt.

use std::time::Duration;

use bytes::Bytes;
use idemgate_core::{
    UnixTime,
    outbound::{
        id::AttemptId,
        status::{MessageStatus, StatusClass},
    },
    retry::Decision,
};
use idemgate_store::{
    audit::{Action, AuditFilter},
    outbound::{
        Lookup, OutboundError, Resource,
        attempt::{AttemptFilter, AttemptIterator, AttemptQuery, AttemptedMessageQuery},
        message::{Accepted, CONTENT_EXPUNGED, MessageIn, MessageQuery, PAYLOAD_EXPIRED, RESPONSE_EXPUNGED},
    },
};

use crate::{
    TestStore, on_both, ops,
    outbound_applications::{NOW, app_in},
    outbound_attempts::{app_with_message, try_all},
    outbound_endpoints::new_endpoint,
};

const DAY_MS: i64 = 86_400_000;

fn message_in(event_id: &str, event_type: &str, channels: Option<&[&str]>, payload: &'static [u8]) -> MessageIn {
    MessageIn {
        event_id: Some(event_id.to_owned()),
        event_type: event_type.to_owned(),
        channels: channels.map(|list| list.iter().map(|c| (*c).to_owned()).collect()),
        payload: Bytes::from_static(payload),
        expires_at_ms: None,
        operation: None,
    }
}

async fn created(t: &TestStore, app: &str, input: MessageIn, at_ms: i64) -> String {
    match t.accept_message(Lookup::application(app), input, at_ms).await.unwrap() {
        Accepted::Created(message) => message.id,
        other => panic!("not created: {other:?}"),
    }
}

/// Application `acme` with endpoints `a` and `b` (both take everything) and three messages
/// `m1` (`user.signup` on `eu`), `m2` (`order.paid` on `us`), `m3`
/// (`user.signup`, no channel), 10 ms apart (ids are ordered to 4 ms). Answers the
/// message ids, oldest first.
async fn three_messages(t: &TestStore) -> [String; 3] {
    t.create_application(app_in("acme", Some("acme")), &ops(), NOW).await.unwrap();
    for uid in ["a", "b"] {
        let new = new_endpoint(&format!("https://{uid}.example.com/hook"), Some(uid), NOW);
        t.create_endpoint(Lookup::application("acme"), new, &ops(), NOW).await.unwrap();
    }
    [
        created(t, "acme", message_in("m1", "user.signup", Some(&["eu"]), b"{\"n\":1}"), NOW).await,
        created(t, "acme", message_in("m2", "order.paid", Some(&["us"]), b"{\"n\":2}"), NOW + 10).await,
        created(t, "acme", message_in("m3", "user.signup", None, b"{\"n\":3}"), NOW + 20).await,
    ]
}

/// Every attempt at endpoint `a` under `filter`, walked one page at a time with
/// `limit` 1, checked against the same list read in one page.
async fn walk(t: &TestStore, filter: AttemptFilter) -> Vec<(String, Option<u16>)> {
    let acme = Lookup::application("acme");
    let whole = AttemptQuery { filter: filter.clone(), ..AttemptQuery::newest(250) };
    let whole = t.attempts_by_endpoint(acme.clone(), Lookup::endpoint("a"), whole).await.unwrap();
    assert!(whole.done);
    let mut walked = Vec::new();
    let mut iterator = None;
    loop {
        let query = AttemptQuery { limit: 1, iterator, filter: filter.clone() };
        let page = t.attempts_by_endpoint(acme.clone(), Lookup::endpoint("a"), query).await.unwrap();
        walked.extend(page.data.iter().cloned());
        if page.done {
            break;
        }
        iterator = AttemptIterator::parse(page.iterator.as_deref().unwrap());
    }
    assert_eq!(walked, whole.data, "a walk under a filter neither skips nor repeats");
    whole.data.into_iter().map(|a| (a.msg_id, a.status_code)).collect()
}

on_both! {
    async fn an_endpoints_messages_read_newest_first_with_their_deliverys_status(t: TestStore) {
        let [m1, m2, m3] = three_messages(&t).await;
        app_with_message(&t, "other").await;
        let acme = Lookup::application("acme");
        let read = |query: AttemptedMessageQuery| t.attempted_messages(acme.clone(), Lookup::endpoint("a"), query);
        let all = |limit| AttemptedMessageQuery { messages: MessageQuery::newest(limit), status: None };

        let page = read(all(50)).await.unwrap();
        let ids: Vec<_> = page.data.iter().map(|m| m.message.id.clone()).collect();
        assert_eq!(ids, [m3.clone(), m2.clone(), m1.clone()]);
        let due: Vec<_> = page.data.iter().map(|m| (m.status, m.next_attempt_ms)).collect();
        assert_eq!(due, [(MessageStatus::Pending, Some(NOW)); 3], "due when accepted (to the second)");
        assert_eq!(page.data[2].message.payload.as_deref(), Some(&b"{\"n\":1}"[..]));

        // m1 delivered, the others failed once and wait.
        let claimed = t.claim_jobs(NOW + 1_000, crate::outbound_attempts::LEASE, 100, Vec::new()).await.unwrap();
        for job in claimed {
            let ok = job.outgoing_id == m1;
            let (status, decision) =
                if ok { (Some(200), Decision::Succeeded) } else { (Some(500), Decision::RetryAfter(Duration::from_secs(9))) };
            t.complete_job(job, crate::outbound_attempts::tried(NOW + 1_000, status), decision, NOW + 1_000).await.unwrap();
        }
        let page = read(all(50)).await.unwrap();
        let shown: Vec<_> = page.data.iter().map(|m| (m.message.id.clone(), m.status, m.next_attempt_ms)).collect();
        assert_eq!(shown, [
            (m3.clone(), MessageStatus::Pending, Some(NOW + 10_000)),
            (m2.clone(), MessageStatus::Pending, Some(NOW + 10_000)),
            (m1.clone(), MessageStatus::Success, None),
        ]);

        // The filters: the delivery's status, channel, event types, a time window.
        let only = |status| AttemptedMessageQuery { messages: MessageQuery::newest(50), status: Some(status) };
        let ids = |page: idemgate_store::outbound::Page<idemgate_store::outbound::attempt::AttemptedMessage>| {
            page.data.into_iter().map(|m| m.message.id).collect::<Vec<_>>()
        };
        assert_eq!(ids(read(only(MessageStatus::Success)).await.unwrap()), [m1.as_str()]);
        assert_eq!(ids(read(only(MessageStatus::Pending)).await.unwrap()), [m3.clone(), m2.clone()]);
        assert!(ids(read(only(MessageStatus::Sending)).await.unwrap()).is_empty());
        let on = |channel: &str| AttemptedMessageQuery {
            messages: MessageQuery { channel: Some(channel.to_owned()), ..MessageQuery::newest(50) },
            status: None,
        };
        assert_eq!(ids(read(on("eu")).await.unwrap()), [m1.as_str()]);
        let typed = AttemptedMessageQuery {
            messages: MessageQuery { event_types: Some(vec!["order.paid".to_owned()]), ..MessageQuery::newest(50) },
            status: None,
        };
        assert_eq!(ids(read(typed).await.unwrap()), [m2.as_str()]);
        let window = AttemptedMessageQuery {
            messages: MessageQuery { after_ms: Some(NOW), before_ms: Some(NOW + 20), ..MessageQuery::newest(50) },
            status: None,
        };
        assert_eq!(ids(read(window).await.unwrap()), [m2.as_str()]);

        // One page at a time, and back.
        let first = read(all(2)).await.unwrap();
        assert!(!first.done);
        let rest = AttemptedMessageQuery { messages: MessageQuery { iterator: first.iterator.clone(), ..MessageQuery::newest(2) }, status: None };
        let second = read(rest).await.unwrap();
        assert!(second.done);
        assert_eq!(ids(second.clone()), [m1.as_str()]);
        let back = AttemptedMessageQuery { messages: MessageQuery { iterator: second.prev_iterator.clone(), ..MessageQuery::newest(2) }, status: None };
        assert_eq!(ids(read(back).await.unwrap()), [m3, m2]);

        // Another application's endpoint is not found under this one.
        let err = t.attempted_messages(acme.clone(), Lookup::endpoint("other-hook"), all(50)).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Endpoint)), "{err:?}");
    }

    async fn attempt_filters_are_exact_under_pagination(t: TestStore) {
        let [m1, m2, m3] = three_messages(&t).await;
        let retry = Decision::RetryAfter(Duration::from_secs(1));
        try_all(&t, NOW + 10_000, Some(500), retry).await;
        try_all(&t, NOW + 20_000, None, retry).await;
        try_all(&t, NOW + 30_000, Some(200), Decision::Succeeded).await;

        let every = walk(&t, AttemptFilter::default()).await;
        assert_eq!(every.len(), 9, "three attempts of three messages at endpoint a");
        let codes = |list: Vec<(String, Option<u16>)>| list.into_iter().map(|(_, code)| code).collect::<Vec<_>>();
        let msgs = |list: Vec<(String, Option<u16>)>| {
            let mut ids: Vec<_> = list.into_iter().map(|(id, _)| id).collect();
            ids.dedup();
            ids
        };
        let status = |status| AttemptFilter { status: Some(status), ..AttemptFilter::default() };
        assert_eq!(codes(walk(&t, status(MessageStatus::Success)).await), [Some(200); 3]);
        assert_eq!(codes(walk(&t, status(MessageStatus::Fail)).await), [None, None, None, Some(500), Some(500), Some(500)]);
        assert!(walk(&t, status(MessageStatus::Pending)).await.is_empty(), "an attempt is never pending");
        let class = |code| AttemptFilter { status_code_class: StatusClass::from_code(code), ..AttemptFilter::default() };
        assert_eq!(codes(walk(&t, class(0)).await), [None; 3], "no answer is class 0");
        assert_eq!(codes(walk(&t, class(500)).await), [Some(500); 3]);
        assert!(walk(&t, class(400)).await.is_empty());
        let channel = AttemptFilter { channel: Some("eu".to_owned()), ..AttemptFilter::default() };
        assert_eq!(msgs(walk(&t, channel).await), [m1.as_str()]);
        let types = AttemptFilter { event_types: Some(vec!["user.signup".to_owned()]), ..AttemptFilter::default() };
        let signups = walk(&t, types).await;
        assert_eq!(signups.len(), 6);
        assert!(signups.iter().all(|(id, _)| *id == m1 || *id == m3), "{signups:?}");
        assert!(!signups.iter().any(|(id, _)| *id == m2));
        let window = AttemptFilter { after_ms: Some(NOW + 10_000), before_ms: Some(NOW + 30_000), ..AttemptFilter::default() };
        assert_eq!(codes(walk(&t, window).await), [None; 3], "only the attempts strictly inside the window");
        let combined = AttemptFilter {
            status: Some(MessageStatus::Fail),
            event_types: Some(vec!["user.signup".to_owned()]),
            before_ms: Some(NOW + 30_000),
            ..AttemptFilter::default()
        };
        assert_eq!(walk(&t, combined).await.len(), 4);

        // By message: at one endpoint (id or uid); an endpoint that is not the app's is 404.
        let acme = Lookup::application("acme");
        let at_b = AttemptQuery {
            filter: AttemptFilter { endpoint: Some(Lookup::endpoint("b")), ..AttemptFilter::default() },
            ..AttemptQuery::newest(50)
        };
        let page = t.attempts_by_message(acme.clone(), Lookup::message(&m2), at_b).await.unwrap();
        assert_eq!(page.data.len(), 3);
        let b = page.data[0].endpoint_id.clone();
        assert!(page.data.iter().all(|a| a.endpoint_id == b && a.msg_id == m2));
        let every = t.attempts_by_message(acme.clone(), Lookup::message(&m2), AttemptQuery::newest(50)).await.unwrap();
        assert_eq!(every.data.len(), 6);
        let nowhere = AttemptQuery {
            filter: AttemptFilter { endpoint: Some(Lookup::endpoint("nope")), ..AttemptFilter::default() },
            ..AttemptQuery::newest(50)
        };
        let err = t.attempts_by_message(acme, Lookup::message(&m2), nowhere).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Endpoint)), "{err:?}");
    }

    async fn an_expunged_message_keeps_its_receipt_and_its_waiting_deliveries_end(t: TestStore) {
        let msg = app_with_message(&t, "acme").await;
        let acme = Lookup::application("acme");
        t.expunge_message_content(acme.clone(), Lookup::message("acme-event"), &ops(), NOW + 5).await.unwrap();

        let stored = t.message(acme.clone(), Lookup::message(&msg)).await.unwrap().unwrap();
        assert_eq!(stored.payload, None, "the payload is gone");
        assert_eq!(stored.event_id.as_deref(), Some("acme-event"));
        // Its waiting delivery ended, saying why; nothing is claimed to send an empty body.
        assert!(t.claim_jobs(NOW + 60_000, crate::outbound_attempts::LEASE, 100, Vec::new()).await.unwrap().is_empty());
        let dead = t.dead_jobs(10).await.unwrap();
        assert_eq!(dead.iter().map(|d| d.reason.as_deref()).collect::<Vec<_>>(), [Some(CONTENT_EXPUNGED)]);
        // The receipt stays: the same eventId and payload is the original message, other
        // content is a conflict.
        let again = MessageIn {
            event_id: Some("acme-event".to_owned()),
            event_type: "user.signup".to_owned(),
            channels: None,
            payload: Bytes::from_static(b"{}"),
            expires_at_ms: None,
            operation: None,
        };
        match t.accept_message(acme.clone(), again.clone(), NOW + 10).await.unwrap() {
            Accepted::Duplicate(original) => assert_eq!((original.id, original.payload), (msg.clone(), None)),
            other => panic!("not a duplicate: {other:?}"),
        }
        let other = MessageIn { payload: Bytes::from_static(b"{\"x\":1}"), ..again };
        assert_eq!(t.accept_message(acme.clone(), other, NOW + 10).await.unwrap(), Accepted::Conflict);
        let expunges = AuditFilter { action: Some(Action::MessageContentExpunge), ..AuditFilter::default() };
        let log = t.audit_log(expunges).await.unwrap();
        let expected = format!("message {}/{msg}", stored.app_id);
        assert_eq!(log.iter().map(|r| (r.token.as_str(), r.affected, r.target.as_str())).collect::<Vec<_>>(), [("ops", 1, expected.as_str())]);

        let err = t.expunge_message_content(acme, Lookup::message("nope"), &ops(), NOW).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Message)), "{err:?}");
    }

    async fn an_expunged_attempt_response_reads_expunged(t: TestStore) {
        let msg = app_with_message(&t, "acme").await;
        let other_msg = app_with_message(&t, "other").await;
        try_all(&t, NOW + 1_000, Some(500), Decision::RetryAfter(Duration::from_secs(1))).await;
        let acme = Lookup::application("acme");
        let attempts = t.attempts_by_message(acme.clone(), Lookup::message(&msg), AttemptQuery::newest(50)).await.unwrap();
        let attempt = &attempts.data[0];
        assert_eq!(attempt.response, "answer 500");
        let row = AttemptId::parse(&attempt.id).unwrap().row().unwrap();
        let theirs = t.attempts_by_message(Lookup::application("other"), Lookup::message(&other_msg), AttemptQuery::newest(50)).await.unwrap();
        let their_row = AttemptId::parse(&theirs.data[0].id).unwrap().row().unwrap();

        // An attempt of another message (here: another application's) is not found.
        let err = t.expunge_attempt_content(acme.clone(), Lookup::message(&msg), their_row, &ops(), NOW).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Attempt)), "{err:?}");
        t.expunge_attempt_content(acme.clone(), Lookup::message(&msg), row, &ops(), NOW).await.unwrap();
        let read = t.attempt(acme.clone(), Lookup::message(&msg), row).await.unwrap().unwrap();
        assert_eq!(read.response, RESPONSE_EXPUNGED);
        assert_eq!((read.id.as_str(), read.status_code), (attempt.id.as_str(), Some(500)), "the rest stays");
        let untouched = t.attempt(Lookup::application("other"), Lookup::message(&other_msg), their_row).await.unwrap().unwrap();
        assert_eq!(untouched.response, "answer 500");
        // The message's payload is not the attempt's: it stays.
        assert!(t.message(acme, Lookup::message(&msg)).await.unwrap().unwrap().payload.is_some());
    }

    async fn the_sweep_purges_expired_payloads_and_responses_and_keeps_receipts(t: TestStore) {
        t.create_application(app_in("acme", Some("acme")), &ops(), NOW).await.unwrap();
        let new = new_endpoint("https://acme.example.com/hook", Some("hook"), NOW);
        t.create_endpoint(Lookup::application("acme"), new, &ops(), NOW).await.unwrap();
        let short = MessageIn { expires_at_ms: Some(NOW + 5 * DAY_MS), ..message_in("short", "a.b", None, b"{\"k\":1}") };
        let waiting = MessageIn { expires_at_ms: Some(NOW + 5 * DAY_MS), ..message_in("waiting", "a.b", None, b"{\"k\":2}") };
        let long = MessageIn { expires_at_ms: Some(NOW + 90 * DAY_MS), ..message_in("long", "a.b", None, b"{\"k\":3}") };
        let short_id = created(&t, "acme", short.clone(), NOW).await;
        created(&t, "acme", long, NOW).await;
        // Every job is tried once and answered 500; "short" then succeeds, the others wait.
        try_all(&t, NOW + 1_000, Some(500), Decision::RetryAfter(Duration::from_secs(86_400 * 30))).await;
        created(&t, "acme", waiting, NOW + 2_000).await;
        try_all(&t, NOW + 3_000, Some(503), Decision::RetryAfter(Duration::from_secs(86_400 * 30))).await;
        let acme = Lookup::application("acme");
        let payload = |id: &'static str| {
            let acme = acme.clone();
            let t = &t;
            async move { t.message(acme, Lookup::message(id)).await.unwrap().unwrap().payload }
        };
        let response = |id: &'static str| {
            let acme = acme.clone();
            let t = &t;
            async move {
                let page = t.attempts_by_message(acme, Lookup::message(id), AttemptQuery::newest(50)).await.unwrap();
                page.data.into_iter().map(|a| a.response).collect::<Vec<_>>()
            }
        };

        // Before the retention ends nothing goes.
        let report = t.purge(UnixTime((NOW + 5 * DAY_MS - 1_000) / 1000), Vec::new()).await.unwrap();
        assert_eq!(report.payloads, 0);
        assert_eq!(payload("short").await.as_deref(), Some(&b"{\"k\":1}"[..]));
        assert_eq!(response("short").await, ["answer 500"]);

        let report = t.purge(UnixTime((NOW + 5 * DAY_MS) / 1000), Vec::new()).await.unwrap();
        assert_eq!(report.payloads, 2, "short and waiting");
        assert_eq!(payload("short").await, None);
        assert_eq!(payload("waiting").await, None);
        assert_eq!(response("waiting").await, [""]);
        assert_eq!(response("short").await, [""], "the attempt stays, its stored response goes");
        assert_eq!(payload("long").await.as_deref(), Some(&b"{\"k\":3}"[..]));
        assert_eq!(response("long").await, ["answer 500"]);
        // Their waiting deliveries end: nothing is left to send.
        let dead = t.dead_jobs(10).await.unwrap();
        assert_eq!(dead.len(), 2, "{dead:?}");
        assert!(dead.iter().all(|d| d.reason.as_deref() == Some(PAYLOAD_EXPIRED)), "{dead:?}");
        // The receipt stays: a repeat is still the original message, other content a conflict.
        match t.accept_message(acme.clone(), short.clone(), NOW + 6 * DAY_MS).await.unwrap() {
            Accepted::Duplicate(original) => assert_eq!((original.id, original.payload), (short_id, None)),
            other => panic!("not a duplicate: {other:?}"),
        }
        let other = MessageIn { payload: Bytes::from_static(b"{\"k\":9}"), ..short };
        assert_eq!(t.accept_message(acme, other, NOW + 6 * DAY_MS).await.unwrap(), Accepted::Conflict);
        // A second sweep finds nothing more.
        let report = t.purge(UnixTime((NOW + 6 * DAY_MS) / 1000), Vec::new()).await.unwrap();
        assert_eq!(report.payloads, 0);
    }
}
