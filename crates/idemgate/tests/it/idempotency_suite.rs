//! The `Idempotency-Key` suite, run twice: against the orders example with the library's
//! layer in front, and against the same API as a plain upstream behind the gateway's
//! `[[proxy]]` mode. Every handler counts its calls, so "ran once" is observed directly.

use std::{
    io::{BufRead, BufReader},
    net::SocketAddr,
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::Barrier,
    thread,
    time::Duration,
};

use serde_json::json;

use crate::harness::{Reply, exchange, post};

/// Which way the API is protected.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    Layer,
    Proxy,
}

/// A running protected API.
pub struct Api {
    processes: Vec<Child>,
    addr: SocketAddr,
    prefix: &'static str,
    pub db: PathBuf,
    _dir: tempfile::TempDir,
}

fn orders_bin() -> PathBuf {
    crate::harness::counter_bin().with_file_name("orders")
}

fn spawn(command: &mut Command) -> (Child, SocketAddr) {
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("first line {line:?}"));
    (child, addr.parse().unwrap())
}

impl Api {
    pub fn start(mode: Mode, pass_through: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("idempotency.sqlite3");
        match mode {
            Mode::Layer => {
                let mut command = Command::new(orders_bin());
                command.args([
                    "serve",
                    "--listen",
                    "127.0.0.1:0",
                    "--idempotent",
                    "--lock",
                    "1s",
                    "--busy-timeout",
                    "200ms",
                    "--db",
                ]);
                command.arg(&db);
                if pass_through {
                    command.arg("--pass-through");
                }
                let (child, addr) = spawn(&mut command);
                Self { processes: vec![child], addr, prefix: "", db, _dir: dir }
            }
            Mode::Proxy => {
                let (upstream, upstream_addr) =
                    spawn(Command::new(orders_bin()).args(["serve", "--listen", "127.0.0.1:0"]));
                let config = format!(
                    "[server]\nlisten = \"127.0.0.1:0\"\n[store]\npath = {:?}\nbusy_timeout = \"200ms\"\n\
                     [[proxy]]\nprefix = \"/api\"\nupstream = \"http://{upstream_addr}\"\nlock = \"1s\"\nwhen_unavailable = \"{}\"\n",
                    db.display().to_string(),
                    if pass_through { "pass-through" } else { "refuse" }
                );
                let path = dir.path().join("idemgate.toml");
                std::fs::write(&path, config).unwrap();
                let (gateway, addr) =
                    spawn(Command::new(crate::gateway_harness::idemgate_bin()).args(["serve", "--config"]).arg(&path));
                Self { processes: vec![upstream, gateway], addr, prefix: "/api", db, _dir: dir }
            }
        }
    }

    pub fn post(&self, path: &str, key: Option<&str>, auth: Option<&str>, body: &str) -> Reply {
        let mut headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
        if let Some(key) = key {
            headers.push(("Idempotency-Key".into(), key.into()));
        }
        if let Some(auth) = auth {
            headers.push(("Authorization".into(), auth.into()));
        }
        post(self.addr, &format!("{}{path}", self.prefix), &headers, body.as_bytes())
    }

    pub fn get(&self, path: &str, key: Option<&str>) -> Reply {
        let key = key.map(|k| format!("Idempotency-Key: {k}\r\n")).unwrap_or_default();
        let request = format!("GET {}{path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{key}\r\n", self.prefix);
        exchange(self.addr, request.as_bytes())
    }

    pub fn base_url(&self) -> String {
        format!("http://{}{}", self.addr, self.prefix)
    }

    pub fn calls(&self, handler: &str) -> u64 {
        self.get("/calls", None).body()[handler].as_u64().unwrap_or(0)
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        for child in &mut self.processes {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn replayed(reply: &Reply) -> bool {
    reply.header("idempotency-replay") == Some("true")
}

pub fn a_repeat_replays_status_headers_and_body_without_calling_the_handler(mode: Mode) {
    let api = Api::start(mode, false);
    let first = api.post("/orders", Some("order-1"), None, r#"{"qty":2}"#);
    assert!(first.is(201, json!({"order": 1, "qty": 2, "calls": 1})), "{first:?}");
    assert!(!replayed(&first));
    let repeat = api.post("/orders", Some("order-1"), None, r#"{"qty":2}"#);
    assert_eq!((repeat.status(), repeat.body()), (201, first.body()), "{repeat:?}");
    assert!(replayed(&repeat));
    assert_eq!(repeat.header("location"), Some("/orders/1"));
    assert_eq!(repeat.header("content-type"), Some("application/json"));
    assert_eq!(api.calls("orders"), 1);
    let without_key = api.post("/orders", None, None, r#"{"qty":2}"#);
    assert_eq!(without_key.body()["calls"], 2, "no key: no protection");
}

pub fn concurrent_requests_with_one_key_run_the_handler_once(mode: Mode) {
    let api = Api::start(mode, false);
    let barrier = Barrier::new(32);
    let replies: Vec<Reply> = thread::scope(|scope| {
        let handles: Vec<_> = (0..32)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    api.post("/slow?ms=200", Some("same-key"), None, "{}")
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let fresh = replies.iter().filter(|r| r.status() == 201 && !replayed(r)).count();
    let others_ok =
        replies.iter().all(|r| (r.status() == 201) || (r.status() == 409 && r.header("retry-after").is_some()));
    assert_eq!(fresh, 1, "{replies:?}");
    assert!(others_ok, "{replies:?}");
    assert_eq!(api.calls("slow"), 1);
}

pub fn a_key_reused_for_another_request_is_refused(mode: Mode) {
    let api = Api::start(mode, false);
    assert_eq!(api.post("/orders", Some("k"), None, r#"{"qty":1}"#).status(), 201);
    for (path, body, what) in [
        ("/orders", r#"{"qty":3}"#, "another body"),
        ("/orders?dry=1", r#"{"qty":1}"#, "another query"),
        ("/orders", r#"{"qty": 1}"#, "whitespace only"),
        ("/flaky", r#"{"qty":1}"#, "another path"),
    ] {
        let reply = api.post(path, Some("k"), None, body);
        assert_eq!(reply.status(), 422, "{what}: {reply:?}");
        assert_eq!(reply.header("content-type"), Some("application/problem+json"));
    }
    assert_eq!(api.calls("orders"), 1);
}

pub fn another_caller_with_the_same_key_is_another_operation(mode: Mode) {
    let api = Api::start(mode, false);
    let alice = api.post("/orders", Some("k"), Some("Bearer alice"), r#"{"qty":1}"#);
    let bob = api.post("/orders", Some("k"), Some("Bearer bob"), r#"{"qty":1}"#);
    assert!(!replayed(&bob), "bob must never get alice's response");
    assert_eq!((alice.body()["calls"].clone(), bob.body()["calls"].clone()), (json!(1), json!(2)));
    assert!(replayed(&api.post("/orders", Some("k"), Some("Bearer alice"), r#"{"qty":1}"#)));
}

pub fn a_server_error_is_not_stored_and_the_retry_runs(mode: Mode) {
    let api = Api::start(mode, false);
    assert_eq!(api.post("/flaky", Some("f"), None, "{}").status(), 500);
    let retry = api.post("/flaky", Some("f"), None, "{}");
    assert!(retry.is(201, json!({"calls": 2})) && !replayed(&retry), "{retry:?}");
    assert!(replayed(&api.post("/flaky", Some("f"), None, "{}")));
    assert_eq!(api.calls("flaky"), 2);
}

pub fn a_validation_rejection_releases_the_key(mode: Mode) {
    let api = Api::start(mode, false);
    assert_eq!(api.post("/orders", Some("r"), None, r#"{"qty":0}"#).status(), 422);
    let corrected = api.post("/orders", Some("r"), None, r#"{"qty":5}"#);
    assert!(corrected.is(201, json!({"order": 2, "qty": 5, "calls": 2})), "{corrected:?}");
}

pub fn an_expired_lock_lets_another_request_run_and_the_late_completion_is_discarded(mode: Mode) {
    let api = Api::start(mode, false);
    thread::scope(|scope| {
        let first = scope.spawn(|| api.post("/slow?ms=2500", Some("l"), None, "{}"));
        // Give the first request time to take the lock even on a loaded machine.
        thread::sleep(Duration::from_millis(600));
        assert_eq!(api.post("/slow?ms=2500", Some("l"), None, "{}").status(), 409, "locked while in flight");
        thread::sleep(Duration::from_millis(1100));
        let second = api.post("/slow?ms=2500", Some("l"), None, "{}");
        assert!(second.is(201, json!({"calls": 2})), "after the 1 s lock expired: {second:?}");
        assert!(first.join().unwrap().is(201, json!({"calls": 1})));
    });
    let replay = api.post("/slow?ms=2500", Some("l"), None, "{}");
    assert!(replayed(&replay) && replay.body()["calls"] == 2, "the newer holder's response is kept: {replay:?}");
}

pub fn get_ignores_the_key_and_malformed_keys_are_refused(mode: Mode) {
    let api = Api::start(mode, false);
    let a = api.get("/calls", Some("g"));
    let b = api.get("/calls", Some("g"));
    assert!(!replayed(&a) && !replayed(&b));
    assert_eq!(api.post("/orders", Some(&"k".repeat(256)), None, r#"{"qty":1}"#).status(), 400);
    assert_eq!(api.post("/orders", Some("\"unterminated"), None, r#"{"qty":1}"#).status(), 400);
    assert_eq!(api.post("/orders", Some("\"quoted key\""), None, r#"{"qty":1}"#).status(), 201);
    assert_eq!(api.calls("orders"), 1);
}

pub fn an_unavailable_store_refuses_or_passes_through_as_configured(mode: Mode) {
    for pass_through in [false, true] {
        let api = Api::start(mode, pass_through);
        assert_eq!(api.post("/orders", Some("warm"), None, r#"{"qty":1}"#).status(), 201);
        let holder = rusqlite::Connection::open(&api.db).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        let reply = api.post("/orders", Some("u"), None, r#"{"qty":1}"#);
        holder.execute_batch("ROLLBACK").unwrap();
        if pass_through {
            assert_eq!(reply.status(), 201, "{reply:?}");
            assert_eq!(api.calls("orders"), 2, "ran unprotected");
        } else {
            assert_eq!(reply.status(), 503, "{reply:?}");
            assert!(reply.header("retry-after").is_some());
            assert_eq!(api.calls("orders"), 1, "refused without running");
        }
        assert_eq!(api.post("/orders", Some("u2"), None, r#"{"qty":1}"#).status(), 201, "resumes by itself");
    }
}

macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod through_the_layer {
            $(#[test] fn $name() { super::$name(super::Mode::Layer); })*
        }
        mod through_the_proxy {
            $(#[test] fn $name() { super::$name(super::Mode::Proxy); })*
        }
    };
}

suite!(
    a_repeat_replays_status_headers_and_body_without_calling_the_handler,
    concurrent_requests_with_one_key_run_the_handler_once,
    a_key_reused_for_another_request_is_refused,
    another_caller_with_the_same_key_is_another_operation,
    a_server_error_is_not_stored_and_the_retry_runs,
    a_validation_rejection_releases_the_key,
    an_expired_lock_lets_another_request_run_and_the_late_completion_is_discarded,
    get_ignores_the_key_and_malformed_keys_are_refused,
    an_unavailable_store_refuses_or_passes_through_as_configured,
);
