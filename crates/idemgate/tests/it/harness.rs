//! A tiny harness: start the counter example on port 0, sign deliveries like a demo
//! sender, speak HTTP/1.1 over a plain socket (so a dropped response is observable), and
//! read the database file directly, without the server's code.

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const SECRET_HEX: &str = "5f1c0e2a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e";

/// Path of the counter example's binary, built by `cargo test` next to this test binary.
pub fn counter_bin() -> PathBuf {
    example_bin("counter")
}

/// Path of the example `name`'s binary, built by `cargo test` next to this test binary.
pub fn example_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let bin = profile_dir.join("examples").join(name);
    assert!(bin.exists(), "{} is missing: run the tests with `cargo test`", bin.display());
    bin
}

/// A running counter example.
pub struct Counter {
    child: Child,
    pub addr: SocketAddr,
    pub db: PathBuf,
}

impl Counter {
    pub fn start(db: &Path) -> Self {
        Self::start_with(db, "")
    }

    pub fn start_with(db: &Path, faults: &str) -> Self {
        Self::start_env(db, &[("COUNTER_FAULTS", faults)])
    }

    /// Starts with `COUNTER_SECRET` set to [`SECRET_HEX`] unless `env` says otherwise.
    pub fn start_env(db: &Path, env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(counter_bin());
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--db"])
            .arg(db)
            .env("COUNTER_SECRET", SECRET_HEX)
            .env_remove("COUNTER_FAULTS")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .parse()
            .unwrap();
        Self { child, addr, db: db.to_owned() }
    }

    /// Sends a signed delivery with a fresh delivery id and the current time.
    pub fn deliver(&self, body: &str) -> Reply {
        self.post(&Delivery::signed(body.as_bytes()))
    }

    pub fn post(&self, delivery: &Delivery) -> Reply {
        post(self.addr, "/webhook", &delivery.headers(), &delivery.body)
    }

    /// Sends `signal` (e.g. `"TERM"`) and waits for the process to exit.
    pub fn stop_with(mut self, signal: &str) -> ExitStatus {
        self.signal(signal);
        self.child.wait().unwrap()
    }

    /// The counter's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args([&format!("-{signal}"), &pid]).status().unwrap().success());
    }

    pub fn wait(mut self) -> ExitStatus {
        self.child.wait().unwrap()
    }

    pub fn sigterm(self) -> ExitStatus {
        self.stop_with("TERM")
    }

    pub fn sigkill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

/// One delivery attempt as a demo sender makes it.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub body: Vec<u8>,
    pub delivery_id: String,
    pub timestamp: String,
    pub signature: String,
}

impl Delivery {
    pub fn signed(body: &[u8]) -> Self {
        Self::signed_at(body, unix_now())
    }

    pub fn signed_at(body: &[u8], timestamp: i64) -> Self {
        let delivery_id = format!("d-{:x}", rand_u64());
        let timestamp = timestamp.to_string();
        let signature = sign(&delivery_id, &timestamp, body);
        Self { body: body.to_vec(), delivery_id, timestamp, signature }
    }

    pub fn headers(&self) -> Vec<(String, String)> {
        vec![
            ("Demo-Delivery-Id".into(), self.delivery_id.clone()),
            ("Demo-Timestamp".into(), self.timestamp.clone()),
            ("Demo-Signature".into(), self.signature.clone()),
            ("Content-Type".into(), "application/json".into()),
        ]
    }
}

/// HMAC-SHA256 over the documented material, written out independently of the library.
pub fn sign(delivery_id: &str, timestamp: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(&hex::decode(SECRET_HEX).unwrap()).unwrap();
    mac.update(format!("demo-webhook-v1\n{delivery_id}\n{timestamp}\n").as_bytes());
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::Instant::now())
}

pub fn event(event_id: &str, value: i64) -> String {
    format!(r#"{{"event_id":"{event_id}","kind":"increment","value":{value}}}"#)
}

/// What came back: an answer, or a connection closed without one.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Answer { status: u16, headers: BTreeMap<String, String>, body: serde_json::Value },
    Dropped,
}

impl Reply {
    pub fn status(&self) -> u16 {
        match self {
            Self::Answer { status, .. } => *status,
            Self::Dropped => panic!("connection was closed without a response"),
        }
    }

    pub fn body(&self) -> &serde_json::Value {
        match self {
            Self::Answer { body, .. } => body,
            Self::Dropped => panic!("connection was closed without a response"),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        match self {
            Self::Answer { headers, .. } => headers.get(name).map(String::as_str),
            Self::Dropped => None,
        }
    }

    pub fn is(&self, status: u16, body: serde_json::Value) -> bool {
        self.status() == status && *self.body() == body
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`).
pub fn post(addr: SocketAddr, path: &str, headers: &[(String, String)], body: &[u8]) -> Reply {
    exchange(addr, &request(addr, "POST", path, headers, body))
}

/// The bytes of one request for its own connection: `Host`, `Connection: close` and
/// `Content-Length` first, then `headers` as given.
fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(String, String)], body: &[u8]) -> Vec<u8> {
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    request
}

/// An answer as it came, for servers that may not answer JSON.
#[derive(Debug)]
pub struct RawAnswer {
    pub status: u16,
    /// Lowercase names.
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

/// One request on a fresh connection to a server that may be down, starting or killed:
/// `None` when it cannot be reached or gives no answer.
pub fn try_send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Option<RawAnswer> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    stream.write_all(&request(addr, method, path, headers, body)).ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers =
        lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    Some(RawAnswer { status, headers: headers.collect(), body: raw[split + 4..].to_vec() })
}

/// Sends raw request bytes and reads the answer until the server closes.
pub fn exchange(addr: SocketAddr, request: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.write_all(request).unwrap();
    let mut raw = Vec::new();
    match stream.read_to_end(&mut raw) {
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset && raw.is_empty() => {
            return Reply::Dropped;
        }
        Err(err) => panic!("reading the answer failed: {err}"),
    }
    parse_reply(&raw)
}

fn parse_reply(raw: &[u8]) -> Reply {
    if raw.is_empty() {
        return Reply::Dropped;
    }
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("no end of head");
    let head = std::str::from_utf8(&raw[..split]).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect::<BTreeMap<_, _>>();
    let mut body = raw[split + 4..].to_vec();
    if headers.get("transfer-encoding").is_some_and(|te| te.eq_ignore_ascii_case("chunked")) {
        body = dechunk(&body);
    }
    let body = if body.is_empty() { serde_json::Value::Null } else { serde_json::from_slice(&body).unwrap() };

    Reply::Answer { status, headers, body }
}

/// The database as an outside reader sees it, opened with plain rusqlite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub total: i64,
    pub receipts: BTreeMap<String, i64>,
    pub conflicts: u64,
}

pub fn state(db: &Path) -> State {
    let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE).unwrap();
    let total = conn.query_row("SELECT total FROM counter", [], |r| r.get(0)).unwrap();
    let mut stmt = conn.prepare("SELECT identity, result FROM receipts WHERE source = 'demo-source'").unwrap();
    let receipts = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|row| {
            let (id, result) = row.unwrap();
            (id, result.parse().unwrap())
        })
        .collect();
    let conflicts = conn.query_row("SELECT coalesce(sum(seen_count), 0) FROM conflicts", [], |r| r.get(0)).unwrap();
    State { total, receipts, conflicts }
}

pub fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("counter.sqlite3");
    (dir, db)
}

/// Decodes a chunked body (sizes in hex, each chunk followed by CRLF, a zero chunk last).
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|w| w == b"\r\n").expect("chunk size line");
        let size_text = std::str::from_utf8(&raw[..line_end]).unwrap().split(';').next().unwrap().trim();
        let size = usize::from_str_radix(size_text, 16).unwrap();
        if size == 0 {
            return body;
        }
        let start = line_end + 2;
        body.extend_from_slice(&raw[start..start + size]);
        raw = &raw[start + size + 2..];
    }
}
