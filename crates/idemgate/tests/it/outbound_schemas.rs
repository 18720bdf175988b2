//! An event type's payload schema through Svix's SDK against a real `idemgate serve`: a
//! payload its schema refuses is 422 naming the first failing path and nothing is stored
//! (no message, no event, no job, no key record), one it accepts is published, a type
//! without a schema accepts anything, an archived type's schema still applies, and a
//! schema that does not compile is refused when the event type is written
//! (`docs/design/outbound-api.md` §3.10).

use serde_json::json;
use svix::{
    api::MessageCreateOptions,
    models::{ApplicationIn, EndpointIn, EventTypeIn, EventTypeUpsertIn, MessageIn},
};

use crate::{
    gateway_harness::Setup,
    outbound_api::{ADMIN_TOKEN, API, Backend, PUBLISH_TOKEN, sdk, serve_keeping_url, stored_rows, validation_error},
};

/// What a publish may leave in the store.
const TABLES: [&str; 4] = ["messages", "events", "jobs", "idempotency_records"];

fn counts(setup: &Setup, url: Option<&str>) -> Vec<u64> {
    TABLES.iter().map(|table| stored_rows(setup, url, table)).collect()
}

async fn payload_schemas(backend: Backend) {
    let (setup, gateway, url) = serve_keeping_url(backend, API);
    let url = url.as_deref();
    let admin = sdk(&gateway, ADMIN_TOKEN);
    let app = ApplicationIn { uid: Some("shop".to_owned()), ..ApplicationIn::new("Shop".to_owned()) };
    admin.application().create(app, None).await.unwrap();
    let hook = EndpointIn::new("http://127.0.0.1:9/hook".to_owned());
    admin.endpoint().create("shop".to_owned(), hook, None).await.unwrap();
    let order = json!({
        "type": "object",
        "required": ["order"],
        "properties": {
            "order": {"type": "integer"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}}}},
        },
    });
    // Version "1" applies; "2" (a string) would refuse every order.
    let typed = EventTypeIn {
        schemas: Some(json!({"1": order, "2": {"type": "string"}})),
        ..EventTypeIn::new("order.paid".to_owned(), "An order was paid".to_owned())
    };
    admin.event_type().create(typed, None).await.unwrap();

    // A schema that does not compile, or would fetch a `$ref`, is refused where it is.
    for bad in [json!({"1": {"type": "no-such-type"}}), json!({"1": {"$ref": "http://127.0.0.1:9/schema.json"}})] {
        let input = EventTypeIn { schemas: Some(bad), ..EventTypeIn::new("order.bad".to_owned(), "Bad".to_owned()) };
        assert_eq!(
            validation_error(admin.event_type().create(input, None).await),
            (422, vec!["body".to_owned(), "schemas".to_owned()])
        );
        let upsert = EventTypeUpsertIn {
            schemas: Some(json!({"1": {"minimum": "one"}})),
            ..EventTypeUpsertIn::new("Bad".to_owned())
        };
        assert_eq!(
            validation_error(admin.event_type().upsert("order.paid".to_owned(), upsert).await).1,
            ["body", "schemas"]
        );
    }
    assert_eq!(admin.event_type().get("order.bad".to_owned()).await.ok().map(|found| found.name), None);

    let publisher = sdk(&gateway, PUBLISH_TOKEN);
    let keyed = || Some(MessageCreateOptions { idempotency_key: Some("pay-1".to_owned()), ..Default::default() });
    let paid = |payload| MessageIn::new("order.paid".to_owned(), payload);
    // A refused payload: the first failing path, and nothing stored, the key freed.
    let before = counts(&setup, url);
    let refused = publisher
        .message()
        .create("shop".to_owned(), paid(json!({"order": 1, "items": [{"qty": 2}, {"qty": 0}]})), keyed())
        .await;
    assert_eq!(validation_error(refused), (422, ["body", "payload", "items", "1", "qty"].map(str::to_owned).to_vec()));
    let missing = publisher.message().create("shop".to_owned(), paid(json!({"items": []})), None).await;
    assert_eq!(validation_error(missing).1, ["body", "payload"]);
    assert_eq!(counts(&setup, url), before, "nothing stored for {TABLES:?}");
    assert!(admin.message().list("shop".to_owned(), None).await.unwrap().data.is_empty());

    // An accepted payload, under the same key: one message and its job.
    let accepted = publisher
        .message()
        .create("shop".to_owned(), paid(json!({"order": 1, "items": [{"qty": 2}]})), keyed())
        .await
        .unwrap();
    let after = counts(&setup, url);
    assert_eq!((after[0], after[2]), (before[0] + 1, before[2] + 1), "one message, one job");
    // A type without a schema, or no type at all, accepts anything.
    let plain = EventTypeIn::new("order.note".to_owned(), "A note".to_owned());
    admin.event_type().create(plain, None).await.unwrap();
    for name in ["order.note", "order.unknown"] {
        publisher
            .message()
            .create("shop".to_owned(), MessageIn::new(name.to_owned(), json!({"any": [1, "two"]})), None)
            .await
            .unwrap();
    }
    // A new schema applies at once; an archived type's schema still applies.
    let looser = EventTypeUpsertIn {
        schemas: Some(json!({"1": {"type": "object", "properties": {"items": {"type": "string"}}}})),
        ..EventTypeUpsertIn::new("Any order".to_owned())
    };
    admin.event_type().upsert("order.paid".to_owned(), looser).await.unwrap();
    publisher.message().create("shop".to_owned(), paid(json!({"items": "none"})), None).await.unwrap();
    admin.event_type().delete("order.paid".to_owned(), None).await.unwrap();
    let archived = publisher.message().create("shop".to_owned(), paid(json!({"items": 1})), None).await;
    assert_eq!(validation_error(archived).1, ["body", "payload", "items"]);
    let listed = admin.message().list("shop".to_owned(), None).await.unwrap().data;
    assert_eq!((listed.len(), listed.last().map(|m| m.id.clone())), (4, Some(accepted.id)));
}

#[tokio::test]
async fn a_payload_is_checked_against_its_event_types_schema_on_sqlite() {
    payload_schemas(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_payload_is_checked_against_its_event_types_schema_on_postgres() {
    payload_schemas(Backend::Postgres).await;
}
