//! One customer's portal session never reaches another application (`docs/design/portal.md`
//! §3), on SQLite and PostgreSQL: every route of the table "Every portal route" (§3.1), its
//! path's ids taken from a second application, answers 404 and changes nothing of it. The
//! routes walked are the table's, so the test stays true as routes land; a route missing
//! from the table is caught by `every_portal_route_is_in_the_table`.

use serde_json::json;
use svix::models::{ApplicationIn, EndpointIn, EventTypeIn, MessageIn};

use crate::{
    outbound_api::{ADMIN_TOKEN, Backend, sdk, serve_with},
    portal_harness::{Customer, portal_api},
};

/// Every (method, path) of the table in `docs/design/portal.md` §3.1.
fn documented_routes() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/design/portal.md")).unwrap();
    let start = doc.find("### 3.1 Every portal route").expect("the table of §3.1");
    let rest = &doc[start + 3..];
    let end = rest.find("\n#").map_or(rest.len(), |at| at);
    rest[..end]
        .lines()
        .filter_map(|line| {
            let mut cells = line.split('|').map(str::trim).skip(1);
            let method = cells.next()?;
            let path = cells.next()?.strip_prefix('`')?.strip_suffix('`')?;
            ["GET", "POST"].contains(&method).then(|| (method.to_owned(), path.to_owned()))
        })
        .collect()
}

/// The router's own paths, read from the portal's sources (`.route("…"`), as
/// `/portal/…` with axum's `{param}` segments.
fn routed_paths() -> Vec<String> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../idemgate-http/src/portal");
    let mut paths = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from(root)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for piece in text.split(".route(\"").skip(1) {
                    let route = piece.split('"').next().unwrap();
                    paths.push(format!("/portal{}", if route == "/" { "/" } else { route }));
                }
            }
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

#[test]
fn every_portal_route_is_in_the_table() {
    let documented: Vec<String> = documented_routes().into_iter().map(|(_, path)| path).collect();
    assert!(!documented.is_empty(), "the table of §3.1 is empty");
    for path in routed_paths() {
        assert!(documented.contains(&path), "{path} is routed but not in docs/design/portal.md §3.1");
    }
}

async fn another_applications_ids_are_not_found(backend: Backend) {
    let (_setup, gateway) = serve_with(backend, &portal_api());
    let admin = sdk(&gateway, ADMIN_TOKEN);
    admin.event_type().create(EventTypeIn::new("order.paid".into(), "An order was paid".into()), None).await.unwrap();
    for uid in ["mine", "theirs"] {
        admin
            .application()
            .create(ApplicationIn { uid: Some(uid.into()), ..ApplicationIn::new(uid.into()) }, None)
            .await
            .unwrap();
    }
    let endpoint = EndpointIn { disabled: Some(false), ..EndpointIn::new("http://127.0.0.1:9/hook".into()) };
    let their_ep = admin.endpoint().create("theirs".into(), endpoint.clone(), None).await.unwrap();
    admin.endpoint().create("mine".into(), endpoint, None).await.unwrap();
    let their_msg = admin
        .message()
        .create("theirs".into(), MessageIn::new("order.paid".into(), json!({"n": 1})), None)
        .await
        .unwrap();
    let secret_before = admin.endpoint().get_secret("theirs".into(), their_ep.id.clone()).await.unwrap().key;
    let messages_before = admin.message().list("theirs".into(), None).await.unwrap().data.len();

    let mut customer = Customer::enter(&gateway, "mine").await;
    let mut walked = 0;
    for (method, template) in documented_routes() {
        if !template.contains('{') {
            continue;
        }
        let path = template.replace("{ep}", &their_ep.id).replace("{msg}", &their_msg.id);
        assert!(!path.contains('{'), "a parameter this test does not know: {template}");
        let page = match method.as_str() {
            "GET" => customer.get(&path).await,
            _ => {
                let fields = [
                    ("url", "http://127.0.0.1:9/other"),
                    ("description", "x"),
                    ("endpoint", their_ep.id.as_str()),
                    ("event_type", "order.paid"),
                    ("since", "2026-01-01T00:00"),
                    ("headers", "X-A: b"),
                    ("confirm", "on"),
                ];
                customer.post(&path, &fields).await
            }
        };
        assert_eq!(page.status, 404, "{method} {path}: {}", page.body);
        walked += 1;
    }
    assert!(walked > 0, "no route of §3.1 names an id");

    // Nothing of theirs changed.
    let ep = admin.endpoint().get("theirs".into(), their_ep.id.clone()).await.unwrap();
    assert_eq!((ep.url.as_str(), ep.disabled, ep.description.as_str()), ("http://127.0.0.1:9/hook", Some(false), ""));
    assert_eq!(admin.endpoint().get_secret("theirs".into(), their_ep.id.clone()).await.unwrap().key, secret_before);
    assert_eq!(admin.message().list("theirs".into(), None).await.unwrap().data.len(), messages_before);
    let headers = admin.endpoint().get_headers("theirs".into(), their_ep.id.clone()).await.unwrap();
    assert!(headers.headers.is_empty(), "{headers:?}");
}

#[tokio::test]
async fn another_applications_ids_are_not_found_on_sqlite() {
    another_applications_ids_are_not_found(Backend::Sqlite).await;
}

#[tokio::test]
async fn another_applications_ids_are_not_found_on_postgres() {
    another_applications_ids_are_not_found(Backend::Postgres).await;
}
