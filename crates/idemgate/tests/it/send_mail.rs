//! `idemgate send smtp://…` on the real binary against the recording upstream on aiosmtpd:
//! the key is written into the message once and every retry (after a `451`, a lost reply,
//! an upstream that was down) carries it; a `5xx` is final after one attempt; STARTTLS and
//! AUTH; secrets never printed.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use idemgate_testkit::smtp::{Fail, Options, Upstream};
use serde_json::Value;

use crate::gateway_harness::idemgate_bin;

const MESSAGE: &str = "From: app@example.test\nTo: user@example.test\nSubject: invoice 12\n\nattached\n";

struct Mail {
    dir: tempfile::TempDir,
}

impl Mail {
    fn new(message: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("msg.eml"), message).unwrap();
        Self { dir }
    }

    fn file(&self) -> PathBuf {
        self.dir.path().join("msg.eml")
    }

    fn command(&self, url: &str, extra: &[&str]) -> Command {
        let mut command = Command::new(idemgate_bin());
        command
            .args(["send", url, "--from", "app@example.test", "--to", "user@example.test", "--data-file"])
            .arg(self.file())
            .args(extra)
            .stdin(Stdio::null());
        command
    }

    fn send(&self, upstream: &Upstream, extra: &[&str]) -> Output {
        let url = format!("smtp://127.0.0.1:{}", upstream.port());
        let mut args = vec!["--starttls", "never"];
        args.extend(extra);
        self.command(&url, &args).output().unwrap()
    }
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("not JSON: {output:?}"))
}

#[test]
fn a_message_arrives_once_with_its_generated_key_in_the_header() {
    let upstream = Upstream::start(Options::default());
    let mail = Mail::new(MESSAGE);
    let output = mail.send(&upstream, &["--json"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report = json(&output);
    assert_eq!(report["outcome"], "succeeded");
    assert_eq!(report["code"], 250);
    assert_eq!(report["attempts"], 1);
    let key = report["idempotency_key"].as_str().unwrap();
    let received = upstream.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].header("Idempotency-Key").as_deref(), Some(key));
    assert_eq!(received[0].data, format!("Idempotency-Key: {key}\r\n{}", MESSAGE.replace('\n', "\r\n")));
    assert_eq!(received[0].rcpt_tos, ["user@example.test"]);

    let plain = mail.send(&upstream, &[]);
    assert_eq!(String::from_utf8_lossy(&plain.stdout), "250 2.0.0 OK queued\n", "{plain:?}");
    let second_key = upstream.received()[1].header("Idempotency-Key").unwrap();
    assert_ne!(second_key, key, "each invocation is its own operation unless --idempotency-key says otherwise");
}

#[test]
fn a_temporary_failure_is_retried_with_the_same_key_until_the_restarted_upstream_takes_it() {
    let mut upstream = Upstream::start(Options::default().fail(Fail::Temporary));
    let mail = Mail::new(MESSAGE);
    let url = format!("smtp://127.0.0.1:{}", upstream.port());
    let child = mail
        .command(&url, &["--starttls", "never", "--max-attempts", "12", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while upstream.attempts().is_empty() {
        assert!(std::time::Instant::now() < deadline, "no attempt reached the upstream");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    upstream.restart_with(Options::default());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let key = json(&output)["idempotency_key"].as_str().unwrap().to_owned();
    let attempts = upstream.attempts();
    assert!(attempts.len() >= 2, "{attempts:?}");
    assert!(attempts[0].answer.starts_with("451"), "{attempts:?}");
    assert!(attempts.iter().all(|a| a.header("Idempotency-Key").as_deref() == Some(key.as_str())), "{attempts:?}");
    assert!(attempts.iter().all(|a| a.data == attempts[0].data), "every attempt submits the same bytes");
    let received = upstream.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].header("Idempotency-Key"), Some(key));
}

#[test]
fn a_lost_250_is_resubmitted_with_the_same_key() {
    let upstream = Upstream::start(Options::default().lose_reply_times(1));
    let mail = Mail::new(MESSAGE);
    let output = mail.send(&upstream, &["--verbose"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("attempt 1: connection lost") && stderr.contains("attempt 2: 250"), "{stderr}");
    let received = upstream.received();
    assert_eq!(received.len(), 2);
    assert_eq!(
        received[0].data, received[1].data,
        "the same message with the same key: a deduplicating server sends it once"
    );
}

#[test]
fn a_permanent_refusal_is_final_after_one_attempt_with_the_rejected_exit_code() {
    let upstream = Upstream::start(Options::default().fail(Fail::Permanent));
    let output = Mail::new(MESSAGE).send(&upstream, &["--max-attempts", "5"]);
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("554 5.7.1"), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("refused the message: 554"), "{output:?}");
    assert_eq!(upstream.attempts().len(), 1);
    assert!(upstream.received().is_empty());
}

#[test]
fn a_dead_upstream_gives_up_with_its_exit_code_and_names_the_key_to_go_on_with() {
    let mut upstream = Upstream::start(Options::default());
    upstream.stop();
    let output = Mail::new(MESSAGE).send(&upstream, &["--max-attempts", "2", "--idempotency-key", "inv-12"]);
    assert_eq!(output.status.code(), Some(4), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("connection refused (2 attempts)") && stderr.contains("--idempotency-key inv-12"),
        "{stderr}"
    );
}

#[test]
fn separate_invocations_share_one_operation_through_idempotency_key_and_the_messages_own_header_is_kept() {
    let upstream = Upstream::start(Options::default());
    let mail = Mail::new(MESSAGE);
    for _ in 0..2 {
        let output = mail.send(&upstream, &["--idempotency-key", "inv-12", "--key-header", "X-Request-Key"]);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
    }
    let received = upstream.received();
    assert_eq!(received.len(), 2);
    assert!(received.iter().all(|m| m.header("X-Request-Key").as_deref() == Some("inv-12")), "{received:?}");
    assert!(received.iter().all(|m| m.header("Idempotency-Key").is_none()));

    let own = Mail::new(&format!("Idempotency-Key: from-the-file\n{MESSAGE}"));
    let output = own.send(&upstream, &["--json"]);
    assert_eq!(json(&output)["idempotency_key"], "from-the-file", "{output:?}");
    assert_eq!(upstream.received()[2].data.matches("Idempotency-Key:").count(), 1);

    let conflict = own.send(&upstream, &["--idempotency-key", "another"]);
    assert_eq!(conflict.status.code(), Some(1), "{conflict:?}");
    assert!(String::from_utf8_lossy(&conflict.stderr).contains("already has Idempotency-Key"), "{conflict:?}");
    assert_eq!(upstream.attempts().len(), 3, "nothing sent for the contradiction");
}

#[test]
fn bad_usage_is_refused_before_anything_is_sent() {
    let upstream = Upstream::start(Options::default());
    let mail = Mail::new(MESSAGE);
    let url = format!("smtp://127.0.0.1:{}", upstream.port());
    let cases: [(&[&str], &str); 4] = [
        (&["--idempotency-key", "with space"], "idempotency key"),
        (&["--header", "X: y"], "--header is for HTTP sends"),
        (&["--user", "app", "--password", "literal-pw-9"], "env:NAME or file:PATH"),
        (&["--to", "not an address"], "not a mail address"),
    ];
    for (extra, says) in cases {
        let mut args = vec!["--starttls", "never"];
        args.extend(extra);
        let output = mail.command(&url, &args).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{extra:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says) && !stderr.contains("literal-pw-9"), "{extra:?}: {stderr}");
    }
    let no_from = Command::new(idemgate_bin()).args(["send", &url, "--to", "a@b.test"]).output().unwrap();
    assert!(String::from_utf8_lossy(&no_from.stderr).contains("--from"), "{no_from:?}");
    let http =
        Command::new(idemgate_bin()).args(["send", "http://127.0.0.1:1/x", "--to", "a@b.test"]).output().unwrap();
    assert!(String::from_utf8_lossy(&http.stderr).contains("--to is for mail"), "{http:?}");
    assert!(upstream.attempts().is_empty());
}

fn certificate(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let (cert, key, ca) = (dir.join("cert.pem"), dir.join("key.pem"), dir.join("ca.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    std::fs::write(&ca, certified.cert.pem()).unwrap();
    (cert, key, ca)
}

#[test]
fn starttls_required_and_auth_deliver_and_a_wrong_password_is_refused_without_showing_it() {
    let mail = Mail::new(MESSAGE);
    let (cert, key, ca) = certificate(mail.dir.path());
    let upstream = Upstream::start(Options::default().starttls(cert, key).auth("app", "pw-Zq81-right"));
    let url = format!("smtp://localhost:{}", upstream.port());
    let ca = ca.to_str().unwrap().to_owned();
    let run = |password: &str, extra: &[&str]| {
        let mut args = vec!["--user", "app", "--password", "env:SMTP_PASSWORD", "--ca-file", &ca, "--verbose"];
        args.extend(extra);
        mail.command(&url, &args).env("SMTP_PASSWORD", password).output().unwrap()
    };
    let ok = run("pw-Zq81-right", &["--starttls", "required"]);
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");
    let received = upstream.received();
    assert!(received[0].tls && received[0].auth_user.as_deref() == Some("app"), "{received:?}");

    let wrong = run("pw-Zq81-wrong", &[]);
    assert_eq!(wrong.status.code(), Some(3), "{wrong:?}");
    let (stdout, stderr) = (String::from_utf8_lossy(&wrong.stdout), String::from_utf8_lossy(&wrong.stderr));
    assert!(stdout.starts_with("535") && stderr.contains("refused the message: 535"), "{wrong:?}");
    assert_eq!(stderr.matches("attempt ").count(), 1, "a refused password is final: {stderr}");
    for secret in ["pw-Zq81-wrong", "pw-Zq81-right"] {
        assert!(!stdout.contains(secret) && !stderr.contains(secret), "{wrong:?}");
    }
    assert_eq!(upstream.received().len(), 1);

    let plain = Upstream::start(Options::default());
    let refused =
        mail.command(&format!("smtp://127.0.0.1:{}", plain.port()), &["--starttls", "required"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(3), "STARTTLS required but not offered: {refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("STARTTLS"), "{refused:?}");
    assert!(plain.received().is_empty());
}
