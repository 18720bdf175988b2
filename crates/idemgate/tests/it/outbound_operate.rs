//! The sending side as the operator sees it (issue 37 item 8), against a real `idemgate
//! serve` whose data was made through Svix's SDK and whose worker delivered to real
//! destinations on 127.0.0.1: the admin API's application routes, the dashboard's
//! application, message and listing pages, and `idemgate apps list | show`, on SQLite and
//! on PostgreSQL. None of them shows an endpoint's signing secret or a custom header's value.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use idemgate_testkit::{Destination, Step};
use serde_json::{Value, json};
use svix::{
    api::Svix,
    models::{ApplicationIn, EndpointIn, MessageIn},
};

use crate::{
    gateway_dashboard::{Answer, send},
    gateway_harness::{Gateway, Setup},
    outbound_api::{ADMIN_TOKEN, API, Backend, sdk, serve_keeping_url},
};

/// The custom header value that must never be shown.
const HEADER_VALUE: &str = "Bearer header-value-never-shown-7f3a";

/// `idemgate serve` with the API and the admin listener (its token the API admin's).
struct Served {
    setup: Setup,
    gateway: Gateway,
    admin: SocketAddr,
    url: Option<String>,
}

fn serve(backend: Backend) -> Served {
    let config = format!("{API}[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"env:API_ADMIN\"\n");
    let (setup, mut gateway, url) = serve_keeping_url(backend, &config);
    let admin = gateway.admin_addr();
    Served { setup, gateway, admin, url }
}

impl Served {
    /// The admin API's answer to `GET path`: status and JSON body.
    async fn api(&self, path: &str) -> (u16, Value) {
        let response = reqwest::Client::new()
            .get(format!("http://{}{path}", self.admin))
            .header("authorization", format!("Bearer {ADMIN_TOKEN}"))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, serde_json::from_slice(&response.bytes().await.unwrap()).unwrap())
    }

    /// `idemgate ARGS` against the same store: its stdout, after it succeeded.
    fn cli(&self, args: &[&str]) -> String {
        let output = self.setup.run(args, &self.cli_env());
        assert!(output.status.success(), "{args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    /// What the command line needs to find the store (on PostgreSQL, its schema's URL).
    fn cli_env(&self) -> Vec<(&str, &str)> {
        let mut env = vec![("API_ADMIN", ADMIN_TOKEN)];
        if let Some(url) = &self.url {
            env.push(("IDEMGATE_STORE__URL", url.as_str()));
        }
        env
    }
}

/// A signed-in dashboard session's cookie.
fn sign_in(admin: SocketAddr) -> String {
    let form = [("Content-Type", "application/x-www-form-urlencoded".to_owned())];
    let answer = send(admin, "POST", "/admin/login", &form, &format!("token={ADMIN_TOKEN}"));
    assert_eq!(answer.status, 303, "{answer:?}");
    format!("idemgate_admin={}", answer.session())
}

fn dashboard(admin: SocketAddr, cookie: &str, path: &str) -> Answer {
    send(admin, "GET", path, &[("Cookie", cookie.to_owned())], "")
}

/// The shop: an endpoint that answers, one that keeps failing (with a custom header), and
/// one the customer disabled; the depot, without endpoints. Two messages to the shop.
/// Answers the shop's id, the endpoints' ids and the first message's id.
async fn shop(admin: &Svix, answering: &Destination, failing: &Destination) -> (String, [String; 3], String) {
    let app = ApplicationIn { uid: Some("shop".to_owned()), ..ApplicationIn::new("Shop".to_owned()) };
    let app_id = admin.application().create(app, None).await.unwrap().id;
    let depot = ApplicationIn { uid: Some("depot".to_owned()), ..ApplicationIn::new("Depot".to_owned()) };
    admin.application().create(depot, None).await.unwrap();
    let headers = [("authorization".to_owned(), HEADER_VALUE.to_owned())].into();
    let endpoints = [
        EndpointIn { uid: Some("answers".to_owned()), ..EndpointIn::new(answering.url()) },
        EndpointIn { uid: Some("fails".to_owned()), headers: Some(headers), ..EndpointIn::new(failing.url()) },
        EndpointIn { uid: Some("off".to_owned()), disabled: Some(true), ..EndpointIn::new(answering.url()) },
    ];
    let mut ids = Vec::new();
    for endpoint in endpoints {
        ids.push(admin.endpoint().create("shop".to_owned(), endpoint, None).await.unwrap().id);
    }
    let mut first = None;
    for (event_id, order) in [("order-1", 1), ("order-2", 2)] {
        let message = MessageIn {
            event_id: Some(event_id.to_owned()),
            ..MessageIn::new("order.paid".to_owned(), json!({"order": order, "note": "payload-shown-to-operators"}))
        };
        let id = admin.message().create("shop".to_owned(), message, None).await.unwrap().id;
        first.get_or_insert(id);
    }
    (app_id, ids.try_into().unwrap(), first.unwrap())
}

/// Waits until both messages were delivered to the answering endpoint and each tried
/// twice at the failing one (its next try is minutes away, so the views stand still).
async fn settled(served: &Served) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, answered) = served.api("/admin/v1/applications/shop/endpoints/answers/attempts").await;
        let (_, failed) = served.api("/admin/v1/applications/shop/endpoints/fails/attempts").await;
        let count = |page: &Value| page["attempts"].as_array().map_or(0, Vec::len);
        let (_, detail) = served.api("/admin/v1/applications/shop").await;
        let fails = detail["endpoints"].as_array().and_then(|all| all.iter().find(|e| e["uid"] == "fails"));
        let retrying = fails.and_then(|e| e["jobs"]["retrying"].as_u64());
        if (count(&answered), count(&failed), retrying) == (2, 4, Some(2)) {
            return;
        }
        assert!(Instant::now() < deadline, "not settled: {answered} {failed} {detail}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn the_operator_sees_applications_endpoints_and_messages_but_no_secret(backend: Backend) {
    let served = serve(backend);
    let answering = Destination::start(&[]);
    let failing = Destination::start(&[]);
    failing.otherwise(Step::Status(500));
    let admin = sdk(&served.gateway, ADMIN_TOKEN);
    let (app_id, [answers, fails, off], first) = shop(&admin, &answering, &failing).await;
    let secrets: Vec<String> = {
        let mut all = vec![HEADER_VALUE.to_owned()];
        for ep in [&answers, &fails, &off] {
            all.push(admin.endpoint().get_secret("shop".to_owned(), ep.clone()).await.unwrap().key);
        }
        all
    };
    let secret_free = |what: &str, text: &str| {
        for secret in &secrets {
            assert!(!text.contains(secret.as_str()), "{what} shows a secret: {text}");
        }
        let key = secrets[1].trim_start_matches("whsec_");
        assert!(!text.contains(key), "{what} shows a secret's key: {text}");
    };
    settled(&served).await;

    // The listing: endpoint counts, and what needs a look; paged by id.
    let (status, listed) = served.api("/admin/v1/applications").await;
    assert_eq!(status, 200, "{listed}");
    let apps = listed["applications"].as_array().unwrap();
    assert_eq!(apps.len(), 2, "{listed}");
    let shop = apps.iter().find(|a| a["id"] == app_id.as_str()).unwrap();
    assert_eq!(
        (&shop["uid"], &shop["name"], &shop["endpoints"], &shop["endpoints_not_delivering"]),
        (&json!("shop"), &json!("Shop"), &json!(3), &json!(1))
    );
    assert_eq!((&shop["endpoints_retrying"], &shop["endpoints_with_dead_jobs"]), (&json!(1), &json!(0)));
    assert_eq!(shop["jobs"], json!({"retrying": 2, "succeeded": 2}), "the disabled endpoint got no job");
    let depot = apps.iter().find(|a| a["uid"] == "depot").unwrap();
    assert_eq!((&depot["endpoints"], &depot["jobs"]), (&json!(0), &json!({})));
    let (_, one) = served.api("/admin/v1/applications?limit=1").await;
    let after = one["next_after"].as_str().unwrap().to_owned();
    let (_, rest) = served.api(&format!("/admin/v1/applications?limit=1&after={after}")).await;
    assert_eq!(rest["next_after"], Value::Null, "{rest}");
    assert_ne!(one["applications"][0]["id"], rest["applications"][0]["id"]);

    // One application (by uid or id): its endpoints' state, filters, header names.
    let (status, detail) = served.api("/admin/v1/applications/shop").await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(served.api(&format!("/admin/v1/applications/{app_id}")).await.1, detail);
    let mut endpoints: Vec<&Value> = detail["endpoints"].as_array().unwrap().iter().collect();
    endpoints.sort_by_key(|e| e["uid"].as_str().unwrap().to_owned());
    let states: Vec<(&Value, &Value, &Value)> =
        endpoints.iter().map(|e| (&e["uid"], &e["state"], &e["header_names"])).collect();
    assert_eq!(
        states,
        [
            (&json!("answers"), &json!("enabled"), &json!([])),
            (&json!("fails"), &json!("enabled"), &json!(["authorization"])),
            (&json!("off"), &json!("disabled"), &json!([])),
        ]
    );
    assert_eq!((&endpoints[0]["health"], &endpoints[1]["health"]), (&json!("ok"), &json!("failing")));
    assert_eq!(endpoints[1]["last_failure"]["status"], 500);
    assert_eq!(endpoints[2]["disabled_reason"], "endpoint disabled");

    // Its messages, one message with its payload, deliveries and attempts.
    let (_, messages) = served.api("/admin/v1/applications/shop/messages").await;
    let listed = messages["messages"].as_array().unwrap();
    let mut event_ids: Vec<&str> = listed.iter().map(|m| m["event_id"].as_str().unwrap()).collect();
    event_ids.sort_unstable();
    assert_eq!(event_ids, ["order-1", "order-2"]);
    assert!(listed.iter().all(|m| m["deliveries"] == json!({"pending": 1, "success": 1})), "{messages}");
    let (status, message) = served.api(&format!("/admin/v1/applications/shop/messages/{first}")).await;
    assert_eq!(status, 200, "{message}");
    assert_eq!(served.api("/admin/v1/applications/shop/messages/order-1").await.1, message);
    assert!(message["payload"].as_str().unwrap().contains("payload-shown-to-operators"), "{message}");
    let mut codes: Vec<(String, u64)> = message["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["endpoint_id"].as_str().unwrap().to_owned(), a["status_code"].as_u64().unwrap()))
        .collect();
    codes.sort();
    let mut expected = vec![(answers.clone(), 200), (fails.clone(), 500), (fails.clone(), 500)];
    expected.sort();
    assert_eq!(codes, expected);
    assert!(message["attempts"].as_array().unwrap().iter().all(|a| a["duration_ms"].as_i64().unwrap() >= 0));

    // An endpoint's attempts, a page at a time; cursors it did not give and missing things.
    let (_, page) = served.api("/admin/v1/applications/shop/endpoints/fails/attempts?limit=3").await;
    let after = page["next_after"].as_str().unwrap().to_owned();
    let (_, last) = served.api(&format!("/admin/v1/applications/shop/endpoints/fails/attempts?after={after}")).await;
    assert_eq!((last["attempts"].as_array().unwrap().len(), &last["next_after"]), (1, &Value::Null));
    let (status, refused) = served.api("/admin/v1/applications/shop/endpoints/fails/attempts?after=nonsense").await;
    assert_eq!((status, &refused["error"]), (400, &json!("bad_cursor")));
    for missing in [
        "/admin/v1/applications/nowhere",
        "/admin/v1/applications/nowhere/messages",
        "/admin/v1/applications/depot/messages/order-1",
        "/admin/v1/applications/depot/endpoints/fails/attempts",
    ] {
        let (status, body) = served.api(missing).await;
        assert_eq!((status, &body["error"]), (404, &json!("not_found")), "{missing}");
    }

    // Every application route the OpenAPI document lists answers.
    let (_, doc) = served.api("/admin/v1/openapi.json").await;
    let routes: Vec<&String> =
        doc["paths"].as_object().unwrap().keys().filter(|p| p.starts_with("/admin/v1/applications")).collect();
    assert_eq!(routes.len(), 5, "{routes:?}");
    for route in routes {
        let path = route.replace("{app}", "shop").replace("{msg}", &first).replace("{endpoint}", "answers");
        let (status, body) = served.api(&path).await;
        assert_eq!(status, 200, "{path}: {body}");
        secret_free(&path, &body.to_string());
    }
    secret_free("the admin API", &detail.to_string());

    // The dashboard: the listing, the application and the message page.
    let cookie = sign_in(served.admin);
    let page = dashboard(served.admin, &cookie, "/admin/applications");
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.body.contains("<a href=\"/admin/applications\">Applications</a>"), "in the navigation");
    assert!(page.body.contains(&format!("<a href=\"/admin/applications/{app_id}\">Shop</a>")), "{}", page.body);
    assert!(
        page.body.contains("<td class=\"not-delivering\" data-label=\"not delivering\"><span class=\"bad\">1</span>"),
        "{}",
        page.body
    );
    let app_page = dashboard(served.admin, &cookie, &format!("/admin/applications/{app_id}"));
    assert_eq!(app_page.status, 200, "{app_page:?}");
    assert!(
        app_page.body.contains("<td class=\"headers\" data-label=\"header names\">authorization</td>"),
        "{}",
        app_page.body
    );
    assert!(app_page.body.contains("disabled (endpoint disabled)"), "{}", app_page.body);
    let link = format!("<a href=\"/admin/applications/{app_id}/messages/{first}\">");
    assert!(app_page.body.contains(&link), "{}", app_page.body);
    let message_page = dashboard(served.admin, &cookie, &format!("/admin/applications/{app_id}/messages/{first}"));
    assert_eq!(message_page.status, 200, "{message_page:?}");
    assert!(message_page.body.contains("payload-shown-to-operators"), "{}", message_page.body);
    assert!(
        message_page.body.contains("<td class=\"code\" data-label=\"status code\">500</td>"),
        "{}",
        message_page.body
    );
    assert!(
        message_page.body.contains("<td class=\"code\" data-label=\"status code\">200</td>"),
        "{}",
        message_page.body
    );
    for page in [&page, &app_page, &message_page] {
        secret_free("the dashboard", &page.body);
    }
    assert_eq!(dashboard(served.admin, &cookie, "/admin/applications/nowhere").status, 404);
    let signed_out = dashboard(served.admin, "idemgate_admin=none", "/admin/applications");
    assert_eq!((signed_out.status, signed_out.header("location")), (303, Some("/admin/login")));

    // The command line: the same views as the admin API, as text or JSON.
    let (_, api_list) = served.api("/admin/v1/applications").await;
    assert_eq!(serde_json::from_str::<Value>(&served.cli(&["apps", "list", "--json"])).unwrap(), api_list);
    assert_eq!(serde_json::from_str::<Value>(&served.cli(&["apps", "show", "shop", "--json"])).unwrap(), detail);
    let text = served.cli(&["apps", "list"]);
    assert!(text.lines().any(|l| l.starts_with(app_id.as_str()) && l.contains(" shop ")), "{text}");
    let shown = served.cli(&["apps", "show", &app_id]);
    for words in ["header names  authorization", "state         disabled (endpoint disabled)", "health        failing"]
    {
        assert!(shown.contains(words), "{words:?} in {shown}");
    }
    for text in [&text, &shown] {
        secret_free("the CLI", text);
    }
    let missing = served.setup.run(&["apps", "show", "nowhere"], &served.cli_env());
    assert!(!missing.status.success() && String::from_utf8_lossy(&missing.stderr).contains("no application"));
}

#[tokio::test]
async fn the_operator_sees_applications_endpoints_and_messages_but_no_secret_on_sqlite() {
    the_operator_sees_applications_endpoints_and_messages_but_no_secret(Backend::Sqlite).await;
}

#[tokio::test]
async fn the_operator_sees_applications_endpoints_and_messages_but_no_secret_on_postgres() {
    the_operator_sees_applications_endpoints_and_messages_but_no_secret(Backend::Postgres).await;
}
