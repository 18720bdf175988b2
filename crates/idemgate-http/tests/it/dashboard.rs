//! The dashboard's pages over real HTTP on 127.0.0.1, on a real SQLite store filled through
//! the store's own API and an injected clock: the event search and its pages, one event's
//! page with its replay form, the destinations' charts and the rejections page.

use std::{sync::Arc, time::Duration};

use idemgate_clock::{Clock, ManualClock, UnixTime};
use idemgate_core::{
    BodyHash, Identity, Outcome, ReceiptKey, Secret, SourceName,
    retry::{DeadReason, Decision},
};
use idemgate_http::{
    RejectionCounts, ServeOptions,
    console::{self, AdminState, session::Sessions},
    serve,
};
use idemgate_store::{
    ReceiveRequest, SqliteStore, Store, StoreOptions, inbox::IncomingEvent, jobs::AttemptRecord,
    maintenance::Retention, views::EventFilter,
};
use serde_json::json;

use crate::exchange;

const TOKEN: &str = "dashboard-pages-token";
const T0: UnixTime = UnixTime(1_800_000_000);

struct Admin {
    addr: std::net::SocketAddr,
    store: Store,
    cookie: String,
    csrf: String,
    rejections: Arc<RejectionCounts>,
    _dir: tempfile::TempDir,
}

impl Admin {
    async fn start(clock: Arc<ManualClock>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store: Store =
            Arc::new(SqliteStore::open(&dir.path().join("d.sqlite3"), StoreOptions::default()).unwrap()).into();
        let rejections = Arc::new(RejectionCounts::default());
        let state = AdminState {
            store: store.clone(),
            tokens: idemgate_http::current::AdminTokens::new(vec![idemgate_http::access::NamedToken {
                name: "admin".to_owned(),
                role: idemgate_http::access::Role::Operate,
                secret: Secret::new(TOKEN.as_bytes().to_vec()),
            }]),
            rejections: Arc::clone(&rejections),
            sessions: Sessions::new(store.clone(), Duration::from_secs(7 * 86_400)),
            tls: false,
            body_timeout: Duration::from_secs(5),
            clock,
            destinations: idemgate_http::current::DestinationNames::default().with_transforms(
                [("app".to_owned(), idemgate_jq::Program::compile("{tag: .a}").unwrap())].into_iter().collect(),
            ),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(serve(listener, console::router(state), ServeOptions::default(), std::future::pending()));
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
        let cookie = answer.lines().find_map(|l| l.strip_prefix("set-cookie: ")).unwrap().split(';').next().unwrap();
        let mut admin = Self { addr, store, cookie: cookie.to_owned(), csrf: String::new(), rejections, _dir: dir };
        let overview = admin.get("/admin/").await;
        admin.csrf = overview.split_once("name=\"csrf\" value=\"").unwrap().1.split('"').next().unwrap().to_owned();
        admin
    }

    /// The admin API's JSON answer to `GET path`.
    async fn api(&self, path: &str) -> (u16, serde_json::Value) {
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
        let answer = exchange(self.addr, request).await;
        let body = answer.split_once("\r\n\r\n").unwrap().1;
        (status(&answer), serde_json::from_str(body).unwrap_or(serde_json::Value::Null))
    }

    async fn get(&self, path: &str) -> String {
        let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nCookie: {}\r\n\r\n", self.cookie);
        exchange(self.addr, request).await
    }

    /// A form posted from the dashboard's own page.
    async fn post(&self, path: &str, form: &str) -> String {
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nCookie: {}\r\nOrigin: http://{addr}\r\n\
             Sec-Fetch-Site: same-origin\r\nContent-Type: application/x-www-form-urlencoded\r\n\
             Content-Length: {}\r\n\r\n{form}",
            self.cookie,
            form.len(),
            addr = self.addr,
        );
        exchange(self.addr, request).await
    }

    async fn accept(&self, identity: &str, body: &str, destinations: &[&str], at: UnixTime) {
        let key = ReceiptKey { source: SourceName::new("hooks").unwrap(), identity: Identity::new(identity).unwrap() };
        let request =
            ReceiveRequest { key, body_hash: BodyHash::of(body.as_bytes()), received_at: at, dedupe_body: false };
        let event = IncomingEvent {
            result: json!({ "event": identity }),
            outgoing_id: None,
            event_type: Some("order.created".to_owned()),
            content_type: Some("application/json".to_owned()),
            headers: vec![("x-trace".to_owned(), "t<1>".to_owned())],
            body: bytes::Bytes::copy_from_slice(body.as_bytes()),
            ordering: None,
            destinations: destinations.iter().map(|d| (*d).to_owned()).collect::<Vec<_>>().into(),
            dead: Vec::new(),
            refusal: None,
        };
        assert!(matches!(self.store.accept(request, event).await, Outcome::Applied { .. }));
    }

    async fn id_of(&self, identity: &str) -> i64 {
        let filter = EventFilter { identity_prefix: Some(identity.to_owned()), limit: 1, ..EventFilter::default() };
        self.store.list_events(filter).await.unwrap()[0].id
    }
}

fn status(answer: &str) -> u16 {
    answer.split(' ').nth(1).unwrap().parse().unwrap()
}

fn href(page: &str, id: &str) -> String {
    let tag = page.split_once(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id} in {page}")).1;
    tag.split_once("href=\"").unwrap().1.split('"').next().unwrap().replace("&amp;", "&")
}

/// One event dead at its destination after a `500`, at `T0 + 10`.
async fn with_a_dead_event(admin: &Admin) {
    admin.accept("msg_1", r#"{"a":"<b>","n":12345678901234567890123}"#, &["app"], T0).await;
    let job = admin.store.claim_jobs(T0.0 * 1000, Duration::from_secs(30), 1, Vec::new()).await.unwrap().remove(0);
    let attempt = AttemptRecord {
        started_at: UnixTime(T0.0 + 10),
        latency: Duration::from_millis(42),
        status: Some(400),
        outcome: idemgate_core::retry::Attempted::Failed,
        error: None,
        response_prefix: Some("<oops>".to_owned()),
    };
    admin.store.complete_job(job, attempt, Decision::Dead(DeadReason::FinalStatus(400)), T0.0 * 1000).await.unwrap();
}

#[tokio::test]
async fn the_event_search_filters_and_pages_through_the_events() {
    let clock = Arc::new(ManualClock::at(UnixTime(T0.0 + 600)));
    let admin = Admin::start(Arc::clone(&clock)).await;
    with_a_dead_event(&admin).await;
    for n in 0..55 {
        admin.accept(&format!("bulk_{n:02}"), "{}", &[], UnixTime(T0.0 + 100 + n)).await;
    }

    let signed_out =
        exchange(admin.addr, "GET /admin/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_owned()).await;
    assert_eq!(status(&signed_out), 303, "{signed_out}");

    let dead = admin.get("/admin/events?state=dead&source=hooks").await;
    assert_eq!(status(&dead), 200, "{dead}");
    let id = admin.id_of("msg_1").await;
    assert!(dead.contains(&format!("<a href=\"/admin/events/{id}\">msg_1</a>")), "{dead}");
    assert!(!dead.contains("bulk_"), "{dead}");
    assert!(dead.contains("<option value=\"dead\" selected>"), "the form keeps the search: {dead}");
    assert!(dead.contains("<label for=\"q-identity\">"), "every field has its label: {dead}");

    let first = admin.get("/admin/events?identity=bulk_").await;
    assert_eq!(first.matches("<tr data-id=").count(), 50, "a page of 50");
    assert!(first.contains(">bulk_54</a>") && !first.contains(">bulk_04</a>"), "newest first");
    assert!(!first.contains("id=\"newer\""), "the first page has no newer one");
    let second = admin.get(&href(&first, "older")).await;
    assert_eq!(second.matches("<tr data-id=").count(), 5, "{second}");
    assert!(second.contains(">bulk_04</a>") && second.contains(">bulk_00</a>"));
    assert!(!second.contains("id=\"older\""), "the last page has no older one");
    let back = admin.get(&href(&second, "newer")).await;
    assert_eq!(back.matches("<tr data-id=").count(), 50);
    assert!(back.contains(">bulk_54</a>"), "newer leads back to the first page");

    let recent = admin.get("/admin/events?since=1m").await;
    assert!(recent.contains("id=\"no-events\""), "nothing arrived in the last minute: {recent}");
    let wrong = admin.get("/admin/events?since=yesterday").await;
    assert_eq!(status(&wrong), 200);
    assert!(wrong.contains("role=\"alert\" id=\"search-problem\">since: "), "{wrong}");
    // The field at fault says so itself, tied to its error and marked invalid; the others do not.
    assert!(wrong.contains("<div class=\"field invalid\"><label for=\"q-since\">Received since</label>"), "{wrong}");
    assert!(
        wrong.contains(
            "aria-invalid=\"true\" aria-describedby=\"q-since-hint q-since-error\" type=\"text\" value=\"yesterday\">"
        ),
        "{wrong}"
    );
    assert_eq!(wrong.matches("aria-invalid").count(), 1, "{wrong}");
}

#[tokio::test]
async fn the_event_page_shows_the_receipt_headers_payload_and_attempts_escaped_and_replays() {
    let clock = Arc::new(ManualClock::at(UnixTime(T0.0 + 600)));
    let admin = Admin::start(Arc::clone(&clock)).await;
    with_a_dead_event(&admin).await;
    let id = admin.id_of("msg_1").await;

    let page = admin.get(&format!("/admin/events/{id}")).await;
    assert_eq!(status(&page), 200, "{page}");
    assert!(page.contains(&BodyHash::of(br#"{"a":"<b>","n":12345678901234567890123}"#).to_hex()), "{page}");
    assert!(
        page.contains("<td data-label=\"name\">x-trace</td><td data-label=\"value\">t&lt;1&gt;</td>"),
        "headers as stored, escaped: {page}"
    );
    assert!(
        page.contains("{\n  &quot;a&quot;: &quot;&lt;b&gt;&quot;,\n  &quot;n&quot;: 12345678901234567890123\n}"),
        "the payload re-indented, escaped, every digit kept: {page}"
    );
    assert!(!page.contains("<b>") && !page.contains("<oops>"), "nothing the sender or destination sent is markup");
    assert!(
        page.contains("<h3>Sent to app (its transform <code>{tag: .a}</code>)</h3><pre class=\"sent\">{\n  &quot;tag&quot;: &quot;&lt;b&gt;&quot;\n}</pre>"),
        "the body its destination gets: {page}"
    );
    assert!(
        page.contains("<td class=\"state job-dead\" data-label=\"state\"><span class=\"badge bad\">dead</span></td>"),
        "{page}"
    );
    assert!(
        page.contains(
            "<td data-label=\"duration\">42 ms</td><td class=\"status\" data-label=\"status\">400</td>\
         <td data-label=\"response\"><code>&lt;oops&gt;</code></td>"
        ),
        "{page}"
    );
    assert!(page.contains("2027-01-15T08:00:10Z (9 min ago)"), "the attempt's time, as of the clock: {page}");

    let refused = admin.post(&format!("/admin/events/{id}/replay"), "state=dead").await;
    assert_eq!(status(&refused), 403, "no CSRF token: {refused}");
    let odd = admin.post(&format!("/admin/events/{id}/replay"), &format!("csrf={}&state=running", admin.csrf)).await;
    assert_eq!(status(&odd), 400, "{odd}");
    let replayed = admin.post(&format!("/admin/events/{id}/replay"), &format!("csrf={}&state=dead", admin.csrf)).await;
    assert_eq!(status(&replayed), 303, "{replayed}");
    assert!(replayed.contains(&format!("location: /admin/events/{id}?replayed=1")), "{replayed}");
    let after = admin.get(&format!("/admin/events/{id}?replayed=1")).await;
    assert!(after.contains("Replayed 1 job(s)."), "{after}");
    assert!(
        after.contains(
            "<td class=\"state job-pending\" data-label=\"state\"><span class=\"badge neutral\">pending</span></td>"
        ),
        "{after}"
    );
    let retried = admin.post(&format!("/admin/events/{id}/retry"), &format!("csrf={}", admin.csrf)).await;
    assert!(retried.contains(&format!("location: /admin/events/{id}?retried=")), "{retried}");

    admin.accept("msg_2", "{}", &[], T0).await;
    let unmatched = admin.id_of("msg_2").await;
    assert!(admin.get(&format!("/admin/events/{unmatched}")).await.contains("id=\"unmatched\""));
    let keep = Retention {
        source: "hooks".to_owned(),
        receipts: Duration::from_secs(86_400),
        payloads: Duration::from_secs(1),
    };
    assert_eq!(admin.store.purge(clock.now(), vec![keep]).await.unwrap().payloads, 1, "only the finished event's");
    let purged = admin.get(&format!("/admin/events/{unmatched}")).await;
    assert!(purged.contains("Payload purged by retention"), "{purged}");
    assert!(admin.get(&format!("/admin/events/{id}")).await.contains("id=\"payload\""), "the pending one keeps it");
    assert_eq!(status(&admin.get("/admin/events/999999").await), 404);
    assert_eq!(status(&admin.get("/admin/events/abc").await), 404);
}

#[tokio::test]
async fn the_destinations_page_draws_the_last_hour_and_day_and_the_queue() {
    let clock = Arc::new(ManualClock::at(UnixTime(T0.0 + 600)));
    let admin = Admin::start(Arc::clone(&clock)).await;
    with_a_dead_event(&admin).await;
    admin.accept("msg_waiting", "{}", &["app"], UnixTime(T0.0 + 20)).await;

    let page = admin.get("/admin/destinations").await;
    assert_eq!(status(&page), 200, "{page}");
    let row = page.split_once("<tr data-destination=\"app\">").unwrap().1.split("</tr>").next().unwrap();
    assert!(row.contains("<td class=\"state\" data-label=\"state\">enabled</td>"), "{row}");
    assert!(row.contains("<td class=\"depth\" data-label=\"waiting\">1</td>"), "the waiting job: {row}");
    assert!(row.contains("2027-01-15T08:00:20Z (9 min ago)"), "since when the oldest waits: {row}");
    assert!(row.contains("1 attempts, 0% succeeded, mean 42 ms"), "{row}");
    assert_eq!(page.matches("<svg").count(), 4, "attempts and latency, hour and day");
    assert_eq!(page.matches("<rect class=\"bad\"").count(), 2, "the one failure, in the hour and the day");
    assert!(page.contains("aria-label=\"app attempts last hour, per minute\""), "{page}");

    clock.advance(3600);
    let later = admin.get("/admin/destinations").await;
    assert_eq!(later.matches("<rect class=\"bad\"").count(), 1, "an hour on, only the day's chart has it");
}

#[tokio::test]
async fn the_rejections_page_lists_rejections_and_conflicts() {
    let admin = Admin::start(Arc::new(ManualClock::at(T0))).await;
    admin.accept("msg_c", "{}", &[], T0).await;
    let key = ReceiptKey { source: SourceName::new("hooks").unwrap(), identity: Identity::new("msg_c").unwrap() };
    let other = ReceiveRequest { key, body_hash: BodyHash::of(b"{\"x\":1}"), received_at: T0, dedupe_body: false };
    let event = IncomingEvent {
        result: json!({}),
        outgoing_id: None,
        event_type: None,
        content_type: None,
        headers: Vec::new(),
        body: bytes::Bytes::from_static(b"{\"x\":1}"),
        ordering: None,
        destinations: Vec::<String>::new().into(),
        dead: Vec::new(),
        refusal: None,
    };
    assert_eq!(admin.store.accept(other, event).await, Outcome::Conflict);
    let page = admin.get("/admin/rejections").await;
    assert_eq!(status(&page), 200, "{page}");
    assert!(page.contains("id=\"no-rejections\""), "{page}");
    assert!(page.contains("<p id=\"no-recent-rejections\" class=\"empty\">None in the last day.</p>"), "{page}");
    assert!(!page.contains("id=\"no-recent-conflicts\""), "the conflict is listed: {page}");
    assert_eq!(
        page.matches("<rect class=\"bad\"").count(),
        2,
        "only the conflict, in the hour's and the day's chart: {page}"
    );

    let hooks = SourceName::new("hooks").unwrap();
    admin.rejections.record(&hooks, "signature_mismatch", UnixTime(T0.0 - 7200));
    admin.rejections.record(&hooks, "signature_mismatch", UnixTime(T0.0 - 30));
    admin.rejections.record(&hooks, "syntax", UnixTime(T0.0 - 30));
    let page = admin.get("/admin/rejections").await;
    assert!(
        page.contains(
            "<tr><td data-label=\"reason\">signature_mismatch</td><td data-label=\"last hour\">1</td>\
         <td data-label=\"last day\">2</td></tr>"
        ),
        "hour and day: {page}"
    );
    assert!(page.contains("<tr><td data-label=\"reason\">syntax</td><td data-label=\"last hour\">1</td><td data-label=\"last day\">1</td></tr>"), "{page}");
    assert!(
        page.contains(
            "<tr><td data-label=\"source\">hooks</td><td data-label=\"reason\">signature_mismatch</td>\
         <td class=\"count\" data-label=\"count\">2</td></tr>"
        ),
        "{page}"
    );
    assert_eq!(
        page.matches("<rect class=\"bad\"").count(),
        5,
        "rejections: one bar in the hour, two in the day; the conflict's two: {page}"
    );
    let id = admin.id_of("msg_c").await;
    let row = format!(
        "<tr><td data-label=\"source\">hooks</td><td class=\"event\" data-label=\"identity\">\
         <a href=\"/admin/events/{id}\">msg_c</a></td><td data-label=\"times seen\">1</td>"
    );
    assert!(page.contains(&row), "the conflict links to its event: {page}");
    assert!(page.contains("<table id=\"conflicts-by-source\"><tr><th>source</th><th>last hour</th><th>last day</th></tr><tr><td data-label=\"source\">hooks</td><td data-label=\"last hour\">1</td><td data-label=\"last day\">1</td></tr>"), "{page}");
    let (_, conflicts) = admin.api("/admin/v1/conflicts/series?window=day").await;
    assert_eq!(conflicts, json!([{"source": "hooks", "start": T0.0 - 86_400 + 48 * 1800, "conflicts": 1}]));
}

#[tokio::test]
async fn the_admin_api_answers_the_same_views() {
    let clock = Arc::new(ManualClock::at(UnixTime(T0.0 + 600)));
    let admin = Admin::start(Arc::clone(&clock)).await;
    with_a_dead_event(&admin).await;

    let (code, series) = admin.api("/admin/v1/destinations/app/series").await;
    assert_eq!(code, 200, "{series}");
    assert_eq!(series["width"], 60);
    assert_eq!(series["since"], T0.0 + 600 - 3600);
    // The attempt at T0 + 10 falls in the minute from T0 (since is T0 - 3000).
    let bucket = json!({"start": T0.0, "succeeded": 0, "failed": 1, "mean_latency_ms": 42, "max_latency_ms": 42});
    assert_eq!(series["buckets"], json!([bucket]), "{series}");
    let (_, day) = admin.api("/admin/v1/destinations/app/series?window=day").await;
    assert_eq!((day["width"].as_i64(), day["buckets"].as_array().map(Vec::len)), (Some(1800), Some(1)));
    let (_, none) = admin.api("/admin/v1/destinations/elsewhere/series").await;
    assert_eq!(none["buckets"], json!([]));
    assert_eq!(admin.api("/admin/v1/destinations/app/series?window=week").await.0, 400);

    let (code, payload) = admin.api("/admin/v1/events/hooks/msg_1/payload").await;
    assert_eq!(code, 200, "{payload}");
    assert_eq!(payload["headers"], json!([{"name": "x-trace", "value": "t<1>"}]));
    assert_eq!(payload["body"], r#"{"a":"<b>","n":12345678901234567890123}"#);
    assert_eq!((payload["purged"].as_bool(), payload["id"].as_i64()), (Some(false), Some(admin.id_of("msg_1").await)));
    assert_eq!(admin.api("/admin/v1/events/hooks/nothing/payload").await.0, 404);

    admin.rejections.record(&SourceName::new("hooks").unwrap(), "syntax", UnixTime(T0.0 + 590));
    let (_, rejections) = admin.api("/admin/v1/rejections/series").await;
    assert_eq!(rejections, json!([{"start": T0.0 + 540, "reason": "syntax", "count": 1}]));
}

#[tokio::test]
async fn every_page_loads_nothing_from_elsewhere_and_runs_no_script() {
    let admin = Admin::start(Arc::new(ManualClock::at(UnixTime(T0.0 + 600)))).await;
    with_a_dead_event(&admin).await;
    let id = admin.id_of("msg_1").await;
    for path in ["/admin/", "/admin/events", &format!("/admin/events/{id}"), "/admin/destinations", "/admin/rejections"]
    {
        let page = admin.get(path).await;
        assert_eq!(status(&page), 200, "{path}: {page}");
        let body = page.split_once("\r\n\r\n").unwrap().1.to_ascii_lowercase();
        assert!(!body.contains("<script") && !body.contains(" src=") && !body.contains("url("), "{path}: {body}");
        for link in body.split("href=\"").skip(1) {
            assert!(link.starts_with('/') || link.starts_with('#'), "{path} links elsewhere: {link:.60}");
        }
        assert!(body.contains("<meta name=\"viewport\""), "{path}");
        for (at, _) in body.match_indices("<input") {
            let tag = &body[at..at + body[at..].find('>').unwrap()];
            let hidden = tag.contains("type=\"hidden\"");
            let labelled = tag
                .split("id=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .is_some_and(|id| body.contains(&format!("<label for=\"{id}\"")));
            assert!(hidden || labelled, "{path}: an input without a label: {tag}");
        }
    }
}

/// A conflicting repeat of `identity` (other bytes) at `at`.
async fn conflict(admin: &Admin, identity: &str, body: &[u8], at: UnixTime) {
    let key = ReceiptKey { source: SourceName::new("hooks").unwrap(), identity: Identity::new(identity).unwrap() };
    let other = ReceiveRequest { key, body_hash: BodyHash::of(body), received_at: at, dedupe_body: false };
    let event = IncomingEvent {
        result: json!({}),
        outgoing_id: None,
        event_type: None,
        content_type: None,
        headers: Vec::new(),
        body: bytes::Bytes::copy_from_slice(body),
        ordering: None,
        destinations: Vec::<String>::new().into(),
        dead: Vec::new(),
        refusal: None,
    };
    assert_eq!(admin.store.accept(other, event).await, Outcome::Conflict);
}

#[tokio::test]
async fn a_wrong_token_answers_the_sign_in_form_again_with_the_error_and_never_the_token() {
    let admin = Admin::start(Arc::new(ManualClock::at(T0))).await;
    let form = "token=wrong-secret-typed-here";
    let answer = exchange(
        admin.addr,
        format!(
            "POST /admin/login HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
            form.len()
        ),
    )
    .await;
    assert_eq!(status(&answer), 401, "{answer}");
    assert!(answer.contains("<p id=\"sign-in-error\" class=\"bad\" role=\"alert\">Wrong token.</p>"), "{answer}");
    assert!(answer.contains("<form method=\"post\" action=\"/admin/login\">"), "the form again: {answer}");
    assert!(
        answer.contains(
            "type=\"password\" autocomplete=\"off\" aria-invalid=\"true\" aria-describedby=\"sign-in-error\" autofocus>"
        ),
        "the field is focused and tied to the error: {answer}"
    );
    assert!(answer.contains("<button id=\"sign-in\" type=\"submit\">"), "{answer}");
    assert!(!answer.contains("wrong-secret"), "the token typed is not echoed: {answer}");
    assert!(!answer.contains("set-cookie"), "no session: {answer}");
}

#[tokio::test]
async fn conflicts_show_on_their_event_link_from_the_overview_and_list_in_the_api() {
    let clock = Arc::new(ManualClock::at(UnixTime(T0.0 + 600)));
    let admin = Admin::start(Arc::clone(&clock)).await;
    admin.accept("msg_c", "{}", &[], T0).await;
    admin.accept("msg_quiet", "{}", &[], T0).await;
    conflict(&admin, "msg_c", b"{\"x\":\"secret-payload\"}", UnixTime(T0.0 + 10)).await;
    conflict(&admin, "msg_c", b"{\"x\":\"secret-payload\"}", UnixTime(T0.0 + 20)).await;
    conflict(&admin, "msg_c", b"{\"y\":2}", UnixTime(T0.0 + 30)).await;
    let id = admin.id_of("msg_c").await;

    let page = admin.get(&format!("/admin/events/{id}")).await;
    assert_eq!(status(&page), 200, "{page}");
    assert!(page.contains("3 conflicting deliveries (other bytes, answered 409), 2 other bodies"), "{page}");
    let hash = BodyHash::of(b"{\"x\":\"secret-payload\"}").to_hex();
    assert!(
        page.contains(&format!(
            "<td data-label=\"other body SHA-256\"><code>{hash}</code></td><td data-label=\"deliveries\">2</td>"
        )),
        "{page}"
    );
    assert!(page.contains("2027-01-15T08:00:10Z (9 min ago)") && page.contains("2027-01-15T08:00:20Z"), "{page}");
    assert!(!page.contains("secret-payload"), "never the conflicting bytes: {page}");
    let quiet = admin.get(&format!("/admin/events/{}", admin.id_of("msg_quiet").await)).await;
    assert!(quiet.contains("id=\"no-conflicts\""), "{quiet}");

    let overview = admin.get("/admin/").await;
    assert!(
        overview.contains(&format!("<a href=\"/admin/events/{id}\">msg_c</a>")),
        "a row links to its event: {overview}"
    );
    let rejections = admin.get("/admin/rejections").await;
    assert!(rejections.contains(&format!("<a href=\"/admin/events/{id}\">msg_c</a>")), "{rejections}");

    let (code, listed) = admin.api("/admin/v1/conflicts").await;
    assert_eq!(code, 200, "{listed}");
    let first = json!({"source": "hooks", "identity": "msg_c", "event_id": id,
        "body_sha256": BodyHash::of(b"{\"y\":2}").to_hex(), "first_seen_at": T0.0 + 30, "last_seen_at": T0.0 + 30,
        "seen_count": 1});
    assert_eq!(listed["conflicts"][0], first, "newest first seen first: {listed}");
    assert_eq!(listed["conflicts"][1]["seen_count"], 2);
    assert_eq!(listed["next_after"], serde_json::Value::Null);
    let (_, page1) = admin.api("/admin/v1/conflicts?limit=1").await;
    let after = page1["next_after"].as_str().unwrap().to_owned();
    let (_, page2) = admin.api(&format!("/admin/v1/conflicts?limit=1&after={after}")).await;
    assert_eq!(page2["conflicts"][0]["body_sha256"], hash, "{page2}");
    let (_, page3) =
        admin.api(&format!("/admin/v1/conflicts?limit=1&after={}", page2["next_after"].as_str().unwrap())).await;
    assert_eq!(page3["conflicts"], json!([]), "{page3}");
    let (_, late) = admin.api(&format!("/admin/v1/conflicts?source=hooks&since={}", T0.0 + 25)).await;
    assert_eq!(late["conflicts"].as_array().unwrap().len(), 1, "{late}");
    let (_, early) = admin.api(&format!("/admin/v1/conflicts?until={}", T0.0 + 25)).await;
    assert_eq!(early["conflicts"][0]["body_sha256"], hash, "{early}");
    assert_eq!(admin.api("/admin/v1/conflicts?source=other").await.1["conflicts"], json!([]));
    assert_eq!(admin.api("/admin/v1/conflicts?after=nonsense").await.0, 400);

    let (_, detail) = admin.api("/admin/v1/events/hooks/msg_c").await;
    assert_eq!(detail["conflicts"].as_array().unwrap().len(), 2, "{detail}");
    let (_, doc) = admin.api("/admin/v1/openapi.json").await;
    let path = &doc["paths"]["/admin/v1/conflicts"]["get"];
    assert_eq!(
        path["responses"]["200"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ConflictsPage",
        "{path}"
    );
    let names: Vec<&str> = path["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["source", "identity", "since", "until", "after", "limit"]);
    for schema in ["ConflictsPage", "ConflictView"] {
        assert!(doc["components"]["schemas"][schema].is_object(), "{schema} is described");
    }
}

#[tokio::test]
async fn empty_sections_say_so_and_buttons_show_only_with_something_to_act_on() {
    let clock = Arc::new(ManualClock::at(UnixTime(T0.0 + 600)));
    let admin = Admin::start(Arc::clone(&clock)).await;
    let empty = admin.get("/admin/").await;
    for (id, words) in [
        ("no-sources", "No event received yet."),
        ("no-dead", "No dead jobs."),
        ("no-unmatched", "No unmatched events."),
        ("no-conflicts", "No conflicts recorded."),
        ("no-destinations", "No destination has jobs yet."),
        ("no-rejections", "No rejections since the process started."),
    ] {
        assert!(empty.contains(&format!("<p id=\"{id}\" class=\"empty\">{words}</p>")), "{id}: {empty}");
    }
    assert!(!empty.contains("<table"), "no empty tables: {empty}");
    let rejections = admin.get("/admin/rejections").await;
    for id in ["no-recent-rejections", "no-rejections", "no-recent-conflicts", "no-conflicts"] {
        assert!(rejections.contains(&format!("<p id=\"{id}\" class=\"empty\">")), "{id}: {rejections}");
    }

    with_a_dead_event(&admin).await;
    let dead = admin.get("/admin/").await;
    let row = dead.split_once("<tr data-destination=\"app\">").unwrap().1.split("</tr>").next().unwrap();
    assert!(row.contains("Replay all 1 dead job(s) of app"), "{row}");
    assert!(!row.contains("Retry waiting jobs now"), "nothing waits: {row}");
    let id = admin.id_of("msg_1").await;
    assert!(!admin.get(&format!("/admin/events/{id}")).await.contains("retry-submit"), "nothing of it waits");

    admin.accept("msg_waiting", "{}", &["app"], UnixTime(T0.0 + 20)).await;
    let waiting = admin.get("/admin/").await;
    assert!(waiting.contains("Retry waiting jobs now"), "{waiting}");
    let waiting_id = admin.id_of("msg_waiting").await;
    assert!(admin.get(&format!("/admin/events/{waiting_id}")).await.contains("retry-submit"));
    let destinations = admin.get("/admin/destinations").await;
    assert!(
        destinations.contains("Replay all 1 dead job(s) of app") && destinations.contains("Retry waiting jobs now")
    );
}

#[tokio::test]
async fn replay_all_dead_jobs_of_a_destination_needs_the_csrf_token_and_says_what_it_did() {
    let clock = Arc::new(ManualClock::at(UnixTime(T0.0 + 600)));
    let admin = Admin::start(Arc::clone(&clock)).await;
    with_a_dead_event(&admin).await;
    let refused = admin.post("/admin/replay-dead", "destination=app").await;
    assert_eq!(status(&refused), 403, "no CSRF token: {refused}");
    assert!(admin.get("/admin/").await.contains("Replay all 1 dead job(s) of app"), "nothing replayed");

    let other = admin.post("/admin/replay-dead", &format!("destination=elsewhere&csrf={}", admin.csrf)).await;
    assert!(other.contains("location: /admin/?replayed=0&destination=elsewhere"), "{other}");
    let done = admin.post("/admin/replay-dead", &format!("destination=app&csrf={}", admin.csrf)).await;
    assert_eq!(status(&done), 303, "{done}");
    assert!(done.contains("location: /admin/?replayed=1&destination=app"), "{done}");
    let page = admin.get("/admin/?replayed=1&destination=%3Capp%3E").await;
    assert!(page.contains("<p role=\"status\" id=\"done\">Replayed 1 dead job(s) of &lt;app&gt;.</p>"), "{page}");
    let overview = admin.get("/admin/").await;
    assert!(overview.contains("id=\"no-dead\"") && !overview.contains("Replay all"), "{overview}");
    let (_, audit) = admin.api("/admin/v1/audit").await;
    assert_eq!(audit[0]["action"], "replay", "{audit}");
    assert_eq!(audit[0]["affected"], 1, "{audit}");
    assert!(audit[0]["target"].as_str().unwrap().contains("destination=app"), "{audit}");
}

#[tokio::test]
async fn the_latency_charts_scale_label_is_never_cut() {
    let clock = Arc::new(ManualClock::at(UnixTime(T0.0 + 600)));
    let admin = Admin::start(Arc::clone(&clock)).await;
    admin.accept("msg_slow", "{}", &["app"], T0).await;
    let job = admin.store.claim_jobs(T0.0 * 1000, Duration::from_secs(30), 1, Vec::new()).await.unwrap().remove(0);
    let attempt = AttemptRecord {
        started_at: UnixTime(T0.0 + 10),
        latency: Duration::from_millis(1991),
        status: Some(200),
        error: None,
        response_prefix: None,
        outcome: idemgate_core::retry::Attempted::Succeeded,
    };
    admin.store.complete_job(job, attempt, Decision::Succeeded, T0.0 * 1000).await.unwrap();
    let page = admin.get("/admin/destinations").await;
    let chart = page.split("<figure class=\"chart latency\">").nth(1).unwrap();
    let label_end: u32 = chart.split("<text x=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
    assert!(chart.contains(">1991 ms</text>"), "{chart}");
    assert!(label_end >= 7 * 7, "\"1991 ms\" right-aligned at {label_end} leaves its first digit outside: {chart}");
}
