//! The outbound API's messages through Svix's SDK against a real `idemgate serve`:
//! publishing (202 once durable), `eventId` repeats and conflicts, an `application` in the
//! body, the `Idempotency-Key` layer's replay and refusal, reading and listing
//! (`docs/design/outbound-api.md` §1.1, §3.3, §3.4, §3.10).

use serde_json::json;
use svix::{
    api::{MessageCreateOptions, MessageGetOptions, MessageListOptions},
    models::{ApplicationIn, EndpointIn, MessageIn},
};

use crate::outbound_api::{
    ADMIN_TOKEN, API, Backend, PUBLISH_TOKEN, READ_TOKEN, http_error, raw, sdk, serve_with, validation_error,
};

async fn messages(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, API);
    let admin = sdk(&gateway, ADMIN_TOKEN);
    let app = ApplicationIn { uid: Some("shop".to_owned()), ..ApplicationIn::new("Shop".to_owned()) };
    admin.application().create(app, None).await.unwrap();
    admin
        .endpoint()
        .create("shop".to_owned(), EndpointIn::new("http://127.0.0.1:9/hook".to_owned()), None)
        .await
        .unwrap();
    let publisher = sdk(&gateway, PUBLISH_TOKEN);
    let msgs = publisher.message();
    let paid = |amount: u64| MessageIn {
        event_id: Some("order-1".to_owned()),
        ..MessageIn::new("order.paid".to_owned(), json!({"order": 1, "amount": amount}))
    };
    // The SDK asks `with_content=false` unless told otherwise.
    let content = || Some(MessageCreateOptions { with_content: Some(true), ..MessageCreateOptions::default() });
    let first = msgs.create("shop".to_owned(), paid(10), content()).await.unwrap();
    assert!(first.id.starts_with("msg_"), "{first:?}");
    assert_eq!((first.event_type.as_str(), first.event_id.as_deref()), ("order.paid", Some("order-1")));
    assert_eq!(first.payload, json!({"order": 1, "amount": 10}));
    // The same eventId and payload is the same message; another payload is a conflict.
    let repeat = msgs.create("shop".to_owned(), paid(10), None).await.unwrap();
    assert_eq!((repeat.id.as_str(), repeat.payload.clone()), (first.id.as_str(), json!({})));
    let (status, payload) = http_error(msgs.create("shop".to_owned(), paid(11), None).await);
    assert_eq!((status, payload.map(|out| out.code)), (409, Some("conflict".to_owned())));
    // Read by id or by eventId; without content the payload is `{}`.
    let reader = sdk(&gateway, READ_TOKEN);
    let with = || Some(MessageGetOptions { with_content: Some(true) });
    let read = reader.message().get("shop".to_owned(), first.id.clone(), with()).await.unwrap();
    assert_eq!(read.payload, first.payload);
    assert_eq!(reader.message().get("shop".to_owned(), "order-1".to_owned(), None).await.unwrap().id, first.id);
    let bare =
        msgs.create("shop".to_owned(), MessageIn::new("order.sent".to_owned(), json!({"n": 2})), None).await.unwrap();
    assert_eq!(bare.payload, json!({}));
    let read = reader.message().get("shop".to_owned(), bare.id.clone(), with()).await.unwrap();
    assert_eq!(read.payload, json!({"n": 2}));
    assert_eq!(http_error(reader.message().get("shop".to_owned(), "msg_missing".to_owned(), None).await).0, 404);
    // Newest first, one page at a time.
    let list = reader.message().list("shop".to_owned(), None).await.unwrap();
    assert_eq!(list.data.iter().map(|m| m.id.clone()).collect::<Vec<_>>(), [bare.id.clone(), first.id.clone()]);
    assert!(list.done);
    let one = MessageListOptions { limit: Some(1), ..MessageListOptions::default() };
    let page = reader.message().list("shop".to_owned(), Some(one)).await.unwrap();
    assert_eq!((page.data.len(), page.done, page.data[0].id.clone()), (1, false, bare.id));
    // An `application` in the body creates the application the path names by uid.
    let new_app = MessageIn {
        application: Some(ApplicationIn::new("Depot".to_owned())),
        ..MessageIn::new("order.paid".to_owned(), json!({"order": 2}))
    };
    let published = publisher.message().create("depot".to_owned(), new_app, None).await.unwrap();
    let depot = admin.application().get("depot".to_owned()).await.unwrap();
    assert_eq!((depot.name.as_str(), depot.uid.as_deref()), ("Depot", Some("depot")));
    assert_eq!(reader.message().get("depot".to_owned(), published.id.clone(), None).await.unwrap().id, published.id);
    // Without it, an unknown application is 404; a bad field is refused where it is.
    let lone = MessageIn::new("order.paid".to_owned(), json!({}));
    assert_eq!(http_error(msgs.create("nowhere".to_owned(), lone, None).await).0, 404);
    let bad = MessageIn::new("order paid".to_owned(), json!({}));
    assert_eq!(validation_error(msgs.create("shop".to_owned(), bad, None).await).1, ["body", "eventType"]);
    // The same idempotency-key replays the first answer; another body with it is a 422.
    let keyed =
        || Some(MessageCreateOptions { idempotency_key: Some("key-1".to_owned()), ..MessageCreateOptions::default() });
    let body = || MessageIn::new("order.refunded".to_owned(), json!({"order": 3}));
    let once = msgs.create("shop".to_owned(), body(), keyed()).await.unwrap();
    assert_eq!(msgs.create("shop".to_owned(), body(), keyed()).await.unwrap().id, once.id);
    let other = MessageIn::new("order.refunded".to_owned(), json!({"order": 4}));
    assert_eq!(
        validation_error(msgs.create("shop".to_owned(), other, keyed()).await),
        (422, vec!["header".to_owned(), "idempotency-key".to_owned()])
    );
}

#[tokio::test]
async fn messages_are_published_once_read_and_listed_on_sqlite() {
    messages(Backend::Sqlite).await;
}

#[tokio::test]
async fn messages_are_published_once_read_and_listed_on_postgres() {
    messages(Backend::Postgres).await;
}

#[tokio::test]
async fn a_repeated_key_is_answered_202_with_the_replay_header() {
    let (_setup, gateway) = serve_with(Backend::Sqlite, API);
    let (status, _, _) = raw(&gateway, "POST", "/app", &[], Some(json!({"name": "Shop", "uid": "shop"}))).await;
    assert_eq!(status, 201);
    let message = json!({"eventType": "order.paid", "payload": {"order": 1}});
    let key = [("idempotency-key", "replay-1")];
    let (status, headers, first) = raw(&gateway, "POST", "/app/shop/msg", &key, Some(message.clone())).await;
    assert_eq!((status, headers.get("idempotency-replay")), (202, None));
    assert_eq!(first["payload"], json!({"order": 1}));
    let (status, headers, again) = raw(&gateway, "POST", "/app/shop/msg", &key, Some(message)).await;
    assert_eq!(status, 202);
    assert_eq!(headers.get("idempotency-replay").map(|v| v.to_str().unwrap()), Some("true"));
    assert_eq!(again["id"], first["id"]);
}
