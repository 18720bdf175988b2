//! An SMTP upstream for tests: `tests/smtp/upstream.py`, a recording server on aiosmtpd
//! (a real SMTP server library from PyPI), run as a child process under the Python of the
//! venv that `tests/smtp/setup-venv.sh` makes. The mail the code under test sends is so
//! judged by a server nobody here wrote, not by a fake that shares our reading of the RFCs.
//!
//! The upstream listens on 127.0.0.1, appends one JSON line per accepted message to a
//! record file that [`Upstream::received`] reads, and is SIGKILLed when the [`Upstream`] is
//! dropped. [`Upstream::restart`] starts it again on the same port, so a client's retry can
//! find it back.

use std::{
    io::{BufRead, BufReader},
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicU64, Ordering},
        mpsc,
    },
    thread,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

/// How long a test waits for the upstream to listen, or for what it expects to arrive.
const DEADLINE: Duration = Duration::from_secs(30);

/// What DATA is answered with while the upstream fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fail {
    /// `451 4.3.0`: a client should retry.
    Temporary,
    /// `554 5.7.1`: final.
    Permanent,
}

/// How the upstream behaves; [`Default`] accepts every message from anyone, without TLS
/// or AUTH.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Recipients answered `550` at RCPT TO (the others are accepted).
    pub refuse_rcpt: Vec<String>,
    /// DATA answered with this failure...
    pub fail: Option<Fail>,
    /// ...for only this many messages, then accepted (`None`: for every message).
    pub fail_times: Option<u32>,
    /// The first this many messages are recorded as accepted, but the connection is closed
    /// instead of answering `250`: the lost reply a resubmitting client must survive.
    pub lose_reply_times: u32,
    /// STARTTLS offered with this certificate and key (PEM files), and required before MAIL.
    pub starttls: Option<(PathBuf, PathBuf)>,
    /// AUTH (PLAIN or LOGIN) required with this user and password; after STARTTLS when
    /// STARTTLS is offered.
    pub auth: Option<(String, String)>,
}

impl Options {
    /// Refuses RCPT TO for `address` with `550`.
    pub fn refuse_rcpt(mut self, address: &str) -> Self {
        self.refuse_rcpt.push(address.to_owned());
        self
    }

    /// Answers every DATA with `fail`.
    pub fn fail(mut self, fail: Fail) -> Self {
        self.fail = Some(fail);
        self
    }

    /// Answers the first `times` DATA with `fail`, then accepts.
    pub fn fail_times(mut self, fail: Fail, times: u32) -> Self {
        self.fail = Some(fail);
        self.fail_times = Some(times);
        self
    }

    /// Records the first `times` messages but never answers their `250`.
    pub fn lose_reply_times(mut self, times: u32) -> Self {
        self.lose_reply_times = times;
        self
    }

    /// Offers (and requires) STARTTLS with this PEM certificate chain and key.
    pub fn starttls(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.starttls = Some((cert.into(), key.into()));
        self
    }

    /// Requires AUTH as `user` with `password`.
    pub fn auth(mut self, user: &str, password: &str) -> Self {
        self.auth = Some((user.to_owned(), password.to_owned()));
        self
    }
}

/// One message the upstream accepted, as it recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The envelope's MAIL FROM.
    pub mail_from: String,
    /// The envelope's accepted RCPT TO addresses, in order.
    pub rcpt_tos: Vec<String>,
    /// The message text as received (after dot-unstuffing).
    pub data: String,
    /// The message's `Message-ID` header, if it had one.
    pub message_id: Option<String>,
    /// Whether the message came over TLS.
    pub tls: bool,
    /// The user the client authenticated as, if it did.
    pub auth_user: Option<String>,
}

/// One DATA the upstream answered, accepted or not (see [`Upstream::attempts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The envelope's accepted RCPT TO addresses.
    pub rcpt_tos: Vec<String>,
    /// The message text.
    pub data: String,
    /// The reply line, or `lost` when the connection was closed instead.
    pub answer: String,
}

impl Received {
    /// The value of the message's first header `name` (case-insensitive, unfolded), if any.
    pub fn header(&self, name: &str) -> Option<String> {
        header_value(&self.data, name)
    }
}

impl Attempt {
    /// The value of the message's first header `name` (case-insensitive, unfolded), if any.
    pub fn header(&self, name: &str) -> Option<String> {
        header_value(&self.data, name)
    }
}

fn header_value(data: &str, name: &str) -> Option<String> {
    let head = data.split("\r\n\r\n").next().unwrap_or("");
    let mut found: Option<String> = None;
    for line in head.split("\r\n") {
        if let Some(value) = found.as_mut() {
            if line.starts_with([' ', '\t']) {
                value.push(' ');
                value.push_str(line.trim());
                continue;
            }
            break;
        }
        match line.split_once(':') {
            Some((field, value)) if field.trim().eq_ignore_ascii_case(name) => found = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    found
}

/// The repository's root (this crate is `crates/idemgate-testkit`).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The venv's Python interpreter. A missing venv is made first by
/// `tests/smtp/setup-venv.sh` (under `flock`, so that test processes running at once make
/// it once), so the test command needs no step of its own; when it still cannot be made
/// (no `python3`, no PyPI), this panics with the command to run, so an SMTP test fails
/// rather than skips.
pub fn python() -> PathBuf {
    let venv = std::env::var_os("IDEMGATE_SMTP_VENV").map_or_else(|| repo().join("target/smtp-venv"), PathBuf::from);
    let python = venv.join("bin/python");
    let imports = || {
        Command::new(&python)
            .args(["-c", "import aiosmtpd"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !imports() {
        if let Some(parent) = venv.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let lock = venv.with_extension("lock");
        let made = Command::new("flock")
            .arg(&lock)
            .args(["bash"])
            .arg(repo().join("tests/smtp/setup-venv.sh"))
            .env("IDEMGATE_SMTP_VENV", &venv)
            .stdout(Stdio::null())
            .status();
        assert!(
            made.is_ok_and(|s| s.success()) && imports(),
            "the SMTP tests need Python with aiosmtpd at {}, and \
             `bash tests/smtp/setup-venv.sh` could not make it (python3 with venv and pip, and PyPI, are \
             needed); or set IDEMGATE_SMTP_VENV to such a venv",
            venv.display()
        );
    }
    python
}

/// A running recording upstream (see the module doc).
#[derive(Debug)]
pub struct Upstream {
    port: u16,
    options: Options,
    dir: PathBuf,
    child: Option<Child>,
}

impl Upstream {
    /// Starts the upstream on a free port of 127.0.0.1 and waits until it listens.
    pub fn start(options: Options) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "idemgate-smtp-upstream-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create the upstream's directory");
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("find a free port").port();
        let mut upstream = Upstream { port, options, dir, child: None };
        upstream.spawn();
        upstream
    }

    /// The port it listens on (on 127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Every message accepted so far, in order (across restarts).
    pub fn received(&self) -> Vec<Received> {
        read_lines(&self.dir.join("received.jsonl"))
            .iter()
            .map(|v| Received {
                mail_from: str_field(v, "mail_from"),
                rcpt_tos: rcpts(v),
                data: str_field(v, "data"),
                message_id: v["message_id"].as_str().map(str::to_owned),
                tls: v["tls"].as_bool().unwrap_or(false),
                auth_user: v["auth_user"].as_str().map(str::to_owned),
            })
            .collect()
    }

    /// Every DATA answered so far, accepted, refused or lost, in order (across restarts).
    pub fn attempts(&self) -> Vec<Attempt> {
        read_lines(&self.dir.join("attempts.jsonl"))
            .iter()
            .map(|v| Attempt { rcpt_tos: rcpts(v), data: str_field(v, "data"), answer: str_field(v, "answer") })
            .collect()
    }

    /// Waits until `done` holds for what has been received, and returns that; panics after
    /// a deadline with what had arrived.
    pub fn wait_until(&self, done: impl Fn(&[Received]) -> bool) -> Vec<Received> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let received = self.received();
            if done(&received) {
                return received;
            }
            assert!(
                Instant::now() < deadline,
                "the upstream did not receive what the test waited for; it has {received:#?}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the upstream (SIGKILL): connections to its port are then refused.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port with the same options (after a [`Upstream::stop`],
    /// or killing it first), and waits until it listens. Its record is kept.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// As [`Upstream::restart`], with other options (e.g. failing first, then accepting).
    pub fn restart_with(&mut self, options: Options) {
        self.stop();
        self.options = options;
        self.spawn();
    }

    fn spawn(&mut self) {
        let mut command = Command::new(python());
        command
            .arg(repo().join("tests/smtp/upstream.py"))
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--record")
            .arg(self.dir.join("received.jsonl"))
            .arg("--attempts")
            .arg(self.dir.join("attempts.jsonl"));
        let o = &self.options;
        for address in &o.refuse_rcpt {
            command.arg("--refuse-rcpt").arg(address);
        }
        if let Some(fail) = o.fail {
            command.arg("--fail").arg(match fail {
                Fail::Temporary => "temporary",
                Fail::Permanent => "permanent",
            });
        }
        if let Some(times) = o.fail_times {
            command.arg("--fail-times").arg(times.to_string());
        }
        if o.lose_reply_times > 0 {
            command.arg("--lose-reply-times").arg(o.lose_reply_times.to_string());
        }
        if let Some((cert, key)) = &o.starttls {
            command.arg("--starttls-cert").arg(cert).arg("--starttls-key").arg(key);
        }
        if let Some((user, password)) = &o.auth {
            command.arg("--auth").arg(format!("{user}:{password}"));
        }
        // The port was free a moment ago, or was ours before a restart; a process that
        // still held it a moment before (a previous run's, in TIME_WAIT) is waited out.
        let deadline = Instant::now() + DEADLINE;
        loop {
            let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("spawn upstream.py");
            let stdout = child.stdout.take().expect("upstream.py's stdout");
            let (tx, rx) = mpsc::channel();
            thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            let ready = loop {
                match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                    Ok(line) if line.trim() == "ready" => break true,
                    Ok(_) => {}
                    Err(_) => break false,
                }
            };
            if ready {
                self.child = Some(child);
                return;
            }
            let _ = child.kill();
            let status = child.wait().ok();
            assert!(
                Instant::now() < deadline,
                "upstream.py did not print `ready` on port {} (exit: {status:?}); its stderr is above",
                self.port
            );
            thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn read_lines(path: &Path) -> Vec<serde_json::Value> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    // Only whole lines: the upstream may be writing the next one.
    let complete = match text.rfind('\n') {
        Some(end) => &text[..=end],
        None => "",
    };
    complete.lines().map(|line| serde_json::from_str(line).expect("a JSON line from upstream.py")).collect()
}

fn str_field(v: &serde_json::Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_owned()
}

fn rcpts(v: &serde_json::Value) -> Vec<String> {
    v["rcpt_tos"]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}
