//! Delivery to the outbound API's endpoints, on SQLite and PostgreSQL: an application, an
//! endpoint (a real destination on 127.0.0.1) and its sealed secret made through `Store`,
//! a message accepted with `accept_message`, and the worker resolving `ep_…` from the store.
//! The deliveries are checked with core's Standard Webhooks verifier.

use std::{collections::HashMap, sync::Arc, time::Duration};

use idemgate_core::{
    Secret, SecretSet, UnixTime,
    outbound::{
        id::EndpointId,
        sealing::{EndpointSecret, SealedSecret, SecretsKey},
    },
    scheme::{RawDelivery, Scheme, StandardWebhooks},
};
use idemgate_store::{
    Store,
    audit::Actor,
    outbound::{
        Lookup,
        application::ApplicationIn,
        endpoint::{EndpointIn, EndpointPatch, FIRST_SECRET_SEQ, Headers, NewEndpoint, NewSecret},
        message::{Accepted, MessageIn},
        new_endpoint_id,
    },
};
use idemgate_testkit::{Destination, Received, Step};
use idemgate_worker::{Clock, EndpointClient, EndpointRoutes, ManualClock, Worker, WorkerOptions};

use crate::{
    delivery::T0,
    pipeline::{postgres, sqlite},
};

const PAYLOAD: &[u8] = br#"{"type":"invoice.paid","id":"inv_1"}"#;
const APP: &str = "acme";

fn key() -> SecretsKey {
    SecretsKey::new([9; 32])
}

fn secret(byte: u8) -> EndpointSecret {
    EndpointSecret::generate([byte; 24])
}

fn sealed(key: &SecretsKey, id: &EndpointId, seq: i64, secret: &EndpointSecret) -> SealedSecret {
    key.seal(secret, id, seq, [u8::try_from(seq).unwrap(); 24]).unwrap()
}

/// A store with application [`APP`], a worker delivering to its endpoints on a manual
/// clock at [`T0`], and the clock.
struct Outbound {
    store: Store,
    worker: Worker,
    clock: Arc<ManualClock>,
}

impl Outbound {
    fn new(store: Store, key: SecretsKey) -> Self {
        let clock = Arc::new(ManualClock::at(T0));
        let client = EndpointClient::new(vec!["127.0.0.0/8".parse().unwrap()], Duration::from_secs(5)).unwrap();
        let options = WorkerOptions { poll_interval: Duration::from_millis(20), ..WorkerOptions::default() };
        let worker = Worker::new(store.clone(), HashMap::new(), options)
            .with_clock(clock.clone())
            .with_endpoints(EndpointRoutes::new(store.clone(), client, Some(key)));
        Self { store, worker, clock }
    }

    fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    async fn app(&self) {
        let app = ApplicationIn { name: APP.to_owned(), uid: Some(APP.to_owned()), ..ApplicationIn::default() };
        self.store.create_application(app, &Actor::token("test"), self.now_ms()).await.unwrap();
    }

    /// A new endpoint at `url` whose first secret, sealed under `sealing`, is `secret`.
    async fn endpoint(&self, url: &str, sealing: &SecretsKey, secret: &EndpointSecret) -> String {
        let id = new_endpoint_id(self.now_ms()).unwrap();
        let new = NewEndpoint {
            id,
            endpoint: EndpointIn { url: url.to_owned(), ..EndpointIn::default() },
            headers: Headers::new(),
            secret: sealed(sealing, &id, FIRST_SECRET_SEQ, secret),
        };
        self.store
            .create_endpoint(Lookup::application(APP), new, &Actor::token("test"), self.now_ms())
            .await
            .unwrap()
            .id
    }

    async fn message(&self) -> String {
        let input = MessageIn {
            event_id: None,
            event_type: "invoice.paid".to_owned(),
            channels: None,
            payload: bytes::Bytes::from_static(PAYLOAD),
            expires_at_ms: None,
            operation: None,
        };
        match self.store.accept_message(Lookup::application(APP), input, self.now_ms()).await.unwrap() {
            Accepted::Created(message) => message.id,
            other => panic!("{other:?}"),
        }
    }

    async fn patch(&self, endpoint: &str, patch: EndpointPatch) {
        self.store
            .patch_endpoint(
                Lookup::application(APP),
                Lookup::endpoint(endpoint),
                patch,
                &Actor::token("test"),
                self.now_ms(),
            )
            .await
            .unwrap();
    }

    /// Runs the worker's claims until `tick` finds nothing more due now.
    async fn drain(&self) {
        while self.worker.tick().await.unwrap() > 0 {}
    }
}

/// Whether `received` verifies at `now` for a receiver holding `secret` only.
fn verifies(received: &Received, secret: &EndpointSecret, now: UnixTime) -> bool {
    let delivery = RawDelivery { headers: &received.headers, body: &received.body };
    let secrets = SecretSet::new(vec![Secret::new(secret.secret().expose().to_vec())]).unwrap();
    StandardWebhooks::DEFAULT.verify(&secrets, delivery, now).is_ok()
}

async fn a_message_reaches_its_endpoint_once_signed_and_a_retry_keeps_its_id(store: Store) {
    let rig = Outbound::new(store, key());
    rig.app().await;
    let destination = Destination::start(&[Step::Status(500), Step::Status(200)]);
    let first = secret(1);
    rig.endpoint(&destination.url(), &key(), &first).await;
    let msg = rig.message().await;

    rig.drain().await;
    let received = destination.received();
    assert_eq!(received.len(), 1, "the first attempt, answered 500");
    assert_eq!(received[0].header("webhook-id"), msg);
    assert_eq!(received[0].body, PAYLOAD);
    assert!(verifies(&received[0], &first, T0), "signed with the endpoint's secret");
    assert!(!verifies(&received[0], &secret(2), T0), "and with no other");

    rig.clock.advance(3600);
    rig.drain().await;
    let received = destination.received();
    assert_eq!(received.len(), 2, "retried once, answered 200");
    assert_eq!(received[1].header("webhook-id"), msg, "the same webhook-id on a retry");
    assert_ne!(received[1].header("webhook-timestamp"), received[0].header("webhook-timestamp"));
    assert!(verifies(&received[1], &first, UnixTime(T0.0 + 3600)));

    rig.clock.advance(3600);
    rig.drain().await;
    assert_eq!(destination.received().len(), 2, "delivered once: nothing after the success");
}

async fn after_a_rotation_both_secrets_verify(store: Store) {
    let rig = Outbound::new(store, key());
    rig.app().await;
    let destination = Destination::start(&[]);
    let (old, new) = (secret(1), secret(2));
    let id = rig.endpoint(&destination.url(), &key(), &old).await;
    let seq = FIRST_SECRET_SEQ + 1;
    let rotated = NewSecret { seq, sealed: sealed(&key(), &EndpointId::parse(&id).unwrap(), seq, &new) };
    rig.store
        .rotate_endpoint_secret(
            Lookup::application(APP),
            Lookup::endpoint(&id),
            rotated,
            86_400_000,
            &Actor::token("test"),
            rig.now_ms(),
        )
        .await
        .unwrap();
    rig.message().await;

    rig.drain().await;
    let received = destination.received();
    assert_eq!(received.len(), 1);
    assert!(verifies(&received[0], &new, T0), "the new secret verifies");
    assert!(verifies(&received[0], &old, T0), "the old one too, during its grace");
}

async fn a_disabled_endpoint_gets_no_job_and_a_moved_one_is_seen_at_the_next_claim(store: Store) {
    let rig = Outbound::new(store, key());
    rig.app().await;
    let (first, second) = (Destination::start(&[]), Destination::start(&[]));
    let id = rig.endpoint(&first.url(), &key(), &secret(1)).await;
    rig.message().await;
    rig.drain().await;
    assert_eq!(first.received().len(), 1, "delivered, so the worker's cache holds the endpoint");

    rig.patch(&id, EndpointPatch { disabled: Some(true), ..EndpointPatch::default() }).await;
    rig.message().await;
    rig.drain().await;
    rig.patch(&id, EndpointPatch { disabled: Some(false), ..EndpointPatch::default() }).await;
    rig.drain().await;
    assert_eq!(first.received().len(), 1, "a message sent while its endpoint was disabled made no job");

    rig.patch(&id, EndpointPatch { url: Some(second.url()), ..EndpointPatch::default() }).await;
    let moved = rig.message().await;
    rig.drain().await;
    assert_eq!(first.received().len(), 1, "the old URL gets nothing more");
    let received = second.received();
    assert_eq!(received.len(), 1, "the first claim after the change used the new URL");
    assert_eq!(received[0].header("webhook-id"), moved);
}

async fn a_secret_that_does_not_open_is_never_sent_unsigned(store: Store) {
    let rig = Outbound::new(store, key());
    rig.app().await;
    let destination = Destination::start(&[]);
    rig.endpoint(&destination.url(), &SecretsKey::new([3; 32]), &secret(1)).await;
    rig.message().await;
    rig.drain().await;
    assert!(destination.received().is_empty(), "nothing sent");
    let states = rig.store.job_states().await.unwrap();
    let retrying = states.iter().find(|(state, _)| state == "retrying").map(|(_, n)| *n);
    assert_eq!(retrying, Some(1), "the attempt failed and is retried: {states:?}");
}

macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod on_sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let (store, _dir) = super::sqlite().await;
                    super::$name(store).await;
                }
            )*
        }
        mod on_postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::postgres().await).await;
                }
            )*
        }
    };
}

on_both!(
    a_message_reaches_its_endpoint_once_signed_and_a_retry_keeps_its_id,
    after_a_rotation_both_secrets_verify,
    a_disabled_endpoint_gets_no_job_and_a_moved_one_is_seen_at_the_next_claim,
    a_secret_that_does_not_open_is_never_sent_unsigned,
);
