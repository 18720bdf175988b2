//! Messages of the outbound API: one transaction stores the receipt, the event, the
//! message and one job per enabled, live, matching endpoint; a repeat of an `eventId`
//! is the original message (same payload) or a conflict (other payload), writing
//! nothing; racers make one message; reads find it by id or `eventId` and list newest first.

use std::sync::Arc;

use bytes::Bytes;
use idemgate_store::outbound::{
    Lookup, OutboundError, Resource,
    application::Deletion,
    endpoint::{EndpointIn, EndpointPatch},
    message::{Accepted, Message, MessageIn, MessageQuery},
};

use crate::{
    TestStore, on_both, ops,
    outbound_applications::{NOW, app_in},
    outbound_endpoints::new_endpoint,
};

fn message(event_id: Option<&str>, event_type: &str, payload: &'static [u8]) -> MessageIn {
    MessageIn {
        event_id: event_id.map(str::to_owned),
        event_type: event_type.to_owned(),
        channels: None,
        payload: Bytes::from_static(payload),
        expires_at_ms: None,
        operation: None,
    }
}

fn created(accepted: Accepted) -> Message {
    match accepted {
        Accepted::Created(message) => message,
        other => panic!("not created: {other:?}"),
    }
}

/// Jobs of every state, counted.
async fn job_count(t: &TestStore) -> u64 {
    t.job_states().await.unwrap().iter().map(|(_, n)| n).sum()
}

/// A change to a new endpoint's fields.
type Shape = fn(&mut EndpointIn);

/// An application `acme` with endpoints made from `endpoints` (uid, then changes to its fields).
async fn app_with(t: &TestStore, endpoints: &[(&str, Shape)]) -> Lookup {
    t.create_application(app_in("acme", Some("acme")), &ops(), NOW).await.unwrap();
    let app = Lookup::application("acme");
    for (uid, change) in endpoints {
        let mut new = new_endpoint("https://example.com/hook", Some(uid), NOW);
        change(&mut new.endpoint);
        t.create_endpoint(app.clone(), new, &ops(), NOW).await.unwrap();
    }
    app
}

/// The endpoints (by uid) of the jobs no claim has taken yet, sorted; claims them.
async fn job_destinations(t: &TestStore, app: &Lookup) -> Vec<String> {
    let page = t.list_endpoints(app.clone(), idemgate_store::outbound::ListQuery::first(50)).await.unwrap();
    let mut uids = Vec::new();
    let claimed = t.claim_jobs(NOW + 3_600_000, std::time::Duration::from_secs(30), 100, Vec::new()).await.unwrap();
    for job in claimed {
        let uid = page.data.iter().find(|ep| ep.id == job.destination).and_then(|ep| ep.uid.clone());
        uids.push(uid.unwrap_or(job.destination));
    }
    uids.sort();
    uids
}

fn all(_: &mut EndpointIn) {}

fn signups_only(endpoint: &mut EndpointIn) {
    endpoint.event_types = Some(vec!["user.signup".to_owned()]);
}

fn eu_only(endpoint: &mut EndpointIn) {
    endpoint.channels = Some(vec!["eu".to_owned()]);
}

fn disabled(endpoint: &mut EndpointIn) {
    endpoint.disabled = true;
}

on_both! {
    async fn a_message_gets_one_job_per_enabled_live_matching_endpoint(t: TestStore) {
        let app = app_with(&t, &[("all", all), ("signups", signups_only), ("eu", eu_only), ("off", disabled), ("gone", all)]).await;
        t.delete_endpoint(app.clone(), Lookup::endpoint("gone"), &ops(), NOW).await.unwrap();
        let mut input = message(Some("evt-1"), "user.signup", b"{\"user\":1}");
        input.channels = Some(vec!["us".to_owned()]);
        let message = created(t.accept_message(app.clone(), input, NOW).await.unwrap());
        assert!(message.id.starts_with("msg_"), "{}", message.id);
        assert_eq!(job_destinations(&t, &app).await, ["all", "signups"], "neither disabled, deleted nor unmatched");

        let mut eu = self::message(None, "order.paid", b"{}");
        eu.channels = Some(vec!["eu".to_owned(), "us".to_owned()]);
        created(t.accept_message(app.clone(), eu, NOW).await.unwrap());
        assert_eq!(job_destinations(&t, &app).await, ["all", "eu"]);
    }

    async fn an_endpoint_disabled_or_deleted_before_a_message_gets_no_job(t: TestStore) {
        let app = app_with(&t, &[("a", all), ("b", all), ("c", all)]).await;
        let disable = EndpointPatch { disabled: Some(true), ..EndpointPatch::default() };
        t.patch_endpoint(app.clone(), Lookup::endpoint("a"), disable, &ops(), NOW).await.unwrap();
        t.delete_endpoint(app.clone(), Lookup::endpoint("b"), &ops(), NOW).await.unwrap();
        created(t.accept_message(app.clone(), message(None, "x", b"{}"), NOW).await.unwrap());
        assert_eq!(job_count(&t).await, 1);
        assert_eq!(job_destinations(&t, &app).await, ["c"]);
        let enable = EndpointPatch { disabled: Some(false), ..EndpointPatch::default() };
        t.patch_endpoint(app.clone(), Lookup::endpoint("a"), enable, &ops(), NOW).await.unwrap();
        assert_eq!(job_count(&t).await, 1, "enabling later makes no job for a message accepted before");
    }

    async fn an_endpoint_deleted_after_a_message_finishes_its_job_dead_and_one_disabled_holds_it(t: TestStore) {
        let app = app_with(&t, &[("kept", all), ("paused", all), ("gone", all)]).await;
        created(t.accept_message(app.clone(), message(None, "x", b"{}"), NOW).await.unwrap());
        let disable = EndpointPatch { disabled: Some(true), ..EndpointPatch::default() };
        t.patch_endpoint(app.clone(), Lookup::endpoint("paused"), disable, &ops(), NOW).await.unwrap();
        t.delete_endpoint(app.clone(), Lookup::endpoint("gone"), &ops(), NOW).await.unwrap();
        assert_eq!(job_destinations(&t, &app).await, ["kept"], "the claim skips the disabled and the deleted");
        let states = t.job_states().await.unwrap();
        let count = |state: &str| states.iter().find(|(s, _)| s == state).map_or(0, |(_, n)| *n);
        assert_eq!((count("dead"), count("pending"), count("running")), (1, 1, 1));
        let enable = EndpointPatch { disabled: Some(false), ..EndpointPatch::default() };
        t.patch_endpoint(app.clone(), Lookup::endpoint("paused"), enable, &ops(), NOW).await.unwrap();
        assert_eq!(job_destinations(&t, &app).await, ["paused"], "enabled again, its waiting job is claimed");
    }

    async fn a_repeat_with_the_same_event_id_and_payload_is_the_original_and_writes_nothing(t: TestStore) {
        let app = app_with(&t, &[("a", all)]).await;
        let first = created(t.accept_message(app.clone(), message(Some("evt-1"), "x", b"{\"a\":1}"), NOW).await.unwrap());
        let repeat = t.accept_message(app.clone(), message(Some("evt-1"), "x", b"{\"a\":1}"), NOW + 5000).await.unwrap();
        assert_eq!(repeat, Accepted::Duplicate(first.clone()));
        assert_eq!(job_count(&t).await, 1);
        assert_eq!(t.list_messages(app.clone(), MessageQuery::newest(10)).await.unwrap().data, [first]);
    }

    async fn a_repeat_with_another_payload_is_a_conflict_and_stores_nothing(t: TestStore) {
        let app = app_with(&t, &[("a", all)]).await;
        let first = created(t.accept_message(app.clone(), message(Some("evt-1"), "x", b"{\"a\":1}"), NOW).await.unwrap());
        let other = t.accept_message(app.clone(), message(Some("evt-1"), "x", b"{\"a\":2}"), NOW).await.unwrap();
        assert_eq!(other, Accepted::Conflict);
        let other_type = t.accept_message(app.clone(), message(Some("evt-1"), "y", b"{\"a\":1}"), NOW).await.unwrap();
        assert_eq!(other_type, Accepted::Conflict, "the event type is part of the fingerprint");
        assert_eq!(job_count(&t).await, 1);
        let stored = t.list_messages(app.clone(), MessageQuery::newest(10)).await.unwrap().data;
        assert_eq!(stored, std::slice::from_ref(&first));
        assert_eq!(stored[0].payload.as_deref(), Some(&b"{\"a\":1}"[..]));
    }

    async fn sixteen_concurrent_identical_messages_make_one_message_and_one_job_per_endpoint(t: TestStore) {
        let app = app_with(&t, &[("a", all), ("b", all)]).await;
        let store = Arc::new(t.store.clone());
        let racers: Vec<_> = (0..16)
            .map(|_| {
                let (store, app) = (Arc::clone(&store), app.clone());
                tokio::spawn(async move { store.accept_message(app, message(Some("race"), "x", b"{\"n\":1}"), NOW).await })
            })
            .collect();
        let mut ids = Vec::new();
        let mut created_count = 0;
        for racer in racers {
            match racer.await.unwrap().unwrap() {
                Accepted::Created(message) => {
                    created_count += 1;
                    ids.push(message.id);
                }
                Accepted::Duplicate(message) => ids.push(message.id),
                Accepted::Conflict => panic!("identical racers never conflict"),
            }
        }
        assert_eq!(created_count, 1);
        ids.dedup();
        assert_eq!(ids.len(), 1, "every racer is answered with the one message");
        assert_eq!(t.list_messages(app.clone(), MessageQuery::newest(50)).await.unwrap().data.len(), 1);
        assert_eq!(job_destinations(&t, &app).await, ["a", "b"]);
    }

    async fn a_message_is_read_by_id_or_event_id_and_listed_newest_first_with_filters(t: TestStore) {
        let app = app_with(&t, &[]).await;
        let mut ids = Vec::new();
        for n in 0..4_i64 {
            let event_type = if n % 2 == 0 { "even" } else { "odd" };
            let event_id = format!("evt-{n}");
            let mut input = message(Some(&event_id), event_type, b"{}");
            input.channels = (n == 3).then(|| vec!["eu".to_owned()]);
            ids.push(created(t.accept_message(app.clone(), input, NOW + n * 1000).await.unwrap()).id);
        }
        let by_id = t.message(app.clone(), Lookup::message(&ids[1])).await.unwrap().unwrap();
        let by_event_id = t.message(app.clone(), Lookup::message("evt-1")).await.unwrap().unwrap();
        assert_eq!(by_id, by_event_id);
        assert_eq!((by_id.event_type.as_str(), by_id.payload.as_deref()), ("odd", Some(&b"{}"[..])));
        assert_eq!(t.message(app.clone(), Lookup::message("evt-9")).await.unwrap(), None);

        let ids_of = |page: idemgate_store::outbound::Page<Message>| page.data.into_iter().map(|m| m.id).collect::<Vec<_>>();
        let mut query = MessageQuery::newest(1);
        let mut walked = Vec::new();
        loop {
            let page = t.list_messages(app.clone(), query.clone()).await.unwrap();
            let done = page.done;
            query.iterator = page.iterator.clone();
            walked.extend(ids_of(page));
            if done {
                break;
            }
            assert!(walked.len() < 10, "the walk ends");
        }
        assert_eq!(walked, ids.iter().rev().cloned().collect::<Vec<_>>(), "newest first");

        let evens = MessageQuery { event_types: Some(vec!["even".to_owned()]), ..MessageQuery::newest(10) };
        assert_eq!(ids_of(t.list_messages(app.clone(), evens).await.unwrap()), [ids[2].clone(), ids[0].clone()]);
        let eu = MessageQuery { channel: Some("eu".to_owned()), ..MessageQuery::newest(10) };
        assert_eq!(ids_of(t.list_messages(app.clone(), eu).await.unwrap()), [ids[3].clone()]);
        let window = MessageQuery { after_ms: Some(NOW), before_ms: Some(NOW + 2500), ..MessageQuery::newest(10) };
        assert_eq!(ids_of(t.list_messages(app.clone(), window).await.unwrap()), [ids[2].clone(), ids[1].clone()]);
    }

    async fn a_deleted_application_takes_no_messages_and_serves_none(t: TestStore) {
        let app = app_with(&t, &[("a", all)]).await;
        let first = created(t.accept_message(app.clone(), message(Some("evt-1"), "x", b"{}"), NOW).await.unwrap());
        t.delete_application(app.clone(), Deletion::Soft, &ops(), NOW).await.unwrap();
        let refused = t.accept_message(app.clone(), message(None, "x", b"{}"), NOW).await;
        assert!(matches!(refused, Err(OutboundError::NotFound(Resource::Application))), "{refused:?}");
        let read = t.message(Lookup::Id(first.app_id.clone()), Lookup::message(&first.id)).await;
        assert!(matches!(read, Err(OutboundError::NotFound(Resource::Application))), "{read:?}");
        let jobs = t.job_states().await.unwrap();
        assert_eq!(jobs, [("dead".to_owned(), 1)], "the deleted application's waiting job ended dead");
    }
}

on_both! {
    async fn a_keyed_publish_run_again_is_its_first_message_and_another_operation_is_a_new_one(t: TestStore) {
        let app = app_with(&t, &[("all", all)]).await;
        let keyed = |operation: &str| MessageIn { operation: Some(operation.to_owned()), ..message(None, "user.signup", b"{\"n\":1}") };
        let first = created(t.accept_message(app.clone(), keyed("scope\nkey-1\n100"), NOW).await.unwrap());
        // The same operation run again (a take-over after its first run died after the commit).
        let again = t.accept_message(app.clone(), keyed("scope\nkey-1\n100"), NOW + 1).await.unwrap();
        assert_eq!(again, Accepted::Duplicate(first.clone()), "the first run's message, nothing written");
        assert_eq!(job_count(&t).await, 1);
        // The same key in a later window (another expiry) is another operation.
        let later = created(t.accept_message(app.clone(), keyed("scope\nkey-1\n200"), NOW + 2).await.unwrap());
        assert_ne!(later.id, first.id);
        // Without a key every publish is a message of its own.
        let plain = created(t.accept_message(app.clone(), message(None, "user.signup", b"{\"n\":1}"), NOW + 3).await.unwrap());
        assert!(plain.id != first.id && plain.id != later.id);
        assert_eq!(job_count(&t).await, 3);
    }
}
