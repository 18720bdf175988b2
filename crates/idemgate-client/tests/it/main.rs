//! The client against a real local server that drops the first connection, answers 503
//! with `Retry-After`, then 200; waits are recorded by an injected sleeper, not slept.
//! `mail`: keyed submissions to the recording SMTP upstream on aiosmtpd.

#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

use std::{
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    time::Duration,
};

use idemgate_client::{Client, ClientOptions, Final, NoAnswer, Request, Sleeper, WebhookSigner};
use idemgate_core::{
    Secret, SecretSet, UnixTime,
    scheme::{RawDelivery, Scheme, StandardWebhooks},
};
use idemgate_testkit::{Destination, Step};

mod mail;

#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<Duration>>);

impl Sleeper for Recorder {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.0.lock().unwrap().push(duration);
        Box::pin(async {})
    }
}

fn client(max_attempts: u32) -> (Client, Arc<Recorder>) {
    let sleeps = Arc::new(Recorder::default());
    let options = ClientOptions { max_attempts, base_delay: Duration::from_millis(100), ..ClientOptions::default() };
    (Client::new(options).unwrap().with_sleeper(sleeps.clone()), sleeps)
}

#[tokio::test]
async fn a_mutation_survives_a_dropped_connection_and_a_503_with_one_key() {
    let server = Destination::start(&[Step::Close, Step::RetryAfter(503, 1), Step::Status(201)]);
    let (client, sleeps) = client(5);
    let sent = client
        .send(Request::post(format!("http://{}/orders", server.addr)).json_body(&br#"{"qty":1}"#[..]))
        .await
        .unwrap();
    assert_eq!((sent.outcome, sent.status, sent.attempts.len()), (Final::Succeeded, 201, 3));
    let seen = server.received();
    let keys: Vec<_> = seen.iter().map(|r| r.header("idempotency-key")).collect();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| Some(*k) == sent.idempotency_key.as_deref()), "{keys:?}");
    assert!(seen.iter().all(|r| r.body == br#"{"qty":1}"#), "the body is sent byte for byte");
    let waits = sleeps.0.lock().unwrap().clone();
    assert_eq!(waits.len(), 2);
    assert!(waits[1] >= Duration::from_secs(1), "Retry-After: 1 honoured: {waits:?}");
}

#[tokio::test]
async fn a_webhook_keeps_its_identity_and_signs_every_attempt_afresh() {
    let server = Destination::start(&[Step::Status(500), Step::Status(200)]);
    let (client, _) = client(5);
    let key = Secret::new(vec![8; 32]);
    let request = Request::post(format!("http://{}/in/hooks", server.addr))
        .json_body(&br#"{"type":"t"}"#[..])
        .webhook(WebhookSigner::new(&StandardWebhooks::DEFAULT, key.clone()).unwrap(), "msg_fixed");
    let sent = client.send(request).await.unwrap();
    assert_eq!(sent.outcome, Final::Succeeded);
    let secrets = SecretSet::new(vec![key]).unwrap();
    for received in server.received() {
        assert_eq!(received.header("webhook-id"), "msg_fixed");
        let ts: i64 = received.header("webhook-timestamp").parse().unwrap();
        let raw = RawDelivery { headers: &received.headers, body: &received.body };
        let verified = StandardWebhooks::default().verify(&secrets, raw, UnixTime(ts));
        assert!(verified.is_ok(), "{verified:?}");
    }
}

#[tokio::test]
async fn a_client_error_is_not_retried() {
    let server = Destination::start(&[Step::Status(422)]);
    let (client, sleeps) = client(5);
    let sent = client.send(Request::post(format!("http://{}/orders", server.addr))).await.unwrap();
    assert_eq!((sent.outcome, sent.status, sent.attempts.len()), (Final::Rejected, 422, 1));
    assert_eq!(server.received().len(), 1);
    assert!(sleeps.0.lock().unwrap().is_empty());
}

#[tokio::test]
async fn retries_end_after_max_attempts_with_exponential_waits() {
    let server = Destination::start(&[Step::Status(503); 10]);
    let (client, sleeps) = client(4);
    let sent = client
        .send(Request::post(format!("http://{}/orders", server.addr)).idempotency_key("shared-op"))
        .await
        .unwrap();
    assert_eq!((sent.outcome, sent.status, sent.attempts.len()), (Final::GaveUp, 503, 4));
    assert_eq!(sent.idempotency_key.as_deref(), Some("shared-op"));
    assert_eq!(server.received().len(), 4);
    let waits = sleeps.0.lock().unwrap().clone();
    let base = [100u64, 200, 400];
    for (wait, base) in waits.iter().zip(base) {
        let (low, high) = (Duration::from_millis(base * 8 / 10), Duration::from_millis(base * 12 / 10));
        assert!(*wait >= low && *wait <= high, "{waits:?}");
    }
}

#[tokio::test]
async fn a_get_carries_no_key_and_a_dead_port_gives_up() {
    let (client, _) = client(2);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let sent = client.send(Request::new(http::Method::GET, format!("http://{addr}/x"))).await.unwrap();
    assert_eq!((sent.outcome, sent.status, sent.idempotency_key), (Final::GaveUp, 0, None));
    assert_eq!(sent.attempts[0].error, Some(NoAnswer::Connect("connection refused".to_owned())));
}
