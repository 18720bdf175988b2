//! The portal's messages and event type catalog on a real `idemgate serve`
//! (`docs/design/portal.md` §1, §3.1), on SQLite and PostgreSQL, set up and checked through
//! Svix's SDK: the list filtered by event type, time and a delivery's status; a message's
//! payload and the attempts the worker made at a recording endpoint on loopback; resend
//! and recover making new attempts; the catalog's schema and example; and another
//! application's ids answering 404 and changing nothing.

use std::time::{Duration, Instant};

use idemgate_testkit::{Destination, Step};
use serde_json::json;
use svix::{
    api::Svix,
    models::{ApplicationIn, EndpointIn, EventTypeIn, MessageAttemptTriggerType, MessageIn, MessageOut},
};

use crate::{
    outbound_api::{ADMIN_TOKEN, Backend, PUBLISH_TOKEN, sdk, serve_with},
    portal_harness::{Customer, portal_api},
};

/// The worker polls often, so a job made due does not wait long.
const FAST_WORKER: &str = "[worker]\npoll_interval = \"50ms\"\n";

/// The portal's configuration with a fast worker.
fn config() -> String {
    format!("{}{FAST_WORKER}", portal_api())
}

/// Creates the application `uid`.
async fn application(admin: &Svix, uid: &str) {
    let app = ApplicationIn { uid: Some(uid.to_owned()), ..ApplicationIn::new(uid.to_owned()) };
    admin.application().create(app, None).await.unwrap();
}

/// An endpoint of `app` at `sink`, taking `types` (every type when empty); its id.
async fn endpoint(admin: &Svix, app: &str, sink: &Destination, types: &[&str]) -> String {
    let filter = (!types.is_empty()).then(|| types.iter().map(|t| (*t).to_owned()).collect());
    let input = EndpointIn { event_types: filter, ..EndpointIn::new(sink.url()) };
    admin.endpoint().create(app.to_owned(), input, None).await.unwrap().id
}

/// Publishes a message of `event_type` with `payload` to `app`.
async fn publish(
    gateway: &crate::gateway_harness::Gateway,
    app: &str,
    event_type: &str,
    payload: serde_json::Value,
) -> MessageOut {
    let message = MessageIn::new(event_type.to_owned(), payload);
    sdk(gateway, PUBLISH_TOKEN).message().create(app.to_owned(), message, None).await.unwrap()
}

/// The attempts of the message `msg` of `app` through the API: (status code, trigger),
/// newest first.
async fn attempts(admin: &Svix, app: &str, msg: &str) -> Vec<(i16, MessageAttemptTriggerType)> {
    let list = admin.message_attempt().list_by_msg(app.to_owned(), msg.to_owned(), None).await.unwrap();
    list.data.into_iter().map(|a| (a.response_status_code, a.trigger_type)).collect()
}

/// Waits until the message `msg` of `app` has `count` attempts (20 s at most); answers them.
async fn attempts_reach(admin: &Svix, app: &str, msg: &str, count: usize) -> Vec<(i16, MessageAttemptTriggerType)> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = attempts(admin, app, msg).await;
        if found.len() >= count || Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `sink` has received `count` requests, in a blocking thread.
async fn received(sink: &Destination, count: usize) {
    let waiting = sink.clone();
    tokio::task::spawn_blocking(move || waiting.wait_until("the endpoint's deliveries", |got| got.len() >= count))
        .await
        .unwrap();
}

/// Whether `body` lists `before` above `after`.
fn above(body: &str, before: &str, after: &str) -> bool {
    matches!((body.find(before), body.find(after)), (Some(b), Some(a)) if b < a)
}

async fn messages_are_listed_and_filtered(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &config());
    let admin = sdk(&gateway, ADMIN_TOKEN);
    for uid in ["shop", "other"] {
        application(&admin, uid).await;
    }
    let (ok, refusing) = (Destination::start(&[]), Destination::start(&[]));
    refusing.otherwise(Step::Status(400));
    let everything = endpoint(&admin, "shop", &ok, &[]).await;
    let shipped_only = endpoint(&admin, "shop", &refusing, &["order.shipped"]).await;
    let foreign = endpoint(&admin, "other", &ok, &[]).await;
    let mut customer = Customer::enter(&gateway, "shop").await;

    let none = customer.get("/portal/messages").await;
    assert_eq!(none.status, 200, "{}", none.body);
    assert!(none.body.contains("id=\"no-messages\"") && none.body.contains("Send a test event"), "{}", none.body);

    // Paid first, shipped more than two seconds later; the shipped one fails at the
    // refusing endpoint (a 400 is final), both reach the other one.
    let paid = publish(&gateway, "shop", "order.paid", json!({"order": 1})).await;
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let shipped = publish(&gateway, "shop", "order.shipped", json!({"order": 1})).await;
    let theirs = publish(&gateway, "other", "order.paid", json!({"order": 9})).await;
    attempts_reach(&admin, "shop", &paid.id, 1).await;
    assert_eq!(attempts_reach(&admin, "shop", &shipped.id, 2).await.len(), 2);

    let all = customer.get("/portal/messages").await;
    assert_eq!(all.status, 200, "{}", all.body);
    assert!(above(&all.body, &shipped.id, &paid.id), "newest first: {}", all.body);
    assert!(!all.body.contains(&theirs.id), "another application's message is not listed");
    let row =
        |body: &str, id: &str| body.split(id).nth(1).and_then(|rest| rest.split("</tr>").next()).map(str::to_owned);
    assert!(
        row(&all.body, &shipped.id).is_some_and(|r| r.contains("order.shipped") && r.contains(">failed<")),
        "{}",
        all.body
    );
    assert!(row(&all.body, &paid.id).is_some_and(|r| r.contains(">delivered<") && r.contains("<time")), "{}", all.body);

    // By event type.
    let by_type = customer.get("/portal/messages?event_type=order.paid").await;
    assert!(by_type.body.contains(&paid.id) && !by_type.body.contains(&shipped.id), "{}", by_type.body);
    // By time: from the second after the paid one's (a datetime-local with seconds, UTC).
    let between = (paid.timestamp + Duration::from_secs(1)).format("%Y-%m-%dT%H:%M:%S").to_string();
    let since = customer.get(&format!("/portal/messages?since={between}")).await;
    assert!(since.body.contains(&shipped.id) && !since.body.contains(&paid.id), "{}", since.body);
    let until = customer.get(&format!("/portal/messages?until={between}")).await;
    assert!(until.body.contains(&paid.id) && !until.body.contains(&shipped.id), "{}", until.body);
    let long_ago = customer.get("/portal/messages?until=2000-01-01").await;
    assert!(long_ago.body.contains("No message matches these filters"), "{}", long_ago.body);
    // By the delivery's status to an endpoint.
    let failed = customer.get(&format!("/portal/messages?endpoint={shipped_only}&status=failed")).await;
    assert!(failed.body.contains(&shipped.id) && !failed.body.contains(&paid.id), "{}", failed.body);
    let delivered = customer.get(&format!("/portal/messages?endpoint={everything}&status=delivered")).await;
    assert!(delivered.body.contains(&shipped.id) && delivered.body.contains(&paid.id), "{}", delivered.body);
    let none_failed = customer.get(&format!("/portal/messages?endpoint={everything}&status=failed")).await;
    assert!(!none_failed.body.contains(&paid.id) && !none_failed.body.contains(&shipped.id), "{}", none_failed.body);

    // Filters that are not right: the form again with the field's error.
    for (query, field) in [
        ("since=yesterday", "since"),
        ("status=failed", "status"),
        ("status=lost&endpoint=x", "status"),
        ("event_type=no%20such", "event_type"),
        ("since=2026-01-02&until=2026-01-01", "until"),
    ] {
        let refused = customer.get(&format!("/portal/messages?{query}")).await;
        assert_eq!(refused.status, 422, "{query}: {}", refused.body);
        assert!(
            refused.body.contains(&format!("aria-describedby=\"{field}-error\""))
                && refused.body.contains(&format!("<p id=\"{field}-error\"")),
            "{query}: {}",
            refused.body
        );
    }
    // Another application's endpoint: 404.
    assert_eq!(customer.get(&format!("/portal/messages?endpoint={foreign}")).await.status, 404);
}

async fn a_message_shows_its_payload_and_attempts_and_is_resent(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &config());
    let admin = sdk(&gateway, ADMIN_TOKEN);
    application(&admin, "shop").await;
    // The destination holds its answer a while, so the delivery is under way when read.
    let sink = Destination::start(&[]);
    sink.delay(Duration::from_millis(2_500));
    let ep = endpoint(&admin, "shop", &sink, &[]).await;
    let mut customer = Customer::enter(&gateway, "shop").await;
    let message = publish(&gateway, "shop", "order.paid", json!({"note": "<b>hi</b>", "n": 1})).await;
    let path = format!("/portal/messages/{}", message.id);

    received(&sink, 1).await;
    let sending = customer.get(&path).await;
    assert_eq!(sending.status, 200, "{}", sending.body);
    assert!(sending.body.contains("&quot;note&quot;: &quot;&lt;b&gt;hi&lt;/b&gt;&quot;"), "{}", sending.body);
    assert!(!sending.body.contains("<b>hi</b>"), "the payload is escaped");
    // Under way: the deliveries are marked for the page's script, which is served; without
    // script, a Reload link. No page reloads itself on a timer.
    assert!(sending.body.contains("<div id=\"deliveries\" data-live=\"3\">"), "{}", sending.body);
    assert!(sending.body.contains("<script src=\"/portal/messages.js\"></script>"), "{}", sending.body);
    assert!(sending.body.contains(&format!("<a id=\"live-reload\" href=\"{path}\">Reload</a>")), "{}", sending.body);
    assert!(!sending.body.contains("http-equiv"), "{}", sending.body);
    let script = customer.get("/portal/messages.js").await;
    assert_eq!(script.status, 200);
    assert!(script.body.contains("getElementById('deliveries')"), "{}", script.body);

    // Poll the page until the attempt appears, as a customer watching it would.
    let deadline = Instant::now() + Duration::from_secs(20);
    let done = loop {
        let page = customer.get(&path).await;
        // Until the delivery is done: its attempt may be read a moment before its state.
        let settled = page.body.contains("<td data-label=\"HTTP status\">200</td>") && !page.body.contains("data-live");
        if settled || Instant::now() > deadline {
            break page;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(done.body.contains("<td data-label=\"HTTP status\">200</td>"), "{}", done.body);
    assert!(done.body.contains("<code>ok</code>"), "the start of the answer: {}", done.body);
    assert!(done.body.contains(">delivered<") && done.body.contains(" ms</td>"), "{}", done.body);
    assert!(!done.body.contains("http-equiv=\"refresh\""), "nothing under way: {}", done.body);
    assert!(done.body.contains(&format!("action=\"/portal/messages/{}/resend\"", message.id)), "{}", done.body);

    // Resend: a new, manual attempt, seen through the API.
    sink.delay(Duration::ZERO);
    let resent = customer.post(&format!("{path}/resend"), &[("endpoint", &ep)]).await;
    assert_eq!((resent.status, resent.location.as_deref()), (303, Some(path.as_str())), "{}", resent.body);
    let tries = attempts_reach(&admin, "shop", &message.id, 2).await;
    assert_eq!(tries, [(200, MessageAttemptTriggerType::Manual), (200, MessageAttemptTriggerType::Scheduled)]);

    // No endpoint named: 422, nothing sent.
    let refused = customer.post(&format!("{path}/resend"), &[("endpoint", "")]).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    // A message that is not there: 404.
    assert_eq!(customer.get("/portal/messages/msg_2aSpRbSEq4Hmp4yeztwBqfXEBDe").await.status, 404);
    received(&sink, 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink.received().len(), 2, "the refused resend sent nothing");
}

async fn a_recovery_sends_the_failed_messages_again(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &config());
    let admin = sdk(&gateway, ADMIN_TOKEN);
    application(&admin, "shop").await;
    let sink = Destination::start(&[]);
    sink.otherwise(Step::Status(400));
    let ep = endpoint(&admin, "shop", &sink, &[]).await;
    let mut customer = Customer::enter(&gateway, "shop").await;
    let first = publish(&gateway, "shop", "order.paid", json!({"order": 1})).await;
    let second = publish(&gateway, "shop", "order.paid", json!({"order": 2})).await;
    for msg in [&first.id, &second.id] {
        assert_eq!(attempts_reach(&admin, "shop", msg, 1).await.len(), 1);
    }
    let failing = customer.get(&format!("/portal/messages/{}", first.id)).await;
    assert!(failing.body.contains(">failed<") && failing.body.contains(">400</td>"), "{}", failing.body);

    // Refused: not a time, in the future, more than 14 days back. The form again, with
    // the error; nothing made due (the destination would refuse it again: a third
    // request).
    let recover = format!("/portal/endpoints/{ep}/recover");
    for (since, words) in [
        ("", "YYYY-MM-DDTHH:MM"),
        ("soon", "YYYY-MM-DDTHH:MM"),
        ("2999-01-01T00:00", "in the future"),
        ("2000-01-01T00:00", "14 days"),
    ] {
        let refused = customer.post(&recover, &[("since", since)]).await;
        assert_eq!(refused.status, 422, "{since}: {}", refused.body);
        assert!(
            refused.body.contains(words) && refused.body.contains("aria-describedby=\"since-error\""),
            "{since}: {}",
            refused.body
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink.received().len(), 2, "no refused recovery sent anything");

    // From the minute of the first one: both are sent again, and succeed.
    sink.otherwise(Step::Status(200));
    let since = first.timestamp.format("%Y-%m-%dT%H:%M").to_string();
    let recovered = customer.post(&recover, &[("since", &since)]).await;
    assert_eq!(
        (recovered.status, recovered.location.as_deref()),
        (303, Some(format!("/portal/endpoints/{ep}").as_str())),
        "{}",
        recovered.body
    );
    for msg in [&first.id, &second.id] {
        let tries = attempts_reach(&admin, "shop", msg, 2).await;
        assert_eq!(tries, [(200, MessageAttemptTriggerType::Manual), (400, MessageAttemptTriggerType::Scheduled)]);
    }
}

async fn the_catalog_shows_each_types_schema_and_example(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &config());
    let admin = sdk(&gateway, ADMIN_TOKEN);
    application(&admin, "shop").await;
    let mut customer = Customer::enter(&gateway, "shop").await;
    let empty = customer.get("/portal/event-types").await;
    assert_eq!(empty.status, 200, "{}", empty.body);
    assert!(empty.body.contains("id=\"no-event-types\""), "{}", empty.body);

    let schema =
        json!({"1": {"type": "object", "properties": {"order": {"type": "integer"}}, "examples": [{"order": 7}]}});
    let paid = EventTypeIn {
        schemas: Some(schema),
        ..EventTypeIn::new("order.paid".to_owned(), "An order was <paid>".to_owned())
    };
    admin.event_type().create(paid, None).await.unwrap();
    admin.event_type().create(EventTypeIn::new("order.old".to_owned(), "Gone".to_owned()), None).await.unwrap();
    admin.event_type().delete("order.old".to_owned(), None).await.unwrap();

    let catalog = customer.get("/portal/event-types").await;
    assert_eq!(catalog.status, 200, "{}", catalog.body);
    let body = &catalog.body;
    assert!(body.contains("<code>order.paid</code>") && body.contains("An order was &lt;paid&gt;"), "{body}");
    assert!(body.contains("&quot;type&quot;: &quot;integer&quot;"), "the schema, pretty: {body}");
    assert!(body.contains("<pre class=\"example\"><code>{\n  &quot;order&quot;: 7\n}</code></pre>"), "{body}");
    assert!(!body.contains("order.old"), "archived types are hidden: {body}");
    // The messages' filter picks from the same catalog.
    let filter = customer.get("/portal/messages").await;
    assert!(filter.body.contains("<option value=\"order.paid\">order.paid</option>"), "{}", filter.body);
}

async fn another_applications_ids_are_not_found(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &config());
    let admin = sdk(&gateway, ADMIN_TOKEN);
    let sink = Destination::start(&[]);
    sink.otherwise(Step::Status(400));
    let mut ids = Vec::new();
    for uid in ["shop", "other"] {
        application(&admin, uid).await;
        let ep = endpoint(&admin, uid, &sink, &[]).await;
        let msg = publish(&gateway, uid, "order.paid", json!({"app": uid})).await.id;
        assert_eq!(attempts_reach(&admin, uid, &msg, 1).await.len(), 1);
        ids.push((ep, msg));
    }
    sink.otherwise(Step::Status(200));
    let ((own_ep, own_msg), (their_ep, their_msg)) = (ids[0].clone(), ids[1].clone());
    let mut customer = Customer::enter(&gateway, "shop").await;
    assert_eq!(customer.get("/portal/messages").await.status, 200, "a page with the session's forms");
    let since = minute_of(&admin, "shop", &own_msg).await;
    let asked = [
        customer.get(&format!("/portal/messages/{their_msg}")).await,
        customer.get(&format!("/portal/messages?endpoint={their_ep}")).await,
        customer.post(&format!("/portal/messages/{their_msg}/resend"), &[("endpoint", &their_ep)]).await,
        customer.post(&format!("/portal/messages/{their_msg}/resend"), &[("endpoint", &own_ep)]).await,
        customer.post(&format!("/portal/messages/{own_msg}/resend"), &[("endpoint", &their_ep)]).await,
        customer.post(&format!("/portal/endpoints/{their_ep}/recover"), &[("since", &since)]).await,
    ];
    for (n, page) in asked.iter().enumerate() {
        assert_eq!(page.status, 404, "request {n}: {}", page.body);
    }
    // The customer's own recovery is done (a witness that the worker runs); the other
    // application's message was not sent again.
    let own = customer.post(&format!("/portal/endpoints/{own_ep}/recover"), &[("since", &since)]).await;
    assert_eq!(own.status, 303, "{}", own.body);
    assert_eq!(attempts_reach(&admin, "shop", &own_msg, 2).await.len(), 2);
    received(&sink, 3).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        attempts(&admin, "other", &their_msg).await.len(),
        1,
        "the other application's message was not sent again"
    );
    assert_eq!(sink.received().len(), 3);
}

/// The minute the message `msg` of `app` was sent, as a `datetime-local` value.
async fn minute_of(admin: &Svix, app: &str, msg: &str) -> String {
    let message = admin.message().get(app.to_owned(), msg.to_owned(), None).await.unwrap();
    message.timestamp.format("%Y-%m-%dT%H:%M").to_string()
}

#[tokio::test]
async fn messages_are_listed_and_filtered_on_sqlite() {
    messages_are_listed_and_filtered(Backend::Sqlite).await;
}

#[tokio::test]
async fn messages_are_listed_and_filtered_on_postgres() {
    messages_are_listed_and_filtered(Backend::Postgres).await;
}

#[tokio::test]
async fn a_message_shows_its_payload_and_attempts_and_is_resent_on_sqlite() {
    a_message_shows_its_payload_and_attempts_and_is_resent(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_message_shows_its_payload_and_attempts_and_is_resent_on_postgres() {
    a_message_shows_its_payload_and_attempts_and_is_resent(Backend::Postgres).await;
}

#[tokio::test]
async fn a_recovery_sends_the_failed_messages_again_on_sqlite() {
    a_recovery_sends_the_failed_messages_again(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_recovery_sends_the_failed_messages_again_on_postgres() {
    a_recovery_sends_the_failed_messages_again(Backend::Postgres).await;
}

#[tokio::test]
async fn the_catalog_shows_each_types_schema_and_example_on_sqlite() {
    the_catalog_shows_each_types_schema_and_example(Backend::Sqlite).await;
}

#[tokio::test]
async fn the_catalog_shows_each_types_schema_and_example_on_postgres() {
    the_catalog_shows_each_types_schema_and_example(Backend::Postgres).await;
}

#[tokio::test]
async fn another_applications_ids_are_not_found_on_sqlite() {
    another_applications_ids_are_not_found(Backend::Sqlite).await;
}

#[tokio::test]
async fn another_applications_ids_are_not_found_on_postgres() {
    another_applications_ids_are_not_found(Backend::Postgres).await;
}
