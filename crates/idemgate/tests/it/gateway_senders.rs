//! Senders and identities through the real gateway: the `svix-*` spelling of Standard
//! Webhooks, a GitHub delivery re-sent under another delivery id, and two sources that
//! share a destination and an identity.

use std::time::Duration;

use idemgate::core::{Secret, scheme::standard};
use idemgate_testkit::{Destination, Received};
use serde_json::json;

use crate::{
    gateway_harness::{Setup, Signer, forwarding},
    harness::unix_now,
};

const KEY: [u8; 32] = [5; 32];

/// Headers of a delivery signed the way Svix sends it: only `svix-*` names.
fn svix_headers(id: &str, body: &[u8]) -> Vec<(String, String)> {
    let now = unix_now();
    let signature = standard::sign(&Secret::new(KEY.to_vec()), id, now, body);
    vec![
        ("svix-id".into(), id.into()),
        ("svix-timestamp".into(), now.to_string()),
        ("svix-signature".into(), signature),
        ("Content-Type".into(), "application/json".into()),
    ]
}

/// Waits a little past the first delivery so that a second one would have arrived.
fn settle(recorder: &Destination, count: usize) -> Vec<Received> {
    recorder.wait_until("the deliveries", |r| r.len() >= count);
    std::thread::sleep(Duration::from_millis(500));
    recorder.received()
}

#[test]
fn a_svix_spelled_delivery_is_accepted_forwarded_and_its_redelivery_is_a_duplicate() {
    let recorder = Destination::start(&[]);
    let setup = Setup::new(&forwarding(&Signer::Standard(KEY.to_vec()), &recorder, "", ""));
    let gateway = setup.start();
    let body = br#"{"type":"invoice.paid","data":{"n":1}}"#;

    let first = gateway.post("hooks", &svix_headers("msg_svix_1", body), body);
    assert!(first.is(202, json!({"status": "accepted", "event": "msg_svix_1"})), "{first:?}");
    let again = gateway.post("hooks", &svix_headers("msg_svix_1", body), body);
    assert!(again.is(200, json!({"status": "duplicate", "event": "msg_svix_1"})), "{again:?}");

    let received = settle(&recorder, 1);
    assert_eq!(received.len(), 1, "forwarded once");
    assert_eq!(received[0].header("webhook-id"), "msg_svix_1");
    assert_eq!(received[0].body, body);
}

fn two_sources(recorder: &Destination, with_second: bool) -> String {
    let secret = Signer::Standard(KEY.to_vec()).config_secret();
    let second =
        format!("[sources.beta]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\ndestinations = [\"app\"]\n");
    format!(
        r#"
[worker]
poll_interval = "50ms"
[sources.alpha]
scheme = "standard-webhooks"
secrets = [{secret:?}]
destinations = ["app"]
{second}
[destinations.app]
url = "{url}"
timeout = "1s"
"#,
        second = if with_second { second.as_str() } else { "" },
        url = recorder.url(),
    )
}

fn outgoing(request: &Received) -> (String, String, String) {
    let header = |name: &str| request.headers.get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    (header("webhook-id"), header("idemgate-source"), header("idemgate-event-id"))
}

#[test]
fn two_sources_sharing_a_destination_and_an_identity_reach_it_under_two_ids_that_survive_a_config_change() {
    let recorder = Destination::start(&[]);
    let setup = Setup::new(&two_sources(&recorder, true));
    let gateway = setup.start();
    let signer = Signer::Standard(KEY.to_vec());
    for (source, body) in [("alpha", &br#"{"from":"alpha"}"#[..]), ("beta", br#"{"from":"beta"}"#)] {
        let reply = gateway.post(source, &signer.headers("evt_shared", body, unix_now()), body);
        assert_eq!(reply.status(), 202, "{source}: {reply:?}");
    }
    let mut received: Vec<_> = settle(&recorder, 2).iter().map(|r| (outgoing(r), r.body.clone())).collect();
    received.sort();
    let ids: Vec<_> =
        received.iter().map(|((id, source, event), _)| (id.as_str(), source.as_str(), event.as_str())).collect();
    assert_eq!(ids, [("alpha:evt_shared", "alpha", "evt_shared"), ("beta:evt_shared", "beta", "evt_shared")]);
    assert_eq!(received[0].1, br#"{"from":"alpha"}"#);
    gateway.stop();

    // Without the second source, alpha alone feeds the destination: its stored event keeps
    // the id it was first sent with, on a replay after the restart.
    setup.write_config(&two_sources(&recorder, false));
    let gateway = setup.start();
    let replay = setup.run(&["events", "replay", "--source", "alpha", "--state", "succeeded"], &[]);
    assert!(replay.status.success(), "{replay:?}");
    let after = settle(&recorder, 3);
    assert_eq!(after.len(), 3, "replayed once");
    assert_eq!(outgoing(&after[2]), ("alpha:evt_shared".to_owned(), "alpha".to_owned(), "evt_shared".to_owned()));
    drop(gateway);
}

#[test]
fn a_github_delivery_re_sent_under_another_delivery_id_is_a_duplicate_forwarded_once() {
    let recorder = Destination::start(&[]);
    let signer = Signer::GitHub("gh secret");
    let setup = Setup::new(&forwarding(&signer, &recorder, "", ""));
    let gateway = setup.start();
    let body = br#"{"action":"opened","number":7}"#;
    let captured = signer.headers("d-original", body, unix_now());
    let first = gateway.post("hooks", &captured, body);
    assert!(first.is(202, json!({"status": "accepted", "event": "d-original"})), "{first:?}");

    let mut resent = captured.clone();
    for (name, value) in &mut resent {
        if name.eq_ignore_ascii_case("x-github-delivery") {
            *value = "d-forged".into();
        }
    }
    assert_ne!(resent, captured);
    let replayed = gateway.post("hooks", &resent, body);
    assert!(replayed.is(200, json!({"status": "duplicate", "event": "d-original"})), "{replayed:?}");

    let received = settle(&recorder, 1);
    assert_eq!(received.len(), 1, "forwarded once");
    assert_eq!(received[0].header("idemgate-event-id"), "d-original");
    assert_eq!(crate::gateway_harness::inbox(&setup.db()).receipts, ["d-original"]);
}

fn load(source: &str) -> (idemgate::config::Config, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idemgate.toml");
    let text = format!(
        "[store]\npath = \"{}\"\n[sources.src]\n{source}\nsecrets = [\"file:secret\"]\n",
        dir.path().join("s.sqlite3").display()
    );
    std::fs::write(&path, text).unwrap();
    std::fs::write(dir.path().join("secret"), "whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=").unwrap();
    let (config, warnings) = idemgate::config::load(&path, Vec::new()).unwrap();
    (config, warnings.into_iter().map(|w| w.0).collect())
}

#[test]
fn body_receipts_are_on_by_default_where_the_identity_is_not_signed_and_an_unsigned_identity_header_is_warned_about() {
    let cases = [
        ("scheme = \"github\"", true, false),
        ("scheme = \"shopify\"", true, false),
        ("scheme = \"github\"\ndedupe_body = false", false, false),
        ("scheme = \"standard-webhooks\"", false, false),
        ("scheme = \"stripe\"", false, false),
        ("scheme = \"standard-webhooks\"\nidentity = { header = \"svix-id\" }", false, false),
        ("scheme = \"standard-webhooks\"\nidentity = { header = \"x-request-id\" }", true, true),
        ("scheme = \"github\"\nidentity = { header = \"X-GitHub-Delivery\" }", true, true),
        ("scheme = \"stripe\"\nidentity = { pointer = \"/data/object/id\" }", false, false),
    ];
    for (source, dedupe, warned) in cases {
        let (config, warnings) = load(source);
        assert_eq!(config.sources[0].dedupe_body, dedupe, "{source}");
        let about_identity: Vec<_> = warnings.iter().filter(|w| w.contains("sources.src.identity")).collect();
        assert_eq!(!about_identity.is_empty(), warned, "{source}: {warnings:?}");
        assert!(about_identity.iter().all(|w| w.contains("not covered by the") && w.contains("dedupe_body is on")));
    }
}
