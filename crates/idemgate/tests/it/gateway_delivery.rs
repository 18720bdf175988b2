//! The gateway's worker end to end: events received over HTTP reach a real destination,
//! survive a SIGKILL mid-delivery, respect the ordering guard, and can be replayed.

use std::{collections::BTreeSet, time::Duration};

use idemgate_testkit::{Destination, Received, Step};
use serde_json::Value;

use crate::{
    gateway_harness::{Gateway, Setup, Signer, inbox},
    harness::unix_now,
};

const KEY: [u8; 32] = [3; 32];

fn config(recorder: &Destination, source_extra: &str, destination_extra: &str) -> String {
    format!(
        r#"
[worker]
lease = "2s"
batch = 2
poll_interval = "50ms"
[sources.hooks]
scheme = "standard-webhooks"
secrets = [{secret:?}]
forward_headers = ["x-origin"]
destinations = ["app"]
{source_extra}
[destinations.app]
url = "{url}"
secret = {secret:?}
timeout = "1s"
retry_schedule = ["1s", "1s", "1s"]
jitter = 0.0
{destination_extra}
"#,
        secret = Signer::Standard(KEY.to_vec()).config_secret(),
        url = recorder.url(),
    )
}

fn send(gateway: &crate::gateway_harness::Gateway, identity: &str, body: &str) -> u16 {
    let mut headers = Signer::Standard(KEY.to_vec()).headers(identity, body.as_bytes(), unix_now());
    headers.push(("X-Origin".into(), "test".into()));
    gateway.post("hooks", &headers, body.as_bytes()).status()
}

/// Accepts `count` events as [`send`] sends them, event `i` named `identity(i)` with
/// the body `{"n":i}`.
fn accept_counted(gateway: &crate::gateway_harness::Gateway, count: usize, identity: impl Fn(usize) -> String) {
    let events = (0..count).map(|i| (identity(i), format!(r#"{{"n":{i}}}"#).into_bytes()));
    gateway.accept_events("hooks", &Signer::Standard(KEY.to_vec()), &[("X-Origin", "test")], events);
}

fn ids(received: &[Received]) -> BTreeSet<String> {
    received.iter().map(|r| r.header("webhook-id").to_owned()).collect()
}

#[test]
fn an_accepted_event_arrives_at_its_destination_signed_with_the_destination_secret() {
    let recorder = Destination::start(&[Step::Status(503)]);
    let setup = Setup::new(&config(&recorder, "", ""));
    let gateway = setup.start();
    assert_eq!(send(&gateway, "msg_1", r#"{"type":"t","n":1}"#), 202);
    recorder.wait_until("a successful delivery", |r| r.len() == 2);
    let received = recorder.received();
    assert_eq!(ids(&received), BTreeSet::from(["msg_1".to_owned()]));
    assert_eq!(received[0].header("idempotency-key"), received[1].header("idempotency-key"));
    assert_eq!(received[1].header("x-origin"), "test");
    assert_eq!(received[1].body, br#"{"type":"t","n":1}"#);
    let signature = received[1].header("webhook-signature");
    let ts: i64 = received[1].header("webhook-timestamp").parse().unwrap();
    assert_eq!(
        *signature,
        idemgate::core::scheme::standard::sign(
            &idemgate::core::Secret::new(KEY.to_vec()),
            "msg_1",
            ts,
            &received[1].body
        )
    );
    wait_for_state(&setup, "succeeded", 1);
}

/// Destinations are reached directly: proxy settings in the environment never route the
/// events (and the destination's credentials) through another host.
#[test]
fn proxy_settings_in_the_environment_are_not_used_for_destinations() {
    let recorder = Destination::start(&[]);
    let elsewhere = Destination::start(&[]);
    let setup = Setup::new(&config(&recorder, "", ""));
    let via = elsewhere.url();
    let env = [("HTTP_PROXY", via.as_str()), ("http_proxy", via.as_str()), ("ALL_PROXY", via.as_str())];
    let gateway = Gateway::start(&setup.config(), &env);
    assert_eq!(send(&gateway, "msg_1", r#"{"n":1}"#), 202);
    recorder.wait_until("the delivery", |r| r.len() == 1);
    wait_for_state(&setup, "succeeded", 1);
    assert!(elsewhere.received().is_empty(), "went through the environment's proxy");
}

fn wait_for_state(setup: &Setup, state: &str, count: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let jobs = inbox(&setup.db()).jobs;
        if jobs.iter().filter(|(_, _, s)| s == state).count() == count {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "jobs never reached {count} x {state}: {jobs:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_gateway_killed_mid_delivery_loses_no_job_after_restart() {
    let recorder = Destination::start(&[]);
    recorder.delay(Duration::from_millis(100));

    let setup = Setup::new(&config(&recorder, "", ""));
    let gateway = setup.start();
    accept_counted(&gateway, 30, |i| format!("msg_{i:02}"));
    recorder.wait_until("some deliveries", |r| r.len() >= 3);
    drop(gateway); // SIGKILL
    let delivered_before_kill = recorder.received().len();
    assert!(delivered_before_kill < 30, "the kill came too late to test anything");
    let _restarted = setup.start();
    wait_for_state(&setup, "succeeded", 30);
    let received = recorder.received();
    assert_eq!(ids(&received).len(), 30, "every event reached the destination");
    assert!(received.len() >= 30);
    for request in &received {
        let n: Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(
            request.header("webhook-id"),
            format!("msg_{:02}", n["n"].as_i64().unwrap()),
            "a redelivery keeps its webhook-id"
        );
    }
}

#[test]
fn a_restarted_gateway_delivers_what_the_killed_one_held_without_waiting_for_its_leases() {
    let recorder = Destination::start(&[]);
    recorder.delay(Duration::from_millis(100));
    // An hour's lease: waiting for it would outlast wait_for_state's deadline.
    let setup = Setup::new(&config(&recorder, "", "").replace(r#"lease = "2s""#, r#"lease = "1h""#));
    let gateway = setup.start();
    accept_counted(&gateway, 30, |i| format!("msg_{i:02}"));
    recorder.wait_until("some deliveries", |r| r.len() >= 3);
    drop(gateway); // SIGKILL, with jobs in hand under their leases
    assert!(
        inbox(&setup.db()).jobs.iter().any(|(_, _, state)| state == "running"),
        "the kill came too late to test anything"
    );
    let _restarted = setup.start();
    wait_for_state(&setup, "succeeded", 30);
    assert_eq!(ids(&recorder.received()).len(), 30, "every event reached the destination");
}

#[test]
fn older_versions_are_superseded_and_the_destination_ends_with_the_newest() {
    let recorder = Destination::start(&[]);
    let ordering = r#"ordering = { key = "/object", version = "/version" }"#;
    let setup = Setup::new(&config(&recorder, ordering, "fifo = true"));
    let gateway = setup.start();
    for (i, version) in [3, 1, 5, 2, 4].into_iter().enumerate() {
        let body = format!(r#"{{"object":"obj_1","version":{version}}}"#);
        assert_eq!(send(&gateway, &format!("msg_{i}"), &body), 202);
    }
    wait_for_state(&setup, "superseded", 3);
    wait_for_state(&setup, "succeeded", 2);
    let versions: Vec<i64> = recorder
        .received()
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap()["version"].as_i64().unwrap())
        .collect();
    assert_eq!(versions, [3, 5]);
}

#[test]
fn a_dead_job_is_delivered_by_replay_once_the_destination_is_back() {
    let recorder = Destination::start(&[]);
    recorder.otherwise(Step::Status(500));
    let setup = Setup::new(&config(&recorder, "", ""));
    let gateway = setup.start();
    assert_eq!(send(&gateway, "msg_dead", r#"{"n":1}"#), 202);
    wait_for_state(&setup, "dead", 1);
    assert_eq!(recorder.received().len(), 4, "four attempts on a schedule of three retries");
    recorder.otherwise(Step::Status(200));
    let replay = setup.run(&["events", "replay", "--source", "hooks"], &[]);
    assert!(replay.status.success(), "{replay:?}");
    assert!(String::from_utf8_lossy(&replay.stdout).contains("replayed 1 job(s)"), "{replay:?}");
    wait_for_state(&setup, "succeeded", 1);
    assert_eq!(ids(&recorder.received()), BTreeSet::from(["msg_dead".to_owned()]));
    drop(gateway);
}

#[test]
fn a_separate_worker_process_delivers_what_a_receive_only_gateway_accepted() {
    let recorder = Destination::start(&[]);
    let setup = Setup::new(&config(&recorder, "", "").replace("[worker]\n", "[worker]\nenabled = false\n"));
    let gateway = setup.start();
    assert_eq!(send(&gateway, "msg_w", r#"{"n":1}"#), 202);
    std::thread::sleep(Duration::from_millis(300));
    assert!(recorder.received().is_empty(), "serve with the worker disabled delivers nothing");
    let mut worker = std::process::Command::new(crate::gateway_harness::idemgate_bin())
        .args(["worker", "--config"])
        .arg(setup.config())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_state(&setup, "succeeded", 1);
    assert_eq!(ids(&recorder.received()), BTreeSet::from(["msg_w".to_owned()]));
    worker.kill().unwrap();
    worker.wait().unwrap();
}

/// The gaps between consecutive attempts of each event, as the destination saw them.
fn gaps(received: &[Received]) -> Vec<Duration> {
    let mut by_event: std::collections::BTreeMap<&str, Vec<std::time::Instant>> = Default::default();
    for request in received {
        by_event.entry(request.header("webhook-id")).or_default().push(request.at);
    }
    by_event.values().flat_map(|times| times.windows(2).map(|pair| pair[1] - pair[0])).collect()
}

#[test]
fn retries_never_come_before_their_delay_minus_its_jitter() {
    let recorder = Destination::start(&[]);
    recorder.otherwise(Step::Status(503));
    let setup = Setup::new(&config(&recorder, "", "").replace("jitter = 0.0", "jitter = 0.2"));
    let gateway = setup.start();
    accept_counted(&gateway, 4, |i| format!("msg_{i}"));
    wait_for_state(&setup, "dead", 4);
    let gaps = gaps(&recorder.received());
    assert_eq!(gaps.len(), 12, "three retries of each of four events");
    assert!(gaps.iter().all(|gap| *gap >= Duration::from_millis(800)), "a 1 s ±20 % retry came early: {gaps:?}");
    drop(gateway);
}

#[test]
fn a_retry_after_is_never_honoured_early() {
    let recorder = Destination::start(&[Step::Status(503)]);
    recorder.retry_after(3);
    let setup = Setup::new(&config(&recorder, "", "").replace(r#"["1s", "1s", "1s"]"#, r#"["1s"]"#));
    let gateway = setup.start();
    assert_eq!(send(&gateway, "msg_later", r#"{"n":1}"#), 202);
    wait_for_state(&setup, "succeeded", 1);
    let gaps = gaps(&recorder.received());
    assert_eq!(gaps.len(), 1);
    assert!(gaps[0] >= Duration::from_secs(3), "Retry-After: 3 honoured after {:?}", gaps[0]);
    drop(gateway);
}
