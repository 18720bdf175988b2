//! The outbound API's message attempts through Svix's SDK against a real `idemgate serve`,
//! whose worker delivers to real destinations on 127.0.0.1: a message's attempts by
//! message, by endpoint and one by one, each only within the application of the path
//! (`docs/design/outbound-api.md` §3.3); an endpoint's deliveries by status; the endpoints
//! a message was sent to.

use std::time::{Duration, Instant};

use idemgate_testkit::{Destination, Step};
use serde_json::json;
use svix::{
    api::{MessageAttemptListByEndpointOptions, MessageAttemptListByMsgOptions, Svix},
    models::{ApplicationIn, EndpointIn, ListResponseMessageAttemptOut, MessageIn, MessageStatus},
};

use crate::outbound_api::{
    ADMIN_TOKEN, API, Backend, PUBLISH_TOKEN, READ_TOKEN, http_error, raw, sdk, serve_with, validation_error,
};

/// An application `uid` with one endpoint per destination (uids `{uid}-0`, `{uid}-1`, …);
/// answers the endpoints' ids.
async fn app_with(admin: &Svix, uid: &str, destinations: &[&Destination]) -> Vec<String> {
    let app = ApplicationIn { uid: Some(uid.to_owned()), ..ApplicationIn::new(uid.to_owned()) };
    admin.application().create(app, None).await.unwrap();
    let mut ids = Vec::new();
    for (n, destination) in destinations.iter().enumerate() {
        let endpoint = EndpointIn { uid: Some(format!("{uid}-{n}")), ..EndpointIn::new(destination.url()) };
        ids.push(admin.endpoint().create(uid.to_owned(), endpoint, None).await.unwrap().id);
    }
    ids
}

/// The message's attempts once there are `count` of them (the worker writes each after
/// its answer).
async fn attempts(reader: &Svix, app: &str, msg: &str, count: usize) -> ListResponseMessageAttemptOut {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list = reader.message_attempt().list_by_msg(app.to_owned(), msg.to_owned(), None).await.unwrap();
        if list.data.len() >= count || Instant::now() > deadline {
            return list;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn a_messages_attempts_are_listed_newest_first_and_read_within_their_application(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, API);
    let (failing, answering, elsewhere) =
        (Destination::start(&[Step::Status(500)]), Destination::start(&[]), Destination::start(&[]));
    let admin = sdk(&gateway, ADMIN_TOKEN);
    let shop = app_with(&admin, "shop", &[&failing, &answering]).await;
    let depot = app_with(&admin, "depot", &[&elsewhere]).await;
    let publisher = sdk(&gateway, PUBLISH_TOKEN);
    let publish = |app: &'static str| {
        let message = MessageIn::new("order.paid".to_owned(), json!({"order": 1}));
        let msgs = publisher.message();
        async move { msgs.create(app.to_owned(), message, None).await.unwrap().id }
    };
    let msg = publish("shop").await;
    let depot_msg = publish("depot").await;
    let reader = sdk(&gateway, READ_TOKEN);

    let list = attempts(&reader, "shop", &msg, 2).await;
    assert_eq!(list.data.len(), 2, "{list:?}");
    assert!(list.done);
    let mut codes: Vec<_> =
        list.data.iter().map(|a| (a.endpoint_id.clone(), a.response_status_code, a.status)).collect();
    codes.sort();
    let mut expected =
        vec![(shop[0].clone(), 500, MessageStatus::Fail), (shop[1].clone(), 200, MessageStatus::Success)];
    expected.sort();
    assert_eq!(codes, expected);
    assert!(list.data[0].id > list.data[1].id, "newest first: {list:?}");
    for attempt in &list.data {
        assert!(attempt.id.starts_with("atmpt_"), "{attempt:?}");
        assert_eq!(attempt.msg_id, msg);
        let url = if attempt.endpoint_id == shop[0] { failing.url() } else { answering.url() };
        assert_eq!(attempt.url, url);
    }

    // By endpoint (id or uid), one page at a time, and one by one.
    let attempt = list.data.iter().find(|a| a.endpoint_id == shop[1]).unwrap();
    let by_endpoint =
        reader.message_attempt().list_by_endpoint("shop".to_owned(), "shop-1".to_owned(), None).await.unwrap();
    assert_eq!(by_endpoint.data.iter().map(|a| a.id.as_str()).collect::<Vec<_>>(), [attempt.id.as_str()]);
    let one = MessageAttemptListByMsgOptions { limit: Some(1), ..MessageAttemptListByMsgOptions::default() };
    let page = reader.message_attempt().list_by_msg("shop".to_owned(), msg.clone(), Some(one)).await.unwrap();
    assert_eq!((page.data[0].id.clone(), page.done), (list.data[0].id.clone(), false));
    let next = MessageAttemptListByMsgOptions { limit: Some(1), iterator: page.iterator.clone(), ..Default::default() };
    let page = reader.message_attempt().list_by_msg("shop".to_owned(), msg.clone(), Some(next)).await.unwrap();
    assert_eq!((page.data[0].id.clone(), page.done), (list.data[1].id.clone(), true));
    let read = reader.message_attempt().get("shop".to_owned(), msg.clone(), attempt.id.clone(), None).await.unwrap();
    assert_eq!(
        (read.id.as_str(), read.response_status_code, read.url.as_str()),
        (attempt.id.as_str(), 200, answering.url().as_str())
    );

    // Another application's message, endpoint or attempt is 404 under this one.
    let reads = reader.message_attempt();
    assert_eq!(http_error(reads.list_by_msg("shop".to_owned(), depot_msg.clone(), None).await).0, 404);
    assert_eq!(http_error(reads.list_by_endpoint("shop".to_owned(), depot[0].clone(), None).await).0, 404);
    assert_eq!(http_error(reads.get("depot".to_owned(), depot_msg.clone(), attempt.id.clone(), None).await).0, 404);
    assert_eq!(http_error(reads.get("depot".to_owned(), msg.clone(), attempt.id.clone(), None).await).0, 404);
    assert_eq!(http_error(reads.get("shop".to_owned(), msg.clone(), "atmpt_nonsense".to_owned(), None).await).0, 404);
    let bad = MessageAttemptListByEndpointOptions { iterator: Some("msg_nonsense".to_owned()), ..Default::default() };
    assert_eq!(
        validation_error(reads.list_by_endpoint("shop".to_owned(), shop[0].clone(), Some(bad)).await),
        (422, vec!["query".to_owned(), "iterator".to_owned()])
    );

    // The endpoints' deliveries by status: the one that answered delivered its message.
    let endpoints = reader.endpoint();
    let answered = endpoints.get_stats("shop".to_owned(), "shop-1".to_owned(), None).await.unwrap();
    assert_eq!((answered.success, answered.pending, answered.sending, answered.fail), (1, 0, 0, 0));
    let failed = endpoints.get_stats("shop".to_owned(), shop[0].clone(), None).await.unwrap();
    assert_eq!((failed.success, failed.pending + failed.sending + failed.fail, failed.canceled), (0, 1, 0));
    assert_eq!(http_error(endpoints.get_stats("shop".to_owned(), depot[0].clone(), None).await).0, 404);
    let (status, _, body) =
        raw(&gateway, "GET", "/app/shop/endpoint/shop-1/stats?until=2999-01-01T00:00:00Z", &[], None).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_range")));
    let (status, _, body) = raw(
        &gateway,
        "GET",
        "/app/shop/endpoint/shop-1/stats?since=2001-01-01T00:00:00Z&until=2001-01-02T00:00:00Z",
        &[],
        None,
    )
    .await;
    assert_eq!((status, body), (200, json!({"success": 0, "pending": 0, "sending": 0, "fail": 0, "canceled": 0})));

    // The endpoints the message was sent to, with each delivery's status.
    let sent = reads.list_attempted_destinations("shop".to_owned(), msg.clone(), None).await.unwrap();
    let shown: Vec<_> = sent.data.iter().map(|d| (d.id.clone(), d.url.clone())).collect();
    let mut expected = vec![(shop[0].clone(), failing.url()), (shop[1].clone(), answering.url())];
    expected.sort();
    assert_eq!(shown, expected);
    let delivered = sent.data.iter().find(|d| d.id == shop[1]).unwrap();
    assert_eq!((delivered.status, delivered.next_attempt), (MessageStatus::Success, None));
    assert_ne!(sent.data.iter().find(|d| d.id == shop[0]).unwrap().status, MessageStatus::Success);
    assert_eq!(http_error(reads.list_attempted_destinations("shop".to_owned(), depot_msg, None).await).0, 404);
}

#[tokio::test]
async fn a_messages_attempts_are_listed_newest_first_and_read_within_their_application_on_sqlite() {
    a_messages_attempts_are_listed_newest_first_and_read_within_their_application(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_messages_attempts_are_listed_newest_first_and_read_within_their_application_on_postgres() {
    a_messages_attempts_are_listed_newest_first_and_read_within_their_application(Backend::Postgres).await;
}
