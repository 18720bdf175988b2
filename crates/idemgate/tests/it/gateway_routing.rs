//! Subscriptions and transforms against the real process: typed subscriptions and jq
//! filters decide per destination when an event is first accepted (a filter that fails
//! on an event makes that destination's job dead, never the delivery), the type may come
//! from a header (GitHub's `X-GitHub-Event`), an event no destination matched is stored,
//! listed as unmatched and replayed to a named destination, an invalid expression is a
//! configuration error naming its key, and a transform's bytes are what the destination
//! gets, signed, the same on a replay, and shown by `events show` beside the original.

use std::{net::SocketAddr, time::Duration};

use idemgate_testkit::{Destination, Received};
use serde_json::{Value, json};

use crate::{
    gateway_dashboard::TOKEN,
    gateway_harness::{Gateway, Setup, Signer},
    harness::{Reply, exchange, unix_now},
};

const KEY: [u8; 32] = [17; 32];
const OUT_KEY: [u8; 32] = [18; 32];

fn signer() -> Signer {
    Signer::Standard(KEY.to_vec())
}

fn stdout(setup: &Setup, args: &[&str]) -> String {
    let output = setup.run(args, &[]);
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

fn json_of(setup: &Setup, args: &[&str]) -> Value {
    serde_json::from_str(&stdout(setup, args)).unwrap()
}

fn send(gateway: &Gateway, identity: &str, body: &str) -> Reply {
    let headers = signer().headers(identity, body.as_bytes(), unix_now());
    gateway.post("hooks", &headers, body.as_bytes())
}

fn identities(received: &[Received]) -> Vec<String> {
    let mut ids: Vec<String> = received.iter().map(|r| r.header("webhook-id").to_owned()).collect();
    ids.sort();
    ids
}

/// The event's jobs as `destination -> state`, once `done` holds for them (bounded wait).
fn jobs_when(setup: &Setup, identity: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..1500 {
        let shown = json_of(setup, &["events", "show", "hooks", identity, "--json"]);
        if done(&shown["jobs"]) {
            return shown;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{identity}: jobs never settled: {}", json_of(setup, &["events", "show", "hooks", identity, "--json"]));
}

fn job<'a>(shown: &'a Value, destination: &str) -> &'a Value {
    shown["jobs"].as_array().unwrap().iter().find(|j| j["destination"] == destination).unwrap_or(&Value::Null)
}

#[test]
fn typed_and_filtered_subscriptions_get_only_their_events_and_a_failing_filter_kills_only_its_job() {
    let app = Destination::start(&[]);
    let billing = Destination::start(&[]);
    let audit = Destination::start(&[]);
    let setup = Setup::new(&format!(
        "[worker]\npoll_interval = \"20ms\"\n\
         [sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\nevent_type = \"/type\"\n\
         destinations = [\"app\", {{ name = \"billing\", types = [\"invoice.*\", \"charge.refunded\"], filter = '.data.amount > 100' }}, \
                         {{ name = \"audit\", filter = '.data.amount + 0 > 0' }}]\n\
         [destinations.app]\nurl = \"{}\"\n[destinations.billing]\nurl = \"{}\"\n[destinations.audit]\nurl = \"{}\"\n",
        app.url(),
        billing.url(),
        audit.url(),
        secret = signer().config_secret(),
    ));
    let gateway = setup.start();
    let events = [
        ("e1", r#"{"type":"invoice.paid","data":{"amount":150}}"#),
        ("e2", r#"{"type":"invoice.paid","data":{"amount":50}}"#),
        ("e3", r#"{"type":"customer.created","data":{"amount":500}}"#),
        ("e4", r#"{"type":"charge.refunded","data":{"amount":"secret-amount"}}"#),
        ("e5", r#"{"data":{"amount":900}}"#),
    ];
    for (identity, body) in events {
        assert_eq!(send(&gateway, identity, body).status(), 202, "{identity}: a filter never fails the delivery");
    }
    app.wait_until("every event at app", |r| r.len() == 5);
    billing.wait_until("the matching events at billing", |r| r.len() == 2);
    audit.wait_until("the events audit's filter passed", |r| r.len() == 4);
    assert_eq!(identities(&billing.received()), ["e1", "e4"], "typed (e3 and untyped e5 never) and filtered (e2 not)");
    assert_eq!(identities(&audit.received()), ["e1", "e2", "e3", "e5"]);

    let shown = jobs_when(&setup, "e4", |jobs| jobs.as_array().is_some_and(|j| j.len() == 3));
    let dead = job(&shown, "audit");
    assert_eq!(dead["state"], "dead", "{shown}");
    assert_eq!(dead["attempts"], 0);
    let reason = dead["last_error"].as_str().unwrap();
    assert!(reason.starts_with("filter failed: "), "{reason}");
    assert!(!reason.contains("secret-amount"), "no payload bytes in the reason: {reason}");
    let e2 = json_of(&setup, &["events", "show", "hooks", "e2", "--json"]);
    assert!(job(&e2, "billing").is_null(), "an unmatched destination gets no job: {e2}");

    assert_eq!(send(&gateway, "e2", events[1].1).status(), 200, "a duplicate");
    let repeated = json_of(&setup, &["events", "show", "hooks", "e2", "--json"]);
    assert_eq!(repeated["jobs"].as_array().unwrap().len(), 2, "a repeat decides nothing again: {repeated}");
    gateway.stop();
}

#[test]
fn the_type_can_come_from_a_header_as_github_sends_it() {
    let app = Destination::start(&[]);
    let github = Signer::GitHub("gh-secret");
    let setup = Setup::new(&format!(
        "[worker]\npoll_interval = \"20ms\"\n\
         [sources.hooks]\nscheme = \"github\"\nsecrets = [\"gh-secret\"]\nevent_type_header = \"X-GitHub-Event\"\n\
         destinations = [{{ name = \"app\", types = [\"push\", \"pull_request\"] }}]\n\
         [destinations.app]\nurl = \"{}\"\n",
        app.url(),
    ));
    let gateway = setup.start();
    for (identity, event) in [("d1", "push"), ("d2", "issues"), ("d3", "pull_request")] {
        let body = format!(r#"{{"ref":"{identity}"}}"#);
        let mut headers = github.headers(identity, body.as_bytes(), unix_now());
        headers.push(("X-GitHub-Event".to_owned(), event.to_owned()));
        assert_eq!(gateway.post("hooks", &headers, body.as_bytes()).status(), 202);
    }
    app.wait_until("push and pull_request", |r| r.len() == 2);
    assert_eq!(identities(&app.received()), ["d1", "d3"]);
    let listed = json_of(&setup, &["events", "list", "--json"]);
    let types: Vec<&str> =
        listed["events"].as_array().unwrap().iter().map(|e| e["event_type"].as_str().unwrap()).collect();
    assert_eq!(types, ["pull_request", "issues", "push"], "the header's type is stored: {listed}");
    gateway.stop();
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
fn an_unmatched_event_is_stored_listed_a_duplicate_when_repeated_and_replayed_to_a_named_destination() {
    let app = Destination::start(&[]);
    let late = Destination::start(&[]);
    let setup = Setup::new(&format!(
        "[worker]\npoll_interval = \"20ms\"\n[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"env:ADMIN_TOKEN\"\n\
         [sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\nevent_type = \"/type\"\n\
         destinations = [{{ name = \"app\", types = [\"order.*\"] }}]\n\
         [destinations.app]\nurl = \"{}\"\n[destinations.late]\nurl = \"{}\"\n",
        app.url(),
        late.url(),
        secret = signer().config_secret(),
    ));
    let mut gateway = Gateway::start(&setup.config(), &[("ADMIN_TOKEN", TOKEN)]);
    let admin_addr = gateway.admin_addr();
    let first = send(&gateway, "u1", r#"{"type":"user.created"}"#);
    assert_eq!(first.status(), 202, "{first:?}");
    assert_eq!(send(&gateway, "o1", r#"{"type":"order.paid"}"#).status(), 202);
    assert_eq!(send(&gateway, "u2", r#"{"type":"user.deleted"}"#).status(), 202);
    app.wait_until("the order", |r| r.len() == 1);

    let unmatched = json_of(&setup, &["events", "list", "--state", "unmatched", "--json"]);
    let listed: Vec<&str> =
        unmatched["events"].as_array().unwrap().iter().map(|e| e["identity"].as_str().unwrap()).collect();
    assert_eq!(listed, ["u2", "u1"], "{unmatched}");
    assert_eq!(unmatched["events"][0]["unmatched"], true);
    let table = stdout(&setup, &["events", "list"]);
    let u1_line = table.lines().find(|l| l.contains(" u1 ")).unwrap();
    assert!(u1_line.trim_end().ends_with("unmatched"), "{table}");
    assert!(stdout(&setup, &["events", "show", "hooks", "u1"]).contains("unmatched"));

    let repeat = send(&gateway, "u1", r#"{"type":"user.created"}"#);
    assert!(repeat.is(200, json!({"status": "duplicate", "event": "u1"})), "a repeat is a duplicate: {repeat:?}");
    let refused = setup.run(&["events", "replay", "--to", "nowhere", "--state", "unmatched"], &[]);
    assert!(!refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("nowhere"), "{refused:?}");
    let without_to = setup.run(&["events", "replay", "--state", "unmatched"], &[]);
    assert!(
        !without_to.status.success() && String::from_utf8_lossy(&without_to.stderr).contains("--to"),
        "{without_to:?}"
    );

    let replayed = stdout(&setup, &["events", "replay", "--to", "late", "--state", "unmatched", "--identity", "u1"]);
    assert!(replayed.starts_with("1 job(s) created and 0 replayed for late"), "{replayed}");
    late.wait_until("u1 at late", |r| r.len() == 1);
    assert_eq!(late.received()[0].body, br#"{"type":"user.created"}"#, "the stored original");
    assert_eq!(late.received()[0].header("webhook-id"), "u1");
    jobs_when(&setup, "u1", |jobs| jobs[0]["state"] == "succeeded");

    let by_admin = admin(admin_addr, "/admin/v1/replay", r#"{"to":"late","state":"unmatched"}"#);
    assert!(by_admin.is(200, json!({"replayed": 1, "created": 1})), "{by_admin:?}");
    late.wait_until("u2 at late", |r| r.len() == 2);
    let bad = admin(admin_addr, "/admin/v1/replay", r#"{"to":"late","destination":"app"}"#);
    assert!((bad.status(), &bad.body()["error"]) == (400, &json!("destination_with_to")), "{bad:?}");
    let unknown = admin(admin_addr, "/admin/v1/events/hooks/u1/replay?to=nowhere", "");
    assert!((unknown.status(), &unknown.body()["error"]) == (400, &json!("unknown_destination")), "{unknown:?}");
    let none_left = json_of(&setup, &["events", "list", "--state", "unmatched", "--json"]);
    assert!(none_left["events"].as_array().unwrap().is_empty(), "{none_left}");
    assert!(app.received().len() == 1, "app got only the order");
    gateway.stop();
}

fn config_error(setup: &Setup, args: &[&str]) -> String {
    let output = setup.run(args, &[]);
    assert!(!output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stderr).unwrap()
}

#[test]
fn an_invalid_expression_or_an_unknown_destination_is_a_config_error_naming_its_key() {
    let destinations = "[destinations.app]\nurl = \"http://127.0.0.1:9/\"\n";
    let source = |entries: &str| {
        format!(
            "[sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [\"whsec_MTIz\"]\ndestinations = {entries}\n{destinations}"
        )
    };
    for (entries, key) in [
        (r#"["app", { name = "app", filter = '.data.amount >' }]"#, "sources.hooks.destinations[1].filter"),
        (r#"["app", { name = "app", filter = 'nosuchfilter' }]"#, "sources.hooks.destinations[1].filter"),
        (r#"["app", { name = "billing", types = ["a.*"] }]"#, "sources.hooks.destinations[1].name"),
        (r#"["app", "billing"]"#, "sources.hooks.destinations[1]"),
        (r#"[{ name = "app", types = [] }]"#, "sources.hooks.destinations[0].types"),
        (r#"[{ name = "app", types = ["a b"] }]"#, "sources.hooks.destinations[0].types[0]"),
        (r#"[{ name = "app", filters = '.' }]"#, "sources.hooks.destinations[0].filters"),
    ] {
        let setup = Setup::new(&source(entries));
        for args in [&["config", "check"][..], &["serve"][..]] {
            let stderr = config_error(&setup, args);
            assert!(stderr.contains(&format!("{key}:")), "{entries} {args:?}: {stderr}");
        }
    }
    let setup = Setup::new(&format!(
        "[sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [\"whsec_MTIz\"]\ndestinations = [\"app\"]\n\
         {destinations}transform = '{{id: .id'\n"
    ));
    assert!(config_error(&setup, &["config", "check"]).contains("destinations.app.transform:"));
}

#[test]
fn a_transform_is_what_the_destination_gets_signed_the_same_bytes_on_a_replay_and_shown_beside_the_original() {
    let app = Destination::start(&[]);
    let strict = Destination::start(&[]);
    let setup = Setup::new(&format!(
        "[worker]\npoll_interval = \"20ms\"\n\
         [sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\ndestinations = [\"app\", \"strict\"]\n\
         [destinations.app]\nurl = \"{}\"\nsecret = {out:?}\ntransform = '{{id: .id, amount: .data.amount, tags: [.tags[] | ascii_upcase]}}'\n\
         [destinations.strict]\nurl = \"{}\"\ntransform = '.items[]'\n",
        app.url(),
        strict.url(),
        secret = signer().config_secret(),
        out = Signer::Standard(OUT_KEY.to_vec()).config_secret(),
    ));
    let gateway = setup.start();
    let original = r#"{ "tags": ["a", "b"], "id": "evt_1", "data": { "amount": 150, "note": "kept" } }"#;
    assert_eq!(send(&gateway, "evt_1", original).status(), 202);
    app.wait_until("the transformed event", |r| r.len() == 1);
    let expected = br#"{"id":"evt_1","amount":150,"tags":["A","B"]}"#;
    let first = &app.received()[0];
    assert_eq!(first.body, expected);
    assert_eq!(first.header("content-type"), "application/json");
    let ts: i64 = first.header("webhook-timestamp").parse().unwrap();
    let signed = idemgate::core::scheme::standard::sign(
        &idemgate::core::Secret::new(OUT_KEY.to_vec()),
        first.header("webhook-id"),
        ts,
        &first.body,
    );
    assert_eq!(first.header("webhook-signature"), signed, "the signature covers the bytes sent");

    let shown = jobs_when(&setup, "evt_1", |jobs| {
        jobs.as_array().is_some_and(|j| j.iter().all(|j| j["state"] == "succeeded" || j["state"] == "dead"))
    });
    let refused = job(&shown, "strict");
    assert_eq!(refused["state"], "dead", "{shown}");
    assert_eq!(
        refused["last_error"], "refused permanently: transform failed: a value of the wrong type (expected iterable)",
        "the kind of error, never the event's values"
    );
    assert!(strict.received().is_empty(), "a failed transform sends nothing");

    let replayed = stdout(&setup, &["events", "replay", "--state", "succeeded", "--identity", "evt_1"]);
    assert!(replayed.starts_with("replayed 1 job"), "{replayed}");
    app.wait_until("the replay", |r| r.len() == 2);
    assert_eq!(app.received()[1].body, first.body, "a replay sends identical bytes");

    let text = stdout(&setup, &["events", "show", "hooks", "evt_1"]);
    let body_line = text.lines().find(|l| l.starts_with("body ")).unwrap_or_else(|| panic!("{text}"));
    assert!(body_line.ends_with(original), "the original bytes, as stored: {text}");
    let sends: Vec<&str> = text.lines().filter(|l| l.starts_with("sends ")).collect();
    assert_eq!(sends.len(), 2, "{text}");
    assert!(
        sends[0].contains("app") && sends[0].ends_with(r#"{"id":"evt_1","amount":150,"tags":["A","B"]}"#),
        "{text}"
    );
    assert!(sends[1].contains("strict") && sends[1].contains("(transform failed: a value of the wrong type"), "{text}");
    gateway.stop();
}
