//! `[[proxy]]` against hostile or heavy traffic, over raw sockets (clients normalise paths
//! and headers themselves) to a real `idemgate serve` and a recording upstream: bounded
//! memory on a huge answer, no path above the upstream's base, hop-by-hop and forwarding
//! headers, and a slow body answered 408 without calling the upstream.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    sync::{Arc, Mutex},
    thread,
    time::Duration,
};

use crate::{
    gateway_harness::{Gateway, Setup},
    harness::{Reply, exchange},
};

/// One request as the upstream received it: the request target and every header line in
/// order (names lowercased).
#[derive(Debug, Clone)]
struct Seen {
    target: String,
    headers: Vec<(String, String)>,
}

impl Seen {
    fn all(&self, name: &str) -> Vec<&str> {
        self.headers.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_str()).collect()
    }
}

/// A blocking HTTP/1.1 upstream that records each request and answers `{"ok":true}`, or
/// `answer_len` pattern bytes when that is not zero.
struct Upstream {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Upstream {
    fn start(answer_len: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recording = Arc::clone(&seen);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = Arc::clone(&recording);
                thread::spawn(move || answer(stream, &seen, answer_len));
            }
        });
        Self { addr, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn answer(stream: TcpStream, seen: &Mutex<Vec<Seen>>, answer_len: usize) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let target = line.split(' ').nth(1).unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.trim_end().split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    seen.lock().unwrap().push(Seen { target, headers });
    let stream = reader.get_mut();
    if answer_len == 0 {
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}",
        );
        return;
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {answer_len}\r\nConnection: close\r\n\r\n"
    );
    if stream.write_all(head.as_bytes()).is_err() {
        return;
    }
    let pattern = pattern();
    let mut sent = 0;
    while sent < answer_len {
        let n = CHUNK.min(answer_len - sent);
        if stream.write_all(expected(&pattern, sent, n)).is_err() {
            return;
        }
        sent += n;
    }
}

const CHUNK: usize = 64 * 1024;

/// Byte `i` of a big answer is `i % 251`: this holds every run of up to [`CHUNK`] bytes.
fn pattern() -> Vec<u8> {
    (0..CHUNK + 251).map(|i| (i % 251) as u8).collect()
}

/// The `len` bytes of the answer from `offset` on.
fn expected(pattern: &[u8], offset: usize, len: usize) -> &[u8] {
    &pattern[offset % 251..][..len]
}

/// A gateway whose only route is a `[[proxy]]` under `/api` to `upstream` (a full URL),
/// with `extra` TOML lines added to the entry.
fn gateway(upstream: &str, extra: &str) -> (Setup, Gateway) {
    let setup = Setup::new(&format!("[[proxy]]\nprefix = \"/api\"\nupstream = \"{upstream}\"\n{extra}"));
    let gateway = setup.start();
    (setup, gateway)
}

fn vm_high_water_mark_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Sends a keyed POST and reads the answer's body as it streams, checking every byte
/// against the pattern. Returns the status, the lowercased head and the body's length.
fn keyed_download(addr: SocketAddr, key: &str) -> (u16, String, usize) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        stream,
        "POST /api/export HTTP/1.1\r\nHost: x\r\nConnection: close\r\nIdempotency-Key: {key}\r\nContent-Length: 2\r\n\r\n{{}}"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        head.push_str(&line.to_ascii_lowercase());
    }
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let chunked = head.contains("transfer-encoding: chunked");
    let mut received = 0;
    let mut buffer = vec![0u8; CHUNK];
    let pattern = pattern();
    let check = |data: &[u8], received: &mut usize| {
        assert!(data == expected(&pattern, *received, data.len()), "the answer differs after byte {}", *received);
        *received += data.len();
    };
    if chunked {
        loop {
            let mut size_line = String::new();
            reader.read_line(&mut size_line).unwrap();
            let size = usize::from_str_radix(size_line.trim().split(';').next().unwrap(), 16).unwrap();
            if size == 0 {
                break;
            }
            let mut left = size;
            while left > 0 {
                let n = left.min(buffer.len());
                reader.read_exact(&mut buffer[..n]).unwrap();
                check(&buffer[..n], &mut received);
                left -= n;
            }
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf).unwrap();
        }
    } else {
        loop {
            let n = reader.read(&mut buffer).unwrap();
            if n == 0 {
                break;
            }
            check(&buffer[..n], &mut received);
        }
    }
    (status, head, received)
}

#[test]
fn a_huge_answer_to_a_keyed_request_streams_through_in_bounded_memory() {
    const ANSWER: usize = 150 << 20;
    let upstream = Upstream::start(ANSWER);
    // A total timeout long enough for a loaded machine: the point here is memory.
    let (_setup, gateway) = gateway(&format!("http://{}", upstream.addr), "timeout = \"10m\"\n");
    let keys = ["export-1", "export-2", "export-3"];
    let downloads: Vec<_> = thread::scope(|scope| {
        let handles: Vec<_> = keys.iter().map(|key| scope.spawn(|| keyed_download(gateway.addr, key))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (status, head, received) in &downloads {
        assert_eq!((*status, *received), (200, ANSWER), "{head}");
    }
    let peak_mib = vm_high_water_mark_kib(gateway.pid()) / 1024;
    assert!(peak_mib < 100, "the gateway's resident memory peaked at {peak_mib} MiB for three 150 MiB answers");

    let (status, head, received) = keyed_download(gateway.addr, "export-1");
    assert_eq!((status, received), (200, 0), "{head}");
    assert!(head.contains("idempotency-replay: true") && head.contains("idempotency-replay-body: omitted"), "{head}");
    assert_eq!(upstream.seen().len(), 3, "the replay did not call the upstream");
}

fn get(addr: SocketAddr, target: &str) -> Reply {
    exchange(addr, format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
}

#[test]
fn dot_segments_are_refused_and_never_reach_above_the_upstreams_base() {
    let upstream = Upstream::start(0);
    let (_setup, gateway) = gateway(&format!("http://{}/base", upstream.addr), "");
    for target in [
        "/api/../secret",
        "/api/%2e%2e/secret",
        "/api/%2E%2E/secret",
        "/api/.%2e/secret",
        "/api/%2e./secret",
        "/api/.%2E/secret",
        "/api/..%2fsecret",
        "/api/..%5Csecret",
        "/api/./secret",
        "/api/orders/..",
        "/api/orders/../../secret?x=1",
    ] {
        let reply = get(gateway.addr, target);
        assert_eq!(reply.status(), 400, "{target}: {reply:?}");
        assert_eq!(reply.header("content-type"), Some("application/problem+json"), "{target}");
        assert!(reply.body()["title"].as_str().is_some_and(|t| t.contains("dot segment")), "{target}: {reply:?}");
    }
    let keyed = exchange(
        gateway.addr,
        b"POST /api/%2e%2e/secret HTTP/1.1\r\nHost: x\r\nConnection: close\r\nIdempotency-Key: k\r\nContent-Length: 2\r\n\r\n{}",
    );
    assert_eq!(keyed.status(), 400, "{keyed:?}");
    assert!(upstream.seen().is_empty(), "nothing reached the upstream: {:?}", upstream.seen());

    assert!(get(gateway.addr, "/api/orders/7..8/a.b?q=../x").is(200, serde_json::json!({"ok": true})));
    let targets: Vec<String> = upstream.seen().into_iter().map(|s| s.target).collect();
    assert_eq!(targets, ["/base/orders/7..8/a.b?q=../x"]);
}

/// The upstream is reached directly: proxy settings in the environment never route the
/// callers' requests (and their credentials) through another host.
#[test]
fn proxy_settings_in_the_environment_are_not_used_for_the_upstream() {
    let upstream = Upstream::start(0);
    let elsewhere = Upstream::start(0);
    let setup = Setup::new(&format!("[[proxy]]\nprefix = \"/api\"\nupstream = \"http://{}\"\n", upstream.addr));
    let via = format!("http://{}", elsewhere.addr);
    let env = [("HTTP_PROXY", via.as_str()), ("http_proxy", via.as_str()), ("ALL_PROXY", via.as_str())];
    let gateway = Gateway::start(&setup.config(), &env);
    assert_eq!(get(gateway.addr, "/api/whoami").status(), 200);
    assert_eq!(upstream.seen().len(), 1);
    assert!(elsewhere.seen().is_empty(), "went through the environment's proxy: {:?}", elsewhere.seen());
}

#[test]
fn hop_by_hop_headers_are_dropped_and_forwarding_headers_are_the_gateways_own() {
    let upstream = Upstream::start(0);
    let (_setup, gateway) = gateway(&format!("http://{}", upstream.addr), "");
    let request = "GET /api/whoami HTTP/1.1\r\nHost: public.example\r\nConnection: close, X-Hop\r\n\
                   Proxy-Connection: keep-alive\r\nKeep-Alive: timeout=5\r\nX-Hop: 1\r\nX-End: kept\r\n\
                   X-Forwarded-For: 203.0.113.9\r\nX-Forwarded-For: 198.51.100.2\r\n\
                   Forwarded: for=203.0.113.9;proto=https\r\nX-Forwarded-Host: evil.example\r\n\
                   X-Forwarded-Proto: https\r\n\r\n";
    assert_eq!(exchange(gateway.addr, request.as_bytes()).status(), 200);
    let seen = upstream.seen().pop().unwrap();
    for dropped in ["proxy-connection", "keep-alive", "x-hop"] {
        assert!(seen.all(dropped).is_empty(), "{dropped} was forwarded: {seen:?}");
    }
    assert!(seen.all("connection").iter().all(|v| !v.to_ascii_lowercase().contains("x-hop")), "{seen:?}");
    assert_eq!(seen.all("x-end"), ["kept"]);
    assert_eq!(seen.all("x-forwarded-for"), ["203.0.113.9, 198.51.100.2, 127.0.0.1"], "{seen:?}");
    assert_eq!(
        seen.all("forwarded"),
        ["for=203.0.113.9;proto=https, for=127.0.0.1;host=\"public.example\";proto=http"],
        "{seen:?}"
    );
    assert_eq!(seen.all("x-forwarded-host"), ["public.example"], "{seen:?}");
    assert_eq!(seen.all("x-forwarded-proto"), ["http"], "{seen:?}");
}

/// Sends a head promising 100 bytes and only 3 of them, then waits for the answer.
fn stalled_body(addr: SocketAddr, key: Option<&str>) -> String {
    let key = key.map(|k| format!("Idempotency-Key: {k}\r\n")).unwrap_or_default();
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "POST /api/orders HTTP/1.1\r\nHost: x\r\n{key}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"a").unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn a_body_that_stalls_is_answered_408_by_the_configured_timeout_and_never_forwarded() {
    let upstream = Upstream::start(0);
    let (_setup, gateway) = gateway(&format!("http://{}", upstream.addr), "body_timeout = \"300ms\"\n");
    for key in [None, Some("slow-1")] {
        let answer = stalled_body(gateway.addr, key);
        assert!(answer.starts_with("HTTP/1.1 408"), "key {key:?}: {answer}");
        assert!(answer.to_ascii_lowercase().contains("content-type: application/problem+json"), "{answer}");
    }
    assert!(upstream.seen().is_empty(), "the upstream was called: {:?}", upstream.seen());
    let retry = exchange(
        gateway.addr,
        b"POST /api/orders HTTP/1.1\r\nHost: x\r\nConnection: close\r\nIdempotency-Key: slow-1\r\nContent-Length: 2\r\n\r\n{}",
    );
    assert_eq!(retry.status(), 200, "the key was not taken by the stalled attempt: {retry:?}");
}
