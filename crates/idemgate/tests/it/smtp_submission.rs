//! The SMTP submission listener end to end: `idemgate serve` as a process with an
//! `[smtp.*]` listener, Python's smtplib (`tests/smtp/submit.py`) and lettre as submitters,
//! and the aiosmtpd recording upstream (`idemgate_testkit::smtp::Upstream`) as the smarthost.
//! The store is read directly (SQLite file or PostgreSQL schema) to see receipts, jobs and
//! conflicts. Every test needs the venv of `tests/smtp/setup-venv.sh`; without it they fail.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use idemgate_testkit::smtp::{Fail, Options, Upstream, python};
use serde_json::Value;

use crate::{
    gateway_harness::{Gateway, Setup},
    postgres_instances::{fresh_schema, query},
};

const DEADLINE: Duration = Duration::from_secs(30);

/// Where the test's store is, and how its rows are read.
#[derive(Clone)]
enum Backend {
    Sqlite,
    Postgres(String),
}

impl Backend {
    fn postgres() -> Self {
        Self::Postgres(fresh_schema("smtp"))
    }

    fn store_toml(&self, setup: &Setup) -> String {
        match self {
            Self::Sqlite => format!("[store]\npath = \"{}\"\nbusy_timeout = \"250ms\"\n", setup.db().display()),
            Self::Postgres(url) => format!("[store]\nurl = \"{url}\"\npool_size = 8\n"),
        }
    }

    /// Rows of `sql`, every column as text.
    fn rows(&self, setup: &Setup, sql: &str) -> Vec<Vec<String>> {
        match self {
            Self::Postgres(url) => query(url, sql),
            Self::Sqlite => {
                let connection = rusqlite::Connection::open(setup.db()).unwrap();
                let mut statement = connection.prepare(sql).unwrap();
                let columns = statement.column_count();
                statement
                    .query_map([], |row| {
                        (0..columns)
                            .map(|i| {
                                let value: rusqlite::types::Value = row.get(i)?;
                                Ok(match value {
                                    rusqlite::types::Value::Null => String::new(),
                                    rusqlite::types::Value::Integer(i) => i.to_string(),
                                    rusqlite::types::Value::Real(f) => f.to_string(),
                                    rusqlite::types::Value::Text(t) => t,
                                    rusqlite::types::Value::Blob(b) => String::from_utf8_lossy(&b).into_owned(),
                                })
                            })
                            .collect()
                    })
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap()
            }
        }
    }

    fn count(&self, setup: &Setup, sql: &str) -> u64 {
        self.rows(setup, sql)[0][0].parse().unwrap()
    }

    /// Waits until `sql`'s count is `expected`.
    fn wait_count(&self, setup: &Setup, sql: &str, expected: u64) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let count = self.count(setup, sql);
            if count == expected {
                return;
            }
            assert!(Instant::now() < deadline, "{sql}: {count}, expected {expected}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The config around `[smtp.mail]`: a relay destination to `upstream`, short retries.
fn config(backend: &Backend, setup: &Setup, upstream_port: u16, listener: &str, extra: &str) -> String {
    format!(
        r#"[server]
listen = "127.0.0.1:0"
{store}
[worker]
poll_interval = "20ms"
lease = "5s"
[destinations.relay]
kind = "smtp"
url = "smtp://127.0.0.1:{upstream_port}"
starttls = "never"
timeout = "2s"
retry_schedule = ["100ms", "100ms", "100ms", "100ms", "100ms", "100ms", "100ms", "100ms", "100ms", "100ms"]
jitter = 0.0
[smtp.mail]
listen = "127.0.0.1:{listen}"
destinations = ["relay"]
users = {{ alice = "env:SMTP_ALICE_PW", bob = "env:SMTP_BOB_PW" }}
max_message_size = 2000
{listener}
{extra}"#,
        store = backend.store_toml(setup),
        listen = free_port(),
    )
}

const USERS: [(&str, &str); 2] = [("SMTP_ALICE_PW", "alice-password"), ("SMTP_BOB_PW", "bob-password")];

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A gateway with its SMTP listener's address (from the line it announces).
struct Mail {
    gateway: Gateway,
    smtp: SocketAddr,
}

fn start(setup: &Setup, config_text: &str) -> Mail {
    std::fs::write(setup.config(), config_text).unwrap();
    let mut gateway = Gateway::start(&setup.config(), &USERS);
    let line = gateway.next_line();
    let smtp = line
        .trim()
        .strip_prefix("smtp mail listening on ")
        .unwrap_or_else(|| panic!("expected the smtp listener's line, got {line:?}"))
        .parse()
        .unwrap();
    Mail { gateway, smtp }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One message file in `setup`'s folder.
fn message_file(setup: &Setup, name: &str, text: &str) -> PathBuf {
    let path = setup.dir.path().join(name);
    std::fs::write(&path, text.replace('\n', "\r\n")).unwrap();
    path
}

/// Runs `submit.py` with `args` and returns one JSON value per line it printed.
fn smtplib(port: u16, args: &[&str]) -> Vec<Value> {
    let output = Command::new(python())
        .arg(repo().join("tests/smtp/submit.py"))
        .arg("--port")
        .arg(port.to_string())
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.trim().is_empty(), "submit.py printed nothing: {}", String::from_utf8_lossy(&output.stderr));
    stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn as_alice<'a>(file: &'a Path, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--user", "alice", "--password", "alice-password", "--from", "app@example.com"];
    args.extend(["--to", "b@example.com", "--file", file.to_str().unwrap()]);
    args.extend(rest);
    args
}

fn reply(result: &Value) -> (u64, String) {
    (
        result["code"].as_u64().unwrap_or_else(|| panic!("no reply: {result}")),
        result["message"].as_str().unwrap_or_default().to_owned(),
    )
}

fn queue_id(text: &str) -> String {
    text.split_whitespace()
        .find(|word| word.len() == 16 && word.bytes().all(|b| b.is_ascii_hexdigit()))
        .unwrap()
        .to_owned()
}

fn first_repeat_conflict_no_key(backend: &Backend) {
    let upstream = Upstream::start(Options::default());
    let setup = Setup::new("");
    let mail = start(&setup, &config(backend, &setup, upstream.port(), "", ""));
    let port = mail.smtp.port();
    let keyed = message_file(
        &setup,
        "keyed.eml",
        "From: app@example.com\nTo: b@example.com\nSubject: invoice 1\nIdempotency-Key: order-1\n\nHello.\n..dotted line\n.\n",
    );

    let first = reply(&smtplib(port, &as_alice(&keyed, &[]))[0]);
    assert_eq!(first.0, 250, "{first:?}");
    assert!(first.1.starts_with("2.0.0 OK queued as "), "{first:?}");
    let id = queue_id(&first.1);
    let received = upstream.wait_until(|r| r.len() == 1);
    let relayed = &received[0];
    assert_eq!(
        (relayed.mail_from.as_str(), relayed.rcpt_tos.as_slice()),
        ("app@example.com", &["b@example.com".to_owned()][..])
    );
    assert!(!relayed.data.contains("Idempotency-Key"), "the key header is not relayed: {}", relayed.data);
    assert!(
        relayed.data.contains("Subject: invoice 1\r\n") && relayed.data.contains("\r\n..dotted line\r\n"),
        "{}",
        relayed.data
    );
    assert_eq!(
        relayed.message_id.as_deref(),
        Some(format!("<{id}@idemgate>").as_str()),
        "an id derived from the queue id"
    );

    let repeat = reply(&smtplib(port, &as_alice(&keyed, &[]))[0]);
    assert_eq!(repeat.0, 250, "{repeat:?}");
    assert_eq!(queue_id(&repeat.1), id, "the original queue id: {repeat:?}");

    let other = message_file(&setup, "other.eml", "Subject: invoice 2\nIdempotency-Key: order-1\n\nOther.\n");
    let conflict = reply(&smtplib(port, &as_alice(&other, &[]))[0]);
    assert_eq!(conflict.0, 550, "{conflict:?}");
    assert!(conflict.1.starts_with("5.7.0 idempotency key already used for another message"), "{conflict:?}");
    let conflicts =
        backend.count(&setup, "SELECT count(*) FROM conflicts WHERE source = 'mail' AND identity = 'alice:order-1'");
    assert_eq!(conflicts, 1, "recorded as a conflict for the operator");
    // Another envelope with the same bytes is another message too.
    let envelope = reply(&smtplib(port, &as_alice(&keyed, &["--to", "c@example.com"]))[0]);
    assert_eq!(envelope.0, 550, "{envelope:?}");

    let unkeyed = message_file(&setup, "unkeyed.eml", "Subject: no key\n\nHi.\n");
    let a = reply(&smtplib(port, &as_alice(&unkeyed, &[]))[0]);
    let b = reply(&smtplib(port, &as_alice(&unkeyed, &[]))[0]);
    assert_eq!((a.0, b.0), (250, 250));
    assert_ne!(queue_id(&a.1), queue_id(&b.1), "no key: no deduplication");
    let received = upstream.wait_until(|r| r.len() == 3);
    assert_eq!(received.iter().filter(|r| r.data.contains("invoice")).count(), 1, "relayed once: {received:#?}");
    backend.wait_count(&setup, "SELECT count(*) FROM jobs WHERE state = 'succeeded'", 3);
    assert_eq!(backend.count(&setup, "SELECT count(*) FROM receipts WHERE source = 'mail'"), 3);
}

#[test]
fn a_keyed_message_is_relayed_once_a_repeat_gets_its_queue_id_and_a_conflict_is_refused_on_sqlite() {
    first_repeat_conflict_no_key(&Backend::Sqlite);
}

#[test]
fn a_keyed_message_is_relayed_once_a_repeat_gets_its_queue_id_and_a_conflict_is_refused_on_postgres() {
    first_repeat_conflict_no_key(&Backend::postgres());
}

#[test]
fn require_key_refuses_a_message_without_one_and_keys_are_per_user() {
    let backend = Backend::Sqlite;
    let upstream = Upstream::start(Options::default());
    let setup = Setup::new("");
    let mail = start(&setup, &config(&backend, &setup, upstream.port(), "require_key = true", ""));
    let port = mail.smtp.port();
    let unkeyed = message_file(&setup, "unkeyed.eml", "Subject: no key\n\nHi.\n");
    let refused = reply(&smtplib(port, &as_alice(&unkeyed, &[]))[0]);
    assert_eq!(refused, (550, "5.7.1 a Idempotency-Key header is required on this listener".to_owned()));

    let alice = message_file(&setup, "alice.eml", "Subject: from alice\nIdempotency-Key: shared\n\nA.\n");
    let bob = message_file(&setup, "bob.eml", "Subject: from bob\nIdempotency-Key: shared\n\nB.\n");
    let a = reply(&smtplib(port, &as_alice(&alice, &[]))[0]);
    let bob_args =
        ["--user", "bob", "--password", "bob-password", "--from", "bob@example.com", "--to", "b@example.com"];
    let mut args: Vec<&str> = bob_args.to_vec();
    args.extend(["--file", bob.to_str().unwrap()]);
    let b = reply(&smtplib(port, &args)[0]);
    assert_eq!((a.0, b.0), (250, 250), "one key, two users, two messages: {a:?} {b:?}");
    assert_ne!(queue_id(&a.1), queue_id(&b.1));
    upstream.wait_until(|r| r.len() == 2);
    assert_eq!(backend.count(&setup, "SELECT count(*) FROM conflicts"), 0);
    assert_eq!(
        backend.count(&setup, "SELECT count(*) FROM receipts WHERE identity IN ('alice:shared', 'bob:shared')"),
        2
    );
}

fn sixteen_at_once(backend: &Backend) {
    let upstream = Upstream::start(Options::default());
    let setup = Setup::new("");
    let mail = start(&setup, &config(backend, &setup, upstream.port(), "", ""));
    let keyed = message_file(&setup, "keyed.eml", "Subject: once\nIdempotency-Key: burst-1\n\nOnly once.\n");
    let results = smtplib(mail.smtp.port(), &as_alice(&keyed, &["--parallel", "16"]));
    assert_eq!(results.len(), 16);
    let ids: std::collections::BTreeSet<String> = results
        .iter()
        .map(|result| {
            let (code, text) = reply(result);
            assert_eq!(code, 250, "{result}");
            queue_id(&text)
        })
        .collect();
    assert_eq!(ids.len(), 1, "every submission got the one queue id: {ids:?}");
    upstream.wait_until(|r| r.len() == 1);
    backend.wait_count(&setup, "SELECT count(*) FROM jobs WHERE state = 'succeeded'", 1);
    assert_eq!(backend.count(&setup, "SELECT count(*) FROM jobs"), 1, "one job for sixteen submissions");
    assert_eq!(upstream.received().len(), 1, "relayed once");
}

#[test]
fn sixteen_identical_submissions_at_once_are_relayed_once_on_sqlite() {
    sixteen_at_once(&Backend::Sqlite);
}

#[test]
fn sixteen_identical_submissions_at_once_are_relayed_once_on_postgres() {
    sixteen_at_once(&Backend::postgres());
}

#[test]
fn auth_is_required_a_wrong_password_refused_and_an_oversized_message_is_552() {
    let backend = Backend::Sqlite;
    let upstream = Upstream::start(Options::default());
    let setup = Setup::new("");
    let mail = start(&setup, &config(&backend, &setup, upstream.port(), "", ""));
    let port = mail.smtp.port();
    let keyed = message_file(&setup, "keyed.eml", "Subject: x\nIdempotency-Key: a-1\n\nHi.\n");
    let file = keyed.to_str().unwrap();
    let anonymous = reply(&smtplib(port, &["--from", "a@example.com", "--to", "b@example.com", "--file", file])[0]);
    assert_eq!(anonymous, (530, "5.7.0 authentication required".to_owned()));
    let wrong = ["--user", "alice", "--password", "wrong", "--from", "a@example.com", "--to", "b@example.com"];
    let mut args = wrong.to_vec();
    args.extend(["--file", file]);
    let wrong = reply(&smtplib(port, &args)[0]);
    assert_eq!(wrong, (535, "5.7.8 authentication credentials invalid".to_owned()));

    let big =
        message_file(&setup, "big.eml", &format!("Subject: big\nIdempotency-Key: big-1\n\n{}\n", "x".repeat(2100)));
    let oversized = reply(&smtplib(port, &as_alice(&big, &[]))[0]);
    assert_eq!(oversized.0, 552, "{oversized:?}");
    assert_eq!(backend.count(&setup, "SELECT count(*) FROM receipts"), 0, "nothing stored");
    // The session goes on after a refusal: a good message on a new connection is accepted.
    assert_eq!(reply(&smtplib(port, &as_alice(&keyed, &[]))[0]).0, 250);
}

#[test]
fn starttls_and_implicit_tls_with_a_generated_certificate() {
    let backend = Backend::Sqlite;
    let upstream = Upstream::start(Options::default());
    let setup = Setup::new("");
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params.subject_alt_names.push(rcgen::SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let (cert_path, key_path) = (setup.dir.path().join("cert.pem"), setup.dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    let tls = "[smtp.mail.tls]\ncert = \"cert.pem\"\nkey = \"key.pem\"\n";
    let mail = start(&setup, &config(&backend, &setup, upstream.port(), tls, ""));
    let keyed = message_file(&setup, "keyed.eml", "Subject: tls\nIdempotency-Key: tls-1\n\nOver TLS.\n");
    let cafile = cert_path.to_str().unwrap();
    let over_tls = reply(&smtplib(mail.smtp.port(), &as_alice(&keyed, &["--starttls", "--cafile", cafile]))[0]);
    assert_eq!(over_tls.0, 250, "{over_tls:?}");
    upstream.wait_until(|r| r.len() == 1);
    drop(mail);

    let implicit = format!("implicit_tls = true\n{tls}");
    let mail = start(&setup, &config(&backend, &setup, upstream.port(), &implicit, ""));
    let again = reply(&smtplib(mail.smtp.port(), &as_alice(&keyed, &["--implicit-tls", "--cafile", cafile]))[0]);
    assert_eq!(again.0, 250, "{again:?}");
    assert_eq!(queue_id(&again.1), queue_id(&over_tls.1), "the same message again: a repeat");
}

#[test]
fn an_unavailable_store_answers_451_and_stores_nothing() {
    let upstream = Upstream::start(Options::default());
    let setup = Setup::new("");
    let backend = Backend::Postgres(format!("postgres://postgres@127.0.0.1:{}/nothing_here", free_port()));
    let mail = start(&setup, &config(&backend, &setup, upstream.port(), "", ""));
    let keyed = message_file(&setup, "keyed.eml", "Subject: x\nIdempotency-Key: down-1\n\nHi.\n");
    let answer = reply(&smtplib(mail.smtp.port(), &as_alice(&keyed, &[]))[0]);
    assert_eq!(answer, (451, "4.3.0 temporary failure: message not stored, try again later".to_owned()));
    assert!(upstream.received().is_empty());
}

#[test]
fn an_upstream_down_then_up_gets_the_message_with_one_message_id_and_refused_recipients_are_recorded() {
    let backend = Backend::Sqlite;
    let mut upstream = Upstream::start(Options::default().refuse_rcpt("refused@example.com"));
    upstream.stop();
    let setup = Setup::new("");
    let mail = start(&setup, &config(&backend, &setup, upstream.port(), "", ""));
    let keyed = message_file(&setup, "keyed.eml", "Subject: later\nIdempotency-Key: later-1\n\nHi.\n");
    let answer = reply(&smtplib(mail.smtp.port(), &as_alice(&keyed, &["--to", "refused@example.com"]))[0]);
    assert_eq!(answer.0, 250);
    let id = queue_id(&answer.1);
    backend.wait_count(&setup, "SELECT count(*) FROM attempts WHERE error IS NOT NULL", 2);
    upstream.restart_with(Options::default().refuse_rcpt("refused@example.com").fail_times(Fail::Temporary, 1));
    let received = upstream.wait_until(|r| r.len() == 1);
    assert_eq!(received[0].rcpt_tos, ["b@example.com"]);
    assert_eq!(received[0].message_id.as_deref(), Some(format!("<{id}@idemgate>").as_str()));
    let attempts = upstream.attempts();
    assert_eq!(attempts.len(), 2, "one 451, then accepted: {attempts:#?}");
    assert!(attempts[0].answer.starts_with("451"), "{attempts:#?}");
    assert!(attempts.iter().all(|a| a.data == attempts[0].data), "the same bytes, so the same Message-ID, each time");
    backend.wait_count(&setup, "SELECT count(*) FROM jobs WHERE state = 'succeeded'", 1);
    let shown = setup.run(&["events", "show", "mail", "alice:later-1"], &[]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains("refused@example.com: permanent error (550)"),
        "events show names the refused recipient: {text}"
    );
    drop(mail);
}

#[test]
fn a_permanent_refusal_makes_the_job_dead_with_the_upstreams_reply_and_it_can_be_replayed() {
    let backend = Backend::Sqlite;
    let mut upstream = Upstream::start(Options::default().fail(Fail::Permanent));
    let setup = Setup::new("");
    let mail = start(&setup, &config(&backend, &setup, upstream.port(), "", ""));
    let keyed = message_file(&setup, "keyed.eml", "Subject: dead\nIdempotency-Key: dead-1\n\nHi.\n");
    assert_eq!(reply(&smtplib(mail.smtp.port(), &as_alice(&keyed, &[]))[0]).0, 250);
    backend.wait_count(&setup, "SELECT count(*) FROM jobs WHERE state = 'dead'", 1);
    let error = &backend.rows(&setup, "SELECT last_error FROM jobs")[0][0];
    assert!(error.contains("554"), "the upstream's reply is kept: {error}");
    assert_eq!(backend.count(&setup, "SELECT count(*) FROM attempts"), 1, "not retried");

    upstream.restart_with(Options::default());
    let replayed = setup.run(&["events", "replay", "--source", "mail"], &[]);
    assert!(replayed.status.success(), "{}", String::from_utf8_lossy(&replayed.stderr));
    let received = upstream.wait_until(|r| r.len() == 1);
    assert!(received[0].data.contains("Subject: dead"));
    backend.wait_count(&setup, "SELECT count(*) FROM jobs WHERE state = 'succeeded'", 1);
    drop(mail);
}

#[test]
fn lettre_submits_too_and_a_repeat_is_answered_with_the_original_queue_id() {
    use lettre::{
        AsyncTransport,
        address::Envelope,
        transport::smtp::{AsyncSmtpTransport, authentication::Credentials},
    };
    let backend = Backend::Sqlite;
    let upstream = Upstream::start(Options::default());
    let setup = Setup::new("");
    let mail = start(&setup, &config(&backend, &setup, upstream.port(), "", ""));
    let transport = AsyncSmtpTransport::<lettre::Tokio1Executor>::builder_dangerous("127.0.0.1")
        .port(mail.smtp.port())
        .credentials(Credentials::new("alice".into(), "alice-password".into()))
        .build();
    let envelope =
        Envelope::new(Some("app@example.com".parse().unwrap()), vec!["b@example.com".parse().unwrap()]).unwrap();
    let message = b"Subject: lettre\r\nIdempotency-Key: lettre-1\r\n\r\nFrom lettre.\r\n";
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let first = runtime.block_on(transport.send_raw(&envelope, message)).unwrap();
    let repeat = runtime.block_on(transport.send_raw(&envelope, message)).unwrap();
    let text = |r: &lettre::transport::smtp::response::Response| r.message().collect::<Vec<_>>().join(" ");
    assert_eq!(queue_id(&text(&first)), queue_id(&text(&repeat)));
    upstream.wait_until(|r| r.len() == 1);
    backend.wait_count(&setup, "SELECT count(*) FROM jobs WHERE state = 'succeeded'", 1);
    assert_eq!(upstream.received().len(), 1);
}

fn crash(backend: &Backend) {
    const MESSAGES: usize = 60;
    let upstream = Upstream::start(Options::default());
    let setup = Setup::new("");
    let port = free_port();
    // The listener is killed; the relaying worker is another process that is not, so what
    // is checked is the submission side: acknowledged means stored, a resubmission is a repeat.
    let text = config(backend, &setup, upstream.port(), "", "").replace("[worker]\n", "[worker]\nenabled = false\n");
    let text = {
        let start = text.find("[smtp.mail]\nlisten = ").unwrap();
        let line_end = text[start + 12..].find('\n').unwrap() + start + 12;
        format!("{}[smtp.mail]\nlisten = \"127.0.0.1:{port}\"{}", &text[..start], &text[line_end..])
    };
    std::fs::write(setup.config(), &text).unwrap();
    let mut worker = std::process::Command::new(crate::gateway_harness::idemgate_bin())
        .args(["worker", "--config"])
        .arg(setup.config())
        .envs(USERS)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut mail = start(&setup, &text);
    assert_eq!(mail.smtp.port(), port);
    let template = message_file(&setup, "template.eml", "Subject: message {n}\nIdempotency-Key: {key}\n\nBody {n}.\n");
    let mut args = as_alice(&template, &["--stream"]);
    let count = MESSAGES.to_string();
    args.extend([count.as_str(), "--key-prefix", "crash", "--deadline", "120"]);
    let submitter = Command::new(python())
        .arg(repo().join("tests/smtp/submit.py"))
        .arg("--port")
        .arg(port.to_string())
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let receipts = "SELECT count(*) FROM receipts WHERE source = 'mail'";
    let mut kills = 0;
    for threshold in [10, 25, 40] {
        let deadline = Instant::now() + DEADLINE;
        while (backend.count(&setup, receipts) as usize) < threshold {
            assert!(Instant::now() < deadline, "the stream stalled before {threshold} messages");
            std::thread::sleep(Duration::from_millis(5));
        }
        mail.gateway.kill();
        kills += 1;
        mail = start(&setup, &text);
    }
    let output = submitter.wait_with_output().unwrap();
    assert!(output.status.success(), "the submitter gave up: {}", String::from_utf8_lossy(&output.stdout));
    let acknowledged: Vec<Value> =
        String::from_utf8_lossy(&output.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(acknowledged.len(), MESSAGES);
    let received = upstream.wait_until(|r| r.len() >= MESSAGES);
    for n in 0..MESSAGES {
        let subject = format!("Subject: message {n}\r\n");
        let copies = received.iter().filter(|r| r.data.contains(&subject)).count();
        assert_eq!(copies, 1, "message {n} reached the upstream {copies} times after {kills} kills");
    }
    backend.wait_count(&setup, "SELECT count(*) FROM jobs WHERE state = 'succeeded'", MESSAGES as u64);
    assert_eq!(upstream.received().len(), MESSAGES, "nothing more arrived");
    let _ = worker.kill();
    let _ = worker.wait();
}

#[test]
fn every_acknowledged_submission_survives_sigkills_and_none_is_relayed_twice_on_sqlite() {
    crash(&Backend::Sqlite);
}

#[test]
fn every_acknowledged_submission_survives_sigkills_and_none_is_relayed_twice_on_postgres() {
    crash(&Backend::postgres());
}

/// Reads from `stream` until the text read so far contains `until` (or the stream ends).
fn read_until(stream: &mut std::net::TcpStream, until: &str) -> String {
    use std::io::Read;
    let mut text = String::new();
    let mut chunk = [0u8; 4096];
    while !text.contains(until) {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => text.push_str(&String::from_utf8_lossy(&chunk[..n])),
        }
    }
    text
}

#[test]
fn pipelined_commands_are_answered_in_order_and_a_hostile_client_is_cut_off_alone() {
    use std::io::Write;
    let backend = Backend::Sqlite;
    let upstream = Upstream::start(Options::default());
    let setup = Setup::new("");
    let mail = start(&setup, &config(&backend, &setup, upstream.port(), "", ""));
    let timeout = Some(Duration::from_secs(10));

    let mut hostile = std::net::TcpStream::connect(mail.smtp).unwrap();
    hostile.set_read_timeout(timeout).unwrap();
    assert!(read_until(&mut hostile, "\r\n").starts_with("220 "));
    hostile.write_all(format!("EHLO {}\r\n", "x".repeat(5000)).as_bytes()).unwrap();
    let answer = read_until(&mut hostile, "\r\n");
    assert_eq!(answer, "500 5.5.2 line too long, closing connection\r\n");
    assert_eq!(read_until(&mut hostile, "never"), "", "and the connection is closed");

    let mut client = std::net::TcpStream::connect(mail.smtp).unwrap();
    client.set_read_timeout(timeout).unwrap();
    read_until(&mut client, "\r\n");
    let plain = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "\0alice\0alice-password");
    let pipelined = format!(
        "EHLO c\r\nAUTH PLAIN {plain}\r\nMAIL FROM:<a@example.com>\r\nRCPT TO:<b@example.com>\r\nRCPT TO:<c@example.com>\r\nDATA\r\n"
    );
    client.write_all(pipelined.as_bytes()).unwrap();
    let replies = read_until(&mut client, "354 ");
    let codes: Vec<&str> = replies.lines().filter(|l| l.as_bytes().get(3) == Some(&b' ')).map(|l| &l[..3]).collect();
    assert_eq!(codes, ["250", "235", "250", "250", "250", "354"], "{replies}");
    assert!(replies.contains("250-PIPELINING\r\n") && replies.contains("250-SIZE 2000\r\n"), "{replies}");
    client.write_all(b"Subject: piped\r\nIdempotency-Key: pipe-1\r\n\r\n.leading dot\r\n.\r\nQUIT\r\n").unwrap();
    let end = read_until(&mut client, "221 ");
    assert!(end.starts_with("250 2.0.0 OK queued as "), "{end}");
    let received = upstream.wait_until(|r| r.len() == 1);
    assert!(received[0].data.contains("\r\n\r\nleading dot\r\n"), "dot-unstuffed: {}", received[0].data);
    assert_eq!(received[0].rcpt_tos, ["b@example.com", "c@example.com"]);
}
