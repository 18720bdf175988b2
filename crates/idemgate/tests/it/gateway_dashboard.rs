//! The dashboard over real HTTP against the real process: sessions instead of the token in
//! the cookie, sign-out and expiry, and state-changing forms refused unless they come from
//! the dashboard's own origin with the session's CSRF token.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

use idemgate_testkit::{Destination, Step};

use crate::{
    gateway_harness::{Gateway, Setup, Signer, body, forwarding, inbox},
    harness::unix_now,
};

pub const TOKEN: &str = "a-dashboard-token-of-some-length";
const KEY: [u8; 32] = [8; 32];

/// An answer with its head kept as text (the dashboard answers HTML).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn parse(raw: &str) -> Self {
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no head in {raw:?}"));
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        Self { status, headers, body: body.to_owned() }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The session id from `Set-Cookie`.
    pub fn session(&self) -> String {
        let cookie = self.header("set-cookie").unwrap_or_else(|| panic!("no cookie: {self:?}"));
        cookie.split(';').next().unwrap().strip_prefix("idemgate_admin=").unwrap().to_owned()
    }

    /// The CSRF token of the page's forms (empty if it has none).
    pub fn csrf(&self) -> String {
        let token = self.body.split_once("name=\"csrf\" value=\"").and_then(|(_, rest)| rest.split('"').next());
        token.unwrap_or_default().to_owned()
    }
}

/// The bytes of one request; `headers` as written, `Host` and `Content-Length` added.
pub fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, String)], body: &str) -> Vec<u8> {
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(body);
    head.into_bytes()
}

pub fn send(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, String)], body: &str) -> Answer {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.write_all(&request(addr, method, path, headers, body)).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    Answer::parse(&raw)
}

/// What a browser sends with a form posted from the dashboard itself.
fn own(addr: SocketAddr, session: &str) -> Vec<(&'static str, String)> {
    vec![
        ("Cookie", format!("idemgate_admin={session}")),
        ("Origin", format!("http://{addr}")),
        ("Sec-Fetch-Site", "same-origin".to_owned()),
        ("Content-Type", "application/x-www-form-urlencoded".to_owned()),
    ]
}

pub fn sign_in(admin: SocketAddr) -> Answer {
    let form = [("Content-Type", "application/x-www-form-urlencoded".to_owned())];
    let answer = send(admin, "POST", "/admin/login", &form, &format!("token={TOKEN}"));
    assert_eq!(answer.status, 303, "{answer:?}");
    answer
}

pub fn page(admin: SocketAddr, session: &str) -> Answer {
    send(admin, "GET", "/admin/", &[("Cookie", format!("idemgate_admin={session}"))], "")
}

fn signed_in(admin: SocketAddr, session: &str) -> bool {
    let answer = page(admin, session);
    match answer.status {
        200 => true,
        303 if answer.header("location") == Some("/admin/login") => false,
        _ => panic!("unexpected {answer:?}"),
    }
}

fn start(recorder: &Destination, admin_extra: &str) -> (Setup, Gateway, SocketAddr) {
    let sources = forwarding(&Signer::Standard(KEY.to_vec()), recorder, "", "retry_schedule = []");
    let setup = Setup::new(&format!(
        "{sources}[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"env:ADMIN_TOKEN\"\n{admin_extra}\n"
    ));
    let mut gateway = Gateway::start(&setup.config(), &[("ADMIN_TOKEN", TOKEN)]);
    let admin = gateway.admin_addr();
    (setup, gateway, admin)
}

fn job_state(setup: &Setup) -> String {
    inbox(&setup.db()).jobs.first().map(|(_, _, state)| state.clone()).unwrap_or_default()
}

#[test]
fn a_replay_from_another_origin_or_without_the_csrf_token_is_refused_and_replays_nothing() {
    let recorder = Destination::start(&[Step::Status(500)]);
    let (setup, gateway, admin) = start(&recorder, "");
    let event = body("msg_dead", "t");
    let headers = Signer::Standard(KEY.to_vec()).headers("msg_dead", &event, unix_now());
    assert_eq!(gateway.post("hooks", &headers, &event).status(), 202);
    recorder.wait_until("the failing attempt", |r| r.len() == 1);
    for _ in 0..500 {
        if job_state(&setup) == "dead" {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(job_state(&setup), "dead");

    let other = body("msg_dead", "t.other");
    let conflicting = Signer::Standard(KEY.to_vec()).headers("msg_dead", &other, unix_now());
    assert_eq!(gateway.post("hooks", &conflicting, &other).status(), 409);

    let session = sign_in(admin).session();
    let shown = page(admin, &session);
    let conflicts = shown.body.split_once("id=\"conflicts\"").unwrap().1.split("</table>").next().unwrap();
    let datetime = conflicts.split_once("<time datetime=\"").unwrap().1.split('"').next().unwrap();
    assert!(datetime.len() == 20 && datetime.ends_with('Z') && datetime.as_bytes()[10] == b'T', "{conflicts}");
    assert!(conflicts.contains(&format!("\">{datetime} (")), "the text is the same instant: {conflicts}");
    let csrf = shown.csrf();
    let form = |csrf: &str| format!("source=hooks&identity=msg_dead&csrf={csrf}");
    let with = |name: &'static str, value: String| {
        let mut headers = own(admin, &session);
        headers.retain(|(n, _)| *n != name);
        headers.push((name, value));
        headers
    };
    let attacks = [
        ("another port of this host", with("Origin", format!("http://{}", gateway.addr)), form(&csrf)),
        ("a same-site fetch", with("Sec-Fetch-Site", "same-site".to_owned()), form(&csrf)),
        ("a cross-site fetch", with("Sec-Fetch-Site", "cross-site".to_owned()), form(&csrf)),
        ("an opaque origin", with("Origin", "null".to_owned()), form(&csrf)),
        ("no csrf token", own(admin, &session), "source=hooks&identity=msg_dead".to_owned()),
        ("a wrong csrf token", own(admin, &session), form(&"0".repeat(64))),
        ("the session id as token", own(admin, &session), form(&session)),
    ];
    for (what, headers, body) in &attacks {
        let answer = send(admin, "POST", "/admin/replay", headers, body);
        assert_eq!(answer.status, 403, "{what}: {answer:?}");
        assert_eq!(job_state(&setup), "dead", "{what} replayed the job");
    }
    assert_eq!(recorder.received().len(), 1, "nothing was delivered again");

    let answer = send(admin, "POST", "/admin/replay", &own(admin, &session), &form(&csrf));
    assert_eq!((answer.status, answer.header("location")), (303, Some("/admin/")), "{answer:?}");
    recorder.wait_until("the replayed delivery", |r| r.len() == 2);
}

#[test]
fn every_admin_answer_forbids_framing_and_the_page_loads_nothing_from_elsewhere() {
    let recorder = Destination::start(&[]);
    let (_setup, _gateway, admin) = start(&recorder, "");
    let session = sign_in(admin).session();
    let answers = [
        send(admin, "GET", "/admin/login", &[], ""),
        page(admin, &session),
        send(admin, "GET", "/admin/v1/stats", &[("Authorization", format!("Bearer {TOKEN}"))], ""),
        send(admin, "GET", "/admin/v1/stats", &[], ""),
    ];
    for answer in &answers {
        assert_eq!(answer.header("x-frame-options"), Some("DENY"), "{answer:?}");
        let policy = answer.header("content-security-policy").unwrap_or_else(|| panic!("no CSP: {answer:?}"));
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
        assert!(policy.contains("default-src 'none'"), "{policy}");
    }
    let html = &answers[1].body;
    assert!(html.contains("<h2>Sources</h2>") && html.contains("No event received yet."), "{html}");
    // The only things the page loads are its own stylesheet and the brand's after it (the
    // accent), from the same listener, kept a year; nothing is styled inline.
    let link = "<link rel=\"stylesheet\" href=\"/assets/idemgate.";
    assert_eq!(html.matches("<link").count(), 2, "{html}");
    let brand = html.split("<link rel=\"stylesheet\" href=\"/assets/brand.").nth(1);
    let brand = brand.and_then(|rest| rest.split('"').next()).unwrap_or_else(|| panic!("no brand sheet: {html}"));
    assert!(!html.contains("<style") && !html.contains("style="), "{html}");
    let href = html.split(link).nth(1).and_then(|rest| rest.split('"').next()).unwrap_or_else(|| panic!("{html}"));
    for external in ["<script", "src=", "http://", "https://"] {
        assert!(!html.contains(external), "the page has {external}: {html}");
    }
    let policy = answers[1].header("content-security-policy").unwrap();
    assert!(policy.contains("style-src 'self';") && !policy.contains("unsafe-inline"), "{policy}");
    let sheet = send(admin, "GET", &format!("/assets/idemgate.{href}"), &[], "");
    assert_eq!(sheet.status, 200, "{sheet:?}");
    assert_eq!(sheet.header("cache-control"), Some("public, max-age=31536000, immutable"));
    assert!(sheet.header("content-type").is_some_and(|t| t.starts_with("text/css")), "{sheet:?}");
    assert!(sheet.body.contains("prefers-color-scheme: dark"), "the stylesheet itself");
    let accent = send(admin, "GET", &format!("/assets/brand.{brand}"), &[], "");
    assert_eq!(accent.status, 200, "{accent:?}");
    assert_eq!(accent.header("cache-control"), Some("public, max-age=31536000, immutable"));
    assert!(accent.body.contains("--accent: #0b57a4; --on-accent: #ffffff;"), "the default accent: {accent:?}");
    assert_eq!(answers[1].header("cache-control"), Some("no-store"), "pages are still never kept");
}

#[test]
fn the_cookie_is_a_random_session_not_the_token_and_sign_out_ends_it() {
    let recorder = Destination::start(&[]);
    let (_setup, _gateway, admin) = start(&recorder, "");
    let first = sign_in(admin);
    let cookie = first.header("set-cookie").unwrap().to_owned();
    let session = first.session();
    assert!(!cookie.contains(TOKEN), "{cookie}");
    assert_eq!(session.len(), 64, "{cookie}");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/admin", "Max-Age=43200"] {
        assert!(cookie.split("; ").any(|f| f == flag), "{flag} missing: {cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain HTTP: {cookie}");
    let other = sign_in(admin).session();
    assert_ne!(session, other);
    assert!(signed_in(admin, &session) && signed_in(admin, &other));
    assert!(!signed_in(admin, TOKEN), "the token itself is no session");

    let csrf = page(admin, &session).csrf();
    let refused = send(admin, "POST", "/admin/logout", &own(admin, &session), "csrf=wrong");
    assert_eq!(refused.status, 403, "{refused:?}");
    assert!(signed_in(admin, &session));
    let out = send(admin, "POST", "/admin/logout", &own(admin, &session), &format!("csrf={csrf}"));
    assert_eq!((out.status, out.header("location")), (303, Some("/admin/login")), "{out:?}");
    assert!(out.header("set-cookie").is_some_and(|c| c.contains("Max-Age=0")), "{out:?}");
    assert!(!signed_in(admin, &session), "the signed-out session is refused");
    assert!(signed_in(admin, &other), "other sessions stay");
    let form = [("Content-Type", "application/x-www-form-urlencoded".to_owned())];
    let wrong = send(admin, "POST", "/admin/login", &form, "token=a-dashboard-token-of-some-lengtX");
    assert_eq!(wrong.status, 401);
    assert!(wrong.header("set-cookie").is_none());
}

#[test]
fn an_expired_session_is_refused() {
    let recorder = Destination::start(&[]);
    let (_setup, _gateway, admin) = start(&recorder, "session_lifetime = \"1s\"");
    let answer = sign_in(admin);
    assert!(answer.header("set-cookie").unwrap().contains("Max-Age=1;"), "{answer:?}");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!signed_in(admin, &answer.session()), "expired");
}

#[test]
fn retry_now_on_the_dashboard_needs_its_own_origin_and_csrf_token_and_sends_the_waiting_job() {
    let recorder = Destination::start(&[Step::Status(500)]);
    let sources = forwarding(&Signer::Standard(KEY.to_vec()), &recorder, "", "retry_schedule = [\"1h\"]");
    let setup = Setup::new(&format!("{sources}[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"env:ADMIN_TOKEN\"\n"));
    let mut gateway = Gateway::start(&setup.config(), &[("ADMIN_TOKEN", TOKEN)]);
    let admin = gateway.admin_addr();
    let event = body("msg_wait", "t");
    let headers = Signer::Standard(KEY.to_vec()).headers("msg_wait", &event, unix_now());
    assert_eq!(gateway.post("hooks", &headers, &event).status(), 202);
    recorder.wait_until("the failing attempt", |r| r.len() == 1);
    for _ in 0..500 {
        if job_state(&setup) == "retrying" {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(job_state(&setup), "retrying");

    let session = sign_in(admin).session();
    let shown = page(admin, &session);
    let row = shown.body.split_once("<tr data-destination=\"app\">").unwrap().1.split("</tr>").next().unwrap();
    assert!(row.contains("action=\"/admin/retry\"") && row.contains("class=\"retry\""), "{row}");
    let csrf = shown.csrf();
    let form = |csrf: &str| format!("destination=app&csrf={csrf}");
    let mut foreign = own(admin, &session);
    foreign.retain(|(n, _)| *n != "Origin");
    foreign.push(("Origin", format!("http://{}", gateway.addr)));
    for (what, headers, body) in [
        ("another port of this host", foreign, form(&csrf)),
        ("no csrf token", own(admin, &session), "destination=app".to_owned()),
        ("a wrong csrf token", own(admin, &session), form(&"0".repeat(64))),
    ] {
        let answer = send(admin, "POST", "/admin/retry", &headers, &body);
        assert_eq!(answer.status, 403, "{what}: {answer:?}");
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(recorder.received().len(), 1, "nothing was hurried");

    let answer = send(admin, "POST", "/admin/retry", &own(admin, &session), &form(&csrf));
    assert_eq!((answer.status, answer.header("location")), (303, Some("/admin/")), "{answer:?}");
    recorder.wait_until("the hurried attempt", |r| r.len() == 2);
}
