//! Sending messages again through Svix's SDK against a real `idemgate serve`: `resend`,
//! `recover` and `send-example` (`docs/design/outbound-api.md` §3.3), on SQLite and
//! PostgreSQL. The `webhook-id` a recording endpoint receives is the message's id on the
//! first attempt, on a retry, on a resend and on a recovery, each signed afresh under a
//! new `webhook-timestamp` and accepted by Svix's own verifier; the attempts made because
//! of a resend or a recovery read `triggerType` 1.

use std::time::Duration;

use idemgate_testkit::{Destination, Received, Step};
use serde_json::json;
use svix::{
    api::{EndpointSendExampleOptions, Svix},
    models::{
        ApplicationIn, BackgroundTaskStatus, EndpointIn, EventExampleIn, EventTypeIn, MessageAttemptTriggerType,
        MessageIn, RecoverIn,
    },
    webhooks::Webhook,
};

use crate::outbound_api::{ADMIN_TOKEN, API, Backend, PUBLISH_TOKEN, http_error, sdk, serve_with, validation_error};

/// The worker polls often, so a job made due does not wait long.
const FAST_WORKER: &str = "[worker]\npoll_interval = \"50ms\"\n";

/// Waits until `sink` has received `count` requests, in a blocking thread.
async fn received(sink: &Destination, count: usize) -> Vec<Received> {
    let waiting = sink.clone();
    tokio::task::spawn_blocking(move || {
        waiting.wait_until("the endpoint's deliveries", |got| got.len() >= count);
        waiting.received()
    })
    .await
    .unwrap()
}

fn header(got: &Received, name: &str) -> String {
    got.header(name).to_owned()
}

/// An application `uid` with one endpoint at `sink`; answers the endpoint's id and secret.
async fn app_with_endpoint(admin: &Svix, uid: &str, sink: &Destination) -> (String, String) {
    let app = ApplicationIn { uid: Some(uid.to_owned()), ..ApplicationIn::new(uid.to_owned()) };
    admin.application().create(app, None).await.unwrap();
    let endpoint = admin.endpoint().create(uid.to_owned(), EndpointIn::new(sink.url()), None).await.unwrap();
    let secret = admin.endpoint().get_secret(uid.to_owned(), endpoint.id.clone()).await.unwrap().key;
    (endpoint.id, secret)
}

async fn every_delivery_of_a_message_carries_its_id(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &format!("{API}{FAST_WORKER}"));
    // 500 first (retried after its `Retry-After: 1`), 200 after that.
    let sink = Destination::start(&[Step::Status(500)]);
    sink.retry_after(1);
    let admin = sdk(&gateway, ADMIN_TOKEN);
    let (endpoint, secret) = app_with_endpoint(&admin, "shop", &sink).await;
    let publisher = sdk(&gateway, PUBLISH_TOKEN);
    let publish = |app: &'static str, n: u64| {
        let message = MessageIn::new("order.paid".to_owned(), json!({"order": n}));
        let messages = publisher.message();
        async move { messages.create(app.to_owned(), message, None).await.unwrap() }
    };

    // The first attempt (500) and its retry (200).
    let paid = publish("shop", 1).await;
    received(&sink, 2).await;
    // A resend of the delivered message.
    publisher.message_attempt().resend("shop".to_owned(), paid.id.clone(), endpoint.clone(), None).await.unwrap();
    received(&sink, 3).await;

    // Two messages the endpoint refuses for good (a 400 is final: the job is dead), the
    // second a whole second after the first, then a recovery from the second one's time:
    // only that one is sent again (the first is older, the delivered one did not fail).
    sink.otherwise(Step::Status(400));
    let old = publish("shop", 2).await;
    received(&sink, 4).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let failed = publish("shop", 3).await;
    received(&sink, 5).await;
    // The worker records the 400 after answering: wait until both jobs are dead.
    let reader = sdk(&gateway, ADMIN_TOKEN);
    for msg in [&old.id, &failed.id] {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let list = reader.message_attempt().list_by_msg("shop".to_owned(), msg.clone(), None).await.unwrap();
            if !list.data.is_empty() || std::time::Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    sink.otherwise(Step::Status(200));
    let recovered = publisher
        .endpoint()
        .recover("shop".to_owned(), endpoint.clone(), RecoverIn::new(failed.timestamp), None)
        .await
        .unwrap();
    assert_eq!(recovered.status, BackgroundTaskStatus::Finished, "{recovered:?}");
    assert!(recovered.id.starts_with("qtask_"), "{recovered:?}");
    let deliveries = received(&sink, 6).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let deliveries = if sink.received().len() > deliveries.len() { sink.received() } else { deliveries };

    let ids: Vec<String> = deliveries.iter().map(|got| header(got, "webhook-id")).collect();
    let expected = [&paid.id, &paid.id, &paid.id, &old.id, &failed.id, &failed.id].map(String::clone);
    assert_eq!(ids, expected, "first attempt, retry, resend, two refused, one recovered");
    let verifier = Webhook::new(&secret).unwrap();
    let mut stamps = Vec::new();
    for got in &deliveries {
        verifier.verify(&got.body, &got.headers).expect("Svix's verifier accepts every delivery");
        stamps.push(header(got, "webhook-timestamp").parse::<i64>().unwrap());
    }
    assert!(stamps.windows(2).all(|pair| pair[0] <= pair[1]), "timestamps never go back: {stamps:?}");
    assert!(stamps[1] > stamps[0], "the retry is signed under a later timestamp: {stamps:?}");
    assert_eq!(deliveries[2].body, deliveries[0].body, "the resend carries the same bytes");

    // The attempts a resend or a recovery made are manual; the schedule's are not.
    let triggers = |msg: String| {
        let reader = &reader;
        async move {
            let list = reader.message_attempt().list_by_msg("shop".to_owned(), msg, None).await.unwrap();
            list.data.into_iter().map(|a| (a.response_status_code, a.trigger_type)).collect::<Vec<_>>()
        }
    };
    use MessageAttemptTriggerType::{Manual, Scheduled};
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while triggers(failed.id.clone()).await.len() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(triggers(paid.id.clone()).await, [(200, Manual), (200, Scheduled), (500, Scheduled)]);
    assert_eq!(triggers(failed.id.clone()).await, [(200, Manual), (400, Scheduled)]);
    assert_eq!(triggers(old.id.clone()).await, [(400, Scheduled)]);

    // A recovery reaching back more than 14 days is refused at `since`, as Svix.
    let long_ago = failed.timestamp - Duration::from_secs(15 * 86_400);
    let refused =
        publisher.endpoint().recover("shop".to_owned(), endpoint.clone(), RecoverIn::new(long_ago), None).await;
    assert_eq!(validation_error(refused), (422, vec!["body".to_owned(), "since".to_owned()]));

    // Another application's message, through this application's path: 404.
    let elsewhere = Destination::start(&[]);
    app_with_endpoint(&admin, "depot", &elsewhere).await;
    let depot_msg = publish("depot", 4).await;
    received(&elsewhere, 1).await;
    let crossed =
        publisher.message_attempt().resend("shop".to_owned(), depot_msg.id.clone(), endpoint.clone(), None).await;
    assert_eq!(http_error(crossed).0, 404);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(sink.received().len(), 6, "nothing else reached the endpoint");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_delivery_of_a_message_carries_its_id_on_sqlite() {
    every_delivery_of_a_message_carries_its_id(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_delivery_of_a_message_carries_its_id_on_postgres() {
    every_delivery_of_a_message_carries_its_id(Backend::Postgres).await;
}

async fn an_example_reaches_its_endpoint_alone(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &format!("{API}{FAST_WORKER}"));
    let (first, second) = (Destination::start(&[]), Destination::start(&[]));
    let admin = sdk(&gateway, ADMIN_TOKEN);
    app_with_endpoint(&admin, "shop", &first).await;
    let target = admin.endpoint().create("shop".to_owned(), EndpointIn::new(second.url()), None).await.unwrap();
    let secret = admin.endpoint().get_secret("shop".to_owned(), target.id.clone()).await.unwrap().key;
    let schema = json!({"1": {"type": "object", "examples": [{"user": "ada"}, {"user": "grace"}]}});
    let signup =
        EventTypeIn { schemas: Some(schema), ..EventTypeIn::new("user.signup".to_owned(), "A signup".to_owned()) };
    admin.event_type().create(signup, None).await.unwrap();
    admin.event_type().create(EventTypeIn::new("user.left".to_owned(), "No example".to_owned()), None).await.unwrap();

    let keyed = || Some(EndpointSendExampleOptions { idempotency_key: Some("example-1".to_owned()) });
    let second_example = EventExampleIn { example_index: Some(1), ..EventExampleIn::new("user.signup".to_owned()) };
    let sent = admin
        .endpoint()
        .send_example("shop".to_owned(), target.id.clone(), second_example.clone(), keyed())
        .await
        .unwrap();
    assert_eq!(sent.event_type, "user.signup");
    assert_eq!(sent.payload, json!({"user": "grace"}));
    let again =
        admin.endpoint().send_example("shop".to_owned(), target.id.clone(), second_example, keyed()).await.unwrap();
    assert_eq!(again.id, sent.id, "the same key is the same example message");

    let got = received(&second, 1).await.remove(0);
    assert_eq!(header(&got, "webhook-id"), sent.id);
    assert_eq!(got.body, br#"{"user":"grace"}"#);
    Webhook::new(&secret).unwrap().verify(&got.body, &got.headers).expect("Svix's verifier accepts the example");
    let stored = admin.message().get("shop".to_owned(), sent.id.clone(), None).await.unwrap();
    assert_eq!(stored.id, sent.id, "an example is a stored message");

    // `svix.ping` has its fixed example; an event type without one is 400, an unknown 404.
    let ping = admin
        .endpoint()
        .send_example("shop".to_owned(), target.id.clone(), EventExampleIn::new("svix.ping".to_owned()), None)
        .await
        .unwrap();
    assert_eq!(ping.payload, json!({"success": true}));
    let none = admin
        .endpoint()
        .send_example("shop".to_owned(), target.id.clone(), EventExampleIn::new("user.left".to_owned()), None)
        .await;
    let (status, payload) = http_error(none);
    assert_eq!((status, payload.map(|p| p.code)), (400, Some("invalid_scheme".to_owned())));
    let unknown = admin
        .endpoint()
        .send_example("shop".to_owned(), target.id.clone(), EventExampleIn::new("user.nope".to_owned()), None)
        .await;
    assert_eq!(http_error(unknown).0, 404);

    assert_eq!(received(&second, 2).await.len(), 2);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(second.received().len(), 2, "one example and one ping");
    assert!(first.received().is_empty(), "the application's other endpoint got nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_example_reaches_its_endpoint_alone_on_sqlite() {
    an_example_reaches_its_endpoint_alone(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_example_reaches_its_endpoint_alone_on_postgres() {
    an_example_reaches_its_endpoint_alone(Backend::Postgres).await;
}
