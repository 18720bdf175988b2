//! The outbound API's OpenAPI document (`GET /api/v1/openapi.json`) of a real
//! `idemgate serve`: it is served without a token, names `[api] public_url` as its server,
//! passes schemathesis's validator (`tests/openapi/validate.py`, in the venv
//! `tests/openapi/setup-venv.sh` makes: the test fails, never skips, when it cannot be
//! made), and every operation it lists answers a request as it documents: a status the
//! operation lists, and for a success a body whose members are its schema's properties;
//! none answers 404 (every operation is routed).

use std::{collections::BTreeSet, process::Command};

use serde_json::{Value, json};

use crate::{
    admin_openapi_fuzz::openapi_venv,
    gateway_harness::Gateway,
    outbound_api::{API, Backend, raw, serve_with},
};

const PUBLIC_URL: &str = "https://hooks.example.com";

/// The document as served to a caller without a token.
async fn served_document(gateway: &Gateway) -> Value {
    let response =
        reqwest::Client::new().get(format!("http://{}/api/v1/openapi.json", gateway.addr)).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
}

/// What schemathesis's validator says of `doc`.
fn validate(doc: &Value) {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("openapi.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let output = Command::new(openapi_venv().join("bin/python"))
        .arg(repo.join("tests/openapi/validate.py"))
        .arg(&file)
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the document does not validate: {said}");
    assert_eq!(said.trim(), "valid: 43 operations");
}

/// The properties and required properties of `schema`, through `$ref`s and `allOf`.
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

/// Checks that `body` is what the schema of `response` (resolved in `doc`) describes, one
/// level down (the members of an object, or of each item of a page's `data`).
fn check_body(doc: &Value, response: &Value, body: &Value, what: &str) {
    let response = match response["$ref"].as_str() {
        Some(target) => doc.pointer(target.strip_prefix('#').unwrap()).unwrap(),
        None => response,
    };
    let Some(schema) = response.pointer("/content/application~1json/schema") else {
        assert_eq!(body, &Value::Null, "{what} documents no body");
        return;
    };
    let (properties, required) = members(doc, schema);
    let Some(object) = body.as_object() else { panic!("{what}: not an object: {body}") };
    let keys: BTreeSet<String> = object.keys().cloned().collect();
    assert!(keys.is_subset(&properties), "{what}: {:?} undocumented in {body}", keys.difference(&properties));
    assert!(required.is_subset(&keys), "{what}: {:?} missing in {body}", required.difference(&keys));
}

/// One request per operation of `doc`, on the things `ids` names.
struct Request {
    /// Its `operationId`.
    id: String,
    method: String,
    /// The documented path, with `{…}`.
    documented: String,
    /// The path below `/api/v1` with the ids in place.
    path: String,
    /// Whether the operation documents a request body (it is sent `{}`).
    has_body: bool,
}

/// Every operation's request, deletions last and the longest paths (the things inside an
/// application) first among them.
fn requests(doc: &Value, ids: &[(&str, String)]) -> Vec<Request> {
    let mut all = Vec::new();
    for (documented, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let mut path = documented.strip_prefix("/api/v1").unwrap().to_owned();
            for (name, id) in ids {
                path = path.replace(&format!("{{{name}}}"), id);
            }
            all.push(Request {
                id: operation["operationId"].as_str().unwrap().to_owned(),
                method: method.to_uppercase(),
                documented: documented.clone(),
                path,
                has_body: operation.get("requestBody").is_some(),
            });
        }
    }
    all.sort_by_key(|request| (request.method == "DELETE", std::cmp::Reverse(request.documented.len())));
    all
}

async fn every_operation_answers_as_documented(backend: Backend) {
    let api = format!("{API}public_url = \"{PUBLIC_URL}\"\n");
    let (_setup, gateway) = serve_with(backend, &api);
    let doc = served_document(&gateway).await;
    assert_eq!(doc["servers"], json!([{ "url": PUBLIC_URL, "description": "The gateway's public listener." }]));
    let blocking = doc.clone();
    tokio::task::spawn_blocking(move || validate(&blocking)).await.unwrap();

    // An application, an event type, an endpoint on a closed port and one message, whose
    // first (failed) attempt is the attempt the document's paths name.
    let (status, _, app) = raw(&gateway, "POST", "/app", &[], Some(json!({"name": "Doc", "uid": "doc"}))).await;
    assert_eq!(status, 201, "{app}");
    let event_type = json!({"name": "invoice.paid", "description": "paid"});
    assert_eq!(raw(&gateway, "POST", "/event-type", &[], Some(event_type)).await.0, 201);
    let endpoint = json!({"url": "http://127.0.0.1:9/closed", "uid": "doc-endpoint"});
    let (status, _, endpoint) = raw(&gateway, "POST", "/app/doc/endpoint", &[], Some(endpoint)).await;
    assert_eq!(status, 201, "{endpoint}");
    let message = json!({"eventType": "invoice.paid", "payload": {"n": 1}});
    let (status, _, message) = raw(&gateway, "POST", "/app/doc/msg", &[], Some(message)).await;
    assert_eq!(status, 202, "{message}");
    let app_id = app["id"].as_str().unwrap().to_owned();
    let msg_id = message["id"].as_str().unwrap().to_owned();
    let mut attempts = Value::Null;
    for _ in 0..600 {
        attempts = raw(&gateway, "GET", &format!("/app/{app_id}/attempt/msg/{msg_id}"), &[], None).await.2;
        if attempts["data"].as_array().is_some_and(|data| !data.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let attempt_id = attempts["data"][0]["id"].as_str().unwrap_or_else(|| panic!("no attempt: {attempts}")).to_owned();
    let ids = [
        ("app_id", app_id),
        ("endpoint_id", endpoint["id"].as_str().unwrap().to_owned()),
        ("msg_id", msg_id),
        ("attempt_id", attempt_id),
        ("event_type_name", "invoice.paid".to_owned()),
    ];

    let mut routed = 0;
    for Request { id, method, documented, path, has_body } in requests(&doc, &ids) {
        let what = format!("{id} ({method} {path})");
        let body = has_body.then(|| json!({}));
        let (status, _, answer) = raw(&gateway, &method, &path, &[], body).await;
        let documented = &doc["paths"][documented][method.to_lowercase()]["responses"][status.to_string()];
        assert!(documented.is_object(), "{what} answered {status}, which it does not document: {answer}");
        if (200..300).contains(&status) && method != "HEAD" {
            check_body(&doc, documented, &answer, &what);
        }
        assert_ne!(status, 404, "{what} is not routed: {answer}");
        routed += 1;
    }
    assert_eq!(routed, 43);
}

#[tokio::test]
async fn every_documented_operation_answers_as_documented_on_sqlite() {
    every_operation_answers_as_documented(Backend::Sqlite).await;
}

#[tokio::test]
async fn every_documented_operation_answers_as_documented_on_postgres() {
    every_operation_answers_as_documented(Backend::Postgres).await;
}

#[tokio::test]
async fn without_a_public_url_the_document_names_its_server_relative_to_itself() {
    let (_setup, gateway) = serve_with(Backend::Sqlite, API);
    let doc = served_document(&gateway).await;
    assert_eq!(doc["servers"][0]["url"], "/");
    assert_eq!(doc["components"]["securitySchemes"]["HTTPBearer"]["scheme"], "bearer");
    assert!(doc["paths"]["/api/v1/app/{app_id}/msg"]["post"].is_object());
}
