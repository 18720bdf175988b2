//! The client against a real local server that drops the first connection, answers 503
//! with `Retry-After`, then 200; waits are recorded by an injected sleeper, not slept.

#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

use std::{
    collections::VecDeque,
    future::Future,
    net::SocketAddr,
    pin::Pin,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use idemgate_client::{Client, ClientOptions, Final, NoAnswer, Request, Sleeper, WebhookSigner};
use idemgate_core::{
    Secret, SecretSet, UnixTime,
    scheme::{RawDelivery, Scheme, StandardWebhooks},
};
use idemgate_http::{CloseWithoutResponse, ServeOptions, serve};

#[derive(Debug, Clone, Copy)]
enum Step {
    Drop,
    Status(u16),
    RetryAfter(u16, u64),
}

#[derive(Default)]
struct Server {
    script: Mutex<VecDeque<Step>>,
    seen: Mutex<Vec<(HeaderMap, Bytes)>>,
}

async fn handle(State(server): State<Arc<Server>>, headers: HeaderMap, body: Bytes) -> Response {
    server.seen.lock().unwrap().push((headers, body));
    match server.script.lock().unwrap().pop_front().unwrap_or(Step::Status(200)) {
        Step::Drop => {
            let mut response = StatusCode::OK.into_response();
            response.extensions_mut().insert(CloseWithoutResponse);
            response
        }
        Step::Status(status) => (StatusCode::from_u16(status).unwrap(), "answer").into_response(),
        Step::RetryAfter(status, secs) => {
            (StatusCode::from_u16(status).unwrap(), [("retry-after", secs.to_string())], "later").into_response()
        }
    }
}

async fn start(script: &[Step]) -> (SocketAddr, Arc<Server>) {
    let server = Arc::new(Server { script: Mutex::new(script.iter().copied().collect()), ..Server::default() });
    let app = Router::new().fallback(handle).with_state(Arc::clone(&server));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, app, ServeOptions::default(), std::future::pending()));
    (addr, server)
}

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
    let (addr, server) = start(&[Step::Drop, Step::RetryAfter(503, 1), Step::Status(201)]).await;
    let (client, sleeps) = client(5);
    let sent =
        client.send(Request::post(format!("http://{addr}/orders")).json_body(&br#"{"qty":1}"#[..])).await.unwrap();
    assert_eq!((sent.outcome, sent.status, sent.attempts.len()), (Final::Succeeded, 201, 3));
    let seen = server.seen.lock().unwrap();
    let keys: Vec<_> = seen.iter().map(|(h, _)| h["idempotency-key"].clone()).collect();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| Some(k.to_str().unwrap()) == sent.idempotency_key.as_deref()), "{keys:?}");
    assert!(seen.iter().all(|(_, body)| &body[..] == br#"{"qty":1}"#), "the body is sent byte for byte");
    let waits = sleeps.0.lock().unwrap().clone();
    assert_eq!(waits.len(), 2);
    assert!(waits[1] >= Duration::from_secs(1), "Retry-After: 1 honoured: {waits:?}");
}

#[tokio::test]
async fn a_webhook_keeps_its_identity_and_signs_every_attempt_afresh() {
    let (addr, server) = start(&[Step::Status(500), Step::Status(200)]).await;
    let (client, _) = client(5);
    let key = Secret::new(vec![8; 32]);
    let request = Request::post(format!("http://{addr}/in/hooks"))
        .json_body(&br#"{"type":"t"}"#[..])
        .webhook(WebhookSigner::new(&StandardWebhooks::DEFAULT, key.clone()).unwrap(), "msg_fixed");
    let sent = client.send(request).await.unwrap();
    assert_eq!(sent.outcome, Final::Succeeded);
    let secrets = SecretSet::new(vec![key]).unwrap();
    for (headers, body) in server.seen.lock().unwrap().iter() {
        assert_eq!(headers["webhook-id"], "msg_fixed");
        let ts: i64 = headers["webhook-timestamp"].to_str().unwrap().parse().unwrap();
        let verified = StandardWebhooks::default().verify(&secrets, RawDelivery { headers, body }, UnixTime(ts));
        assert!(verified.is_ok(), "{verified:?}");
    }
}

#[tokio::test]
async fn a_client_error_is_not_retried() {
    let (addr, server) = start(&[Step::Status(422)]).await;
    let (client, sleeps) = client(5);
    let sent = client.send(Request::post(format!("http://{addr}/orders"))).await.unwrap();
    assert_eq!((sent.outcome, sent.status, sent.attempts.len()), (Final::Rejected, 422, 1));
    assert_eq!(server.seen.lock().unwrap().len(), 1);
    assert!(sleeps.0.lock().unwrap().is_empty());
}

#[tokio::test]
async fn retries_end_after_max_attempts_with_exponential_waits() {
    let (addr, server) = start(&[Step::Status(503); 10]).await;
    let (client, sleeps) = client(4);
    let sent = client.send(Request::post(format!("http://{addr}/orders")).idempotency_key("shared-op")).await.unwrap();
    assert_eq!((sent.outcome, sent.status, sent.attempts.len()), (Final::GaveUp, 503, 4));
    assert_eq!(sent.idempotency_key.as_deref(), Some("shared-op"));
    assert_eq!(server.seen.lock().unwrap().len(), 4);
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
