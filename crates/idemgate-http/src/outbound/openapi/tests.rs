//! The document against the design doc's table of Svix's operations, against itself (every
//! reference defined) and against serde: each key a wire value serialises to is a property
//! of its schema, and each required property is serialised.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use idemgate_core::outbound::status::MessageStatus;
use serde::Serialize;
use serde_json::{Value, json, value::RawValue};

use super::*;
use crate::outbound::wire::{ListResponse, Payload, ValidationErrorItem, WireTime};

fn doc() -> Value {
    serde_json::to_value(document(Some("https://hooks.example.com/"))).unwrap()
}

/// (method, path) of every row of §1.1's table in `docs/design/outbound-api.md`.
fn design_table() -> BTreeSet<(String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/design/outbound-api.md");
    let text = std::fs::read_to_string(path).unwrap();
    let table = text.split("### 1.1 Every operation").nth(1).unwrap().split("### 1.2").next().unwrap();
    table
        .lines()
        .filter_map(|line| {
            let mut cells = line.split('|').map(str::trim).skip(1);
            let method = cells.next()?;
            let path = cells.next()?.trim_matches('`');
            (["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"].contains(&method) && path.starts_with('/'))
                .then(|| (method.to_owned(), format!("/api/v1{path}")))
        })
        .collect()
}

fn documented(doc: &Value) -> BTreeSet<(String, String)> {
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| item.as_object().unwrap().keys().map(|method| (method.to_uppercase(), path.clone())))
        .filter(|(method, _)| method != "PARAMETERS")
        .collect()
}

#[test]
fn every_operation_of_the_design_docs_table_is_documented_with_its_method() {
    let table = design_table();
    assert_eq!(table.len(), 43, "the table was read: {table:?}");
    assert_eq!(documented(&doc()), table);
    assert_eq!(OPERATIONS.len(), 43);
}

#[test]
fn every_operation_has_a_unique_id_its_path_parameters_and_its_refusals() {
    let doc = doc();
    let mut ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let id = operation["operationId"].as_str().unwrap();
            assert!(ids.insert(id.to_owned()), "{id} twice");
            let params: Vec<&str> = operation["parameters"]
                .as_array()
                .map(|p| p.iter().filter(|p| p["in"] == "path").map(|p| p["name"].as_str().unwrap()).collect())
                .unwrap_or_default();
            assert_eq!(params, path_parameters(path).collect::<Vec<_>>(), "{method} {path}");
            let responses = operation["responses"].as_object().unwrap();
            if path.starts_with("/api/v1/health") {
                assert_eq!(operation["security"], json!([]), "{path} needs no token");
            } else {
                for status in ["401", "403", "404", "409", "422"] {
                    assert!(responses.contains_key(status), "{method} {path} lists {status}");
                }
                assert!(operation.get("security").is_none(), "{method} {path} takes the document's bearer");
            }
            let keyed = operation["parameters"]
                .as_array()
                .is_some_and(|p| p.iter().any(|p| p["name"] == "idempotency-key" && p["in"] == "header"));
            assert_eq!(keyed, method == "post", "{method} {path}: the idempotency-key on every POST only");
        }
    }
    assert_eq!(doc["components"]["securitySchemes"][BEARER]["scheme"], "bearer");
    assert_eq!(doc["security"], json!([{ BEARER: [] }]));
    assert_eq!(doc["servers"][0]["url"], "https://hooks.example.com");
    assert_eq!(serde_json::to_value(document(None)).unwrap()["servers"][0]["url"], "/");
}

/// Every `$ref` under `value`.
fn references(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                found.push(target.clone());
            }
            map.values().for_each(|v| references(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, found)),
        _ => {}
    }
}

#[test]
fn every_reference_is_defined_and_svixs_error_shapes_are_named_as_theirs() {
    let doc = doc();
    let mut found = Vec::new();
    references(&doc, &mut found);
    assert!(found.len() > 100, "{}", found.len());
    for target in found {
        let pointer = target.strip_prefix('#').unwrap();
        assert!(doc.pointer(pointer).is_some(), "{target} is not defined");
    }
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["HttpErrorOut"]["required"], json!(["code", "detail"]));
    assert_eq!(schemas["HTTPValidationError"]["required"], json!(["detail"]));
    assert_eq!(schemas["ValidationErrorItem"]["required"], json!(["loc", "msg", "type"]));
    let not_found = &doc["components"]["responses"]["NotFound"]["content"]["application/json"]["schema"];
    assert_eq!(not_found["$ref"], "#/components/schemas/HttpErrorOut");
    let invalid = &doc["components"]["responses"]["ValidationError"]["content"]["application/json"]["schema"];
    assert_eq!(invalid["$ref"], "#/components/schemas/HTTPValidationError");
}

/// The schema `name`'s properties and required properties, through `allOf` and `$ref`s.
fn members(doc: &Value, schema: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    if let Some(target) = schema["$ref"].as_str() {
        return members(doc, doc.pointer(target.strip_prefix('#').unwrap()).unwrap());
    }
    let mut properties: BTreeSet<String> =
        schema["properties"].as_object().map(|p| p.keys().cloned().collect()).unwrap_or_default();
    let mut required: BTreeSet<String> = schema["required"]
        .as_array()
        .map(|r| r.iter().map(|n| n.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    for part in schema["allOf"].as_array().into_iter().flatten() {
        let (more, needed) = members(doc, part);
        properties.extend(more);
        required.extend(needed);
    }
    (properties, required)
}

/// Each key `value` serialises to is a property of the schema `name`, and each of the
/// schema's required properties is serialised.
fn check(doc: &Value, name: &str, value: &impl Serialize) {
    let schema = &doc["components"]["schemas"][name];
    assert!(schema.is_object(), "{name} is defined");
    let (properties, required) = members(doc, schema);
    let serialised = serde_json::to_value(value).unwrap();
    let keys: BTreeSet<String> = serialised.as_object().unwrap().keys().cloned().collect();
    assert!(keys.is_subset(&properties), "{name}: {:?} are not properties", keys.difference(&properties));
    assert!(required.is_subset(&keys), "{name}: {:?} required but not sent", required.difference(&keys));
}

fn message() -> MessageOut {
    MessageOut {
        event_id: Some("evt-1".into()),
        event_type: "user.signup".into(),
        payload: Payload::Raw(RawValue::from_string(r#"{"a":1}"#.into()).unwrap()),
        channels: Some(vec!["c".into()]),
        id: "msg_1".into(),
        timestamp: WireTime(1),
    }
}

fn endpoint() -> EndpointOut {
    EndpointOut {
        id: "ep_1".into(),
        url: "https://example.com/hook".into(),
        description: String::new(),
        metadata: [("k".to_owned(), "v".to_owned())].into(),
        created_at: WireTime(1),
        updated_at: WireTime(2),
        uid: Some("one".into()),
        disabled: false,
        event_types: Some(vec!["user.signup".into()]),
        channels: None,
        throttle_rate: Some(10),
    }
}

#[test]
fn each_key_serde_writes_is_a_property_of_its_schema() {
    let doc = doc();
    let app = ApplicationOut {
        uid: Some("app-one".into()),
        name: "One".into(),
        throttle_rate: None,
        id: "app_1".into(),
        created_at: WireTime(1),
        updated_at: WireTime(2),
        metadata: Default::default(),
    };
    check(&doc, "ApplicationOut", &app);
    check(&doc, "ApplicationOut", &ApplicationOut { uid: None, ..app.clone() });
    let page = ListResponse { data: vec![app], iterator: None, prev_iterator: Some("-x".into()), done: true };
    check(&doc, "ListResponse_ApplicationOut_", &page);
    check(&doc, "EndpointOut", &endpoint());
    check(&doc, "MessageOut", &message());
    let attempt = MessageAttemptOut {
        id: "atmpt_1".into(),
        msg_id: "msg_1".into(),
        endpoint_id: "ep_1".into(),
        url: "https://example.com/hook".into(),
        response: "ok".into(),
        response_status_code: 200,
        response_duration_ms: 3,
        status: MessageStatus::Success.into(),
        timestamp: WireTime(1),
        trigger_type: TriggerType::Manual,
    };
    check(&doc, "MessageAttemptOut", &attempt);
    let ep = endpoint();
    let destination = MessageEndpointOut {
        id: ep.id,
        url: ep.url,
        description: ep.description,
        created_at: ep.created_at,
        updated_at: ep.updated_at,
        uid: ep.uid,
        disabled: ep.disabled,
        event_types: ep.event_types,
        channels: ep.channels,
        throttle_rate: ep.throttle_rate,
        status: MessageStatus::Pending.into(),
        next_attempt: Some(WireTime(3)),
    };
    check(&doc, "MessageEndpointOut", &destination);
    let sent = EndpointMessageOut { message: message(), status: MessageStatus::Fail.into(), next_attempt: None };
    check(&doc, "EndpointMessageOut", &sent);
    let event_type = EventTypeOut {
        name: "user.signup".into(),
        description: "d".into(),
        archived: false,
        deprecated: false,
        feature_flag: None,
        schemas: Some([("1".to_owned(), json!({"type": "object"}))].into()),
        created_at: WireTime(1),
        updated_at: WireTime(1),
    };
    check(&doc, "EventTypeOut", &event_type);
    check(&doc, "EndpointHeadersOut", &EndpointHeadersOut::from_stored([("x-a".into(), "b".into())].into()));
    check(&doc, "EndpointSecretOut", &EndpointSecretOut { key: "whsec_x".into() });
    check(&doc, "EndpointStats", &EndpointStats::default());
    check(&doc, "RecoverOut", &RecoverOut::running("qtask_1".into(), WireTime(1)));
    check(&doc, "AppPortalAccessOut", &AppPortalAccessOut { token: "t".into(), url: "https://x".into() });
    check(&doc, "HttpErrorOut", &HttpErrorOut { code: "not_found".into(), detail: "Entity not found".into() });
    let item =
        ValidationErrorItem { loc: vec!["body".into(), "url".into()], msg: "m".into(), kind: "value_error".into() };
    check(&doc, "HTTPValidationError", &HttpValidationError { detail: vec![item.clone()] });
    check(&doc, "ValidationErrorItem", &item);
    check(&doc, "EmptyResponse", &json!({}));
}

/// Each member of an input `body` (as the SDKs send it) is a property of the schema `name`,
/// the body deserialises into `T`, and without a member it fails exactly when the schema
/// requires that member (`body` holds every required one).
fn check_input<T: serde::de::DeserializeOwned>(doc: &Value, name: &str, body: &Value) {
    let (properties, required) = members(doc, &doc["components"]["schemas"][name]);
    let keys: BTreeSet<String> = body.as_object().unwrap().keys().cloned().collect();
    assert!(keys.is_subset(&properties), "{name}: {:?} are not properties", keys.difference(&properties));
    assert!(required.is_subset(&keys), "{name}: the example holds every required member");
    assert!(serde_json::from_value::<T>(body.clone()).is_ok(), "{name} reads {body}");
    for member in &keys {
        let mut without = body.clone();
        without.as_object_mut().unwrap().remove(member);
        let refused = serde_json::from_value::<T>(without).is_err();
        assert_eq!(refused, required.contains(member), "{name}: {member} is required exactly when serde needs it");
    }
}

#[test]
fn each_member_an_input_takes_is_a_property_and_required_exactly_when_serde_needs_it() {
    let doc = doc();
    let app = json!({"name": "One", "uid": "one", "metadata": {"k": "v"}, "throttleRate": 5});
    check_input::<ApplicationIn>(&doc, "ApplicationIn", &app);
    check_input::<ApplicationPatch>(
        &doc,
        "ApplicationPatch",
        &json!({"name": "Two", "uid": null, "throttleRate": null}),
    );
    let endpoint = json!({"url": "https://example.com/hook", "description": "d", "uid": "e", "disabled": false,
        "eventTypes": ["a"], "channels": ["c"], "metadata": {}, "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "throttleRate": 1, "headers": {"x-a": "b"}});
    check_input::<EndpointIn>(&doc, "EndpointIn", &endpoint);
    let mut update = endpoint;
    update.as_object_mut().unwrap().retain(|k, _| k != "secret" && k != "headers");
    check_input::<EndpointUpdate>(&doc, "EndpointUpdate", &update);
    check_input::<EndpointPatch>(&doc, "EndpointPatch", &json!({"url": "https://example.com", "channels": null}));
    check_input::<EndpointHeadersIn>(&doc, "EndpointHeadersIn", &json!({"headers": {"x-a": "b"}}));
    check_input::<EndpointHeadersPatchIn>(
        &doc,
        "EndpointHeadersPatchIn",
        &json!({"headers": {"x-a": null}, "deleteHeaders": ["x-b"]}),
    );
    check_input::<EndpointSecretRotateIn>(
        &doc,
        "EndpointSecretRotateIn",
        &json!({"key": null, "gracePeriodSeconds": 60}),
    );
    check_input::<RecoverIn>(&doc, "RecoverIn", &json!({"since": "2026-12-01T00:00:00Z", "until": null}));
    check_input::<EventExampleIn>(&doc, "EventExampleIn", &json!({"eventType": "user.signup"}));
    let message = json!({"eventType": "user.signup", "payload": {"a": 1}, "eventId": "e", "channels": ["c"],
        "application": {"name": "One"}, "payloadRetentionPeriod": 30});
    check_input::<MessageIn>(&doc, "MessageIn", &message);
    let event_type = json!({"name": "user.signup", "description": "d", "archived": false, "deprecated": false,
        "featureFlag": "f", "schemas": {"1": {"type": "object"}}});
    check_input::<EventTypeIn>(&doc, "EventTypeIn", &event_type);
    let mut update = event_type;
    update.as_object_mut().unwrap().remove("name");
    check_input::<EventTypeUpdate>(&doc, "EventTypeUpdate", &update);
    check_input::<EventTypePatch>(&doc, "EventTypePatch", &json!({"description": "e", "featureFlag": null}));
    check_input::<AppPortalAccessIn>(&doc, "AppPortalAccessIn", &json!({"application": app, "featureFlags": []}));
}
