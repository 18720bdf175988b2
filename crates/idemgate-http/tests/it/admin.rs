//! The admin listener (API and dashboard) on an injected clock: time moves without
//! sleeping. Two named tokens: `admin` (operate) and `viewer` (read).

use std::{net::SocketAddr, sync::Arc, time::Duration};

use bytes::Bytes;
use idemgate_clock::{ManualClock, UnixTime};
use idemgate_core::{
    BodyHash, Identity, Outcome, ReceiptKey, Secret, SourceName,
    retry::{DeadReason, Decision},
};
use idemgate_http::{
    RejectionCounts, ServeOptions,
    access::{NamedToken, Role},
    console::{self, AdminState, session::Sessions},
    serve,
};
use idemgate_store::{ReceiveRequest, SqliteStore, Store, StoreOptions, inbox::IncomingEvent, jobs::AttemptRecord};
use serde_json::{Value, json};

use crate::exchange;

const TOKEN: &str = "admin-token-for-tests";
const VIEWER: &str = "viewer-token-for-tests";

async fn start_admin(clock: Arc<ManualClock>, lifetime: Duration) -> (SocketAddr, tempfile::TempDir) {
    let (addr, _, dir) = start_with_store(clock, lifetime).await;
    (addr, dir)
}

async fn start_with_store(clock: Arc<ManualClock>, lifetime: Duration) -> (SocketAddr, Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store: Store =
        Arc::new(SqliteStore::open(&dir.path().join("a.sqlite3"), StoreOptions::default()).unwrap()).into();
    let named = |name: &str, role, secret: &str| NamedToken {
        name: name.to_owned(),
        role,
        secret: Secret::new(secret.as_bytes().to_vec()),
    };
    let state = AdminState {
        store: store.clone(),
        tokens: idemgate_http::current::AdminTokens::new(vec![
            named("admin", Role::Operate, TOKEN),
            named("viewer", Role::Read, VIEWER),
        ]),
        rejections: Arc::new(RejectionCounts::default()),
        sessions: Sessions::new(store.clone(), lifetime),
        tls: false,
        body_timeout: Duration::from_secs(5),
        clock,
        destinations: idemgate_http::current::DestinationNames::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, console::router(state), ServeOptions::default(), std::future::pending()));
    (addr, store, dir)
}

async fn sign_in(addr: SocketAddr) -> String {
    sign_in_with(addr, TOKEN).await
}

async fn sign_in_with(addr: SocketAddr, token: &str) -> String {
    let form = format!("token={token}");
    let answer = exchange(
        addr,
        format!(
            "POST /admin/login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
            form.len()
        ),
    )
    .await;
    let cookie = answer.lines().find_map(|line| line.strip_prefix("set-cookie: ")).expect("a session cookie");
    cookie.split(';').next().unwrap().to_owned()
}

async fn dashboard(addr: SocketAddr, cookie: &str) -> String {
    get_page(addr, "/admin/", cookie).await
}

async fn get_page(addr: SocketAddr, path: &str, cookie: &str) -> String {
    exchange(addr, format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nCookie: {cookie}\r\n\r\n")).await
}

/// The session's CSRF token, from its page's sign-out form.
fn csrf_of(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").expect("a form") + "name=\"csrf\" value=\"".len();
    page[at..].split('"').next().unwrap().to_owned()
}

async fn post_form(addr: SocketAddr, path: &str, cookie: &str, form: &str) -> String {
    exchange(
        addr,
        format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nCookie: {cookie}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
            form.len()
        ),
    )
    .await
}

/// A bearer request; the status and the JSON body.
async fn api(addr: SocketAddr, method: &str, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let answer = exchange(
        addr,
        format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
    .await;
    let status = answer[9..12].parse().unwrap();
    let json =
        answer.split_once("\r\n\r\n").map_or(Value::Null, |(_, b)| serde_json::from_str(b).unwrap_or(Value::Null));
    (status, json)
}

const T: i64 = 1_800_000_000;

/// Events `ok` (its job to `app` succeeded), `dead` (to `app`, dead) and `gone` (to
/// `gone`, which answered 410 and is disabled), all at `T`.
async fn seed(store: &Store) {
    for (identity, destination) in [("ok", "app"), ("dead", "app"), ("gone", "gone")] {
        let key = ReceiptKey { source: SourceName::new("src").unwrap(), identity: Identity::new(identity).unwrap() };
        let request =
            ReceiveRequest { key, body_hash: BodyHash::of(b"{}"), received_at: UnixTime(T), dedupe_body: false };
        let event = IncomingEvent {
            result: json!({}),
            outgoing_id: None,
            event_type: None,
            content_type: Some("application/json".to_owned()),
            headers: Vec::new(),
            body: Bytes::from_static(b"{}"),
            ordering: None,
            destinations: vec![destination.to_owned()].into(),
            dead: Vec::new(),
            refusal: None,
        };
        assert!(matches!(store.accept(request, event).await, Outcome::Applied { .. }));
    }
    for job in store.claim_jobs(T * 1000, Duration::from_secs(30), 10, Vec::new()).await.unwrap() {
        let decision = match job.key.identity.as_str() {
            "ok" => Decision::Succeeded,
            "dead" => Decision::Dead(DeadReason::FinalStatus(400)),
            _ => Decision::DisableDestination,
        };
        let attempt = AttemptRecord {
            started_at: UnixTime(T),
            latency: Duration::from_millis(3),
            status: Some(400),
            outcome: idemgate_core::retry::Attempted::Failed,
            error: None,
            response_prefix: None,
        };
        store.complete_job(job, attempt, decision, T * 1000).await.unwrap();
    }
}

async fn job_state(store: &Store, identity: &str) -> String {
    let key = ReceiptKey { source: SourceName::new("src").unwrap(), identity: Identity::new(identity).unwrap() };
    store.jobs(key).await.unwrap().remove(0).state
}

#[tokio::test]
async fn a_read_token_sees_everything_and_changes_nothing() {
    let clock = Arc::new(ManualClock::at(UnixTime(T)));
    let (addr, store, _dir) = start_with_store(Arc::clone(&clock), Duration::from_secs(600)).await;
    seed(&store).await;
    let (status, page) = api(addr, "GET", "/admin/v1/events", VIEWER, None).await;
    assert_eq!(status, 200);
    assert_eq!(page["events"].as_array().unwrap().len(), 3);
    assert_eq!(api(addr, "GET", "/admin/v1/destinations", VIEWER, None).await.0, 200);
    assert_eq!(api(addr, "GET", "/admin/v1/audit", VIEWER, None).await.0, 200);
    let refused = [
        ("POST", "/admin/v1/events/src/dead/replay", None),
        ("POST", "/admin/v1/replay", Some(json!({}))),
        ("POST", "/admin/v1/events/src/dead/retry", None),
        ("POST", "/admin/v1/retry", Some(json!({}))),
        ("POST", "/admin/v1/destinations/gone/enable", None),
    ];
    for (method, path, body) in refused {
        let (status, answer) = api(addr, method, path, VIEWER, body).await;
        assert_eq!((status, &answer["error"]), (403, &json!("forbidden")), "{path}");
    }
    assert_eq!(api(addr, "POST", "/admin/v1/events/src/dead/replay", "wrong-token-of-length", None).await.0, 401);
    assert_eq!(job_state(&store, "dead").await, "dead", "nothing was replayed");
    assert!(store.destinations().await.unwrap().iter().any(|d| d.name == "gone" && d.disabled.is_some()));

    let cookie = sign_in_with(addr, VIEWER).await;
    let page = dashboard(addr, &cookie).await;
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("<td data-label=\"event\">dead</td>"), "the dead job is listed: {page}");
    for button in ["class=\"replay\"", "class=\"retry\"", "class=\"enable\"", "class=\"replay-dead\""] {
        assert!(!page.contains(button), "no {button} for a read session");
    }
    let csrf = csrf_of(&page);
    for (path, form) in [
        ("/admin/replay", format!("source=src&identity=dead&csrf={csrf}")),
        ("/admin/retry", format!("destination=app&csrf={csrf}")),
        ("/admin/enable", format!("destination=gone&csrf={csrf}")),
        ("/admin/replay-dead", format!("destination=app&csrf={csrf}")),
    ] {
        let answer = post_form(addr, path, &cookie, &form).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{path}: {answer}");
        assert!(answer.contains("this token may only read"), "{answer}");
    }
    // The event page (the seed's second event is `dead`): no forms, and its posts refused.
    let event_page = get_page(addr, "/admin/events/2", &cookie).await;
    assert!(event_page.starts_with("HTTP/1.1 200") && event_page.contains("dead"), "{event_page}");
    assert!(!event_page.contains("/admin/events/2/replay"), "no replay form for a read session: {event_page}");
    for path in ["/admin/events/2/replay", "/admin/events/2/retry"] {
        let answer = post_form(addr, path, &cookie, &format!("csrf={csrf}")).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{path}: {answer}");
    }
    assert_eq!(job_state(&store, "dead").await, "dead", "nothing was replayed");
    assert!(store.destinations().await.unwrap().iter().any(|d| d.name == "gone" && d.disabled.is_some()));
    assert_eq!(api(addr, "GET", "/admin/v1/audit", VIEWER, None).await.1, json!([]), "nothing to record");
}

#[tokio::test]
async fn an_operators_changes_appear_in_the_audit_log_exactly() {
    let clock = Arc::new(ManualClock::at(UnixTime(T)));
    let (addr, store, _dir) = start_with_store(Arc::clone(&clock), Duration::from_secs(600)).await;
    seed(&store).await;
    clock.advance(10);
    let (status, body) = api(addr, "POST", "/admin/v1/events/src/dead/replay", TOKEN, None).await;
    assert_eq!((status, body), (200, json!({ "replayed": 1 })));
    clock.advance(10);
    let (status, body) = api(addr, "POST", "/admin/v1/retry", TOKEN, Some(json!({ "destination": "app" }))).await;
    assert_eq!((status, body), (200, json!({ "retried": 0 })), "the replayed job is due already");
    clock.advance(10);
    let (status, body) = api(addr, "POST", "/admin/v1/destinations/gone/enable", TOKEN, None).await;
    assert_eq!((status, body), (200, json!({ "was_disabled": true })));
    clock.advance(10);
    let cookie = sign_in(addr).await;
    let page = dashboard(addr, &cookie).await;
    assert!(page.contains("class=\"retry\""), "an operate session has its buttons");
    let answer =
        post_form(addr, "/admin/replay", &cookie, &format!("source=src&identity=ok&csrf={}", csrf_of(&page))).await;
    assert!(answer.starts_with("HTTP/1.1 303"), "{answer}");
    assert_eq!(job_state(&store, "ok").await, "succeeded", "a dashboard replay takes dead jobs only");

    let (status, log) = api(addr, "GET", "/admin/v1/audit", VIEWER, None).await;
    assert_eq!(status, 200);
    let rows: Vec<(i64, &str, &str, &str, u64)> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["at"].as_i64().unwrap(),
                e["token"].as_str().unwrap(),
                e["action"].as_str().unwrap(),
                e["target"].as_str().unwrap(),
                e["affected"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (T + 40, "admin", "replay", "event src/ok", 0),
            (T + 30, "admin", "enable", "destination gone", 1),
            (T + 20, "admin", "retry", "filter destination=app", 0),
            (T + 10, "admin", "replay", "event src/dead", 1),
        ]
    );
    let (_, replays) = api(addr, "GET", "/admin/v1/audit?action=replay&since=1800000015&limit=5", TOKEN, None).await;
    assert_eq!(replays.as_array().unwrap().len(), 1);
    assert_eq!(api(addr, "GET", "/admin/v1/audit?token=viewer", TOKEN, None).await.1, json!([]));
    assert_eq!(api(addr, "GET", "/admin/v1/audit?action=delete", TOKEN, None).await.0, 400);
    let page = get_page(addr, "/admin/audit?action=enable", &cookie).await;
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("<td class=\"target\" data-label=\"target\">destination gone</td>"), "{page}");
    assert!(!page.contains("event src/dead"), "filtered by action: {page}");

    // The event page's forms are audited too: replay the dead event from its page.
    clock.advance(10);
    let event_page = get_page(addr, "/admin/events/2", &cookie).await;
    assert!(event_page.contains("/admin/events/2/replay"), "an operate session has the event's forms");
    let answer = post_form(addr, "/admin/events/2/replay", &cookie, &format!("csrf={}", csrf_of(&event_page))).await;
    assert!(answer.starts_with("HTTP/1.1 303"), "{answer}");
    let (_, log) = api(addr, "GET", "/admin/v1/audit?limit=1", VIEWER, None).await;
    let newest = &log[0];
    assert_eq!(
        (newest["at"].as_i64(), newest["token"].as_str(), newest["action"].as_str(), newest["target"].as_str()),
        (Some(T + 50), Some("admin"), Some("replay"), Some("event src/dead"))
    );
}

#[tokio::test]
async fn a_dashboard_session_ends_once_unused_for_its_lifetime_on_the_injected_clock() {
    let clock = Arc::new(ManualClock::at(UnixTime(1_800_000_000)));
    let (addr, _dir) = start_admin(Arc::clone(&clock), Duration::from_secs(60)).await;
    let cookie = sign_in(addr).await;

    clock.advance(29);
    let page = dashboard(addr, &cookie).await;
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("id=\"sign-out\""), "{page}");

    clock.advance(31);
    let page = dashboard(addr, &cookie).await;
    assert!(page.starts_with("HTTP/1.1 303"), "used before half its lifetime, it still ends at sign-in + 60 s: {page}");
    assert!(page.contains("location: /admin/login"), "{page}");

    // Used once more than half its lifetime is gone, a session lasts its lifetime from then.
    let cookie = sign_in(addr).await;
    clock.advance(31);
    assert!(dashboard(addr, &cookie).await.starts_with("HTTP/1.1 200"));
    clock.advance(59);
    assert!(dashboard(addr, &cookie).await.starts_with("HTTP/1.1 200"), "60 s from sign-in, 29 s from its use");
    clock.advance(60);
    assert!(dashboard(addr, &cookie).await.starts_with("HTTP/1.1 303"), "unused for 60 s");
}

/// The admin listener of [`start_with_store`] on `store`, with `tokens` shared with the
/// caller, who may replace them as a reload does.
async fn start_on(store: Store, tokens: idemgate_http::current::AdminTokens, clock: Arc<ManualClock>) -> SocketAddr {
    let state = AdminState {
        store: store.clone(),
        tokens,
        rejections: Arc::new(RejectionCounts::default()),
        sessions: Sessions::new(store, Duration::from_secs(3600)),
        tls: false,
        body_timeout: Duration::from_secs(5),
        clock,
        destinations: idemgate_http::current::DestinationNames::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, console::router(state), ServeOptions::default(), std::future::pending()));
    addr
}

fn token(name: &str, role: Role, secret: &str) -> NamedToken {
    NamedToken { name: name.to_owned(), role, secret: Secret::new(secret.as_bytes().to_vec()) }
}

#[tokio::test]
async fn a_session_of_a_token_renamed_removed_or_given_another_role_reads_as_signed_out() {
    let clock = Arc::new(ManualClock::at(UnixTime(1_800_000_000)));
    let dir = tempfile::tempdir().unwrap();
    let store: Store =
        Arc::new(SqliteStore::open(&dir.path().join("s.sqlite3"), StoreOptions::default()).unwrap()).into();
    let tokens = idemgate_http::current::AdminTokens::new(vec![
        token("admin", Role::Operate, TOKEN),
        token("viewer", Role::Read, VIEWER),
    ]);
    let addr = start_on(store, tokens.clone(), clock).await;
    let (ops, viewer) = (sign_in(addr).await, sign_in_with(addr, VIEWER).await);
    let signed_in = |cookie: String| async move { status_of(&dashboard(addr, &cookie).await) == 200 };
    assert!(signed_in(ops.clone()).await && signed_in(viewer.clone()).await);

    // The same secrets, the operator's now under another name, the viewer's now operate:
    // neither session is its token's any more, though no session was ended.
    tokens.replace(vec![token("ops", Role::Operate, TOKEN), token("viewer", Role::Operate, VIEWER)]);
    assert!(!signed_in(ops.clone()).await, "renamed");
    assert!(!signed_in(viewer.clone()).await, "another role");
    assert!(signed_in(sign_in_with(addr, VIEWER).await).await, "a new session, of the token as it is now");

    // Back as they were: the first sessions are theirs again (nothing in the store ended).
    tokens.replace(vec![token("admin", Role::Operate, TOKEN), token("viewer", Role::Read, VIEWER)]);
    assert!(signed_in(ops.clone()).await && signed_in(viewer).await);
    tokens.replace(vec![token("viewer", Role::Read, VIEWER)]);
    assert!(!signed_in(ops).await, "removed");
}

#[tokio::test]
async fn a_store_that_cannot_be_reached_answers_503_for_sessions_and_never_signs_in() {
    let clock = Arc::new(ManualClock::at(UnixTime(1_800_000_000)));
    let store = Store::unavailable();
    let addr = start_on(
        store.clone(),
        idemgate_http::current::AdminTokens::new(vec![token("admin", Role::Operate, TOKEN)]),
        clock,
    )
    .await;
    let form = format!("token={TOKEN}");
    let answer = exchange(
        addr,
        format!(
            "POST /admin/login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
            form.len()
        ),
    )
    .await;
    assert_eq!(status_of(&answer), 503, "{answer}");
    assert!(answer.contains("Try again.") && !answer.contains("set-cookie"), "{answer}");
    let page = dashboard(addr, &format!("idemgate_admin={}", "0".repeat(64))).await;
    assert_eq!(status_of(&page), 503, "{page}");
    assert!(page.contains("The store cannot be read."), "{page}");
    let out = post_form(addr, "/admin/logout", &format!("idemgate_admin={}", "0".repeat(64)), "csrf=x").await;
    assert_eq!(status_of(&out), 503, "{out}");

    // Once the store opens, the same instance signs in.
    let dir = tempfile::tempdir().unwrap();
    let opened: Store =
        Arc::new(SqliteStore::open(&dir.path().join("late.sqlite3"), StoreOptions::default()).unwrap()).into();
    assert!(store.make_available(&opened));
    let cookie = sign_in(addr).await;
    assert_eq!(status_of(&dashboard(addr, &cookie).await), 200);
}

fn status_of(answer: &str) -> u16 {
    answer[9..12].parse().unwrap()
}

/// The status, the `Content-Type` and the JSON body of a raw request's answer.
async fn raw(addr: SocketAddr, request: String) -> (u16, String, Value) {
    let answer = exchange(addr, request).await;
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let content_type = head.lines().find_map(|l| l.strip_prefix("content-type: ")).unwrap_or_default().to_owned();
    (answer[9..12].parse().unwrap(), content_type, serde_json::from_str(body).unwrap_or(Value::Null))
}

fn bearer(method: &str, path: &str, headers: &str, body: &str) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n{headers}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn every_admin_api_error_is_json_with_a_code_and_a_detail() {
    let clock = Arc::new(ManualClock::at(UnixTime(T)));
    let (addr, store, _dir) = start_with_store(clock, Duration::from_secs(600)).await;
    seed(&store).await;
    let json = "Content-Type: application/json\r\n";
    let big = format!("{{\"source\":\"{}\"}}", "x".repeat(70 * 1024));
    let cases = [
        (bearer("GET", "/admin/v1/events?since=yesterday", "", ""), 400, "invalid_query"),
        (bearer("GET", "/admin/v1/events?limit=-1", "", ""), 400, "invalid_query"),
        (bearer("GET", "/admin/v1/destinations/app/series?window=week", "", ""), 400, "invalid_query"),
        (bearer("GET", "/admin/v1/events?state=nonsense", "", ""), 400, "unknown_state"),
        (bearer("GET", "/admin/v1/events/src/%FF", "", ""), 400, "invalid_path"),
        (bearer("POST", "/admin/v1/replay", "", "{}"), 415, "unsupported_media_type"),
        (bearer("POST", "/admin/v1/replay", "Content-Type: text/plain\r\n", "{}"), 415, "unsupported_media_type"),
        (bearer("POST", "/admin/v1/replay", json, "{not json"), 400, "invalid_body"),
        (bearer("POST", "/admin/v1/replay", json, r#"{"since":true}"#), 400, "invalid_body"),
        (bearer("POST", "/admin/v1/retry", json, r#"{"until":"soon"}"#), 400, "invalid_body"),
        (bearer("POST", "/admin/v1/replay", json, &big), 413, "body_size"),
        (bearer("GET", "/admin/v1/nothing-here", "", ""), 404, "not_found"),
        (bearer("GET", "/admin/v1/events/src/none", "", ""), 404, "not_found"),
        (bearer("DELETE", "/admin/v1/events", "", ""), 405, "method_not_allowed"),
        (bearer("GET", "/admin/v1/replay", "", ""), 405, "method_not_allowed"),
        ("GET /admin/v1/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_owned(), 401, "unauthorized"),
    ];
    for (request, status, code) in cases {
        let line = request.lines().next().unwrap().to_owned();
        let (got, content_type, body) = raw(addr, request).await;
        assert_eq!((got, body["error"].as_str()), (status, Some(code)), "{line}: {body}");
        assert_eq!(content_type, "application/json", "{line}");
        let detail = body["detail"].as_str().unwrap_or_default();
        assert!(!detail.is_empty() && body.as_object().unwrap().len() == 2, "{line}: {body}");
        assert!(!detail.contains(TOKEN) && !detail.contains("xxxx"), "{line}: {detail}");
    }
    assert_eq!(api(addr, "GET", "/admin/v1/audit", VIEWER, None).await.1, json!([]), "nothing was changed");
}

#[tokio::test]
async fn since_and_until_take_unix_seconds_and_the_command_lines_forms() {
    let clock = Arc::new(ManualClock::at(UnixTime(T)));
    let (addr, store, _dir) = start_with_store(Arc::clone(&clock), Duration::from_secs(600)).await;
    seed(&store).await;
    clock.advance(3600);
    let count = |path: String| async move {
        let (status, page) = api(addr, "GET", &path, TOKEN, None).await;
        assert_eq!(status, 200, "{path}: {page}");
        page["events"].as_array().unwrap().len()
    };
    // `T` is 2027-01-15T08:00:00Z; the clock reads an hour later.
    let (at_t, after_t) = (format!("since={T}"), format!("since={}", T + 1));
    let cases = [
        ("since=1h", 3),
        ("since=59m", 0),
        ("since=1h1m&until=59m", 3),
        ("since=2027-01-15", 3),
        ("since=2027-01-16", 0),
        ("until=2027-01-15T08:00:00Z", 0),
        ("since=2027-01-15T09:00:00%2B01:00", 3),
        (at_t.as_str(), 3),
        (after_t.as_str(), 0),
    ];
    for (query, expected) in cases {
        assert_eq!(count(format!("/admin/v1/events?{query}")).await, expected, "{query}");
    }
    let (status, stats) = api(addr, "GET", "/admin/v1/stats?since=2h", TOKEN, None).await;
    assert_eq!((status, &stats[0]["receipts"]), (200, &json!(3)), "{stats}");
    let (status, body) = api(addr, "POST", "/admin/v1/replay", TOKEN, Some(json!({ "since": "30m" }))).await;
    assert_eq!((status, body), (200, json!({ "replayed": 0 })), "nothing arrived in the last half hour");
    let (status, body) = api(addr, "POST", "/admin/v1/replay", TOKEN, Some(json!({ "since": "2h" }))).await;
    assert_eq!((status, body), (200, json!({ "replayed": 1 })), "the dead job");
    let (status, log) = api(addr, "GET", "/admin/v1/audit?since=1m", TOKEN, None).await;
    assert_eq!((status, log.as_array().unwrap().len()), (200, 2));
}

#[tokio::test]
async fn a_change_to_an_unknown_event_or_destination_is_404_and_not_audited() {
    let clock = Arc::new(ManualClock::at(UnixTime(T)));
    let (addr, store, _dir) = start_with_store(clock, Duration::from_secs(600)).await;
    seed(&store).await;
    for path in [
        "/admin/v1/destinations/nowhere/enable",
        "/admin/v1/events/src/unknown/replay",
        "/admin/v1/events/src/unknown/replay?to=app",
        "/admin/v1/events/other/ok/retry",
    ] {
        let (status, body) = api(addr, "POST", path, TOKEN, None).await;
        assert_eq!((status, &body["error"]), (404, &json!("not_found")), "{path}: {body}");
    }
    assert_eq!(api(addr, "GET", "/admin/v1/audit", TOKEN, None).await.1, json!([]), "nothing was recorded");
    let (status, body) = api(addr, "POST", "/admin/v1/destinations/gone/enable", TOKEN, None).await;
    assert_eq!((status, body), (200, json!({ "was_disabled": true })), "a destination the store knows");
}

#[tokio::test]
async fn the_openapi_document_defines_what_it_references_and_documents_the_refusals() {
    let (addr, _dir) = start_admin(Arc::new(ManualClock::at(UnixTime(T))), Duration::from_secs(600)).await;
    let (status, doc) = api(addr, "GET", "/admin/v1/openapi.json", "", None).await;
    assert_eq!(status, 200);
    let text = doc.to_string();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for reference in text.split("\"#/components/schemas/").skip(1) {
        let name = reference.split('"').next().unwrap();
        assert!(schemas.contains_key(name), "{name} is referenced and not defined");
    }
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    assert_eq!(doc["security"], json!([{ "bearer": [] }]));
    let param = |path: &str, name: &str| {
        let params = doc["paths"][path]["get"]["parameters"].as_array().unwrap();
        params.iter().find(|p| p["name"] == name).unwrap()["schema"].clone()
    };
    let spellings = |schema: Value| {
        schema["enum"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    assert_eq!(
        spellings(param("/admin/v1/events", "state")),
        ["pending", "running", "succeeded", "retrying", "dead", "superseded", "unmatched"]
    );
    let actions: Vec<String> = idemgate_store::audit::Action::ALL.map(|a| a.as_str().to_owned()).into();
    assert_eq!(spellings(param("/admin/v1/audit", "action")), actions);
    assert_eq!(actions[..4], ["replay", "replay_to", "retry", "enable"]);
    assert!(actions.contains(&"app_token_issue".to_owned()), "the outbound API's actions: {actions:?}");
    assert_eq!(spellings(param("/admin/v1/destinations/{name}/series", "window")), ["hour", "day"]);
    let replay = &doc["paths"]["/admin/v1/events/{source}/{identity}/replay"]["post"];
    let replay_state = replay["parameters"].as_array().unwrap().iter().find(|p| p["name"] == "state").unwrap();
    assert_eq!(spellings(replay_state["schema"].clone()), ["dead", "superseded", "succeeded", "unmatched"]);
    for (path, operations) in doc["paths"].as_object().unwrap() {
        for (method, operation) in operations.as_object().unwrap() {
            let responses = operation["responses"].as_object().unwrap();
            let mut expected = vec!["200", "400", "401", "503"];
            if method == "post" {
                expected.push("403");
            }
            for status in expected {
                assert!(responses.contains_key(status), "{method} {path} documents {status}");
                let body = &responses[status]["content"]["application/json"]["schema"]["$ref"];
                assert!(status == "200" || body == "#/components/schemas/ErrorBody", "{method} {path} {status}");
            }
        }
    }
    let bodies = ["/admin/v1/replay", "/admin/v1/retry"].map(|path| doc["paths"][path]["post"]["responses"].clone());
    assert!(bodies.iter().all(|r| r.get("415").is_some() && r.get("413").is_some()), "{bodies:?}");
}
