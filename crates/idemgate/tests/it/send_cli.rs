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

#[test]
fn exhausted_retries_have_their_own_exit_code() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/orders", listener.local_addr().unwrap());
    drop(listener);
    let output = send(&[&url, "-d", "{}", "--max-attempts", "2", "--verbose"], &[]);
    assert_eq!(output.status.code(), Some(4), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stderr).matches("connection failed").count(), 2);
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

#[test]
fn repeat_mode_sends_many_operations() {
    let api = Api::start(Mode::Layer, false);
    let url = format!("{}/orders", api.base_url());
    let output = send(&[&url, "-d", r#"{"qty":1}"#, "--repeat", "40", "--concurrency", "4"], &[]);
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains(r#"{"succeeded": 40}"#), "{output:?}");
    assert_eq!(api.calls("orders"), 40);
}
