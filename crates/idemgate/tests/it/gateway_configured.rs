//! The configured schemes and form bodies over real HTTP: an `hmac` source accepts what is
//! signed per its template (checked against a MAC computed here with the `hmac` crate, not
//! by idemgate's signer) and refuses a changed byte and a stale timestamp; a form source
//! verified by a shared token deduplicates on a pointer into its form view, filters by a
//! type read from it, refuses a form that could be read two ways, and forwards the
//! original bytes; a Basic auth source checks its credentials.

use hmac::{Hmac, Mac};
use idemgate_testkit::{Destination, Received};
use serde_json::json;
use sha2::Sha256;

use crate::{
    gateway_harness::{Setup, inbox, unauthenticated, unauthenticated_at},
    harness::unix_now,
};

const SECRET: &str = "acme-secret";

/// `v1=` and the hex HMAC-SHA256 of `{timestamp}.{body}`, computed independently.
fn acme_signature(timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(body);
    format!("v1={}", hex::encode(mac.finalize().into_bytes()))
}

fn acme_headers(timestamp: i64, signature: String) -> Vec<(String, String)> {
    vec![
        ("X-Acme-Timestamp".into(), timestamp.to_string()),
        ("X-Acme-Signature".into(), signature),
        ("Content-Type".into(), "application/json".into()),
    ]
}

#[test]
fn an_hmac_source_verifies_its_template_and_refuses_a_changed_byte_and_a_stale_timestamp() {
    let setup = Setup::new(&format!(
        r#"
[worker]
enabled = false
[sources.acme]
scheme = "hmac"
secrets = [{SECRET:?}]
identity = {{ pointer = "/id" }}
event_type = "/type"
tolerance = "5m"
destinations = ["app"]
[sources.acme.hmac]
algorithm = "sha256"
encoding = "hex"
header = "X-Acme-Signature"
prefix = "v1="
signed = "{{timestamp}}.{{body}}"
timestamp_header = "X-Acme-Timestamp"
[destinations.app]
url = "http://127.0.0.1:9/app"
"#
    ));
    let gateway = setup.start();
    let now = unix_now();
    let body = br#"{"id":"evt_1","type":"order.paid"}"#;
    let accepted = gateway.post("acme", &acme_headers(now, acme_signature(now, body)), body);
    assert!(accepted.is(202, json!({"status": "accepted", "event": "evt_1"})), "{accepted:?}");
    let again = gateway.post("acme", &acme_headers(now + 1, acme_signature(now + 1, body)), body);
    assert!(again.is(200, json!({"status": "duplicate", "event": "evt_1"})), "{again:?}");
    let stored = inbox(&setup.db());
    assert_eq!(stored.receipts, ["evt_1"]);

    let mut changed = body.to_vec();
    changed[9] = b'2';
    let stale = now - 301;
    let mismatch = unauthenticated("signature_mismatch");
    let stale_answer =
        json!({"error": "authentication", "reason": "timestamp_out_of_tolerance", "tolerance_secs": 300});
    let mut unsigned = acme_headers(now, acme_signature(now, &changed));
    unsigned.retain(|(name, _)| name != "X-Acme-Signature");
    let refusals = [
        ("a changed byte", acme_headers(now, acme_signature(now, body)), mismatch.clone()),
        ("a stale timestamp", acme_headers(stale, acme_signature(stale, &changed)), stale_answer),
        ("another timestamp than signed", acme_headers(now, acme_signature(now - 1, &changed)), mismatch),
        (
            "no prefix",
            acme_headers(now, acme_signature(now, &changed)[3..].to_owned()),
            unauthenticated_at("malformed_header", "x-acme-signature"),
        ),
        ("no signature", unsigned, unauthenticated_at("missing_header", "x-acme-signature")),
        (
            "a timestamp that is not a number",
            acme_headers(now, acme_signature(now, &changed))
                .into_iter()
                .map(|(n, v)| (n.clone(), if n == "X-Acme-Timestamp" { "soon".into() } else { v }))
                .collect(),
            unauthenticated_at("malformed_header", "x-acme-timestamp"),
        ),
    ];
    for (what, headers, answer) in refusals {
        let reply = gateway.post("acme", &headers, &changed);
        assert!(reply.is(401, answer), "{what}: {reply:?}");
        let text = reply.body().to_string();
        assert!(!text.contains(SECRET) && !text.contains("evt_2") && !text.contains("v1="), "{what}: {text}");
    }
    assert_eq!(inbox(&setup.db()), stored, "a refusal stored nothing");
}

const TOKEN: &str = "twilio-like-token";

fn form_headers(token: &str) -> Vec<(String, String)> {
    vec![("X-Token".into(), token.into()), ("Content-Type".into(), "application/x-www-form-urlencoded".into())]
}

#[test]
fn a_form_source_deduplicates_on_its_view_filters_by_type_and_forwards_the_original_bytes() {
    let recorder = Destination::start(&[]);
    let setup = Setup::new(&format!(
        r#"
[worker]
poll_interval = "50ms"
[sources.sms]
scheme = "token"
secrets = [{TOKEN:?}]
body = "form"
identity = {{ pointer = "/MessageSid" }}
event_type = "/SmsStatus"
destinations = [{{ name = "app", types = ["received"], filter = '.Body | startswith("hello")' }}]
[sources.sms.token]
header = "X-Token"
[sources.basic]
scheme = "basic"
secrets = ["hooks:s3cret"]
identity = {{ pointer = "/id" }}
destinations = ["app"]
[destinations.app]
url = "{}"
timeout = "1s"
"#,
        recorder.url()
    ));
    let gateway = setup.start();
    let first = b"MessageSid=SM1&SmsStatus=received&Body=hello+w%C3%B6rld&To=%2B15550001111";
    let accepted = gateway.post("sms", &form_headers(TOKEN), first);
    assert!(accepted.is(202, json!({"status": "accepted", "event": "SM1"})), "{accepted:?}");
    let again = gateway.post("sms", &form_headers(TOKEN), first);
    assert!(again.is(200, json!({"status": "duplicate", "event": "SM1"})), "{again:?}");
    let changed = b"MessageSid=SM1&SmsStatus=received&Body=hello+there";
    let conflict = gateway.post("sms", &form_headers(TOKEN), changed);
    assert!(conflict.is(409, json!({"error": "event_conflict"})), "{conflict:?}");
    for (sid, status, text) in [("SM2", "sent", "hello"), ("SM3", "received", "bye")] {
        let other = format!("MessageSid={sid}&SmsStatus={status}&Body={text}");
        let reply = gateway.post("sms", &form_headers(TOKEN), other.as_bytes());
        assert_eq!(reply.status(), 202, "{sid}: {reply:?}");
    }

    let refusals = [
        ("a duplicate key", form_headers(TOKEN), &b"MessageSid=SM4&MessageSid=SM5"[..], 400, "duplicate_key"),
        ("bad percent-encoding", form_headers(TOKEN), b"MessageSid=SM4&Body=100%", 400, "invalid_percent_encoding"),
        ("not utf-8", form_headers(TOKEN), b"MessageSid=SM4&Body=%FF", 400, "invalid_utf8"),
    ];
    for (what, headers, sent, status, reason) in refusals {
        let reply = gateway.post("sms", &headers, sent);
        assert!(reply.is(status, json!({"error": "invalid_form", "reason": reason})), "{what}: {reply:?}");
    }
    let wrong = gateway.post("sms", &form_headers("twilio-like-tokem"), b"MessageSid=SM4");
    assert!(wrong.is(401, unauthenticated("signature_mismatch")), "{wrong:?}");
    let missing = gateway.post("sms", &form_headers(TOKEN), b"Body=no+sid");
    assert!(
        missing.is(422, json!({"error": "event_contract", "field": "identity", "pointer": "/MessageSid"})),
        "{missing:?}"
    );

    let basic = |credentials: &str| {
        use base64::Engine;
        let value = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials));
        gateway.post("basic", &[("Authorization".into(), value)], br#"{"id":"b1"}"#)
    };
    assert!(basic("hooks:s3cret").is(202, json!({"status": "accepted", "event": "b1"})));
    assert!(basic("hooks:s3cre").is(401, unauthenticated("signature_mismatch")));
    let anonymous = gateway.post("basic", &[], br#"{"id":"b2"}"#);
    assert!(anonymous.is(401, unauthenticated_at("missing_header", "authorization")), "{anonymous:?}");

    recorder.wait_until("the two deliveries", |r| r.len() == 2);
    let received: Vec<Received> = recorder.received();
    let sms: Vec<_> = received.iter().filter(|r| r.body != br#"{"id":"b1"}"#).collect();
    assert_eq!(sms.len(), 1, "only SM1 is a received hello: {received:?}");
    assert_eq!(sms[0].body, first, "the original bytes, not the view");
    assert_eq!(sms[0].header("content-type"), "application/x-www-form-urlencoded");
    let stored = inbox(&setup.db());
    assert_eq!(stored.receipts, ["SM1", "SM2", "SM3", "b1"]);
    let routed: Vec<_> =
        stored.jobs.iter().map(|(identity, destination, _)| (identity.as_str(), destination.as_str())).collect();
    assert_eq!(routed, [("SM1", "app"), ("b1", "app")], "SM2's type and SM3's body are filtered out");
}
