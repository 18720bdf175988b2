//! [`MailClient`] (lettre underneath) against the recording upstream on aiosmtpd: the key
//! header arrives, and every retry after a `4xx`, a lost reply or a refused connection
//! carries the same key and bytes; a `5xx` is final after one attempt.

use std::{path::PathBuf, sync::Arc, time::Duration};

use idemgate_client::{ClientOptions, Final, MailClient, MailCredentials, MailRequest, NoAnswer, StartTls};
use idemgate_testkit::smtp::{Fail, Options, Upstream};

use crate::Recorder;

const MESSAGE: &str = "From: app@example.test\nTo: user@example.test\nSubject: order 7\n\nshipped\n.dot line\n";

fn mail_client(max_attempts: u32) -> (MailClient, Arc<Recorder>) {
    let sleeps = Arc::new(Recorder::default());
    let options = ClientOptions {
        max_attempts,
        base_delay: Duration::from_millis(100),
        timeout: Duration::from_secs(10),
        ..ClientOptions::default()
    };
    (MailClient::new(&options).with_sleeper(sleeps.clone()), sleeps)
}

fn request(upstream: &Upstream) -> MailRequest {
    MailRequest::new(
        format!("smtp://127.0.0.1:{}", upstream.port()),
        "app@example.test",
        vec!["user@example.test".to_owned(), "ops@example.test".to_owned()],
        MESSAGE,
    )
    .starttls(StartTls::Never)
}

#[tokio::test]
async fn a_submission_arrives_once_with_a_generated_key_in_its_header() {
    let upstream = Upstream::start(Options::default());
    let (client, sleeps) = mail_client(3);
    let sent = client.send(request(&upstream)).await.unwrap();
    assert_eq!(sent.outcome, Final::Succeeded, "{sent:?}");
    assert_eq!(sent.reply.as_ref().unwrap().code, 250);
    assert_eq!(sent.attempts.len(), 1);
    assert!(sent.idempotency_key.starts_with("idg-") && sent.idempotency_key.len() == 36, "{}", sent.idempotency_key);
    let received = upstream.received();
    assert_eq!(received.len(), 1);
    let m = &received[0];
    assert_eq!(m.mail_from, "app@example.test");
    assert_eq!(m.rcpt_tos, ["user@example.test", "ops@example.test"]);
    assert_eq!(m.header("Idempotency-Key").as_deref(), Some(sent.idempotency_key.as_str()));
    let expected = format!("Idempotency-Key: {}\r\n{}", sent.idempotency_key, MESSAGE.replace('\n', "\r\n"));
    assert_eq!(m.data, expected, "the bytes arrive as prepared, dot-stuffing undone, no line added");
    assert!(sleeps.0.lock().unwrap().is_empty());
}

#[tokio::test]
async fn temporary_refusals_are_retried_with_the_same_key_and_bytes() {
    let upstream = Upstream::start(Options::default().fail_times(Fail::Temporary, 2));
    let (client, sleeps) = mail_client(5);
    let sent = client.send(request(&upstream).idempotency_key("order-7")).await.unwrap();
    assert_eq!(sent.outcome, Final::Succeeded, "{sent:?}");
    assert_eq!(sent.idempotency_key, "order-7");
    let attempts = upstream.attempts();
    assert_eq!(attempts.len(), 3);
    assert!(attempts[0].answer.starts_with("451") && attempts[1].answer.starts_with("451"), "{attempts:?}");
    assert!(attempts.iter().all(|a| a.data == attempts[0].data), "every attempt carries the same bytes");
    assert!(attempts.iter().all(|a| a.header("Idempotency-Key").as_deref() == Some("order-7")));
    assert_eq!(sent.attempts[0].reply.as_ref().unwrap().code, 451);
    assert_eq!(upstream.received().len(), 1);
    assert_eq!(sleeps.0.lock().unwrap().len(), 2, "backoff between the attempts");
}

#[tokio::test]
async fn a_lost_reply_is_resubmitted_with_the_same_key() {
    let upstream = Upstream::start(Options::default().lose_reply_times(1));
    let (client, _) = mail_client(3);
    let sent = client.send(request(&upstream)).await.unwrap();
    assert_eq!(sent.outcome, Final::Succeeded, "{sent:?}");
    assert!(matches!(sent.attempts[0].error, Some(NoAnswer::Lost(_))), "{sent:?}");
    let received = upstream.received();
    assert_eq!(received.len(), 2, "this upstream does not deduplicate; the key is what lets one do it");
    assert_eq!(received[0].data, received[1].data);
    assert_eq!(received[1].header("Idempotency-Key").as_deref(), Some(sent.idempotency_key.as_str()));
}

#[tokio::test]
async fn a_permanent_refusal_is_final_after_one_attempt() {
    let upstream = Upstream::start(Options::default().fail(Fail::Permanent));
    let (client, sleeps) = mail_client(5);
    let sent = client.send(request(&upstream)).await.unwrap();
    assert_eq!(sent.outcome, Final::Rejected, "{sent:?}");
    let reply = sent.reply.unwrap();
    assert_eq!(reply.code, 554);
    assert!(reply.text.contains("permanent refusal"), "{reply}");
    assert_eq!(upstream.attempts().len(), 1);
    assert!(sleeps.0.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_refused_recipient_is_a_final_refusal() {
    let upstream = Upstream::start(Options::default().refuse_rcpt("ops@example.test"));
    let (client, _) = mail_client(5);
    let sent = client.send(request(&upstream)).await.unwrap();
    assert_eq!(sent.outcome, Final::Rejected, "{sent:?}");
    assert_eq!(sent.reply.unwrap().code, 550);
    assert!(upstream.attempts().is_empty(), "no DATA after a refused RCPT");
}

#[tokio::test]
async fn a_dead_port_gives_up_after_every_attempt_failed_to_connect() {
    let mut upstream = Upstream::start(Options::default());
    upstream.stop();
    let (client, sleeps) = mail_client(3);
    let sent = client.send(request(&upstream)).await.unwrap();
    assert_eq!(sent.outcome, Final::GaveUp, "{sent:?}");
    assert_eq!(sent.attempts.len(), 3);
    assert!(sent.attempts.iter().all(|a| matches!(a.error, Some(NoAnswer::Connect(_)))), "{sent:?}");
    assert_eq!(sleeps.0.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn bad_input_is_refused_before_any_attempt() {
    let upstream = Upstream::start(Options::default());
    let (client, _) = mail_client(3);
    for bad in [
        request(&upstream).idempotency_key("has space"),
        MailRequest::new(
            format!("smtp://127.0.0.1:{}", upstream.port()),
            "not an address",
            vec!["a@b.test".into()],
            "x",
        ),
        MailRequest::new(format!("smtp://127.0.0.1:{}", upstream.port()), "a@b.test", vec![], "x"),
        MailRequest::new("http://127.0.0.1:1", "a@b.test", vec!["c@d.test".into()], "x"),
    ] {
        assert!(client.send(bad).await.is_err());
    }
    assert!(upstream.attempts().is_empty());
}

/// A certificate for `localhost` and 127.0.0.1, written as PEM files; the CA text to trust.
pub fn certificate(dir: &std::path::Path) -> (PathBuf, PathBuf, String) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    (cert, key, certified.cert.pem())
}

#[tokio::test]
async fn starttls_required_with_auth_reaches_an_upstream_that_requires_both() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, ca) = certificate(dir.path());
    let upstream = Upstream::start(Options::default().starttls(cert, key).auth("app", "s3cret"));
    let (client, _) = mail_client(2);
    let secure = |password: &str| {
        MailRequest::new(
            format!("smtp://localhost:{}", upstream.port()),
            "app@example.test",
            vec!["user@example.test".to_owned()],
            MESSAGE,
        )
        .ca_pem(ca.clone())
        .credentials(MailCredentials::new("app", password))
    };
    let sent = client.send(secure("s3cret")).await.unwrap();
    assert_eq!(sent.outcome, Final::Succeeded, "{sent:?}");
    let received = upstream.received();
    assert!(received[0].tls && received[0].auth_user.as_deref() == Some("app"), "{received:?}");

    let refused = client.send(secure("wrong")).await.unwrap();
    assert_eq!(refused.outcome, Final::Rejected, "{refused:?}");
    assert_eq!(refused.attempts.len(), 1);
    assert_eq!(refused.reply.as_ref().unwrap().code, 535);
    assert!(!format!("{refused:?}").contains("wrong"), "the password shows: {refused:?}");

    let untrusted =
        client.send(secure("s3cret").ca_pem(certificate(tempfile::tempdir().unwrap().path()).2)).await.unwrap();
    assert_eq!(untrusted.outcome, Final::Rejected, "{untrusted:?}");
    assert!(untrusted.error.as_deref().unwrap_or("").contains("tls"), "{untrusted:?}");
    assert_eq!(upstream.received().len(), 1);
}

#[tokio::test]
async fn starttls_required_refuses_a_server_without_it_and_opportunistic_sends_in_clear() {
    let upstream = Upstream::start(Options::default());
    let (client, _) = mail_client(3);
    let required = client.send(request(&upstream).starttls(StartTls::Required)).await.unwrap();
    assert_eq!(required.outcome, Final::Rejected, "{required:?}");
    assert_eq!(required.attempts.len(), 1);
    assert!(upstream.received().is_empty());
    let opportunistic = client.send(request(&upstream).starttls(StartTls::Opportunistic)).await.unwrap();
    assert_eq!(opportunistic.outcome, Final::Succeeded, "{opportunistic:?}");
    assert!(!upstream.received()[0].tls);
}
