//! What `idemgate events list | show | replay` print for an operator, against the real
//! process: times in RFC 3339 UTC (unix seconds only under `--json`), `--since`/`--until`
//! in the forms people type, and every attempt's status or failure with the first bytes
//! of the destination's answer.

use std::{process::Output, time::Duration};

use idemgate::core::UnixTime;

use idemgate_testkit::{Destination, Step};

use crate::{
    gateway_harness::{Gateway, Setup, Signer, body},
    harness::unix_now,
};

const KEY: [u8; 32] = [6; 32];

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// The event's detail as JSON, once every one of its jobs is dead.
fn when_all_dead(setup: &Setup) -> serde_json::Value {
    for _ in 0..500 {
        let shown: serde_json::Value =
            serde_json::from_str(&stdout(&setup.run(&["events", "show", "hooks", "msg_1", "--json"], &[]))).unwrap();
        let jobs = shown["jobs"].as_array().unwrap();
        if jobs.len() == 3 && jobs.iter().all(|j| j["state"] == "dead") {
            return shown;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the jobs never all died");
}

#[test]
fn events_show_prints_times_statuses_failures_and_what_the_destination_answered() {
    let refusing = Destination::start(&[Step::Status(400)]);
    let failing = Destination::start(&[Step::Status(501), Step::Status(501)]);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!("http://{}/hook", closed.local_addr().unwrap());
    drop(closed);
    let setup = Setup::new(&format!(
        "[worker]\npoll_interval = \"20ms\"\n\
         [sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\n\
         destinations = [\"app\", \"flaky\", \"gone\"]\n\
         [destinations.app]\nurl = \"{app}\"\ntimeout = \"1s\"\nretry_schedule = []\n\
         [destinations.flaky]\nurl = \"{flaky}\"\ntimeout = \"1s\"\nretry_schedule = [\"10ms\"]\n\
         [destinations.gone]\nurl = \"{closed_url}\"\ntimeout = \"1s\"\nretry_schedule = []\n",
        secret = Signer::Standard(KEY.to_vec()).config_secret(),
        app = refusing.url(),
        flaky = failing.url(),
    ));
    let gateway = Gateway::start(&setup.config(), &[]);
    let event = body("msg_1", "t.created");
    assert_eq!(
        gateway.post("hooks", &Signer::Standard(KEY.to_vec()).headers("msg_1", &event, unix_now()), &event).status(),
        202
    );

    let detail = when_all_dead(&setup);
    let received_at = detail["received_at"].as_i64().expect("--json keeps unix seconds");
    assert!(detail["attempts"][0]["started_at"].is_i64(), "{detail}");
    assert_eq!(detail["attempts"].as_array().unwrap().len(), 4, "{detail}");
    let received = UnixTime(received_at).rfc3339().to_string();
    assert!(received.ends_with('Z') && received.len() == 20, "{received}");

    let text = stdout(&setup.run(&["events", "show", "hooks", "msg_1"], &[]));
    let line = |prefix: &str| -> Vec<&str> { text.lines().filter(|l| l.starts_with(prefix)).collect() };
    assert!(line("received")[0].starts_with(&format!("received  {received} (")), "{text}");
    assert!(!text.contains(&received_at.to_string()), "no unix seconds in the text: {text}");
    assert!(!text.contains("status 400  status 400"), "{text}");

    let jobs = line("job");
    assert_eq!(jobs.len(), 3, "{text}");
    assert!(jobs.iter().all(|j| j.contains(" dead ") && j.contains(" since ") && j.ends_with(')')), "{text}");
    let reasons: Vec<&str> = text.lines().filter_map(|l| l.trim_start().strip_prefix("reason ")).collect();
    assert_eq!(
        reasons,
        [
            "final status 400",
            "attempts exhausted; last attempt: status 501",
            "attempts exhausted; last attempt: connection refused"
        ],
        "app, flaky, gone: {text}"
    );

    let attempts = line("attempt");
    assert_eq!(attempts.len(), 4, "{text}");
    let of = |destination: &str| -> Vec<&str> {
        attempts.iter().copied().filter(|a| a.split_whitespace().nth(1) == Some(destination)).collect()
    };
    assert!(of("app")[0].ends_with(" ms  400  \"ok\""), "{text}");
    assert_eq!(of("flaky").len(), 2, "{text}");
    assert!(of("flaky").iter().all(|a| a.ends_with(" ms  501  \"ok\"")), "{text}");
    assert!(of("gone")[0].ends_with(" ms  connection refused"), "{text}");
    for attempt in &attempts {
        let at = attempt.split_whitespace().nth(3).unwrap();
        assert!(at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T', "{attempt}");
    }
}

#[test]
fn since_and_until_take_rfc_3339_dates_and_durations_and_name_the_flag_otherwise() {
    let app = Destination::start(&[]);
    app.otherwise(Step::Status(400));
    let setup = Setup::new(&format!(
        "[worker]\npoll_interval = \"20ms\"\n\
         [sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\ndestinations = [\"app\"]\n\
         [destinations.app]\nurl = \"{url}\"\ntimeout = \"1s\"\nretry_schedule = []\n",
        secret = Signer::Standard(KEY.to_vec()).config_secret(),
        url = app.url(),
    ));
    let gateway = Gateway::start(&setup.config(), &[]);
    let event = body("msg_1", "t.created");
    assert_eq!(
        gateway.post("hooks", &Signer::Standard(KEY.to_vec()).headers("msg_1", &event, unix_now()), &event).status(),
        202
    );
    app.wait_until("the refused attempt", |r| r.len() == 1);

    let listed = |args: &[&str]| -> Vec<String> {
        let page: serde_json::Value =
            serde_json::from_str(&stdout(&setup.run(&[&["events", "list", "--json"], args].concat(), &[]))).unwrap();
        page["events"].as_array().unwrap().iter().map(|e| e["identity"].as_str().unwrap().to_owned()).collect()
    };
    let all = listed(&[]);
    assert_eq!(all, ["msg_1"]);
    let page: serde_json::Value =
        serde_json::from_str(&stdout(&setup.run(&["events", "list", "--json"], &[]))).unwrap();
    let received = UnixTime(page["events"][0]["received_at"].as_i64().unwrap()).rfc3339().to_string();

    assert_eq!(listed(&["--since", &received]), all, "--since is inclusive");
    assert!(listed(&["--until", &received]).is_empty(), "--until is exclusive");
    assert_eq!(listed(&["--since", "2000-01-01", "--until", "2999-01-01"]), all);
    assert!(listed(&["--until", "2000-01-01T00:00:00+02:00"]).is_empty());
    assert_eq!(listed(&["--since", "1h"]), all, "received within the last hour");
    assert!(listed(&["--until", "1h"]).is_empty());
    assert_eq!(listed(&["--since", "2w", "--until", "2999-12-31"]), all);

    let text = stdout(&setup.run(&["events", "list"], &[]));
    let row = text.lines().nth(1).unwrap();
    assert!(row.contains(&format!(" {received} (")), "{text}");
    assert!(row.contains(" ago) ") || row.contains(" (now) "), "relative to now: {text}");
    assert!(row.ends_with("app=dead"), "{text}");

    for (flag, args) in [
        ("--since", vec!["events", "list", "--since", "yesterday"]),
        ("--until", vec!["events", "list", "--until", "1796147038"]),
        ("--since", vec!["events", "stats", "--since", "2026-13-01"]),
        ("--since", vec!["events", "replay", "--since", "5 minutes"]),
    ] {
        let refused = setup.run(&args, &[]);
        assert_eq!(refused.status.code(), Some(2), "{args:?}: {refused:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains(flag) && stderr.contains("RFC 3339"), "{args:?}: {stderr}");
    }

    let replay = |args: &[&str]| stdout(&setup.run(&[&["events", "replay"], args].concat(), &[]));
    assert!(replay(&["--until", "2000-01-01"]).contains("replayed 0 job(s)"));
    assert!(replay(&["--since", "1h"]).contains("replayed 1 job(s)"));
    app.wait_until("the replayed attempt", |r| r.len() == 2);
}
