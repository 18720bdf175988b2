//! Harness for `idemgate serve`: write a config, start the binary on port 0, sign
//! deliveries with each scheme, and read the SQLite file directly.

use std::{
    io::{BufRead, BufReader},
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
};

use base64::{Engine, engine::general_purpose::STANDARD};
use idemgate::core::{
    Secret, UnixTime,
    scheme::{DemoV1, GitHub, Outgoing, Scheme, Shopify, Slack, StandardWebhooks, StandardWebhooksEd25519, Stripe},
};
use idemgate_client::WebhookSigner;
use idemgate_testkit::Destination;

use crate::harness::{Reply, post, unix_now};

pub fn idemgate_bin() -> &'static str {
    env!("CARGO_BIN_EXE_idemgate")
}

/// A temporary folder with a config file and the store under `data/`.
pub struct Setup {
    pub dir: tempfile::TempDir,
}

impl Setup {
    /// `sources` is TOML for `[sources.*]` and `[destinations.*]`; server and store are added.
    pub fn new(sources: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let setup = Self { dir };
        setup.write_config(sources);
        setup
    }

    pub fn write_config(&self, sources: &str) {
        let config = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\nbody_timeout = \"5s\"\n[store]\npath = \"{}\"\nbusy_timeout = \"250ms\"\n{sources}",
            self.db().display()
        );
        std::fs::write(self.config(), config).unwrap();
    }

    pub fn config(&self) -> PathBuf {
        self.dir.path().join("idemgate.toml")
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("data").join("idemgate.sqlite3")
    }

    pub fn start(&self) -> Gateway {
        Gateway::start(&self.config(), &[])
    }

    /// Runs `idemgate` with `args` (the config path is added) and returns its output.
    pub fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new(idemgate_bin())
            .args(args)
            .arg("--config")
            .arg(self.config())
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

/// A running gateway.
pub struct Gateway {
    child: Child,
    pub addr: SocketAddr,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Gateway {
    pub fn start(config: &Path, env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(idemgate_bin())
            .args(["serve", "--config"])
            .arg(config)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let addr = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("first line {line:?}"));
        Self { addr: addr.parse().unwrap(), child, stdout }
    }

    /// The next line the gateway prints on stdout (e.g. an SMTP listener's address).
    pub fn next_line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line
    }

    /// The admin API's address, from the second stdout line.
    pub fn admin_addr(&mut self) -> SocketAddr {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line.trim()
            .strip_prefix("admin listening on ")
            .unwrap_or_else(|| panic!("second line {line:?}"))
            .parse()
            .unwrap()
    }

    pub fn post(&self, route: &str, headers: &[(String, String)], body: &[u8]) -> Reply {
        post(self.addr, &format!("/in/{route}"), headers, body)
    }

    /// Sends each `(identity, body)` of `events` to `/in/{route}`, one after another,
    /// signed by `signer` and with the `extra` headers, and asserts each was accepted:
    /// `202 {"status":"accepted","event":identity}`.
    pub fn accept_events(
        &self,
        route: &str,
        signer: &Signer,
        extra: &[(&str, &str)],
        events: impl IntoIterator<Item = (String, Vec<u8>)>,
    ) {
        for (identity, body) in events {
            let mut headers = signer.headers(&identity, &body, unix_now());
            headers.extend(extra.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())));
            let reply = self.post(route, &headers, &body);
            let accepted = serde_json::json!({"status": "accepted", "event": identity});
            assert!(reply.is(202, accepted), "{route}: {identity} was not accepted: {reply:?}");
        }
    }

    pub fn get(&self, path: &str) -> Reply {
        crate::harness::exchange(
            self.addr,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
    }

    /// A GET's raw body, for non-JSON answers.
    pub fn get_text(&self, path: &str) -> String {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(self.addr).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default()
    }

    /// SIGKILL: the process gets no chance to finish anything.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(self.child.wait().unwrap().success());
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How a test signs for one scheme of the registry: the scheme, the secret text for the
/// config, and the signing key; the headers come from the registry's own signing.
#[derive(Clone)]
pub enum Signer {
    Standard(Vec<u8>),
    Ed25519([u8; 32]),
    GitHub(&'static str),
    Stripe(&'static str),
    Shopify(&'static str),
    Slack(&'static str),
    Demo([u8; 32]),
}

impl Signer {
    /// The scheme's configuration name, from the registry.
    pub fn scheme(&self) -> &'static str {
        self.registered().name()
    }

    fn registered(&self) -> &'static dyn Scheme {
        match self {
            Self::Standard(_) => &StandardWebhooks::DEFAULT,
            Self::Ed25519(_) => &StandardWebhooksEd25519::DEFAULT,
            Self::GitHub(_) => &GitHub,
            Self::Stripe(_) => &Stripe::DEFAULT,
            Self::Shopify(_) => &Shopify,
            Self::Slack(_) => &Slack::DEFAULT,
            Self::Demo(_) => &DemoV1::DEFAULT,
        }
    }

    /// The key the sender signs with: the configured secret's bytes, or for ed25519 the
    /// private seed whose public key is configured.
    fn signing_key(&self) -> Secret {
        Secret::new(match self {
            Self::Standard(key) => key.clone(),
            Self::Ed25519(seed) | Self::Demo(seed) => seed.to_vec(),
            Self::GitHub(s) | Self::Stripe(s) | Self::Shopify(s) | Self::Slack(s) => s.as_bytes().to_vec(),
        })
    }

    /// The secret as written in the config file.
    pub fn config_secret(&self) -> String {
        match self {
            Self::Standard(key) => format!("whsec_{}", STANDARD.encode(key)),
            Self::Ed25519(seed) => {
                let public = ed25519_dalek::SigningKey::from_bytes(seed).verifying_key();
                format!("whpk_{}", STANDARD.encode(public.as_bytes()))
            }
            Self::GitHub(s) | Self::Stripe(s) | Self::Shopify(s) | Self::Slack(s) => (*s).to_owned(),
            Self::Demo(key) => hex::encode(key),
        }
    }

    pub fn has_timestamp(&self) -> bool {
        !matches!(self, Self::GitHub(_) | Self::Shopify(_))
    }

    /// Headers of one delivery attempt of event `identity` signed at `timestamp`.
    pub fn headers(&self, identity: &str, body: &[u8], timestamp: i64) -> Vec<(String, String)> {
        let signer = WebhookSigner::new(self.registered(), self.signing_key()).unwrap();
        let attempt = u32::try_from(unix_now() % 1000).unwrap_or(0);
        let message = Outgoing { id: identity, attempt, timestamp: UnixTime(timestamp), body };
        let mut headers: Vec<(String, String)> =
            signer.headers(&message).into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        headers.push(("Content-Type".into(), "application/json".into()));
        headers
    }
}

/// The 401 body of a delivery its scheme refused for `reason` (`signature_mismatch`,
/// `timestamp_out_of_tolerance`, ...), without the fields some reasons add.
pub fn unauthenticated(reason: &str) -> serde_json::Value {
    serde_json::json!({"error": "authentication", "reason": reason})
}

/// The 401 body of a delivery refused for `reason` (`missing_header` or `malformed_header`)
/// at `header`, as the answer names it (lowercase).
pub fn unauthenticated_at(reason: &str, header: &str) -> serde_json::Value {
    serde_json::json!({"error": "authentication", "reason": reason, "header": header})
}

/// A body every scheme's default identity location finds: `/id` (Stripe), `/event_id`
/// (Slack, demo), or the identity header the signer sets.
pub fn body(identity: &str, event_type: &str) -> Vec<u8> {
    format!(r#"{{"id":"{identity}","event_id":"{identity}","type":"{event_type}","data":{{"n":1}}}}"#).into_bytes()
}

/// Events of type `event_type` under `identities`, each with its [`body`].
pub fn typed<I: AsRef<str>>(identities: impl IntoIterator<Item = I>, event_type: &str) -> Vec<(String, Vec<u8>)> {
    identities.into_iter().map(|identity| (identity.as_ref().to_owned(), body(identity.as_ref(), event_type))).collect()
}

/// The identities `{prefix}0` to `{prefix}{count - 1}`.
pub fn numbered(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}{i}")).collect()
}

/// A config in which source `hooks` (`signer`'s scheme and secret) forwards to destination
/// `app` at `destination`, the worker polling every 50 ms; `source_extra` and
/// `destination_extra` are TOML lines added to those two tables.
pub fn forwarding(signer: &Signer, destination: &Destination, source_extra: &str, destination_extra: &str) -> String {
    format!(
        r#"
[worker]
poll_interval = "50ms"
[sources.hooks]
scheme = "{scheme}"
secrets = [{secret:?}]
destinations = ["app"]
{source_extra}
[destinations.app]
url = "{url}"
timeout = "1s"
{destination_extra}
"#,
        scheme = signer.scheme(),
        secret = signer.config_secret(),
        url = destination.url(),
    )
}

/// What the store holds, read with plain rusqlite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inbox {
    pub receipts: Vec<String>,
    pub events: Vec<String>,
    pub jobs: Vec<(String, String, String)>,
}

pub fn inbox(db: &Path) -> Inbox {
    let conn = rusqlite::Connection::open(db).unwrap();
    let strings = |sql: &str| -> Vec<String> {
        let mut stmt = conn.prepare(sql).unwrap();
        stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    };
    let receipts = strings("SELECT identity FROM receipts ORDER BY identity");
    let events = strings("SELECT identity FROM events ORDER BY identity");
    let mut stmt = conn
        .prepare(
            "SELECT e.identity, j.destination, j.state FROM jobs j JOIN events e ON e.id = j.event_id ORDER BY 1, 2",
        )
        .unwrap();
    let jobs = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect();
    Inbox { receipts, events, jobs }
}
