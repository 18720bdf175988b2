//! A destination's circuit breaker against the real process: a destination that keeps
//! failing is paused, which `idemgate destination list` (and its `--json`), the admin API,
//! the dashboard and `/metrics` show; while it is down no job dies though its schedule is
//! used up; once it answers again a probe resumes it and every job is delivered. And a
//! rate-limited destination is shown throttled while its limit holds its jobs back, and
//! no longer once every job is delivered.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use idemgate_testkit::{Destination, Step};
use serde_json::Value;

use crate::{
    gateway_dashboard::{TOKEN, page, sign_in},
    gateway_harness::{Gateway, Setup, Signer, body},
    harness::{exchange, unix_now},
};

const KEY: [u8; 32] = [23; 32];

fn listed(setup: &Setup) -> Value {
    let output = setup.run(&["destination", "list", "--json"], &[]);
    assert!(output.status.success(), "{output:?}");
    let all = serde_json::from_slice::<Value>(&output.stdout).unwrap()["destinations"].clone();
    all.as_array().unwrap().iter().find(|d| d["name"] == "app").cloned().unwrap_or(Value::Null)
}

/// Polls `setup`'s listing until `done` holds for destination `app`, for at most 60 s.
fn wait_for(setup: &Setup, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let app = listed(setup);
        if done(&app) {
            return app;
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}: {app}");
        std::thread::sleep(Duration::from_millis(30));
    }
}

fn admin_get(admin: SocketAddr, path: &str) -> Value {
    let head = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
    let reply = exchange(admin, head.as_bytes());
    assert_eq!(reply.status(), 200, "{reply:?}");
    reply.body().clone()
}

#[test]
fn a_destination_that_keeps_failing_is_paused_shown_paused_loses_no_job_and_resumes_when_it_answers() {
    let app = Destination::start(&[]);
    app.otherwise(Step::Status(503));
    let setup = Setup::new(&format!(
        "[worker]\npoll_interval = \"20ms\"\n[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"env:ADMIN_TOKEN\"\n\
         [metrics]\nlisten = \"public\"\nrefresh_interval = \"50ms\"\n\
         [sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\ndestinations = [\"app\"]\n\
         [destinations.app]\nurl = \"{url}\"\ntimeout = \"1s\"\nretry_schedule = [\"50ms\"]\njitter = 0.0\n\
         [destinations.app.breaker]\npause_after_failures = 3\nprobe_interval = \"300ms\"\n",
        secret = Signer::Standard(KEY.to_vec()).config_secret(),
        url = app.url(),
    ));
    let mut gateway = Gateway::start(&setup.config(), &[("ADMIN_TOKEN", TOKEN)]);
    let admin = gateway.admin_addr();
    for id in ["msg_1", "msg_2", "msg_3"] {
        let event = body(id, "t");
        let headers = Signer::Standard(KEY.to_vec()).headers(id, &event, unix_now());
        assert_eq!(gateway.post("hooks", &headers, &event).status(), 202);
    }

    let paused = wait_for(&setup, "the breaker to pause it", |app| app["state"] == "paused");
    assert_eq!(paused["breaker"]["paused"], true, "{paused}");
    assert!(paused["breaker"]["failures"].as_u64().unwrap() >= 3, "{paused}");
    assert!(paused["breaker"]["next_probe_at"].is_i64(), "{paused}");
    // Each job has one retry; the probes use it up, yet none is dead while it is paused.
    let probed = wait_for(&setup, "a probe to fail", |app| app["breaker"]["failures"].as_u64().unwrap_or(0) >= 5);
    assert_eq!(probed["state"], "paused", "a failed probe keeps it paused: {probed}");
    assert!(probed["jobs"].get("dead").is_none(), "no job died of the pause: {probed}");
    assert_eq!(probed["jobs"]["retrying"], 3, "{probed}");

    let api = admin_get(admin, "/admin/v1/destinations");
    let api_app = api.as_array().unwrap().iter().find(|d| d["name"] == "app").unwrap();
    assert_eq!(api_app["state"], "paused", "{api}");
    assert_eq!(api_app["breaker"]["paused"], true, "{api}");
    let text = setup.run(&["destination", "list"], &[]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("  breaker       paused since "), "{text}");
    let dashboard = page(admin, &sign_in(admin).session()).body;
    let row =
        dashboard.split_once("<tr data-destination=\"app\">").unwrap().1.split("</tr>").next().unwrap().to_owned();
    assert!(row.contains("paused since <time datetime="), "{row}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !gateway.get_text("/metrics").contains("idemgate_destination_paused{destination=\"app\"} 1") {
        assert!(Instant::now() < deadline, "no paused gauge: {}", gateway.get_text("/metrics"));
        std::thread::sleep(Duration::from_millis(30));
    }

    let before = app.received().len();
    app.otherwise(Step::Status(200));
    let resumed = wait_for(&setup, "every job delivered", |app| app["jobs"]["succeeded"] == 3);
    assert_eq!(resumed["state"], "enabled", "a successful probe resumed it: {resumed}");
    assert_eq!(resumed["breaker"]["paused"], false, "{resumed}");
    let since = app.received().len() - before;
    assert!(
        (3..=4).contains(&since),
        "a probe, then the two others (and at most one probe that had started while it still failed): {since}"
    );
}

#[test]
fn a_rate_limited_destination_is_shown_throttled_while_its_jobs_are_held_back_and_not_once_all_are_delivered() {
    let app = Destination::start(&[]);
    app.otherwise(Step::Status(200));
    let setup = Setup::new(&format!(
        "[worker]\npoll_interval = \"20ms\"\n[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"env:ADMIN_TOKEN\"\n\
         [sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\ndestinations = [\"app\"]\n\
         [destinations.app]\nurl = \"{url}\"\ntimeout = \"1s\"\nrate_limit = 1\nburst = 1\n",
        secret = Signer::Standard(KEY.to_vec()).config_secret(),
        url = app.url(),
    ));
    let mut gateway = Gateway::start(&setup.config(), &[("ADMIN_TOKEN", TOKEN)]);
    let admin = gateway.admin_addr();
    const EVENTS: u64 = 6;
    for n in 1..=EVENTS {
        let id = format!("msg_{n}");
        let event = body(&id, "t");
        let headers = Signer::Standard(KEY.to_vec()).headers(&id, &event, unix_now());
        assert_eq!(gateway.post("hooks", &headers, &event).status(), 202);
    }

    let throttled = wait_for(&setup, "the rate limit to hold its jobs back", |app| app["state"] == "throttled");
    assert!(throttled["throttled_since"].is_i64(), "{throttled}");
    assert_eq!(throttled["breaker"]["paused"], false, "{throttled}");
    let waiting =
        throttled["jobs"]["pending"].as_u64().unwrap_or(0) + throttled["jobs"]["retrying"].as_u64().unwrap_or(0);
    assert!(waiting > 0, "throttled while jobs wait: {throttled}");
    let api = admin_get(admin, "/admin/v1/destinations");
    let api_app = api.as_array().unwrap().iter().find(|d| d["name"] == "app").unwrap();
    if api_app["jobs"]["succeeded"].as_u64().unwrap_or(0) < EVENTS {
        assert_eq!(api_app["state"], "throttled", "{api}");
        assert!(api_app["throttled_since"].is_i64(), "{api}");
    }
    let text = String::from_utf8(setup.run(&["destination", "list"], &[]).stdout).unwrap();
    if !text.contains(&format!("succeeded {EVENTS}")) {
        assert!(text.contains("  throttled     since "), "{text}");
    }
    let dashboard = page(admin, &sign_in(admin).session()).body;
    let row =
        dashboard.split_once("<tr data-destination=\"app\">").unwrap().1.split("</tr>").next().unwrap().to_owned();
    if !row.contains(&format!("succeeded {EVENTS}")) {
        assert!(row.contains("throttled since <time datetime="), "{row}");
    }

    let done = wait_for(&setup, "every job delivered and the throttle lifted", |app| {
        app["jobs"]["succeeded"] == EVENTS && app["state"] == "enabled"
    });
    assert!(done["throttled_since"].is_null(), "{done}");
    assert_eq!(app.received().len() as u64, EVENTS, "each job delivered once: {done}");
}
