//! The admin API over real HTTP: the token guards every route, a `read` token changes
//! nothing, the changes of the API and the CLI are in the audit log, filters and
//! pagination return exactly the expected events, and every route of the OpenAPI
//! document answers.

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::{
    gateway_harness::{Gateway, Setup, Signer, body},
    harness::{Reply, exchange, unix_now},
};

const TOKEN: &str = "an-admin-token-of-some-length";
/// `[admin.tokens.viewer]`, with no role: `read`.
const VIEWER: &str = "a-viewer-token-of-some-length";

fn request(addr: SocketAddr, method: &str, path: &str, token: Option<&str>, body: &str) -> Reply {
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    exchange(addr, head.as_bytes())
}

fn start() -> (Setup, Gateway, SocketAddr) {
    let key = Signer::Standard(vec![5; 32]);
    let setup = Setup::new(&format!(
        "[worker]\nenabled = false\n[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"env:ADMIN_TOKEN\"\n\
         [admin.tokens.viewer]\ntoken = \"env:VIEWER_TOKEN\"\n\
         [sources.alpha]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\ndestinations = [\"app\"]\n\
         [sources.beta]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\n\
         [destinations.app]\nurl = \"http://127.0.0.1:9/app\"\n",
        secret = key.config_secret()
    ));
    let mut gateway = Gateway::start(&setup.config(), &[("ADMIN_TOKEN", TOKEN), ("VIEWER_TOKEN", VIEWER)]);
    let admin = gateway.admin_addr();
    for (source, id) in [("alpha", "a1"), ("alpha", "a2"), ("beta", "b1"), ("alpha", "a3")] {
        let event = body(id, "t");
        assert_eq!(gateway.post(source, &key.headers(id, &event, unix_now()), &event).status(), 202);
    }
    let forged = body("x", "t");
    assert_eq!(
        gateway.post("beta", &Signer::Standard(vec![6; 32]).headers("x", &forged, unix_now()), &forged).status(),
        401
    );
    (setup, gateway, admin)
}

#[test]
fn a_missing_or_wrong_token_gets_401_and_learns_nothing() {
    let (_setup, _gateway, admin) = start();
    for token in [None, Some("wrong"), Some("an-admin-token-of-some-lengtX")] {
        let reply = request(admin, "GET", "/admin/v1/events", token, "");
        assert!((reply.status(), &reply.body()["error"]) == (401, &json!("unauthorized")), "{token:?}: {reply:?}");
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
    }
    let reply = request(admin, "POST", "/admin/v1/replay", Some("wrong"), "{}");
    assert_eq!(reply.status(), 401);
}

#[test]
fn a_read_token_lists_events_but_may_not_replay_and_every_change_is_audited() {
    let (setup, _gateway, admin) = start();
    let listed = request(admin, "GET", "/admin/v1/events?source=alpha", Some(VIEWER), "");
    assert_eq!(listed.status(), 200);
    assert_eq!(listed.body()["events"].as_array().unwrap().len(), 3);
    let refused = request(admin, "POST", "/admin/v1/events/alpha/a1/replay?state=succeeded", Some(VIEWER), "");
    assert!((refused.status(), &refused.body()["error"]) == (403, &json!("forbidden")), "{refused:?}");
    assert_eq!(request(admin, "POST", "/admin/v1/replay", Some(VIEWER), "{}").status(), 403);
    assert_eq!(request(admin, "GET", "/admin/v1/audit", Some(VIEWER), "").body(), &json!([]), "nothing was done");

    let retried = request(admin, "POST", "/admin/v1/events/alpha/a1/retry", Some(TOKEN), "");
    assert!(retried.is(200, json!({"retried": 0})), "{retried:?}");
    let cli = setup.run(&["events", "retry", "--source", "alpha"], &[]);
    assert!(cli.status.success(), "{cli:?}");
    let cli = setup.run(&["destination", "enable", "app"], &[]);
    assert!(cli.status.success(), "{cli:?}");
    let log = request(admin, "GET", "/admin/v1/audit", Some(VIEWER), "");
    let rows: Vec<(String, String, String, u64)> = log
        .body()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let text = |key: &str| e[key].as_str().unwrap().to_owned();
            (text("token"), text("action"), text("target"), e["affected"].as_u64().unwrap())
        })
        .collect();
    let row = |token: &str, action: &str, target: &str| (token.to_owned(), action.to_owned(), target.to_owned(), 0);
    assert_eq!(
        rows,
        [
            row("cli", "enable", "destination app"),
            row("cli", "retry", "filter source=alpha"),
            row("admin", "retry", "event alpha/a1"),
        ],
        "newest first"
    );
    let by_cli = request(admin, "GET", "/admin/v1/audit?token=cli&action=retry", Some(TOKEN), "");
    assert_eq!(by_cli.body().as_array().unwrap().len(), 1);
}

#[test]
fn filters_and_pagination_return_exactly_the_expected_events() {
    let (_setup, _gateway, admin) = start();
    let ids = |reply: &Reply| -> Vec<String> {
        reply.body()["events"].as_array().unwrap().iter().map(|e| e["identity"].as_str().unwrap().to_owned()).collect()
    };
    let alpha = request(admin, "GET", "/admin/v1/events?source=alpha&limit=2", Some(TOKEN), "");
    assert_eq!(ids(&alpha), ["a3", "a2"]);
    let cursor = alpha.body()["next_before"].as_i64().unwrap();
    let next =
        request(admin, "GET", &format!("/admin/v1/events?source=alpha&limit=2&before={cursor}"), Some(TOKEN), "");
    assert_eq!(ids(&next), ["a1"]);
    assert_eq!(next.body()["next_before"], Value::Null);
    let pending = request(admin, "GET", "/admin/v1/events?state=pending", Some(TOKEN), "");
    assert_eq!(ids(&pending), ["a3", "a2", "a1"], "beta has no destination, so no jobs");
    let bad = request(admin, "GET", "/admin/v1/events?state=nonsense", Some(TOKEN), "");
    assert_eq!(bad.status(), 400);
    let shown = request(admin, "GET", "/admin/v1/events/alpha/a2", Some(TOKEN), "");
    assert_eq!(shown.body()["jobs"][0]["state"], "pending");
    assert_eq!(request(admin, "GET", "/admin/v1/events/alpha/none", Some(TOKEN), "").status(), 404);
    let stats = request(admin, "GET", "/admin/v1/stats", Some(TOKEN), "");
    assert_eq!(stats.body()[0]["receipts"], 3);
    assert_eq!(stats.body()[1]["source"], "beta");
    let rejections = request(admin, "GET", "/admin/v1/rejections", Some(TOKEN), "");
    assert_eq!(rejections.body(), &json!([{"source": "beta", "reason": "signature_mismatch", "count": 1}]));
}

#[test]
fn every_route_of_the_openapi_document_answers() {
    let (_setup, _gateway, admin) = start();
    let doc = request(admin, "GET", "/admin/v1/openapi.json", None, "");
    assert_eq!(doc.status(), 200);
    let doc = doc.body().clone();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 7, "{paths:?}");
    assert!(paths.contains_key("/admin/v1/audit"), "the audit log is documented: {paths:?}");
    for (path, operations) in paths {
        if path.contains("{app}") {
            // This gateway has no outbound API, so no application: these routes answer in
            // `outbound_operate.rs`, against applications made through it.
            continue;
        }
        let concrete = path.replace("{source}", "alpha").replace("{identity}", "a1").replace("{name}", "app");
        for method in operations.as_object().unwrap().keys() {
            let body = if method == "post" { "{}" } else { "" };
            let reply = request(admin, &method.to_uppercase(), &concrete, Some(TOKEN), body);
            assert!(matches!(reply.status(), 200..=299), "{method} {concrete}: {reply:?}");
            assert!(operations[method]["responses"].as_object().unwrap().contains_key("200"), "{method} {path}");
        }
    }
    let audit = &doc["components"]["schemas"]["AuditEntry"];
    assert!(audit["properties"]["token"].is_object() && audit["properties"]["affected"].is_object(), "{audit}");
    let replay = &paths["/admin/v1/replay"]["post"]["responses"];
    assert!(replay.as_object().unwrap().contains_key("403"), "a read token's refusal is documented: {replay}");
    let destination = &doc["components"]["schemas"]["DestinationView"];
    assert!(destination["properties"]["throttled_since"].is_object(), "{destination}");
    assert!(
        destination["properties"]["state"]["description"].as_str().unwrap().contains("`throttled`"),
        "{destination}"
    );
}

#[test]
fn the_clis_json_views_are_the_admin_apis_views() {
    let (setup, _gateway, admin) = start();
    let cli = |args: &[&str]| -> Value {
        let output = setup.run(args, &[("ADMIN_TOKEN", TOKEN)]);
        assert!(output.status.success(), "{args:?}: {output:?}");
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let api = |path: &str| request(admin, "GET", path, Some(TOKEN), "").body().clone();
    let listed = cli(&["events", "list", "--source", "alpha", "--limit", "2", "--json"]);
    assert_eq!(listed, api("/admin/v1/events?source=alpha&limit=2"));
    let first = listed["events"][0].as_object().unwrap();
    assert!(first.contains_key("event_type") && !first.contains_key("type"), "the API's name: {first:?}");
    assert_eq!(cli(&["events", "show", "alpha", "a2", "--json"]), api("/admin/v1/events/alpha/a2"));
    assert_eq!(cli(&["events", "stats", "--json"])["sources"], api("/admin/v1/stats"));
}
