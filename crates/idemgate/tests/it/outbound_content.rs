//! What the outbound API shows and keeps of a message's content, through Svix's SDK
//! against a real `idemgate serve` on SQLite and PostgreSQL, whose worker delivers to
//! real destinations on 127.0.0.1: the messages sent to an endpoint, the attempt lists'
//! filters, the expunges of a payload and of an attempt's response, the payload's
//! retention settings, and the metrics' `destination` label for endpoints (one value for
//! all unless `[api] metrics_per_endpoint`).

use std::time::{Duration, Instant};

use idemgate_testkit::Destination;
use serde_json::json;
use svix::{
    api::{
        MessageAttemptListAttemptedMessagesOptions, MessageAttemptListByEndpointOptions,
        MessageAttemptListByMsgOptions, MessageGetOptions, Svix,
    },
    models::{ApplicationIn, EndpointIn, MessageIn, MessageStatus, StatusCodeClass},
};

use crate::outbound_api::{
    ADMIN_TOKEN, API, Backend, PUBLISH_TOKEN, READ_TOKEN, http_error, raw, sdk, serve_with, validation_error,
};

/// An endpoint nothing listens on: every attempt fails without an answer (class 0).
const CLOSED: &str = "http://127.0.0.1:1/hook";

/// Application `shop` with the endpoints `ok` (answering `answering`) and `down`
/// ([`CLOSED`]); answers their ids.
async fn shop(admin: &Svix, answering: &Destination) -> (String, String) {
    let app = ApplicationIn { uid: Some("shop".to_owned()), ..ApplicationIn::new("shop".to_owned()) };
    admin.application().create(app, None).await.unwrap();
    let mut ids = Vec::new();
    for (uid, url) in [("ok", answering.url()), ("down", CLOSED.to_owned())] {
        let endpoint = EndpointIn { uid: Some(uid.to_owned()), ..EndpointIn::new(url) };
        ids.push(admin.endpoint().create("shop".to_owned(), endpoint, None).await.unwrap().id);
    }
    (ids.remove(0), ids.remove(0))
}

/// Polls `done` every 100 ms, for at most 20 s; whether it came true.
async fn eventually<F, Fut>(mut done: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if done().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// The attempts at the endpoint `ep` of `shop`, with `options`.
async fn at(reader: &Svix, ep: &str, options: MessageAttemptListByEndpointOptions) -> Vec<(String, i16)> {
    let list =
        reader.message_attempt().list_by_endpoint("shop".to_owned(), ep.to_owned(), Some(options)).await.unwrap();
    list.data.into_iter().map(|a| (a.msg_id, a.response_status_code)).collect()
}

async fn content(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, API);
    let answering = Destination::start(&[]);
    let admin = sdk(&gateway, ADMIN_TOKEN);
    let (ok, down) = shop(&admin, &answering).await;
    let publisher = sdk(&gateway, PUBLISH_TOKEN);
    let order = MessageIn {
        event_id: Some("order-1".to_owned()),
        channels: Some(["eu".to_owned()].into()),
        ..MessageIn::new("order.paid".to_owned(), json!({"order": 1}))
    };
    let first = publisher.message().create("shop".to_owned(), order.clone(), None).await.unwrap().id;
    // Message ids are ordered to 4 ms: the second is made in a later tick.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let signup = MessageIn::new("user.signup".to_owned(), json!({"user": 1}));
    let second = publisher.message().create("shop".to_owned(), signup, None).await.unwrap().id;
    let reader = sdk(&gateway, READ_TOKEN);
    let tried = eventually(|| async {
        let all = MessageAttemptListByEndpointOptions::default;
        at(&reader, "ok", all()).await.len() == 2 && at(&reader, "down", all()).await.len() >= 2
    })
    .await;
    assert!(tried, "both messages reached both endpoints");

    // The messages sent to an endpoint, newest first, with the delivery's status.
    let attempts = reader.message_attempt();
    let sent = attempts.list_attempted_messages("shop".to_owned(), "ok".to_owned(), None).await.unwrap();
    let shown: Vec<_> = sent.data.iter().map(|m| (m.id.clone(), m.status, m.payload.clone())).collect();
    assert_eq!(
        shown,
        [(second.clone(), MessageStatus::Success, json!({})), (first.clone(), MessageStatus::Success, json!({}))]
    );
    let options = |f: fn(&mut MessageAttemptListAttemptedMessagesOptions)| {
        let mut options = MessageAttemptListAttemptedMessagesOptions::default();
        f(&mut options);
        Some(options)
    };
    let ids =
        |list: svix::models::ListResponseEndpointMessageOut| list.data.into_iter().map(|m| m.id).collect::<Vec<_>>();
    let with =
        attempts.list_attempted_messages("shop".to_owned(), ok.clone(), options(|o| o.with_content = Some(true)));
    assert_eq!(with.await.unwrap().data[1].payload, json!({"order": 1}));
    let on_eu =
        attempts.list_attempted_messages("shop".to_owned(), ok.clone(), options(|o| o.channel = Some("eu".to_owned())));
    assert_eq!(ids(on_eu.await.unwrap()), [first.as_str()]);
    let failed = attempts.list_attempted_messages(
        "shop".to_owned(),
        ok.clone(),
        options(|o| o.status = Some(MessageStatus::Fail)),
    );
    assert!(ids(failed.await.unwrap()).is_empty());
    let one =
        attempts.list_attempted_messages("shop".to_owned(), ok.clone(), options(|o| o.limit = Some(1))).await.unwrap();
    assert_eq!((one.data[0].id.clone(), one.done), (second.clone(), false));
    let next = MessageAttemptListAttemptedMessagesOptions {
        limit: Some(1),
        iterator: one.iterator.clone(),
        ..Default::default()
    };
    let rest = attempts.list_attempted_messages("shop".to_owned(), ok.clone(), Some(next)).await.unwrap();
    assert_eq!((ids(rest.clone()), rest.done), (vec![first.clone()], true));
    let (status, _, body) = raw(&gateway, "GET", "/app/shop/endpoint/ok/msg?event_types=user.signup", &[], None).await;
    assert_eq!(
        (status, body["data"][0]["id"].as_str(), body["data"].as_array().map(Vec::len)),
        (200, Some(second.as_str()), Some(1))
    );
    let down_sent = attempts.list_attempted_messages("shop".to_owned(), down.clone(), None).await.unwrap();
    assert!(down_sent.data.iter().all(|m| m.status != MessageStatus::Success), "{down_sent:?}");

    // The attempt lists' filters.
    let no_answer = at(
        &reader,
        "down",
        MessageAttemptListByEndpointOptions {
            status_code_class: Some(StatusCodeClass::CodeNone),
            ..Default::default()
        },
    )
    .await;
    assert!(no_answer.len() >= 2 && no_answer.iter().all(|(_, code)| *code == 0), "{no_answer:?}");
    assert!(
        at(
            &reader,
            "down",
            MessageAttemptListByEndpointOptions {
                status_code_class: Some(StatusCodeClass::Code2xx),
                ..Default::default()
            }
        )
        .await
        .is_empty()
    );
    assert_eq!(
        at(
            &reader,
            "ok",
            MessageAttemptListByEndpointOptions { status: Some(MessageStatus::Success), ..Default::default() }
        )
        .await
        .len(),
        2
    );
    assert!(
        at(
            &reader,
            "ok",
            MessageAttemptListByEndpointOptions { status: Some(MessageStatus::Fail), ..Default::default() }
        )
        .await
        .is_empty()
    );
    assert_eq!(
        at(&reader, "ok", MessageAttemptListByEndpointOptions { channel: Some("eu".to_owned()), ..Default::default() })
            .await,
        [(first.clone(), 200)]
    );
    let by_msg =
        |options: MessageAttemptListByMsgOptions| attempts.list_by_msg("shop".to_owned(), first.clone(), Some(options));
    let at_ok = by_msg(MessageAttemptListByMsgOptions { endpoint_id: Some("ok".to_owned()), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(
        at_ok.data.iter().map(|a| (a.endpoint_id.as_str(), a.response.as_str())).collect::<Vec<_>>(),
        [(ok.as_str(), "{}")],
        "without content a response reads {{}}"
    );
    let err =
        by_msg(MessageAttemptListByMsgOptions { endpoint_id: Some("nope".to_owned()), ..Default::default() }).await;
    assert_eq!(http_error(err).0, 404);
    for (query, name) in [
        ("status=7", "status"),
        ("status_code_class=250", "status_code_class"),
        ("before=yesterday", "before"),
        ("channel=no%20spaces", "channel"),
    ] {
        let (status, _, body) =
            raw(&gateway, "GET", &format!("/app/shop/attempt/endpoint/ok?{query}"), &[], None).await;
        assert_eq!((status, body["detail"][0]["loc"].clone()), (422, json!(["query", name])), "{query}");
    }

    // Expunging the payload needs the admin role, keeps the message and its receipt.
    assert_eq!(http_error(publisher.message().expunge_content("shop".to_owned(), first.clone()).await).0, 403);
    admin.message().expunge_content("shop".to_owned(), "order-1".to_owned()).await.unwrap();
    let with_content = || Some(MessageGetOptions { with_content: Some(true) });
    let read = reader.message().get("shop".to_owned(), first.clone(), with_content()).await.unwrap();
    assert_eq!((read.payload, read.event_id.as_deref()), (json!({"expired": true}), Some("order-1")));
    let again = publisher.message().create("shop".to_owned(), order.clone(), None).await.unwrap();
    assert_eq!(again.id, first, "a repeat is still the original message");
    let other = MessageIn { payload: json!({"order": 2}), ..order };
    assert_eq!(http_error(publisher.message().create("shop".to_owned(), other, None).await).0, 409);
    // Its delivery that still waited (the closed endpoint's) ends failed: nothing is left to send.
    let ended = eventually(|| async {
        let list =
            reader.message_attempt().list_attempted_messages("shop".to_owned(), "down".to_owned(), None).await.unwrap();
        list.data.iter().any(|m| m.id == first && m.status == MessageStatus::Fail)
    })
    .await;
    assert!(ended, "the expunged message's waiting delivery ended");
    assert_eq!(http_error(admin.message().expunge_content("shop".to_owned(), "msg_nonsense".to_owned()).await).0, 404);

    // Expunging an attempt's response.
    let attempt = reader
        .message_attempt()
        .list_by_msg(
            "shop".to_owned(),
            second.clone(),
            Some(MessageAttemptListByMsgOptions {
                endpoint_id: Some(ok.clone()),
                with_content: Some(true),
                ..Default::default()
            }),
        )
        .await
        .unwrap()
        .data
        .remove(0);
    assert_eq!(
        http_error(
            publisher.message_attempt().expunge_content("shop".to_owned(), second.clone(), attempt.id.clone()).await
        )
        .0,
        403
    );
    admin.message_attempt().expunge_content("shop".to_owned(), second.clone(), attempt.id.clone()).await.unwrap();
    let read = reader.message_attempt().get("shop".to_owned(), second.clone(), attempt.id.clone(), None).await.unwrap();
    assert_eq!((read.response.as_str(), read.response_status_code), ("EXPUNGED", 200));
    let wrong = admin.message_attempt().expunge_content("shop".to_owned(), first.clone(), attempt.id.clone()).await;
    assert_eq!(http_error(wrong).0, 404, "an attempt of another message");
    let still = reader.message().get("shop".to_owned(), second.clone(), with_content()).await.unwrap();
    assert_eq!(still.payload, json!({"user": 1}), "the message's payload is not the attempt's");

    // Retention: 5 to 90 days, or 1 hour to 90 days in hours.
    let short = MessageIn { payload_retention_period: Some(4), ..MessageIn::new("a.b".to_owned(), json!({})) };
    assert_eq!(
        validation_error(publisher.message().create("shop".to_owned(), short, None).await),
        (422, vec!["body".to_owned(), "payloadRetentionPeriod".to_owned()])
    );
    let none = MessageIn { payload_retention_hours: Some(0), ..MessageIn::new("a.b".to_owned(), json!({})) };
    assert_eq!(
        validation_error(publisher.message().create("shop".to_owned(), none, None).await),
        (422, vec!["body".to_owned(), "payloadRetentionHours".to_owned()])
    );
    let hourly = MessageIn { payload_retention_hours: Some(1), ..MessageIn::new("a.b".to_owned(), json!({})) };
    publisher.message().create("shop".to_owned(), hourly, None).await.unwrap();
}

#[tokio::test]
async fn an_endpoints_messages_attempt_filters_and_expunges_on_sqlite() {
    content(Backend::Sqlite).await;
}

#[tokio::test]
async fn an_endpoints_messages_attempt_filters_and_expunges_on_postgres() {
    content(Backend::Postgres).await;
}

/// The `/metrics` text of a gateway with `api` once its worker delivered one message to
/// two endpoints, and the endpoints' ids.
async fn metrics_after_deliveries(api: &str) -> (String, Vec<String>) {
    let (_setup, gateway) = serve_with(Backend::Sqlite, api);
    let (one, two) = (Destination::start(&[]), Destination::start(&[]));
    let admin = sdk(&gateway, ADMIN_TOKEN);
    let app = ApplicationIn { uid: Some("shop".to_owned()), ..ApplicationIn::new("shop".to_owned()) };
    admin.application().create(app, None).await.unwrap();
    let mut ids = Vec::new();
    for destination in [&one, &two] {
        ids.push(
            admin.endpoint().create("shop".to_owned(), EndpointIn::new(destination.url()), None).await.unwrap().id,
        );
    }
    let message = MessageIn::new("order.paid".to_owned(), json!({"order": 1}));
    sdk(&gateway, PUBLISH_TOKEN).message().create("shop".to_owned(), message, None).await.unwrap();
    let delivered = eventually(|| async { one.received().len() == 1 && two.received().len() == 1 }).await;
    assert!(delivered, "both endpoints received the message");
    let scrape =
        || async { reqwest::get(format!("http://{}/metrics", gateway.addr)).await.unwrap().text().await.unwrap() };
    let counted = eventually(|| async { attempts_counted(&scrape().await) == 2 }).await;
    let text = scrape().await;
    assert!(counted, "two attempts counted: {text}");
    (text, ids)
}

/// The sum of `idemgate_attempts_total` over its series.
fn attempts_counted(text: &str) -> u64 {
    text.lines()
        .filter(|line| line.starts_with("idemgate_attempts_total{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

#[tokio::test]
async fn endpoints_share_one_destination_label_in_the_metrics_by_default() {
    let (text, ids) = metrics_after_deliveries(API).await;
    assert!(text.contains(r#"idemgate_attempts_total{destination="api",result="2xx"} 2"#), "{text}");
    for id in &ids {
        assert!(!text.contains(id.as_str()), "no endpoint id in the metrics: {text}");
    }
    assert!(!text.contains("app_"), "no application id in the metrics: {text}");
}

#[tokio::test]
async fn metrics_per_endpoint_gives_each_endpoint_its_own_label() {
    let (text, ids) = metrics_after_deliveries(&format!("{API}metrics_per_endpoint = true\n")).await;
    for id in &ids {
        let series = format!(r#"idemgate_attempts_total{{destination="{id}",result="2xx"}} 1"#);
        assert!(text.contains(&series), "{series} in {text}");
    }
    assert!(!text.contains(r#"destination="api""#), "{text}");
}
