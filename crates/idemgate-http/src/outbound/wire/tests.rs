//! Each shape against `server/openapi.json` of svix/svix-webhooks (commit 4fc0cfb, spec
//! 1.1.1): output shapes carry every required member and no member the spec lacks, with
//! the spec's example values where it gives them; input shapes read the spec's examples
//! and ignore the members only Svix's hosted API knows.

#![allow(clippy::unwrap_used)]

use idemgate_core::outbound::field::{ApplicationUid, Loc};
use serde_json::{Value, json};

use super::*;

/// Each output shape's members in `server/openapi.json` (svix-webhooks 4fc0cfb): (schema,
/// required, all).
const SPEC: &[(&str, &[&str], &[&str])] = &[
    (
        "ApplicationOut",
        &["createdAt", "id", "metadata", "name", "updatedAt"],
        &["createdAt", "id", "metadata", "name", "throttleRate", "uid", "updatedAt"],
    ),
    (
        "EndpointOut",
        &["createdAt", "description", "id", "metadata", "updatedAt", "url"],
        &[
            "channels",
            "createdAt",
            "description",
            "disabled",
            "eventTypes",
            "id",
            "metadata",
            "throttleRate",
            "uid",
            "updatedAt",
            "url",
        ],
    ),
    ("EndpointHeadersOut", &["headers", "sensitive"], &["headers", "sensitive"]),
    ("EndpointSecretOut", &["key"], &["key"]),
    (
        "EndpointStats",
        &["canceled", "fail", "pending", "sending", "success"],
        &["canceled", "fail", "pending", "sending", "success"],
    ),
    ("RecoverOut", &["id", "status", "task", "updatedAt"], &["id", "status", "task", "updatedAt"]),
    (
        "MessageOut",
        &["eventType", "id", "payload", "timestamp"],
        &["channels", "eventId", "eventType", "id", "payload", "timestamp"],
    ),
    (
        "MessageAttemptOut",
        &[
            "endpointId",
            "id",
            "msgId",
            "response",
            "responseDurationMs",
            "responseStatusCode",
            "status",
            "statusText",
            "timestamp",
            "triggerType",
            "url",
        ],
        &[
            "endpointId",
            "id",
            "msgId",
            "response",
            "responseDurationMs",
            "responseStatusCode",
            "status",
            "statusText",
            "timestamp",
            "triggerType",
            "url",
        ],
    ),
    (
        "MessageEndpointOut",
        &["createdAt", "description", "id", "status", "statusText", "updatedAt", "url"],
        &[
            "channels",
            "createdAt",
            "description",
            "disabled",
            "eventTypes",
            "id",
            "nextAttempt",
            "status",
            "statusText",
            "throttleRate",
            "uid",
            "updatedAt",
            "url",
        ],
    ),
    (
        "EndpointMessageOut",
        &["eventType", "id", "payload", "status", "statusText", "timestamp"],
        &["channels", "eventId", "eventType", "id", "nextAttempt", "payload", "status", "statusText", "timestamp"],
    ),
    (
        "EventTypeOut",
        &["createdAt", "deprecated", "description", "name", "updatedAt"],
        &["archived", "createdAt", "deprecated", "description", "featureFlag", "name", "schemas", "updatedAt"],
    ),
    ("AppPortalAccessOut", &["token", "url"], &["token", "url"]),
    ("HttpErrorOut", &["code", "detail"], &["code", "detail"]),
    ("HTTPValidationError", &["detail"], &["detail"]),
    ("ValidationErrorItem", &["loc", "msg", "type"], &["loc", "msg", "type"]),
    ("ListResponse_MessageOut_", &["data", "done"], &["data", "done", "iterator", "prevIterator"]),
];

/// 2021-05-21T20:04:03.900Z, the time of the spec's example ids.
const AT: WireTime = WireTime(1_621_627_443_900);
const AT_TEXT: &str = "2021-05-21T20:04:03.900Z";

/// `value` has every required member of `schema` and only members the spec lists, and each
/// of `examples`' members equals the spec's example.
fn check(schema: &str, value: &impl Serialize, examples: Value) {
    let (_, required, all) = SPEC.iter().find(|(name, ..)| *name == schema).unwrap();
    let value = serde_json::to_value(value).unwrap();
    let object = value.as_object().unwrap();
    for member in *required {
        assert!(object.contains_key(*member), "{schema} lacks {member}: {value}");
    }
    for member in object.keys() {
        assert!(all.contains(&member.as_str()), "{schema} has {member}, which the spec does not list");
    }
    for (member, example) in examples.as_object().unwrap() {
        assert_eq!(&object[member], example, "{schema}.{member}");
    }
}

fn payload(text: &str) -> Payload {
    Payload::Raw(RawValue::from_string(text.to_owned()).unwrap())
}

fn message_out() -> MessageOut {
    MessageOut {
        event_id: Some("unique-msg-identifier".into()),
        event_type: "user.signup".into(),
        payload: payload(r#"{"email":"test@example.com","username":"test_user"}"#),
        channels: Some(vec!["project_123".into(), "group_2".into()]),
        id: "msg_1srOrx2ZWZBpBUvZwXKQmoEYga2".into(),
        timestamp: AT,
    }
}

fn endpoint_examples() -> Value {
    json!({"channels": ["project_123", "group_2"], "disabled": false, "eventTypes": ["user.signup", "user.deleted"],
        "id": "ep_1srOrx2ZWZBpBUvZwXKQmoEYga2", "uid": "unique-ep-identifier", "url": "https://example.com/webhook/"})
}

#[test]
fn applications_and_endpoints_are_spelt_as_the_spec() {
    let app = ApplicationOut {
        uid: Some("unique-app-identifier".into()),
        name: "My first application".into(),
        throttle_rate: None,
        id: "app_1srOrx2ZWZBpBUvZwXKQmoEYga2".into(),
        created_at: AT,
        updated_at: AT,
        metadata: Metadata::new(),
    };
    let examples = json!({"id": "app_1srOrx2ZWZBpBUvZwXKQmoEYga2", "name": "My first application",
        "uid": "unique-app-identifier", "createdAt": AT_TEXT, "metadata": {}, "throttleRate": null});
    check("ApplicationOut", &app, examples);
    let no_uid = serde_json::to_value(ApplicationOut { uid: None, ..app }).unwrap();
    assert!(!no_uid.as_object().unwrap().contains_key("uid"));

    let endpoint = EndpointOut {
        id: "ep_1srOrx2ZWZBpBUvZwXKQmoEYga2".into(),
        url: "https://example.com/webhook/".into(),
        description: "An example endpoint name".into(),
        metadata: Metadata::new(),
        created_at: AT,
        updated_at: AT,
        uid: Some("unique-ep-identifier".into()),
        disabled: false,
        event_types: Some(vec!["user.signup".into(), "user.deleted".into()]),
        channels: Some(vec!["project_123".into(), "group_2".into()]),
        throttle_rate: None,
    };
    check("EndpointOut", &endpoint, endpoint_examples());
    let destination = MessageEndpointOut {
        id: endpoint.id,
        url: endpoint.url,
        description: endpoint.description,
        created_at: AT,
        updated_at: AT,
        uid: endpoint.uid,
        disabled: false,
        event_types: endpoint.event_types,
        channels: endpoint.channels,
        throttle_rate: None,
        status: MessageStatus::Pending.into(),
        next_attempt: Some(AT),
    };
    let examples = endpoint_examples();
    let mut examples = examples.as_object().unwrap().clone();
    examples.extend([("status".into(), json!(1)), ("statusText".into(), json!("pending"))]);
    check("MessageEndpointOut", &destination, Value::Object(examples));
}

#[test]
fn endpoint_parts_are_spelt_as_the_spec() {
    let headers = EndpointHeadersOut {
        headers: [("X-Example".into(), "123".into()), ("X-Foobar".into(), "Bar".into())].into(),
        sensitive: vec!["Authorization".into()],
    };
    let examples = json!({"headers": {"X-Example": "123", "X-Foobar": "Bar"}, "sensitive": ["Authorization"]});
    check("EndpointHeadersOut", &headers, examples);
    let key = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
    let secret = EndpointSecretOut { key: key.into() };
    check("EndpointSecretOut", &secret, json!({ "key": key }));
    assert!(!format!("{secret:?}").contains("C2FV"));
    let stats = EndpointStats { success: 1, pending: 2, sending: 3, fail: 4, canceled: 0 };
    check("EndpointStats", &stats, json!({"success": 1, "pending": 2, "sending": 3, "fail": 4, "canceled": 0}));
    let recover = RecoverOut::running("qtask_1srOrx2ZWZBpBUvZwXKQmoEYga2".into(), AT);
    check("RecoverOut", &recover, json!({"status": "running", "task": "endpoint.recover", "updatedAt": AT_TEXT}));
}

#[test]
fn messages_and_attempts_are_spelt_as_the_spec() {
    let examples = json!({"channels": ["project_123", "group_2"], "eventId": "unique-msg-identifier",
        "eventType": "user.signup", "id": "msg_1srOrx2ZWZBpBUvZwXKQmoEYga2",
        "payload": {"email": "test@example.com", "username": "test_user"}, "timestamp": AT_TEXT});
    check("MessageOut", &message_out(), examples.clone());
    let sent = EndpointMessageOut { message: message_out(), status: MessageStatus::Fail.into(), next_attempt: None };
    let mut with_status = examples.as_object().unwrap().clone();
    with_status.extend([
        ("status".into(), json!(2)),
        ("statusText".into(), json!("fail")),
        ("nextAttempt".into(), Value::Null),
    ]);
    check("EndpointMessageOut", &sent, Value::Object(with_status));

    let attempt = MessageAttemptOut {
        id: "atmpt_1srOrx2ZWZBpBUvZwXKQmoEYga2".into(),
        msg_id: "msg_1srOrx2ZWZBpBUvZwXKQmoEYga2".into(),
        endpoint_id: "ep_1srOrx2ZWZBpBUvZwXKQmoEYga2".into(),
        url: "https://example.com/webhook/".into(),
        response: "{}".into(),
        response_status_code: 200,
        response_duration_ms: 12,
        status: MessageStatus::Success.into(),
        timestamp: AT,
        trigger_type: TriggerType::Manual,
    };
    let examples = json!({"endpointId": "ep_1srOrx2ZWZBpBUvZwXKQmoEYga2", "id": "atmpt_1srOrx2ZWZBpBUvZwXKQmoEYga2",
        "msgId": "msg_1srOrx2ZWZBpBUvZwXKQmoEYga2", "response": "{}", "responseStatusCode": 200,
        "url": "https://example.com/webhook/", "status": 0, "statusText": "success", "triggerType": 1,
        "responseDurationMs": 12});
    check("MessageAttemptOut", &attempt, examples);

    let page =
        ListResponse { data: vec![message_out()], iterator: Some("msg_1".into()), prev_iterator: None, done: true };
    check("ListResponse_MessageOut_", &page, json!({"iterator": "msg_1", "done": true}));
    let page = serde_json::to_value(ListResponse::<MessageOut> {
        data: vec![],
        iterator: None,
        prev_iterator: Some("-x".into()),
        done: false,
    })
    .unwrap();
    assert_eq!(page, json!({"data": [], "iterator": null, "prevIterator": "-x", "done": false}));
}

#[test]
fn event_types_access_and_errors_are_spelt_as_the_spec() {
    let schemas = json!({"1": {"description": "An invoice was paid by a user", "properties": {"invoiceId": {"description": "The invoice id", "type": "string"}, "userId": {"description": "The user id", "type": "string"}}, "required": ["invoiceId", "userId"], "title": "Invoice Paid Event", "type": "object"}});
    let event_type = EventTypeOut {
        name: "user.signup".into(),
        description: "A user has signed up".into(),
        archived: false,
        deprecated: false,
        feature_flag: Some("cool-new-feature".into()),
        schemas: Some(serde_json::from_value(schemas.clone()).unwrap()),
        created_at: AT,
        updated_at: AT,
    };
    let examples = json!({"archived": false, "description": "A user has signed up", "featureFlag": "cool-new-feature",
        "name": "user.signup", "schemas": schemas});
    check("EventTypeOut", &event_type, examples);
    let token = "appsk_kV3ts5tKPNJN4Dl25cMTfUNdmabxbX0O";
    let url = "https://app.svix.com/login#key=eyJhcHBJZCI6ICJhcHBfMXRSdFl";
    let access = AppPortalAccessOut { token: token.into(), url: url.into() };
    check("AppPortalAccessOut", &access, json!({ "token": token, "url": url }));
    assert!(!format!("{access:?}").contains("kV3ts"));
    check("HttpErrorOut", &HttpErrorOut { code: "not_found".into(), detail: "Entity not found".into() }, json!({}));

    let refused = ApplicationUid::parse("app_mine", Loc::body("uid")).err().unwrap();
    let item = ValidationErrorItem::from(&refused);
    check("ValidationErrorItem", &item, json!({"loc": ["body", "uid"], "type": "value_error"}));
    assert!(item.msg.contains("same prefix as the ID"));
    check("HTTPValidationError", &HttpValidationError { detail: vec![item] }, json!({}));
}

#[test]
fn inputs_read_the_spec_examples_and_ignore_hosted_only_members() {
    let app: ApplicationIn = serde_json::from_value(json!({"name": "My first application",
        "uid": "unique-app-identifier", "unknownHostedField": [1]}))
    .unwrap();
    assert_eq!(
        (app.name.as_str(), app.uid.as_deref(), app.metadata.len()),
        ("My first application", Some("unique-app-identifier"), 0)
    );
    assert!(serde_json::from_value::<ApplicationIn>(json!({"uid": "x"})).is_err(), "name is required");

    let endpoint: EndpointIn = serde_json::from_value(json!({"channels": ["project_123", "group_2"],
        "description": "An example endpoint name", "disabled": false, "eventTypes": ["user.signup", "user.deleted"],
        "secret": "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD", "uid": "unique-ep-identifier",
        "url": "https://example.com/webhook/", "headers": {"X-Sdk": "only"}, "rateLimit": 5}))
    .unwrap();
    assert_eq!(endpoint.event_types.as_ref().map(Vec::len), Some(2));
    assert_eq!(endpoint.secret.as_deref(), Some("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"));
    let bare: EndpointUpdate = serde_json::from_value(json!({"url": "https://example.com/webhook/"})).unwrap();
    assert_eq!((bare.description.as_str(), bare.disabled, bare.event_types), ("", false, None));

    let message: MessageIn = serde_json::from_value(json!({"channels": ["project_123", "group_2"],
        "eventId": "unique-msg-identifier", "eventType": "user.signup",
        "payload": {"email": "test@example.com", "username": "test_user"}, "payloadRetentionPeriod": 90,
        "tags": ["a"], "deliverAt": null, "transformationsParams": {}, "payloadRetentionHours": 1}))
    .unwrap();
    assert_eq!((message.event_id.as_deref(), message.payload_retention_period), (Some("unique-msg-identifier"), 90));

    let event_type: EventTypeIn = serde_json::from_value(json!({"name": "user.signup",
        "description": "A user has signed up", "featureFlag": "cool-new-feature", "groupName": "users",
        "featureFlags": ["x"], "schemas": {"1": {"type": "object"}}}))
    .unwrap();
    assert_eq!((event_type.deprecated, event_type.schemas.map(|s| s.len())), (false, Some(1)));
    let rotate: EndpointSecretRotateIn =
        serde_json::from_value(json!({"key": "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"})).unwrap();
    assert_eq!(rotate.grace_period_seconds, None);
    assert!(!format!("{rotate:?}").contains("C2FV"));
    let headers: EndpointHeadersPatchIn =
        serde_json::from_value(json!({"headers": {"X-Example": "123", "X-Gone": null}})).unwrap();
    assert_eq!(headers.headers.get("X-Gone"), Some(&None));
    let example: EventExampleIn = serde_json::from_value(json!({"eventType": "user.signup"})).unwrap();
    assert_eq!(example.event_type, "user.signup");
    let portal: AppPortalAccessIn = serde_json::from_value(json!({"featureFlags": []})).unwrap();
    assert!(portal.application.is_none());
}

#[test]
fn a_payload_keeps_its_bytes_is_an_object_and_may_be_called_data() {
    let text = r#"{"eventType":"a","data":{"n": 1.0000000000000000000001, "z":1e400}}"#;
    let message: MessageIn = serde_json::from_str(text).unwrap();
    assert_eq!(message.payload.raw().unwrap(), r#"{"n": 1.0000000000000000000001, "z":1e400}"#);
    assert_eq!(serde_json::to_string(&message.payload).unwrap(), r#"{"n": 1.0000000000000000000001, "z":1e400}"#);
    for payload in ["[1]", "\"text\"", "1", "null"] {
        let text = format!(r#"{{"eventType":"a","payload":{payload}}}"#);
        assert!(serde_json::from_str::<MessageIn>(&text).is_err(), "{payload}");
    }
    assert!(serde_json::from_str::<MessageIn>(r#"{"eventType":"a"}"#).is_err(), "payload is required");
}

#[test]
fn a_patch_tells_absent_from_null() {
    let patch: EndpointPatch = serde_json::from_value(json!({"uid": null, "channels": ["a"]})).unwrap();
    assert_eq!(patch.uid, Patch::Null);
    assert_eq!(patch.channels, Patch::Value(vec!["a".into()]));
    assert_eq!(patch.event_types, Patch::Absent);
    assert_eq!(patch.url, None);
    let app: ApplicationPatch = serde_json::from_value(json!({"throttleRate": 3})).unwrap();
    assert_eq!((app.throttle_rate, app.uid), (Patch::Value(3), Patch::Absent));
}

#[test]
fn times_are_rfc3339_with_milliseconds() {
    assert_eq!(serde_json::to_value(AT).unwrap(), json!(AT_TEXT));
    assert_eq!(serde_json::to_value(WireTime(0)).unwrap(), json!("1970-01-01T00:00:00.000Z"));
    let recover: RecoverIn = serde_json::from_value(json!({"since": "2021-05-21T20:04:03Z"})).unwrap();
    assert_eq!((recover.since, recover.until), (WireTime(1_621_627_443_000), None));
    let offset: RecoverIn = serde_json::from_value(json!({"since": "2021-05-21T22:04:03+02:00"})).unwrap();
    assert_eq!(offset.since, WireTime(1_621_627_443_000));
    for bad in ["2021-05-21", "30m", "yesterday", ""] {
        assert!(serde_json::from_value::<RecoverIn>(json!({ "since": bad })).is_err(), "{bad}");
    }
}

#[test]
fn sensitive_header_values_are_never_shown_only_named() {
    let stored = [("foo", "1"), ("authorization", "Bearer s3cret"), ("X-Auth-Token", "t0ken")]
        .map(|(name, value)| (name.to_owned(), value.to_owned()));
    let out = serde_json::to_string(&EndpointHeadersOut::from_stored(stored.into())).unwrap();
    assert_eq!(out, r#"{"headers":{"foo":"1"},"sensitive":["X-Auth-Token","authorization"]}"#);
}

#[test]
fn a_payload_without_content_or_expired_reads_as_svix_shows_it() {
    assert_eq!(serde_json::to_string(&Payload::WithoutContent).unwrap(), "{}");
    assert_eq!(serde_json::to_value(Payload::Expired).unwrap(), json!({"expired": true}));
}
