//! A message published through Svix's SDK reaches the customer's endpoint from a real
//! `idemgate serve`, and Svix's own verifier (`svix::webhooks::Webhook`) accepts it: the
//! whole outbound path, publish → durable commit → worker → signed delivery, with the
//! `webhook-id` the message's id and one delivery per keyed publish, on SQLite and
//! PostgreSQL (`docs/design/outbound-api.md` §1.7, §3.3, §3.6).

use std::time::Duration;

use idemgate_testkit::Destination;
use serde_json::json;
use svix::{
    api::MessageCreateOptions,
    models::{ApplicationIn, EndpointIn, EndpointSecretRotateIn, MessageIn},
    webhooks::Webhook,
};

use crate::outbound_api::{ADMIN_TOKEN, API, Backend, PUBLISH_TOKEN, sdk, serve_with};

/// The worker polls often, so a claimed job does not wait long.
const FAST_WORKER: &str = "[worker]\npoll_interval = \"50ms\"\n";

/// Waits until `sink` has received `count` requests, in a blocking thread.
async fn received(sink: &Destination, count: usize) -> Vec<idemgate_testkit::Received> {
    let waiting = sink.clone();
    tokio::task::spawn_blocking(move || {
        waiting.wait_until("the endpoint's deliveries", |got| got.len() >= count);
        waiting.received()
    })
    .await
    .unwrap()
}

async fn a_published_message_is_delivered_signed_under_its_id(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &format!("{API}{FAST_WORKER}"));
    let sink = Destination::start(&[]);
    let admin = sdk(&gateway, ADMIN_TOKEN);
    let app = ApplicationIn { uid: Some("shop".to_owned()), ..ApplicationIn::new("Shop".to_owned()) };
    admin.application().create(app, None).await.unwrap();
    let endpoint = admin.endpoint().create("shop".to_owned(), EndpointIn::new(sink.url()), None).await.unwrap();
    let secret = admin.endpoint().get_secret("shop".to_owned(), endpoint.id.clone()).await.unwrap().key;

    // One publish, repeated with its key as a client whose answer was lost would: one
    // message, one delivery.
    let keyed =
        || Some(MessageCreateOptions { idempotency_key: Some("order-1-paid".to_owned()), ..Default::default() });
    let paid = || MessageIn::new("order.paid".to_owned(), json!({"order": 1, "amount": 1999}));
    let publisher = sdk(&gateway, PUBLISH_TOKEN);
    let message = publisher.message().create("shop".to_owned(), paid(), keyed()).await.unwrap();
    let again = publisher.message().create("shop".to_owned(), paid(), keyed()).await.unwrap();
    assert_eq!(again.id, message.id, "the repeat with the same key is the same message");

    let first = received(&sink, 1).await.remove(0);
    assert_eq!(first.body, br#"{"order":1,"amount":1999}"#, "the payload's bytes as published");
    assert_eq!(first.headers["webhook-id"], message.id.as_str(), "webhook-id is the message's id");
    Webhook::new(&secret).unwrap().verify(&first.body, &first.headers).expect("Svix's verifier accepts the delivery");

    // After a rotation both the old and the new secret verify the next delivery.
    let rotated = admin
        .endpoint()
        .rotate_secret("shop".to_owned(), endpoint.id.clone(), EndpointSecretRotateIn::new(), None)
        .await
        .unwrap()
        .key;
    assert_ne!(rotated, secret);
    let shipped = publisher
        .message()
        .create("shop".to_owned(), MessageIn::new("order.shipped".to_owned(), json!({"order": 1})), None)
        .await
        .unwrap();
    let deliveries = received(&sink, 2).await;
    let second = &deliveries[1];
    assert_eq!(second.headers["webhook-id"], shipped.id.as_str());
    for key in [&secret, &rotated] {
        Webhook::new(key).unwrap().verify(&second.body, &second.headers).expect("both secrets verify during the grace");
    }

    // Nothing more arrives: the keyed repeat made no second job.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ids: Vec<_> =
        sink.received().iter().map(|got| got.headers["webhook-id"].to_str().unwrap().to_owned()).collect();
    assert_eq!(ids, [message.id, shipped.id], "each message delivered once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_published_message_is_delivered_signed_under_its_id_on_sqlite() {
    a_published_message_is_delivered_signed_under_its_id(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_published_message_is_delivered_signed_under_its_id_on_postgres() {
    a_published_message_is_delivered_signed_under_its_id(Backend::Postgres).await;
}

/// The README's example (`examples/publish.rs`) run twice with one `--key` against a real
/// server: one message, delivered once, and the second run prints the first run's id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_publish_example_sends_one_message_per_key() {
    let (_setup, gateway) = serve_with(Backend::Sqlite, &format!("{API}{FAST_WORKER}"));
    let sink = Destination::start(&[]);
    let run = || {
        let output = std::process::Command::new(crate::harness::example_bin("publish"))
            .args([sink.url().as_str(), "--key", "invoice-in_1"])
            .env("IDEMGATE_URL", format!("http://{}", gateway.addr))
            .env("IDEMGATE_API_TOKEN", ADMIN_TOKEN)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    };
    let (first, second) = (run(), run());
    let id = first.split_whitespace().next().unwrap().to_owned();
    assert!(id.starts_with("msg_"), "{first}");
    assert_eq!(second.split_whitespace().next(), Some(id.as_str()), "the second run got the first one's message");
    let delivered = received(&sink, 1).await;
    assert_eq!(delivered[0].headers["webhook-id"], id.as_str());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink.received().len(), 1, "one key, one delivery");
}
