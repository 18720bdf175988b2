//! Resends and recoveries of the outbound API: the existing job of (message, endpoint)
//! made due again in one transaction, marked manual so its attempts read as `Manual`;
//! a recovery only of the endpoint's dead jobs whose message is in its range.

use std::time::Duration;

use bytes::Bytes;
use idemgate_core::{
    UnixTime,
    retry::{Attempted, DeadReason, Decision},
};
use idemgate_store::{
    audit::{Action, Actor, AuditFilter},
    jobs::AttemptRecord,
    outbound::{
        Lookup, OutboundError, Resource,
        attempt::AttemptQuery,
        endpoint::EndpointPatch,
        message::{Accepted, MessageIn},
        redelivery::{Recovery, Resent},
    },
};

use crate::{
    TestStore, on_both, ops,
    outbound_applications::{NOW, app_in},
    outbound_endpoints::new_endpoint,
};

const LEASE: Duration = Duration::from_secs(30);

fn tried(at_ms: i64, status: u16) -> AttemptRecord {
    AttemptRecord {
        started_at: UnixTime(at_ms / 1000),
        latency: Duration::from_millis(5),
        status: Some(status),
        error: None,
        response_prefix: None,
        outcome: if (200..300).contains(&status) { Attempted::Succeeded } else { Attempted::Failed },
    }
}

/// Publishes a message `event_id` to the application `app` at `at_ms`; answers its id.
async fn publish(t: &TestStore, app: &str, event_id: &str, at_ms: i64) -> String {
    let message = MessageIn {
        event_id: Some(event_id.to_owned()),
        event_type: "user.signup".to_owned(),
        channels: None,
        payload: Bytes::from_static(b"{\"n\":1}"),
        expires_at_ms: None,
        operation: None,
    };
    match t.accept_message(Lookup::application(app), message, at_ms).await.unwrap() {
        Accepted::Created(message) => message.id,
        other => panic!("not created: {other:?}"),
    }
}

/// Claims every due job at `at_ms` and finishes each with one attempt answered `status`;
/// answers the (job, outgoing id) pairs it claimed.
async fn attempt_all(t: &TestStore, at_ms: i64, status: u16) -> Vec<(i64, String)> {
    let claimed = t.claim_jobs(at_ms, LEASE, 100, Vec::new()).await.unwrap();
    let mut done = Vec::new();
    for job in claimed {
        done.push((job.id, job.outgoing_id.clone()));
        let decision = if status < 300 { Decision::Succeeded } else { Decision::Dead(DeadReason::AttemptsExhausted) };
        t.complete_job(job, tried(at_ms, status), decision, at_ms).await.unwrap();
    }
    done
}

async fn setup(t: &TestStore, uid: &str) {
    t.create_application(app_in(uid, Some(uid)), &ops(), NOW).await.unwrap();
    let hook = new_endpoint(&format!("https://{uid}.example.com/hook"), Some(&format!("{uid}-hook")), NOW);
    t.create_endpoint(Lookup::application(uid), hook, &ops(), NOW).await.unwrap();
}

on_both! {
    async fn a_resend_replays_the_same_job_and_its_attempts_read_manual(t: TestStore) {
        setup(&t, "acme").await;
        setup(&t, "other").await;
        let acme = Lookup::application("acme");
        let msg = publish(&t, "acme", "e1", NOW).await;
        let other_msg = publish(&t, "other", "o1", NOW).await;
        let first = attempt_all(&t, NOW + 1_000, 400).await;
        assert_eq!(first.len(), 2);

        let resent = t.resend_message(acme.clone(), Lookup::message(&msg), Lookup::endpoint("acme-hook"), &Actor::token("backend"), NOW + 5_000).await.unwrap();
        assert_eq!(resent, Resent::Due);
        let again = attempt_all(&t, NOW + 5_000, 200).await;
        let acme_job = first.iter().find(|(_, id)| *id == msg).unwrap().clone();
        assert_eq!(again, [acme_job], "the same job, under the message's id; the other app's stays dead");

        let attempts = t.attempts_by_message(acme.clone(), Lookup::message(&msg), AttemptQuery::newest(10)).await.unwrap().data;
        let manual: Vec<_> = attempts.iter().map(|a| (a.status_code, a.manual)).collect();
        assert_eq!(manual, [(Some(200), true), (Some(400), false)]);
        let resends = AuditFilter { limit: 10, action: Some(Action::MessageResend), ..AuditFilter::default() };
        let logged = t.audit_log(resends).await.unwrap();
        assert_eq!(logged.iter().map(|r| (r.token.as_str(), r.affected)).collect::<Vec<_>>(), [("backend", 1)]);

        // By eventId and endpoint uid alike; a waiting job is made due now, a running one left.
        assert_eq!(t.resend_message(acme.clone(), Lookup::message("e1"), Lookup::endpoint("acme-hook"), &ops(), NOW + 6_000).await.unwrap(), Resent::Due);
        let running = t.claim_jobs(NOW + 6_000, LEASE, 10, Vec::new()).await.unwrap();
        assert_eq!(running.len(), 1);
        assert_eq!(t.resend_message(acme.clone(), Lookup::message(&msg), Lookup::endpoint("acme-hook"), &ops(), NOW + 6_000).await.unwrap(), Resent::Sending);

        // Another application's message, a message never sent to the endpoint, a disabled
        // or deleted endpoint: refused, nothing changed.
        let err = t.resend_message(acme.clone(), Lookup::message(&other_msg), Lookup::endpoint("acme-hook"), &ops(), NOW).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Message)), "{err:?}");
        let later = new_endpoint("https://acme.example.com/later", Some("later"), NOW);
        t.create_endpoint(acme.clone(), later, &ops(), NOW + 7_000).await.unwrap();
        let err = t.resend_message(acme.clone(), Lookup::message(&msg), Lookup::endpoint("later"), &ops(), NOW).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Message)), "{err:?}");
        let off = EndpointPatch { disabled: Some(true), ..EndpointPatch::default() };
        t.patch_endpoint(acme.clone(), Lookup::endpoint("later"), off, &ops(), NOW + 8_000).await.unwrap();
        let err = t.resend_message(acme.clone(), Lookup::message(&msg), Lookup::endpoint("later"), &ops(), NOW).await.unwrap_err();
        assert!(matches!(err, OutboundError::EndpointDisabled), "{err:?}");
        t.delete_endpoint(acme.clone(), Lookup::endpoint("later"), &ops(), NOW + 9_000).await.unwrap();
        let err = t.resend_message(acme.clone(), Lookup::message(&msg), Lookup::endpoint("later"), &ops(), NOW).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Endpoint)), "{err:?}");
        let err = t.resend_message(Lookup::application("nobody"), Lookup::message(&msg), Lookup::endpoint("acme-hook"), &ops(), NOW).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Application)), "{err:?}");
    }

    async fn a_recovery_replays_only_the_dead_jobs_of_messages_in_its_range(t: TestStore) {
        setup(&t, "acme").await;
        let acme = Lookup::application("acme");
        let before = publish(&t, "acme", "before", NOW).await;
        let inside = publish(&t, "acme", "inside", NOW + 1_000).await;
        let delivered = publish(&t, "acme", "delivered", NOW + 1_500).await;
        let at_until = publish(&t, "acme", "at-until", NOW + 2_000).await;
        assert_eq!(attempt_all(&t, NOW + 3_000, 400).await.len(), 4);
        // `delivered` is delivered on a resend: it is not failed any more.
        t.resend_message(acme.clone(), Lookup::message(&delivered), Lookup::endpoint("acme-hook"), &ops(), NOW + 4_000).await.unwrap();
        assert_eq!(attempt_all(&t, NOW + 4_000, 200).await.len(), 1);
        assert!(t.claim_jobs(NOW + 5_000, LEASE, 10, Vec::new()).await.unwrap().is_empty());

        let range = Recovery { since_ms: NOW + 1_000, until_ms: NOW + 2_000 };
        let off = EndpointPatch { disabled: Some(true), ..EndpointPatch::default() };
        t.patch_endpoint(acme.clone(), Lookup::endpoint("acme-hook"), off, &ops(), NOW + 5_000).await.unwrap();
        let err = t.recover_endpoint(acme.clone(), Lookup::endpoint("acme-hook"), range, &ops(), NOW + 5_000).await.unwrap_err();
        assert!(matches!(err, OutboundError::EndpointDisabled), "{err:?}");
        let on = EndpointPatch { disabled: Some(false), ..EndpointPatch::default() };
        t.patch_endpoint(acme.clone(), Lookup::endpoint("acme-hook"), on, &ops(), NOW + 5_000).await.unwrap();

        assert_eq!(t.recover_endpoint(acme.clone(), Lookup::endpoint("acme-hook"), range, &ops(), NOW + 6_000).await.unwrap(), 1);
        let sent = attempt_all(&t, NOW + 6_000, 200).await;
        assert_eq!(sent.iter().map(|(_, id)| id.as_str()).collect::<Vec<_>>(), [inside.as_str()]);
        let attempts = t.attempts_by_message(acme.clone(), Lookup::message(&inside), AttemptQuery::newest(10)).await.unwrap().data;
        assert_eq!(attempts.iter().map(|a| a.manual).collect::<Vec<_>>(), [true, false]);
        // Recovered and delivered: a second recovery finds nothing; the others stay dead.
        assert_eq!(t.recover_endpoint(acme.clone(), Lookup::endpoint("acme-hook"), range, &ops(), NOW + 7_000).await.unwrap(), 0);
        let wide = Recovery { since_ms: NOW, until_ms: NOW + 2_001 };
        assert_eq!(t.recover_endpoint(acme, Lookup::endpoint("acme-hook"), wide, &ops(), NOW + 8_000).await.unwrap(), 2);
        let rest = attempt_all(&t, NOW + 8_000, 200).await;
        let mut ids: Vec<_> = rest.iter().map(|(_, id)| id.clone()).collect();
        ids.sort();
        let mut expected = vec![before, at_until];
        expected.sort();
        assert_eq!(ids, expected);
    }

    async fn an_example_goes_to_its_endpoint_alone_whatever_its_filters(t: TestStore) {
        setup(&t, "acme").await;
        let acme = Lookup::application("acme");
        let mut picky = new_endpoint("https://acme.example.com/picky", Some("picky"), NOW);
        picky.endpoint.event_types = Some(vec!["order.paid".to_owned()]);
        t.create_endpoint(acme.clone(), picky, &ops(), NOW).await.unwrap();
        let example = MessageIn {
            event_id: None,
            event_type: "user.signup".to_owned(),
            channels: None,
            payload: Bytes::from_static(b"{\"example\":true}"),
            expires_at_ms: None,
            operation: None,
        };
        let Accepted::Created(sent) = t.accept_message_to(acme.clone(), Lookup::endpoint("picky"), example.clone(), NOW).await.unwrap() else {
            panic!("not created");
        };
        let claimed = t.claim_jobs(NOW, LEASE, 10, Vec::new()).await.unwrap();
        let to: Vec<_> = claimed.iter().map(|job| (job.outgoing_id.as_str(), job.body.as_ref())).collect();
        assert_eq!(to, [(sent.id.as_str(), &b"{\"example\":true}"[..])]);
        let picky_id = t.endpoint(acme.clone(), Lookup::endpoint("picky")).await.unwrap().unwrap().id;
        assert_eq!(claimed[0].destination, picky_id);

        let err = t.accept_message_to(acme.clone(), Lookup::endpoint("nobody"), example.clone(), NOW).await.unwrap_err();
        assert!(matches!(err, OutboundError::NotFound(Resource::Endpoint)), "{err:?}");
        let off = EndpointPatch { disabled: Some(true), ..EndpointPatch::default() };
        t.patch_endpoint(acme.clone(), Lookup::endpoint("picky"), off, &ops(), NOW).await.unwrap();
        let err = t.accept_message_to(acme.clone(), Lookup::endpoint("picky"), example, NOW).await.unwrap_err();
        assert!(matches!(err, OutboundError::EndpointDisabled), "{err:?}");
        let listed = t.list_messages(acme, idemgate_store::outbound::message::MessageQuery::newest(10)).await.unwrap();
        assert_eq!(listed.data.len(), 1, "a refused example stores nothing");
    }
}
