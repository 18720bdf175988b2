//! Retry-now against the real process: a job waiting for its next attempt is made due at
//! once by `idemgate events retry` or the admin API, keeping its attempts so far, while
//! `events replay` of a waiting state is a usage error that points at retry.

use std::{net::SocketAddr, process::Output, time::Duration};

use idemgate_testkit::{Destination, Step};
use serde_json::{Value, json};

use crate::{
    gateway_harness::{Gateway, Setup, Signer, body, forwarding},
    harness::{Reply, exchange, unix_now},
};

const KEY: [u8; 32] = [9; 32];
const TOKEN: &str = "a-retry-token-of-some-length";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The event's one job, as `events show --json` gives it.
fn job(setup: &Setup, identity: &str) -> Value {
    let shown = setup.run(&["events", "show", "hooks", identity, "--json"], &[]);
    assert!(shown.status.success(), "{shown:?}");
    let detail: Value = serde_json::from_str(&text(&shown.stdout)).unwrap();
    detail["jobs"][0].clone()
}

fn wait_for_state(setup: &Setup, identity: &str, state: &str) -> Value {
    for _ in 0..500 {
        let job = job(setup, identity);
        if job["state"] == state {
            return job;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{identity} never became {state}: {}", job(setup, identity));
}

/// A gateway whose destination fails its first `failures` requests and whose retries wait
/// an hour.
fn start(failures: usize) -> (Setup, Gateway, SocketAddr, Destination) {
    let recorder = Destination::start(&vec![Step::Status(500); failures]);
    let sources = forwarding(&Signer::Standard(KEY.to_vec()), &recorder, "", "retry_schedule = [\"1h\", \"1h\"]");
    let setup = Setup::new(&format!("{sources}[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"env:ADMIN_TOKEN\"\n"));
    let mut gateway = Gateway::start(&setup.config(), &[("ADMIN_TOKEN", TOKEN)]);
    let admin = gateway.admin_addr();
    (setup, gateway, admin, recorder)
}

fn post(gateway: &Gateway, identity: &str) {
    let event = body(identity, "t");
    let headers = Signer::Standard(KEY.to_vec()).headers(identity, &event, unix_now());
    assert_eq!(gateway.post("hooks", &headers, &event).status(), 202);
}

fn usage_error(output: &Output) -> String {
    assert_eq!(output.status.code(), Some(2), "a usage error: {output:?}");
    text(&output.stderr)
}

fn admin(addr: SocketAddr, path: &str, body: &str) -> Reply {
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    exchange(addr, head.as_bytes())
}

#[test]
fn a_retrying_job_is_sent_now_by_events_retry_and_replay_of_it_says_to_use_retry() {
    let (setup, gateway, _admin, recorder) = start(2);
    post(&gateway, "msg_1");
    recorder.wait_until("the failing first attempt", |r| r.len() == 1);
    let waiting = wait_for_state(&setup, "msg_1", "retrying");
    assert_eq!(waiting["attempts"], 1, "{waiting}");

    let replay = usage_error(&setup.run(&["events", "replay", "--state", "retrying"], &[]));
    assert!(!replay.contains("malformed"), "{replay}");
    assert!(replay.contains("retrying jobs are not finished") && replay.contains("idemgate events retry"), "{replay}");
    let pending = usage_error(&setup.run(&["events", "replay", "--state", "pending"], &[]));
    assert!(pending.contains("idemgate events retry --state pending"), "{pending}");
    for finished in ["dead", "succeeded", "running"] {
        let refused = usage_error(&setup.run(&["events", "retry", "--state", finished], &[]));
        assert!(refused.contains("--state"), "{finished}: {refused}");
    }
    assert_eq!(recorder.received().len(), 1, "a refused command sent nothing");

    let other = setup.run(&["events", "retry", "--source", "hooks", "--identity", "msg_other"], &[]);
    assert!(text(&other.stdout).starts_with("0 job(s) due now"), "{other:?}");
    let retried = setup.run(&["events", "retry", "--source", "hooks"], &[]);
    assert!(retried.status.success(), "{retried:?}");
    assert!(text(&retried.stdout).starts_with("1 job(s) due now"), "{retried:?}");
    recorder.wait_until("the hurried second attempt", |r| r.len() == 2);
    let again = wait_for_state(&setup, "msg_1", "retrying");
    assert_eq!(again["attempts"], 2, "the attempts so far count: {again}");
    let first = &recorder.received()[0];
    assert_eq!(recorder.received()[1].header("webhook-id"), first.header("webhook-id"), "the same event");

    let last = setup.run(&["events", "retry", "--state", "retrying"], &[]);
    assert!(text(&last.stdout).starts_with("1 job(s) due now"), "{last:?}");
    recorder.wait_until("the third attempt", |r| r.len() == 3);
    let done = wait_for_state(&setup, "msg_1", "succeeded");
    assert_eq!(done["attempts"], 3, "{done}");
}

#[test]
fn the_admin_api_makes_one_events_or_a_filters_waiting_jobs_due_now() {
    let (setup, gateway, admin_addr, recorder) = start(3);
    post(&gateway, "msg_a");
    post(&gateway, "msg_b");
    recorder.wait_until("both first attempts", |r| r.len() == 2);
    wait_for_state(&setup, "msg_a", "retrying");
    wait_for_state(&setup, "msg_b", "retrying");

    let refused = admin(admin_addr, "/admin/v1/retry", r#"{"state":"dead"}"#);
    assert!((refused.status(), &refused.body()["error"]) == (400, &json!("state_not_waiting")), "{refused:?}");
    let refused = admin(admin_addr, "/admin/v1/events/hooks/msg_a/retry?state=succeeded", "");
    assert!((refused.status(), &refused.body()["error"]) == (400, &json!("state_not_waiting")), "{refused:?}");
    let replay = admin(admin_addr, "/admin/v1/replay", r#"{"state":"retrying"}"#);
    assert!((replay.status(), &replay.body()["error"]) == (400, &json!("state_not_replayable")), "{replay:?}");

    let one = admin(admin_addr, "/admin/v1/events/hooks/msg_a/retry", "");
    assert!(one.is(200, json!({"retried": 1})), "{one:?}");
    recorder.wait_until("msg_a's second attempt", |r| r.len() == 3);
    assert_eq!(wait_for_state(&setup, "msg_a", "retrying")["attempts"], 2);
    assert_eq!(job(&setup, "msg_b")["attempts"], 1, "msg_b still waits");

    let all = admin(admin_addr, "/admin/v1/retry", r#"{"source":"hooks","state":"retrying"}"#);
    assert!(all.is(200, json!({"retried": 2})), "{all:?}");
    recorder.wait_until("both hurried attempts", |r| r.len() == 5);
    assert_eq!(wait_for_state(&setup, "msg_a", "succeeded")["attempts"], 3);
    assert_eq!(wait_for_state(&setup, "msg_b", "succeeded")["attempts"], 2);
}
