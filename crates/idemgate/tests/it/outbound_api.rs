//! The outbound API (`/api/v1`, Svix-compatible) of a real `idemgate serve`, driven by
//! Svix's own Rust SDK (`svix` 2.9.1) as a customer's code would drive it: health, tokens
//! and roles, Svix's error shapes, applications and event types. Endpoints are in
//! `outbound_endpoints.rs`, messages in `outbound_messages.rs`; they share this file's
//! harness.

use serde_json::{Value, json};
use svix::{
    api::{
        ApplicationCreateOptions, ApplicationListOptions, EventTypeDeleteOptions, EventTypeListOptions, Svix,
        SvixOptions,
    },
    error::Error,
    models::{
        ApplicationIn, ApplicationPatch, EventTypeIn, EventTypePatch, EventTypeUpsertIn, HttpErrorOut, MessageIn,
    },
};

use crate::{
    gateway_harness::{Gateway, Setup},
    harness::exchange,
    postgres_instances::{fresh_schema, query},
};

pub(crate) const ADMIN_TOKEN: &str = "api-admin-token-0123456789";
pub(crate) const PUBLISH_TOKEN: &str = "api-publish-token-0123456789";
pub(crate) const READ_TOKEN: &str = "api-read-token-0123456789";
const SECRETS_KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

/// Where the served API keeps its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

/// `[api]` enabled with an admin, a publish and a read token and a secrets key, each from
/// the environment, and loopback endpoints allowed (`allow_http`, `127.0.0.0/8`).
pub(crate) const API: &str = "[api]\nenabled = true\nsecrets_key = \"env:API_KEY\"\n\
     allow_http = true\nallow_networks = [\"127.0.0.0/8\"]\n";

/// `idemgate serve` with one source and `api` (an `[api]` table) on `backend`.
pub(crate) fn serve_with(backend: Backend, api: &str) -> (Setup, Gateway) {
    let (setup, gateway, _) = serve_keeping_url(backend, api);
    (setup, gateway)
}

/// [`serve_with`], and the PostgreSQL schema's URL (`None` on SQLite) for reading the
/// store from outside ([`stored_rows`]).
pub(crate) fn serve_keeping_url(backend: Backend, api: &str) -> (Setup, Gateway, Option<String>) {
    serve_with_env(backend, api, &[])
}

/// [`serve_keeping_url`] with `extra` variables in the gateway's environment (overrides
/// such as `IDEMGATE_STORE__BUSY_TIMEOUT`).
pub(crate) fn serve_with_env(
    backend: Backend,
    api: &str,
    extra: &[(&'static str, &'static str)],
) -> (Setup, Gateway, Option<String>) {
    let (setup, mut instances, url) = start_instances(backend, api, 1, extra);
    (setup, instances.remove(0), url)
}

/// `count` instances of `idemgate serve` with one configuration (one source and `api`) on
/// one store of `backend`, and the PostgreSQL schema's URL (`None` on SQLite).
pub(crate) fn serve_instances(backend: Backend, api: &str, count: usize) -> (Setup, Vec<Gateway>, Option<String>) {
    start_instances(backend, api, count, &[])
}

/// [`serve_instances`] with `extra` variables in every gateway's environment.
fn start_instances(
    backend: Backend,
    api: &str,
    count: usize,
    extra: &[(&'static str, &'static str)],
) -> (Setup, Vec<Gateway>, Option<String>) {
    let setup = Setup::new(&format!(
        "[sources.a]\nscheme = \"github\"\nsecrets = [\"env:A_SECRET\"]\n{api}\
         [api.tokens.ops]\ntoken = \"env:API_ADMIN\"\nrole = \"admin\"\n\
         [api.tokens.ci]\ntoken = \"env:API_PUBLISH\"\nrole = \"publish\"\n\
         [api.tokens.viewer]\ntoken = \"env:API_READ\"\nrole = \"read\"\n"
    ));
    // The schema is made on a thread of its own: the caller may be inside a runtime.
    let url = (backend == Backend::Postgres).then(|| std::thread::spawn(|| fresh_schema("outbound")).join().unwrap());
    let mut env = vec![
        ("A_SECRET", "github-secret-0123456789"),
        ("API_ADMIN", ADMIN_TOKEN),
        ("API_PUBLISH", PUBLISH_TOKEN),
        ("API_READ", READ_TOKEN),
        ("API_KEY", SECRETS_KEY),
    ];
    if let Some(url) = &url {
        env.push(("IDEMGATE_STORE__URL", url.as_str()));
    }
    env.extend_from_slice(extra);
    let instances = (0..count).map(|_| Gateway::start(&setup.config(), &env)).collect();
    (setup, instances, url)
}

/// How many rows `table` holds in the store of `setup` (SQLite) or at `url` (PostgreSQL),
/// read from outside the gateway.
pub(crate) fn stored_rows(setup: &Setup, url: Option<&str>, table: &str) -> u64 {
    let sql = format!("SELECT count(*) FROM {table}");
    match url {
        Some(url) => {
            let url = url.to_owned();
            std::thread::spawn(move || query(&url, &sql)[0][0].parse().unwrap()).join().unwrap()
        }
        None => rusqlite::Connection::open(setup.db()).unwrap().query_row(&sql, [], |row| row.get(0)).unwrap(),
    }
}

/// `idemgate serve` with [`API`] on SQLite.
fn serve_api() -> (Setup, Gateway) {
    serve_with(Backend::Sqlite, API)
}

/// The SDK pointed at `gateway` with `token`, without retries (a refusal is final anyway).
pub(crate) fn sdk(gateway: &Gateway, token: &str) -> Svix {
    let options = SvixOptions {
        server_url: Some(format!("http://{}", gateway.addr)),
        num_retries: Some(0),
        ..SvixOptions::default()
    };
    Svix::new(token.to_owned(), Some(options))
}

/// The SDK's `Error::Http` as (status, payload); anything else fails the test.
pub(crate) fn http_error<T: std::fmt::Debug>(result: svix::error::Result<T>) -> (u16, Option<HttpErrorOut>) {
    match result {
        Err(Error::Http(content)) => (content.status.as_u16(), content.payload),
        other => panic!("expected the SDK's Error::Http, got {other:?}"),
    }
}

/// The SDK's `Error::Validation` as (status, the first item's `loc`); anything else fails.
pub(crate) fn validation_error<T: std::fmt::Debug>(result: svix::error::Result<T>) -> (u16, Vec<String>) {
    match result {
        Err(Error::Validation(content)) => {
            let loc = content.payload.and_then(|p| p.detail.into_iter().next()).map(|item| item.loc);
            (content.status.as_u16(), loc.unwrap_or_default())
        }
        other => panic!("expected the SDK's Error::Validation, got {other:?}"),
    }
}

/// One plain HTTP request to the API with the admin token (or `token`): status, headers
/// and the JSON body (`null` when empty).
pub(crate) async fn raw(
    gateway: &Gateway,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let client = reqwest::Client::new();
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = client
        .request(method, format!("http://{}/api/v1{path}", gateway.addr))
        .header("authorization", format!("Bearer {ADMIN_TOKEN}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.unwrap();
    let body = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() };
    (status, headers, body)
}

#[tokio::test]
async fn the_sdk_sees_a_healthy_api_and_head_and_ping_answer_204() {
    let (_setup, gateway) = serve_api();
    sdk(&gateway, ADMIN_TOKEN).health().get().await.unwrap();
    // Health needs no token, as on Svix's server.
    sdk(&gateway, "not-a-token").health().get().await.unwrap();
    for request in ["HEAD /api/v1/health", "GET /api/v1/health/ping", "HEAD /api/v1/health/ping"] {
        let raw = format!("{request} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let reply = tokio::task::spawn_blocking({
            let addr = gateway.addr;
            move || exchange(addr, raw.as_bytes())
        })
        .await
        .unwrap();
        assert_eq!(reply.status(), 204, "{request}: {reply:?}");
    }
}

#[tokio::test]
async fn a_wrong_token_is_authentication_failed_in_svix_shape() {
    let (_setup, gateway) = serve_api();
    let app = ApplicationIn::new("shop".to_owned());
    let (status, payload) =
        http_error(sdk(&gateway, "api-unknown-token-0123456789").application().create(app, None).await);
    assert_eq!(status, 401);
    assert_eq!(payload.map(|out| out.code), Some("authentication_failed".to_owned()));
    let (status, payload) = http_error(sdk(&gateway, "").application().list(None).await);
    assert_eq!((status, payload.map(|out| out.code)), (401, Some("authentication_failed".to_owned())));
}

#[tokio::test]
async fn a_role_below_the_request_is_forbidden_and_an_unknown_path_not_found() {
    let (_setup, gateway) = serve_api();
    let message = || MessageIn::new("user.signup".to_owned(), serde_json::json!({"id": 1}));
    // Publishing needs `publish`: a read token is refused before anything is looked up.
    let refused = sdk(&gateway, READ_TOKEN).message().create("app_1".to_owned(), message(), None).await;
    let (status, payload) = http_error(refused);
    assert_eq!((status, payload.map(|out| out.code)), (403, Some("insufficient_access".to_owned())));
    // Creating an application needs `admin`.
    let app = ApplicationIn::new("shop".to_owned());
    let (status, _) = http_error(sdk(&gateway, PUBLISH_TOKEN).application().create(app.clone(), None).await);
    assert_eq!(status, 403);
    // Allowed, but nothing of that name: 404 in HttpErrorOut's shape.
    let (status, payload) = http_error(sdk(&gateway, ADMIN_TOKEN).application().get("app-missing".to_owned()).await);
    assert_eq!((status, payload.map(|out| out.code)), (404, Some("not_found".to_owned())));
    let (status, payload) = http_error(sdk(&gateway, READ_TOKEN).message().list("app-missing".to_owned(), None).await);
    assert_eq!((status, payload.map(|out| out.code)), (404, Some("not_found".to_owned())));
}

async fn applications(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, API);
    let admin = sdk(&gateway, ADMIN_TOKEN);
    let apps = admin.application();
    let shop = ApplicationIn { uid: Some("shop".to_owned()), ..ApplicationIn::new("Shop".to_owned()) };
    let created = apps.create(shop.clone(), None).await.unwrap();
    assert!(created.id.starts_with("app_"), "{created:?}");
    assert_eq!((created.name.as_str(), created.uid.as_deref()), ("Shop", Some("shop")));
    // A uid is unique among live applications; `get_if_exists` answers the one there is.
    let (status, payload) = http_error(apps.create(shop.clone(), None).await);
    assert_eq!((status, payload.map(|out| out.code)), (409, Some("conflict".to_owned())));
    assert_eq!(apps.get_or_create(shop.clone(), None).await.unwrap().id, created.id);
    let (status, _, body) =
        raw(&gateway, "POST", "/app?get_if_exists=true", &[], Some(json!({"name": "Shop", "uid": "shop"}))).await;
    assert_eq!((status, body["id"].as_str()), (200, Some(created.id.as_str())));
    // By id or uid alike.
    assert_eq!(apps.get("shop".to_owned()).await.unwrap(), created);
    assert_eq!(apps.get(created.id.clone()).await.unwrap(), created);
    let patch = ApplicationPatch { name: Some("Shop & Co".to_owned()), ..ApplicationPatch::new() };
    let patched = apps.patch("shop".to_owned(), patch).await.unwrap();
    assert_eq!(
        (patched.id.as_str(), patched.name.as_str(), patched.uid.as_deref()),
        (created.id.as_str(), "Shop & Co", Some("shop"))
    );
    // PUT creates (201) what is missing and replaces (200) what exists.
    let (status, _, body) = raw(&gateway, "PUT", "/app/depot", &[], Some(json!({"name": "Depot"}))).await;
    assert_eq!((status, body["uid"].as_str()), (201, Some("depot")));
    let (status, _, body) = raw(&gateway, "PUT", "/app/depot", &[], Some(json!({"name": "Depot 2"}))).await;
    assert_eq!((status, body["name"].as_str()), (200, Some("Depot 2")));
    let (status, _, body) = raw(&gateway, "POST", "/app", &[], Some(json!({"name": "Third"}))).await;
    assert_eq!((status, body.get("uid")), (201, None));
    // Walking the list one at a time reaches `done` after every application, in id order.
    let mut seen = Vec::new();
    let mut iterator = None;
    loop {
        let options =
            ApplicationListOptions { limit: Some(1), iterator: iterator.take(), ..ApplicationListOptions::default() };
        let page = sdk(&gateway, READ_TOKEN).application().list(Some(options)).await.unwrap();
        assert!(page.data.len() <= 1);
        seen.extend(page.data.into_iter().map(|app| app.name));
        if page.done {
            break;
        }
        iterator = page.iterator;
        assert!(seen.len() <= 3, "{seen:?}");
    }
    assert_eq!(seen, ["Shop & Co", "Depot 2", "Third"]);
    let too_many = ApplicationListOptions { limit: Some(251), ..ApplicationListOptions::default() };
    assert_eq!(validation_error(apps.list(Some(too_many)).await), (422, vec!["query".to_owned(), "limit".to_owned()]));
    // A uid with the id's prefix and an empty name are refused where they are.
    let bad = ApplicationIn { uid: Some("app_x".to_owned()), ..ApplicationIn::new("x".to_owned()) };
    assert_eq!(validation_error(apps.create(bad, None).await), (422, vec!["body".to_owned(), "uid".to_owned()]));
    assert_eq!(validation_error(apps.create(ApplicationIn::new(String::new()), None).await).1, ["body", "name"]);
    // Deleted: no longer served, and its uid is free again.
    apps.delete("shop".to_owned()).await.unwrap();
    assert_eq!(http_error(apps.get(created.id.clone()).await).0, 404);
    assert_eq!(http_error(apps.delete("shop".to_owned()).await).0, 404);
    let again = apps
        .create(shop, Some(ApplicationCreateOptions { idempotency_key: Some("new-shop".to_owned()) }))
        .await
        .unwrap();
    assert_ne!(again.id, created.id);
}

#[tokio::test]
async fn applications_are_created_read_changed_listed_and_deleted_on_sqlite() {
    applications(Backend::Sqlite).await;
}

#[tokio::test]
async fn applications_are_created_read_changed_listed_and_deleted_on_postgres() {
    applications(Backend::Postgres).await;
}

#[tokio::test]
async fn event_types_are_created_changed_archived_and_expunged() {
    let (_setup, gateway) = serve_api();
    let types = sdk(&gateway, ADMIN_TOKEN);
    let types = types.event_type();
    let mut signup = EventTypeIn::new("user.signup".to_owned(), "A user signed up".to_owned());
    signup.schemas = Some(json!({"1": {"type": "object"}}));
    let created = types.create(signup.clone(), None).await.unwrap();
    assert_eq!((created.name.as_str(), created.archived, created.deprecated), ("user.signup", Some(false), false));
    assert_eq!(created.schemas, Some(json!({"1": {"type": "object"}})));
    let (status, payload) = http_error(types.create(signup, None).await);
    assert_eq!((status, payload.map(|out| out.code)), (409, Some("conflict".to_owned())));
    assert_eq!(types.get("user.signup".to_owned()).await.unwrap().description, "A user signed up");
    let bad = EventTypeIn::new("user signup".to_owned(), "spaces".to_owned());
    assert_eq!(validation_error(types.create(bad, None).await).1, ["body", "name"]);
    // PUT creates, then replaces.
    let (status, _, _) = raw(&gateway, "PUT", "/event-type/user.left", &[], Some(json!({"description": "Gone"}))).await;
    assert_eq!(status, 201);
    let upserted =
        types.upsert("user.left".to_owned(), EventTypeUpsertIn::new("Gone for good".to_owned())).await.unwrap();
    assert_eq!(upserted.description, "Gone for good");
    let patch = EventTypePatch { deprecated: Some(true), ..EventTypePatch::new() };
    let patched = types.patch("user.left".to_owned(), patch).await.unwrap();
    assert_eq!((patched.deprecated, patched.description.as_str()), (true, "Gone for good"));
    // A delete archives: still readable, listed only with `include_archived`.
    types.delete("user.left".to_owned(), None).await.unwrap();
    assert_eq!(types.get("user.left".to_owned()).await.unwrap().archived, Some(true));
    let names =
        |page: svix::models::ListResponseEventTypeOut| page.data.into_iter().map(|t| t.name).collect::<Vec<_>>();
    let reader = sdk(&gateway, READ_TOKEN);
    assert_eq!(names(reader.event_type().list(None).await.unwrap()), ["user.signup"]);
    let archived = EventTypeListOptions { include_archived: Some(true), ..EventTypeListOptions::default() };
    assert_eq!(names(reader.event_type().list(Some(archived)).await.unwrap()), ["user.left", "user.signup"]);
    // `expunge=true` removes it.
    types.delete("user.left".to_owned(), Some(EventTypeDeleteOptions { expunge: Some(true) })).await.unwrap();
    assert_eq!(http_error(types.get("user.left".to_owned()).await).0, 404);
    // Writing event types needs `admin`.
    let refused = sdk(&gateway, PUBLISH_TOKEN).event_type().delete("user.signup".to_owned(), None).await;
    assert_eq!(http_error(refused).0, 403);
}
