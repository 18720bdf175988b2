//! Application tokens on `/api/v1` through Svix's SDK against a real `idemgate serve`
//! (`docs/design/outbound-api.md` §3.9): `app-portal-access` issues a token that sees its
//! one application, every route naming another application answers 404 as if it did not
//! exist (the routes walked are the table of §1.1, so the test stays true as routes land),
//! the organisation's routes answer 403, `logout` and expiry end it (401), and every change
//! through the API is in the audit log under its token's name.

use serde_json::{Value, json};
use svix::{
    api::Svix,
    models::{AppPortalAccessIn, ApplicationIn, EndpointIn, EventTypeIn, MessageIn},
};

use crate::{
    gateway_harness::{Gateway, Setup},
    outbound_api::{ADMIN_TOKEN, API, Backend, READ_TOKEN, http_error, sdk, serve_keeping_url},
    postgres_instances::query,
};

const HOOK: &str = "http://127.0.0.1:9/hook";

/// Every (method, path) of the API's table in `docs/design/outbound-api.md` §1.1.
fn documented_routes() -> Vec<(String, String)> {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/design/outbound-api.md")).unwrap();
    let start = doc.find("### 1.1 Every operation").unwrap();
    let end = start + doc[start..].find("### 1.2").unwrap();
    doc[start..end]
        .lines()
        .filter_map(|line| {
            let mut cells = line.split('|').map(str::trim).skip(1);
            let method = cells.next()?;
            let path = cells.next()?.strip_prefix('`')?.strip_suffix('`')?;
            ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
                .contains(&method)
                .then(|| (method.to_owned(), path.to_owned()))
        })
        .collect()
}

/// One request to the API with `token`: its status and JSON body (`null` when empty).
async fn call(gateway: &Gateway, token: &str, method: &str, path: &str) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = reqwest::Client::new()
        .request(method.clone(), format!("http://{}/api/v1{path}", gateway.addr))
        .header("authorization", format!("Bearer {token}"));
    if [reqwest::Method::POST, reqwest::Method::PUT, reqwest::Method::PATCH].contains(&method) {
        request = request.header("content-type", "application/json").body("{}");
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (status, if bytes.is_empty() { Value::Null } else { serde_json::from_slice(&bytes).unwrap() })
}

/// Runs `sql` on the served store (SQLite file or PostgreSQL schema), from outside; the rows.
fn on_store(setup: &Setup, url: Option<&str>, sql: &str) -> Vec<Vec<String>> {
    match url {
        Some(url) => {
            let (url, sql) = (url.to_owned(), sql.to_owned());
            std::thread::spawn(move || query(&url, &sql)).join().unwrap()
        }
        None => {
            let conn = rusqlite::Connection::open(setup.db()).unwrap();
            conn.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
            let mut statement = conn.prepare(sql).unwrap();
            let columns = statement.column_count();
            let rows = statement
                .query_map([], |row| {
                    (0..columns).map(|i| row.get::<_, rusqlite::types::Value>(i).map(|v| format!("{v:?}"))).collect()
                })
                .unwrap();
            rows.map(Result::unwrap).collect()
        }
    }
}

/// The audit log's (token, action, target) rows, oldest first.
fn audit(setup: &Setup, url: Option<&str>) -> Vec<(String, String, String)> {
    on_store(setup, url, "SELECT token, action, target FROM audit_log ORDER BY id")
        .into_iter()
        .map(|row| {
            let text = |i: usize| row[i].trim_start_matches("Text(\"").trim_end_matches("\")").to_owned();
            (text(0), text(1), text(2))
        })
        .collect()
}

async fn portal_token(admin: &Svix, app: &str) -> String {
    let access =
        admin.authentication().app_portal_access(app.to_owned(), AppPortalAccessIn::new(), None).await.unwrap();
    assert_eq!(access.url, "https://docs.svix.com/app-portal/oss");
    assert!(access.token.starts_with("appsk_"), "{}", access.token.len());
    access.token
}

async fn scoped_tokens(backend: Backend) {
    let (setup, gateway, url) = serve_keeping_url(backend, API);
    let url = url.as_deref();
    let admin = sdk(&gateway, ADMIN_TOKEN);
    let app = |uid: &str| ApplicationIn { uid: Some(uid.to_owned()), ..ApplicationIn::new(uid.to_owned()) };
    let mine = admin.application().create(app("mine"), None).await.unwrap();
    let theirs = admin.application().create(app("theirs"), None).await.unwrap();
    let their_ep = admin.endpoint().create("theirs".to_owned(), EndpointIn::new(HOOK.to_owned()), None).await.unwrap();
    let message = MessageIn::new("order.paid".to_owned(), json!({"order": 1}));
    let their_msg = admin.message().create("theirs".to_owned(), message.clone(), None).await.unwrap();
    let (status, _) =
        http_error(admin.authentication().app_portal_access("nobody".to_owned(), AppPortalAccessIn::new(), None).await);
    assert_eq!(status, 404, "an application that does not exist");

    let token = portal_token(&admin, "mine").await;
    let portal = sdk(&gateway, &token);
    // Its own application, by id or uid: read, and its endpoints changed.
    assert_eq!(portal.application().get("mine".to_owned()).await.unwrap().id, mine.id);
    let ep = portal.endpoint().create(mine.id.clone(), EndpointIn::new(HOOK.to_owned()), None).await.unwrap();
    assert_eq!(portal.endpoint().list("mine".to_owned(), None).await.unwrap().data, std::slice::from_ref(&ep));
    portal.endpoint().delete("mine".to_owned(), ep.id.clone()).await.unwrap();
    assert!(portal.event_type().list(None).await.unwrap().done);

    // The organisation's routes: 403.
    let forbidden = |status: u16, what: &str| assert_eq!(status, 403, "{what}");
    forbidden(http_error(portal.application().list(None).await).0, "application list");
    forbidden(http_error(portal.application().create(app("more"), None).await).0, "application create");
    forbidden(http_error(portal.application().delete("mine".to_owned()).await).0, "application delete");
    forbidden(http_error(portal.message().create("mine".to_owned(), message.clone(), None).await).0, "publish");
    let event_type = EventTypeIn::new("order.paid".to_owned(), "paid".to_owned());
    forbidden(http_error(portal.event_type().create(event_type, None).await).0, "event type create");
    let again = portal.authentication().app_portal_access("mine".to_owned(), AppPortalAccessIn::new(), None).await;
    forbidden(http_error(again).0, "app-portal-access");

    // Every route naming the other application, by id and by uid, is 404: nothing told,
    // nothing changed.
    let routes = documented_routes();
    assert_eq!(routes.len(), 43, "the table of §1.1");
    let mut walked = 0;
    for (method, path) in &routes {
        let with = |app: &str| {
            path.replace("{app_id}", app)
                .replace("{endpoint_id}", &their_ep.id)
                .replace("{msg_id}", &their_msg.id)
                .replace("{attempt_id}", "atmpt_2Aw1bCIbEMGm0xMFp0LQmUbDVqk")
                .replace("{event_type_name}", "order.paid")
        };
        if path.contains("{app_id}") {
            for app in [theirs.id.as_str(), "theirs"] {
                let (status, body) = call(&gateway, &token, method, &with(app)).await;
                assert_eq!((status, &body["code"]), (404, &json!("not_found")), "{method} {}", with(app));
            }
            walked += 1;
        } else if path == "/app" || (path.starts_with("/event-type") && method != "GET") {
            assert_eq!(call(&gateway, &token, method, &with("")).await.0, 403, "{method} {path}");
        }
    }
    assert_eq!(walked, 30, "the routes naming an application, app-portal-access included");
    let still = admin.endpoint().get("theirs".to_owned(), their_ep.id.clone()).await.unwrap();
    assert_eq!(still, their_ep);
    assert_eq!(admin.message().get("theirs".to_owned(), their_msg.id.clone(), None).await.unwrap().id, their_msg.id);
    assert_eq!(admin.application().get("theirs".to_owned()).await.unwrap(), theirs);

    // The audit log: every change under its token's name; the publish is not in it.
    let by_portal = format!("app:{}", mine.id);
    let endpoint = format!("endpoint {}/{}", mine.id, ep.id);
    let expected = [
        ("ops", "application_create", format!("application {}", mine.id)),
        ("ops", "application_create", format!("application {}", theirs.id)),
        ("ops", "endpoint_create", format!("endpoint {}/{}", theirs.id, their_ep.id)),
        ("ops", "app_token_issue", format!("app_token {}", mine.id)),
        (by_portal.as_str(), "endpoint_create", endpoint.clone()),
        (by_portal.as_str(), "endpoint_delete", endpoint),
    ]
    .map(|(token, action, target)| (token.to_owned(), action.to_owned(), target));
    assert_eq!(audit(&setup, url), expected);

    // Logout: a configured token is told it cannot; the app's token is revoked, then 401.
    let (status, payload) = http_error(sdk(&gateway, READ_TOKEN).authentication().logout(None).await);
    assert_eq!((status, payload.map(|p| p.code)), (400, Some("not_an_app_token".to_owned())));
    portal.authentication().logout(None).await.unwrap();
    assert_eq!(http_error(portal.application().get("mine".to_owned()).await).0, 401);
    assert_eq!(http_error(portal.authentication().logout(None).await).0, 401);
    let last = audit(&setup, url).pop().unwrap();
    assert_eq!(last, (by_portal.clone(), "app_token_revoke".to_owned(), format!("app_token {}", mine.id)));

    // Expiry: a token whose time has passed is 401, on every instance of the store.
    let token = portal_token(&admin, "mine").await;
    let portal = sdk(&gateway, &token);
    portal.application().get("mine".to_owned()).await.unwrap();
    let expired = on_store(&setup, url, "UPDATE api_tokens SET expires_at = 1 RETURNING app_id");
    assert_eq!(expired.len(), 1, "one live token");
    let (status, payload) = http_error(portal.application().get("mine".to_owned()).await);
    assert_eq!((status, payload.map(|p| p.code)), (401, Some("authentication_failed".to_owned())));
    let stored: Vec<String> =
        on_store(&setup, url, "SELECT issued_by FROM api_tokens").into_iter().map(|r| r[0].clone()).collect();
    assert!(stored.iter().all(|name| name.contains("ops")), "{stored:?}");
    let digests = on_store(&setup, url, "SELECT count(*) FROM api_tokens WHERE length(digest) = 32");
    assert!(digests[0][0].contains('1'), "kept as its 32-byte digest: {digests:?}");
}

#[tokio::test]
async fn an_app_token_sees_its_application_alone_until_logout_or_expiry_on_sqlite() {
    scoped_tokens(Backend::Sqlite).await;
}

#[tokio::test]
async fn an_app_token_sees_its_application_alone_until_logout_or_expiry_on_postgres() {
    scoped_tokens(Backend::Postgres).await;
}
