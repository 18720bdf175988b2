//! The recording SMTP upstream, driven by Python's smtplib (a client nobody here wrote):
//! what it records, and that each option does what the tests built on it rely on.

#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]
use std::process::Command;

use idemgate_testkit::smtp::{Fail, Options, Upstream, python};

/// Runs `script` under the venv's Python with the upstream's port as `PORT` (and `CA` when
/// given); returns its stdout, panicking with its stderr if it fails.
fn smtplib(upstream: &Upstream, script: &str, ca: Option<&std::path::Path>) -> String {
    let mut command = Command::new(python());
    command.arg("-c").arg(script).env("PORT", upstream.port().to_string());
    if let Some(ca) = ca {
        command.env("CA", ca);
    }
    let out = command.output().expect("run python");
    assert!(out.status.success(), "smtplib script failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

const SEND: &str = r#"
import os, smtplib
msg = "From: a@example.test\r\nTo: b@example.test\r\nMessage-ID: <one@example.test>\r\nIdempotency-Key: key-1\r\nSubject: hi\r\n\r\nline\r\n.starts with a dot\r\n"
s = smtplib.SMTP("127.0.0.1", int(os.environ["PORT"]), timeout=10)
try:
    refused = s.sendmail("a@example.test", ["b@example.test", "c@example.test"], msg)
    print("sent", sorted(refused))
except smtplib.SMTPResponseException as e:
    print("refused", e.smtp_code)
except smtplib.SMTPServerDisconnected:
    print("disconnected")
"#;

#[test]
fn a_message_sent_with_smtplib_is_received_once_with_its_envelope_and_text() {
    let upstream = Upstream::start(Options::default());
    assert_eq!(smtplib(&upstream, SEND, None).trim(), "sent []");
    let received = upstream.wait_until(|m| !m.is_empty());
    assert_eq!(received.len(), 1);
    let m = &received[0];
    assert_eq!(m.mail_from, "a@example.test");
    assert_eq!(m.rcpt_tos, ["b@example.test", "c@example.test"]);
    assert_eq!(m.message_id.as_deref(), Some("<one@example.test>"));
    assert_eq!(m.header("idempotency-key").as_deref(), Some("key-1"));
    assert!(m.data.ends_with("line\r\n.starts with a dot\r\n"), "dot-unstuffed: {:?}", m.data);
    assert!(!m.tls);
    assert_eq!(m.auth_user, None);
}

#[test]
fn a_refused_recipient_gets_550_and_the_others_are_kept() {
    let upstream = Upstream::start(Options::default().refuse_rcpt("c@example.test"));
    assert_eq!(smtplib(&upstream, SEND, None).trim(), "sent ['c@example.test']");
    assert_eq!(upstream.wait_until(|m| !m.is_empty())[0].rcpt_tos, ["b@example.test"]);
}

#[test]
fn failures_are_answered_and_counted_as_attempts_but_not_received() {
    let upstream = Upstream::start(Options::default().fail_times(Fail::Temporary, 1));
    assert_eq!(smtplib(&upstream, SEND, None).trim(), "refused 451");
    assert_eq!(smtplib(&upstream, SEND, None).trim(), "sent []");
    assert_eq!(upstream.received().len(), 1);
    let answers: Vec<_> = upstream.attempts().into_iter().map(|a| a.answer).collect();
    assert!(answers[0].starts_with("451 4.3.0"), "{answers:?}");
    assert!(answers[1].starts_with("250"), "{answers:?}");

    let permanent = Upstream::start(Options::default().fail(Fail::Permanent));
    assert_eq!(smtplib(&permanent, SEND, None).trim(), "refused 554");
    assert_eq!(smtplib(&permanent, SEND, None).trim(), "refused 554");
    assert!(permanent.received().is_empty());
    assert_eq!(permanent.attempts().len(), 2);
}

#[test]
fn a_lost_reply_is_recorded_as_received_while_the_client_sees_a_dropped_connection() {
    let upstream = Upstream::start(Options::default().lose_reply_times(1));
    assert_eq!(smtplib(&upstream, SEND, None).trim(), "disconnected");
    assert_eq!(upstream.received().len(), 1);
    assert_eq!(smtplib(&upstream, SEND, None).trim(), "sent []");
    assert_eq!(upstream.received().len(), 2);
}

#[test]
fn stop_refuses_connections_and_restart_listens_on_the_same_port_with_the_record_kept() {
    let mut upstream = Upstream::start(Options::default());
    let port = upstream.port();
    assert_eq!(smtplib(&upstream, SEND, None).trim(), "sent []");
    upstream.stop();
    assert!(std::net::TcpStream::connect(upstream.addr()).is_err(), "the stopped upstream still accepts connections");
    upstream.restart_with(Options::default().fail(Fail::Temporary));
    assert_eq!(upstream.port(), port);
    assert_eq!(smtplib(&upstream, SEND, None).trim(), "refused 451");
    upstream.restart_with(Options::default());
    assert_eq!(smtplib(&upstream, SEND, None).trim(), "sent []");
    assert_eq!(upstream.received().len(), 2);
}

#[test]
fn starttls_and_auth_are_required_when_asked_and_a_wrong_password_is_refused() {
    let dir = std::env::temp_dir().join(format!("idemgate-testkit-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(dir.join("cert.pem"), certified.cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), certified.signing_key.serialize_pem()).unwrap();
    let upstream =
        Upstream::start(Options::default().starttls(dir.join("cert.pem"), dir.join("key.pem")).auth("app", "s3cret"));
    let script = r#"
import os, smtplib, ssl
port = int(os.environ["PORT"])
msg = "Subject: tls\r\n\r\nover tls\r\n"
s = smtplib.SMTP("127.0.0.1", port, timeout=10)
try:
    s.sendmail("a@example.test", ["b@example.test"], msg)
    print("plain accepted")
except smtplib.SMTPResponseException as e:
    print("plain", e.smtp_code)
s = smtplib.SMTP("localhost", port, timeout=10)
s.starttls(context=ssl.create_default_context(cafile=os.environ["CA"]))
try:
    s.login("app", "wrong")
except smtplib.SMTPAuthenticationError as e:
    print("wrong password", e.smtp_code)
s.login("app", "s3cret")
s.sendmail("a@example.test", ["b@example.test"], msg)
s.quit()
print("tls sent")
"#;
    let out = smtplib(&upstream, script, Some(&dir.join("cert.pem")));
    assert_eq!(out.lines().collect::<Vec<_>>(), ["plain 530", "wrong password 535", "tls sent"]);
    let received = upstream.wait_until(|m| !m.is_empty());
    assert_eq!(received.len(), 1);
    assert!(received[0].tls);
    assert_eq!(received[0].auth_user.as_deref(), Some("app"));
    std::fs::remove_dir_all(&dir).unwrap();
}
