//! Every scheme over real HTTP: accepted with one job per destination, rotation, a
//! redelivery as duplicate, other bytes as conflict, and each rejection storing nothing.

use serde_json::json;

use crate::{
    gateway_harness::{Setup, Signer, body, inbox, unauthenticated, unauthenticated_at},
    harness::unix_now,
};

/// Two active secrets (rotation) plus one that is not configured.
struct Case {
    old: Signer,
    new: Signer,
    unknown: Signer,
}

fn config(case: &Case) -> String {
    format!(
        r#"
[worker]
# What is stored is compared exactly, so nothing may be delivered meanwhile.
enabled = false
[sources.src]
scheme = "{}"
secrets = [{:?}, {:?}]
event_type = "/type"
destinations = ["app", "audit"]
[destinations.app]
url = "http://127.0.0.1:9/app"
[destinations.audit]
url = "http://127.0.0.1:9/audit"
"#,
        case.old.scheme(),
        case.new.config_secret(),
        case.old.config_secret(),
    )
}

fn exercise(case: &Case) {
    let setup = Setup::new(&config(case));
    let gateway = setup.start();
    let now = unix_now();
    let (first, second) = (body("evt_1", "t.created"), body("evt_2", "t.created"));

    let accepted = gateway.post("src", &case.old.headers("evt_1", &first, now), &first);
    assert!(accepted.is(202, json!({"status": "accepted", "event": "evt_1"})), "{accepted:?}");
    let rotated = gateway.post("src", &case.new.headers("evt_2", &second, now), &second);
    assert!(rotated.is(202, json!({"status": "accepted", "event": "evt_2"})), "new secret: {rotated:?}");
    let stored = inbox(&setup.db());
    assert_eq!(stored.receipts, ["evt_1", "evt_2"]);
    assert_eq!(stored.jobs.len(), 4, "one job per destination: {:?}", stored.jobs);
    assert!(stored.jobs.iter().all(|(_, _, state)| state == "pending"));

    let redelivery = gateway.post("src", &case.new.headers("evt_1", &first, now + 1), &first);
    assert!(redelivery.is(200, json!({"status": "duplicate", "event": "evt_1"})), "{redelivery:?}");
    let other = body("evt_1", "t.updated");
    let conflict = gateway.post("src", &case.old.headers("evt_1", &other, now), &other);
    assert!(conflict.is(409, json!({"error": "event_conflict"})), "{conflict:?}");

    let third = body("evt_3", "t.created");
    let tampered = body("evt_3", "t.createX");
    let (signature, missing): (Vec<_>, Vec<_>) = case
        .old
        .headers("evt_3", &third, now)
        .into_iter()
        .partition(|(name, _)| name.contains("signature") || name.contains("hmac"));
    let [(signature, _)] = &signature[..] else { panic!("{}: one signature header: {signature:?}", case.old.scheme()) };
    let mismatch = unauthenticated("signature_mismatch");
    let mut rejections = vec![
        ("unknown secret", case.unknown.headers("evt_3", &third, now), third.clone(), mismatch.clone()),
        ("tampered body", case.old.headers("evt_3", &third, now), tampered, mismatch),
        (
            "missing signature header",
            missing,
            third.clone(),
            unauthenticated_at("missing_header", &signature.to_ascii_lowercase()),
        ),
    ];
    if case.old.has_timestamp() {
        let stale = json!({"error": "authentication", "reason": "timestamp_out_of_tolerance", "tolerance_secs": 300});
        rejections.push(("stale timestamp", case.old.headers("evt_3", &third, now - 3600), third.clone(), stale));
    }
    for (what, headers, sent, answer) in rejections {
        let reply = gateway.post("src", &headers, &sent);
        assert!(reply.is(401, answer), "{}: {what}: {reply:?}", case.old.scheme());
    }
    assert_eq!(inbox(&setup.db()), stored, "{}: a rejection or a repeat changed the store", case.old.scheme());
}

#[test]
fn standard_webhooks() {
    exercise(&Case {
        old: Signer::Standard(vec![1; 32]),
        new: Signer::Standard(vec![2; 32]),
        unknown: Signer::Standard(vec![3; 32]),
    });
}

#[test]
fn standard_webhooks_ed25519() {
    exercise(&Case { old: Signer::Ed25519([1; 32]), new: Signer::Ed25519([2; 32]), unknown: Signer::Ed25519([3; 32]) });
}

#[test]
fn github() {
    exercise(&Case {
        old: Signer::GitHub("old secret"),
        new: Signer::GitHub("new secret"),
        unknown: Signer::GitHub("x"),
    });
}

#[test]
fn stripe() {
    exercise(&Case {
        old: Signer::Stripe("whsec_old"),
        new: Signer::Stripe("whsec_new"),
        unknown: Signer::Stripe("whsec_other"),
    });
}

#[test]
fn shopify() {
    exercise(&Case { old: Signer::Shopify("old"), new: Signer::Shopify("new"), unknown: Signer::Shopify("other") });
}

#[test]
fn slack() {
    exercise(&Case { old: Signer::Slack("old"), new: Signer::Slack("new"), unknown: Signer::Slack("other") });
}

#[test]
fn demo_webhook_v1() {
    exercise(&Case { old: Signer::Demo([1; 32]), new: Signer::Demo([2; 32]), unknown: Signer::Demo([3; 32]) });
}
