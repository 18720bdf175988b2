//! `idemgate send` from the command line, against the gateway and an API behind the layer.

use std::process::{Command, Output};

use crate::{
    gateway_harness::{Setup, Signer, idemgate_bin, inbox},
    idempotency_suite::{Api, Mode},
};

fn send(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(idemgate_bin()).arg("send").args(args).envs(env.iter().copied()).output().unwrap()
}

fn source() -> (Setup, String) {
    let secret = Signer::Standard(vec![6; 32]).config_secret();
    let setup = Setup::new("[sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [\"env:HOOK_SECRET\"]\n");
    (setup, secret)
}

#[test]
fn a_signed_event_sent_twice_with_one_event_id_gives_one_receipt() {
    let (setup, secret) = source();
    let gateway = crate::gateway_harness::Gateway::start(&setup.config(), &[("HOOK_SECRET", &secret)]);
    let url = format!("http://{}/in/hooks", gateway.addr);
    let args = [
        "--scheme",
        "standard-webhooks",
        "--secret",
        "env:HOOK_SECRET",
        "--event-id",
        "msg_cli",
        "-d",
        r#"{"type":"t"}"#,
    ];
    let mut full = vec![url.as_str()];
    full.extend(args);
    let first = send(&full, &[("HOOK_SECRET", &secret)]);
    assert!(first.status.success(), "{first:?}");
    assert_eq!(String::from_utf8_lossy(&first.stdout), "202\n{\"status\":\"accepted\",\"event\":\"msg_cli\"}\n");
    let again = send(&full, &[("HOOK_SECRET", &secret)]);
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).starts_with("200\n{\"status\":\"duplicate\""));
    assert_eq!(inbox(&setup.db()).receipts, ["msg_cli"]);
}

#[test]
fn a_rejection_is_not_retried_and_has_its_own_exit_code() {
    let (setup, secret) = source();
    let gateway = crate::gateway_harness::Gateway::start(&setup.config(), &[("HOOK_SECRET", &secret)]);
    let wrong = Signer::Standard(vec![7; 32]).config_secret();
    let url = format!("http://{}/in/hooks", gateway.addr);
    let output = send(
        &[&url, "--scheme", "standard-webhooks", "--secret", "env:WRONG", "-d", "{}", "--verbose"],
        &[("WRONG", &wrong)],
    );
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches("attempt ").count(), 1, "{stderr}");
    assert!(!stderr.contains(&wrong) && !String::from_utf8_lossy(&output.stdout).contains(&wrong));
}

/// A URL on 127.0.0.1 where nothing listens.
fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/orders", listener.local_addr().unwrap());
    drop(listener);
    url
}

#[test]
fn exhausted_retries_have_their_own_exit_code_and_say_what_happened() {
    let url = dead_url();
    let output = send(&[&url, "-d", "{}", "--max-attempts", "2", "--verbose"], &[]);
    assert_eq!(output.status.code(), Some(4), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches("cannot connect: connection refused").count(), 2, "{stderr}");
    assert!(
        stderr.ends_with(&format!("idemgate: cannot connect to {url}: connection refused (2 attempts)\n")),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "no status was printed for no answer: {output:?}");
}

#[test]
fn no_answer_in_json_names_the_reason() {
    let output = send(&[&dead_url(), "-d", "{}", "--max-attempts", "1", "--json"], &[]);
    assert_eq!(output.status.code(), Some(4), "{output:?}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["outcome"], "gave_up");
    assert_eq!(report["status"], serde_json::Value::Null);
    assert_eq!(report["error"], "cannot connect: connection refused");
    assert_eq!(report["attempts"], 1);
}

#[test]
fn a_secret_without_a_scheme_is_bad_usage_and_sends_nothing() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/in/hooks", listener.local_addr().unwrap());
    let output = send(&[&url, "--secret", "env:HOOK_SECRET", "-d", "{}"], &[("HOOK_SECRET", "whsec_x")]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error: the following required arguments were not provided"), "{stderr}");
    assert!(stderr.contains("--scheme <SCHEME>") && stderr.contains("--secret <SECRET>"), "{stderr}");
    assert!(listener.accept().is_err(), "a request was sent");
}

#[test]
fn an_unknown_scheme_is_bad_usage_listing_the_registry_s_signing_schemes() {
    let output = send(&[&dead_url(), "--scheme", "svix", "--secret", "env:S"], &[("S", "whsec_x")]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("invalid value 'svix' for '--scheme <SCHEME>'"), "{stderr}");
    for scheme in idemgate::core::scheme::SCHEMES {
        let listed =
            stderr.contains(&format!(" {},", scheme.name())) || stderr.contains(&format!(" {}]", scheme.name()));
        assert_eq!(listed, scheme.secret_signs(), "{}: {stderr}", scheme.name());
    }
}

#[test]
fn separate_invocations_share_an_operation_through_idempotency_key() {
    let api = Api::start(Mode::Layer, false);
    let url = format!("{}/orders", api.base_url());
    for _ in 0..2 {
        let output = send(&[&url, "-d", r#"{"qty":4}"#, "--idempotency-key", "shared-op"], &[]);
        assert!(output.status.success(), "{output:?}");
        assert!(String::from_utf8_lossy(&output.stdout).starts_with("201\n"));
    }
    assert_eq!(api.calls("orders"), 1);
    let fresh = send(&[&url, "-d", r#"{"qty":4}"#], &[]);
    assert!(fresh.status.success());
    assert_eq!(api.calls("orders"), 2, "without a key each invocation is its own operation");
}

/// The count on the row labelled `label` of `send --repeat`'s table.
fn row(table: &str, label: &str) -> Option<usize> {
    table.lines().find_map(|line| line.strip_prefix(label)?.trim().parse().ok())
}

#[test]
fn repeat_mode_sends_many_operations_and_counts_them_in_a_table() {
    let api = Api::start(Mode::Layer, false);
    let url = format!("{}/orders", api.base_url());
    let output = send(&[&url, "-d", r#"{"qty":1}"#, "--repeat", "40", "--concurrency", "4"], &[]);
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(table.starts_with("40 operations in "), "{table}");
    assert_eq!(
        (row(&table, "succeeded"), row(&table, "rejected"), row(&table, "gave up")),
        (Some(40), Some(0), Some(0))
    );
    assert_eq!(row(&table, "201"), Some(40), "{table}");
    assert!(!table.contains('{'), "Debug output: {table}");
    assert_eq!(api.calls("orders"), 40);
}

#[test]
fn repeat_mode_reports_json_and_the_reasons_for_no_answer() {
    let api = Api::start(Mode::Layer, false);
    let url = format!("{}/orders", api.base_url());
    let output = send(&[&url, "-d", r#"{"qty":1}"#, "--repeat", "5", "--json"], &[]);
    assert!(output.status.success(), "{output:?}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["operations"], 5);
    assert_eq!(report["outcomes"], serde_json::json!({"succeeded": 5, "rejected": 0, "gave_up": 0}));
    assert_eq!(report["statuses"], serde_json::json!({"201": 5}));

    let dead = send(&[&dead_url(), "-d", "{}", "--repeat", "3", "--max-attempts", "1"], &[]);
    assert_eq!(dead.status.code(), Some(4), "{dead:?}");
    let table = String::from_utf8(dead.stdout).unwrap();
    assert_eq!(row(&table, "gave up"), Some(3), "{table}");
    assert_eq!(row(&table, "none: cannot connect: connection refused"), Some(3), "{table}");
}

/// Sources signed in four ways: a configured `hmac` that signs the URL registered with the
/// provider (not the one the gateway sees, so signing the URL posted to would be refused),
/// the catalog's Stripe, a shared token and Basic.
const CONFIGURED: &str = r#"
[worker]
enabled = false
[sources.acme]
scheme = "hmac"
secrets = ["env:ACME_SECRET", "acme-old"]
identity = { pointer = "/id" }
signed_url = "https://hooks.example.test/acme"
[sources.acme.hmac]
algorithm = "sha256"
encoding = "hex"
header = "X-Acme-Signature"
prefix = "v1="
signed = "{url}|{timestamp}.{body}"
timestamp_header = "X-Acme-Timestamp"
[sources.pay]
scheme = "stripe"
secrets = ["env:PAY_SECRET"]
[sources.sms]
scheme = "token"
secrets = ["env:SMS_TOKEN"]
identity = { pointer = "/id" }
[sources.sms.token]
header = "X-Token"
[sources.basic]
scheme = "basic"
secrets = ["hooks:s3cret"]
identity = { pointer = "/id" }
[sources.keyed]
scheme = "standard-webhooks-ed25519"
secrets = ["env:ED_KEY"]
"#;

#[test]
fn a_source_of_the_configuration_signs_as_its_provider_does_and_a_refusal_says_why() {
    let setup = Setup::new(CONFIGURED);
    let public = Signer::Ed25519([3; 32]).config_secret();
    let env =
        [("ACME_SECRET", "acme-new"), ("PAY_SECRET", "whsec_pay"), ("SMS_TOKEN", "sms-token"), ("ED_KEY", &public)];
    let gateway = crate::gateway_harness::Gateway::start(&setup.config(), &env);
    let send_as = |source: &str, id: &str, extra: &[&str], env: &[(&str, &str)]| {
        let url = format!("http://{}/in/{source}", gateway.addr);
        let data = format!(r#"{{"id":"{id}","type":"t"}}"#);
        let mut args = vec!["send", url.as_str(), "--source", source, "-d", data.as_str()];
        args.extend(extra);
        setup.run(&args, env)
    };
    for (source, id) in [("acme", "a1"), ("pay", "evt_p1"), ("sms", "s1"), ("basic", "b1")] {
        let sent = send_as(source, id, &[], &env);
        assert!(sent.status.success(), "{source}: {sent:?}");
        let stdout = String::from_utf8_lossy(&sent.stdout).into_owned();
        assert_eq!(stdout, format!("202\n{{\"status\":\"accepted\",\"event\":\"{id}\"}}\n"), "{source}");
    }
    assert_eq!(inbox(&setup.db()).receipts.len(), 4);

    // --secret replaces the source's own: the old one still verifies, a wrong one is refused
    // with the reason, and neither it nor the body is in the answer.
    let with = |name, value| env.iter().copied().chain([(name, value)]).collect::<Vec<_>>();
    let old = send_as("acme", "a2", &["--secret", "env:OLD"], &with("OLD", "acme-old"));
    assert!(old.status.success(), "{old:?}");
    let wrong = send_as("acme", "a3", &["--secret", "env:WRONG"], &with("WRONG", "acme-wrong"));
    assert_eq!(wrong.status.code(), Some(3), "{wrong:?}");
    let stdout = String::from_utf8_lossy(&wrong.stdout).into_owned();
    let (status, answer) = stdout.split_once('\n').unwrap();
    assert_eq!(status, "401");
    let answer: serde_json::Value = serde_json::from_str(answer).unwrap();
    assert_eq!(answer, serde_json::json!({"error": "authentication", "reason": "signature_mismatch"}));
    assert!(!stdout.contains("acme-wrong") && !stdout.contains("a3"), "{stdout}");

    // A source the configuration lacks is named, and nothing is sent.
    let unknown = setup.run(&["send", "http://127.0.0.1:9/in/x", "--source", "nope", "-d", "{}"], &env);
    assert_eq!(unknown.status.code(), Some(1), "{unknown:?}");
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no source \"nope\""), "{unknown:?}");
    // A receiver holds only the public key of an ed25519 source, which cannot sign.
    let keyed = send_as("keyed", "k1", &[], &env);
    assert_eq!(keyed.status.code(), Some(1), "{keyed:?}");
    let stderr = String::from_utf8_lossy(&keyed.stderr);
    assert!(stderr.contains("source keyed (standard-webhooks-ed25519) deliveries cannot be signed"), "{stderr}");
    assert!(!stderr.contains(&public), "{stderr}");
    assert_eq!(inbox(&setup.db()).receipts.len(), 5);
}
