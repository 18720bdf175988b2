//! Sixteen callers publish the same message with the same `Idempotency-Key` at once, each
//! through its own SDK client, against a real `idemgate serve`: each gets the one
//! message's id, at once or after a `409` in flight and a retry (the SDK does not retry a
//! 4xx); in the end there is one message and each of two endpoints receives it once
//! (`docs/design/outbound-api.md` §3.10, §3.11 item 4), on SQLite and PostgreSQL.

use std::{sync::Arc, time::Duration};

use idemgate_testkit::Destination;
use serde_json::json;
use svix::{
    api::MessageCreateOptions,
    error::Error,
    models::{ApplicationIn, EndpointIn, MessageIn},
};
use tokio::sync::Barrier;

use crate::outbound_api::{ADMIN_TOKEN, API, Backend, PUBLISH_TOKEN, sdk, serve_with};

const RACERS: usize = 16;

/// One caller: publishes until it gets the message's id, retrying after a 409 in flight.
/// Returns the id and how many 409s it saw. Each caller first opens its connection and
/// waits at `start`, so the publishes leave together.
async fn publish(client: svix::api::Svix, start: Arc<Barrier>) -> (String, usize) {
    client.health().get().await.unwrap();
    start.wait().await;
    let mut in_flight = 0;
    loop {
        let options = MessageCreateOptions { idempotency_key: Some("race-1".to_owned()), ..Default::default() };
        let message = MessageIn::new("order.paid".to_owned(), json!({"order": 1, "amount": 1999}));
        match client.message().create("shop".to_owned(), message, Some(options)).await {
            Ok(out) => return (out.id, in_flight),
            Err(Error::Http(err)) if err.status == 409 => {
                let code = err.payload.map(|out| out.code);
                assert_eq!(code.as_deref(), Some("idempotency_conflict"), "a 409 is only the key in flight");
                in_flight += 1;
                assert!(in_flight < 200, "the key stays in flight");
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            Err(other) => panic!("a racer was refused: {other:?}"),
        }
    }
}

async fn sixteen_racers(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &format!("{API}[worker]\npoll_interval = \"50ms\"\n"));
    let sinks = [Destination::start(&[]), Destination::start(&[])];
    let admin = sdk(&gateway, ADMIN_TOKEN);
    let app = ApplicationIn { uid: Some("shop".to_owned()), ..ApplicationIn::new("Shop".to_owned()) };
    admin.application().create(app, None).await.unwrap();
    for sink in &sinks {
        admin.endpoint().create("shop".to_owned(), EndpointIn::new(sink.url()), None).await.unwrap();
    }
    let start = Arc::new(Barrier::new(RACERS));
    let racers: Vec<_> =
        (0..RACERS).map(|_| tokio::spawn(publish(sdk(&gateway, PUBLISH_TOKEN), Arc::clone(&start)))).collect();
    let (mut ids, mut waits) = (Vec::new(), 0);
    for racer in racers {
        let (id, in_flight) = racer.await.unwrap();
        ids.push(id);
        waits += in_flight;
    }
    eprintln!("{RACERS} racers waited on a 409 in flight {waits} times");
    ids.dedup();
    assert_eq!(ids.len(), 1, "every racer got the one message's id: {ids:?}");
    let listed = admin.message().list("shop".to_owned(), None).await.unwrap().data;
    assert_eq!(listed.iter().map(|m| m.id.clone()).collect::<Vec<_>>(), ids, "exactly one message");
    for sink in &sinks {
        let waiting = sink.clone();
        tokio::task::spawn_blocking(move || waiting.wait_until("the delivery", |got| !got.is_empty())).await.unwrap();
    }
    // Nothing more arrives: one job per endpoint.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for sink in &sinks {
        let got: Vec<_> =
            sink.received().iter().map(|r| r.headers["webhook-id"].to_str().unwrap().to_owned()).collect();
        assert_eq!(got, ids, "one delivery per endpoint");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_identical_keyed_publishes_make_one_message_and_one_delivery_per_endpoint_on_sqlite() {
    sixteen_racers(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_identical_keyed_publishes_make_one_message_and_one_delivery_per_endpoint_on_postgres() {
    sixteen_racers(Backend::Postgres).await;
}
