//! The inbox's guarantees over real HTTP: concurrency, restarts, upgrades of the
//! contract, limits, and the routes around it.

use std::{
    io::{Read, Write},
    net::TcpStream,
    sync::Barrier,
    thread,
    time::Duration,
};

use serde_json::json;

use crate::{
    gateway_harness::{Setup, Signer, body, inbox, numbered, typed},
    harness::unix_now,
};

const KEY: [u8; 32] = [7; 32];

fn source(extra: &str) -> String {
    format!(
        r#"
[worker]
# These tests look at what is stored; nothing is delivered (the destinations are fake).
enabled = false
[sources.hooks]
scheme = "standard-webhooks"
secrets = [{:?}]
event_type = "/type"
destinations = ["app", "audit"]
{extra}
[destinations.app]
url = "http://127.0.0.1:9/app"
[destinations.audit]
url = "http://127.0.0.1:9/audit"
"#,
        Signer::Standard(KEY.to_vec()).config_secret()
    )
}

fn signed(identity: &str, event_type: &str) -> (Vec<(String, String)>, Vec<u8>) {
    let body = body(identity, event_type);
    (Signer::Standard(KEY.to_vec()).headers(identity, &body, unix_now()), body)
}

#[test]
fn sixteen_concurrent_identical_deliveries_give_one_receipt_and_one_job_per_destination() {
    let setup = Setup::new(&source(""));
    let gateway = setup.start();
    let (headers, body) = signed("msg_same", "t.created");
    let barrier = Barrier::new(16);
    let replies: Vec<_> = thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    gateway.post("hooks", &headers, &body)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let accepted = replies.iter().filter(|r| r.is(202, json!({"status": "accepted", "event": "msg_same"}))).count();
    let duplicate = replies.iter().filter(|r| r.is(200, json!({"status": "duplicate", "event": "msg_same"}))).count();
    assert_eq!((accepted, duplicate), (1, 15), "{replies:?}");
    let stored = inbox(&setup.db());
    assert_eq!((stored.receipts.len(), stored.events.len(), stored.jobs.len()), (1, 1, 2));
}

#[test]
fn a_restart_keeps_every_receipt_and_pending_job() {
    let setup = Setup::new(&source(""));
    let gateway = setup.start();
    gateway.accept_events("hooks", &Signer::Standard(KEY.to_vec()), &[], typed(numbered("msg_", 5), "t.created"));
    let before = inbox(&setup.db());
    gateway.stop();
    let restarted = setup.start();
    assert_eq!(inbox(&setup.db()), before);
    assert_eq!(before.jobs.len(), 10);
    let (headers, body) = signed("msg_3", "t.created");
    let again = restarted.post("hooks", &headers, &body);
    assert!(again.is(200, json!({"status": "duplicate", "event": "msg_3"})), "{again:?}");
}

#[test]
fn a_repeat_stays_a_duplicate_after_the_allowlist_drops_its_type() {
    let setup = Setup::new(&source(r#"allowed_types = ["t.created", "t.deleted"]"#));
    let gateway = setup.start();
    let (headers, body) = signed("msg_old", "t.created");
    assert_eq!(gateway.post("hooks", &headers, &body).status(), 202);
    let (headers_x, body_x) = signed("msg_x", "t.unknown");
    let refused = gateway.post("hooks", &headers_x, &body_x);
    let named = json!({"error": "event_contract", "field": "event_type", "pointer": "/type"});
    assert!(refused.is(422, named), "the field is named, never its value: {refused:?}");
    gateway.stop();

    setup.write_config(&source(r#"allowed_types = ["t.deleted"]"#));
    let upgraded = setup.start();
    let repeat = upgraded.post("hooks", &headers, &body);
    assert!(repeat.is(200, json!({"status": "duplicate", "event": "msg_old"})), "{repeat:?}");
    let (headers_new, body_new) = signed("msg_new", "t.created");
    assert_eq!(upgraded.post("hooks", &headers_new, &body_new).status(), 422);
    assert_eq!(inbox(&setup.db()).receipts, ["msg_old"], "a refused event stores nothing");
}

#[test]
fn renaming_the_route_keeps_the_receipts_of_the_source_id() {
    let setup = Setup::new(&source(""));
    let gateway = setup.start();
    let (headers, body) = signed("msg_1", "t.created");
    assert_eq!(gateway.post("hooks", &headers, &body).status(), 202);
    gateway.stop();
    setup.write_config(&source(r#"route = "renamed""#));
    let renamed = setup.start();
    assert_eq!(renamed.post("hooks", &headers, &body).status(), 404, "the old route is gone");
    let repeat = renamed.post("renamed", &headers, &body);
    assert!(repeat.is(200, json!({"status": "duplicate", "event": "msg_1"})), "{repeat:?}");
}

#[test]
fn an_identity_can_be_configured_as_a_json_pointer() {
    let setup = Setup::new(&source(r#"identity = { pointer = "/data/n" }"#));
    let gateway = setup.start();
    let (headers, body) = signed("msg_a", "t.created");
    let reply = gateway.post("hooks", &headers, &body);
    assert!(reply.is(202, json!({"status": "accepted", "event": "1"})), "integer identity: {reply:?}");
    let (headers, body) = signed("msg_b", "t.created");
    let same_identity_other_bytes = gateway.post("hooks", &headers, &body);
    assert_eq!(same_identity_other_bytes.status(), 409);
}

#[test]
fn unknown_sources_look_like_any_unknown_path_and_store_nothing() {
    let setup = Setup::new(&source(""));
    let gateway = setup.start();
    let (headers, body) = signed("msg_1", "t.created");
    let unknown = gateway.post("nope", &headers, &body);
    let elsewhere = crate::harness::post(gateway.addr, "/elsewhere", &headers, &body);
    assert!(unknown.is(404, json!({"error": "not_found"})), "{unknown:?}");
    assert_eq!(unknown.body(), elsewhere.body());
    assert!(inbox(&setup.db()).receipts.is_empty());
}

#[test]
fn health_and_readiness() {
    let setup = Setup::new(&source(""));
    let gateway = setup.start();
    assert!(gateway.get("/healthz").is(200, json!({"status": "ok"})));
    assert!(gateway.get("/readyz").is(200, json!({"status": "ready"})));
    let holder = rusqlite::Connection::open(setup.db()).unwrap();
    holder.execute_batch("PRAGMA busy_timeout = 0; BEGIN IMMEDIATE").unwrap();
    assert!(gateway.get("/readyz").is(503, json!({"status": "unavailable"})), "store locked elsewhere");
    let (headers, body) = signed("msg_locked", "t.created");
    let blocked = gateway.post("hooks", &headers, &body);
    assert!(blocked.is(503, json!({"error": "temporary_processing_failure"})), "{blocked:?}");
    assert!(blocked.header("retry-after").is_some());
    holder.execute_batch("ROLLBACK").unwrap();
    assert!(gateway.get("/readyz").is(200, json!({"status": "ready"})));
    assert_eq!(gateway.post("hooks", &headers, &body).status(), 202, "service resumes by itself");
}

#[test]
fn a_body_over_the_source_limit_is_413_before_anything_else() {
    let setup = Setup::new(&source("body_limit = 100"));
    let gateway = setup.start();
    let (headers, _) = signed("msg_big", "t.created");
    let reply = gateway.post("hooks", &headers, &[b' '; 101]);
    assert!(reply.is(413, json!({"error": "body_size"})), "{reply:?}");
    assert!(inbox(&setup.db()).receipts.is_empty());
}

#[test]
fn a_body_trickled_past_the_body_timeout_is_refused() {
    let setup = Setup::new(&source(""));
    std::fs::write(
        setup.config(),
        std::fs::read_to_string(setup.config()).unwrap().replace("body_timeout = \"5s\"", "body_timeout = \"300ms\""),
    )
    .unwrap();
    let gateway = setup.start();
    let (headers, body) = signed("msg_slow", "t.created");
    let mut head = format!("POST /in/hooks HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in &headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = TcpStream::connect(gateway.addr).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&body[..5]).unwrap();
    thread::sleep(Duration::from_millis(800));
    let _ = stream.write_all(&body[5..]);
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(inbox(&setup.db()).receipts.is_empty());
}
