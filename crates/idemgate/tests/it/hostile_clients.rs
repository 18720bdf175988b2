//! Hostile and broken clients against `idemgate serve`: each gets a clear 4xx or a closed
//! connection, stores nothing, and valid traffic keeps being answered meanwhile.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    sync::atomic::{AtomicBool, AtomicUsize, Ordering},
    thread,
    time::Duration,
};

use crate::{
    gateway_harness::{Gateway, Setup, Signer, body, inbox},
    harness::unix_now,
};

const KEY: [u8; 32] = [2; 32];

fn setup() -> Setup {
    let setup = Setup::new(&format!(
        "[sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{:?}]\nbody_limit = 4096\n",
        Signer::Standard(KEY.to_vec()).config_secret()
    ));
    let config = std::fs::read_to_string(setup.config()).unwrap();
    let tight = config.replace("body_timeout = \"5s\"", "body_timeout = \"1s\"\nheader_timeout = \"1s\"");
    std::fs::write(setup.config(), tight).unwrap();
    setup
}

fn signed_head(identity: &str, body: &[u8], content_length: usize) -> String {
    let mut head = format!("POST /in/hooks HTTP/1.1\r\nHost: x\r\nContent-Length: {content_length}\r\n");
    for (name, value) in Signer::Standard(KEY.to_vec()).headers(identity, body, unix_now()) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head
}

fn valid(gateway: &Gateway, identity: &str) -> u16 {
    let body = body(identity, "t");
    gateway.post("hooks", &Signer::Standard(KEY.to_vec()).headers(identity, &body, unix_now()), &body).status()
}

/// Reads what the server sends until it closes (or 5 s pass).
fn read_all(stream: &mut TcpStream) -> String {
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn a_slowloris_head_is_cut_off_and_valid_requests_still_pass() {
    let setup = setup();
    let gateway = setup.start();
    let mut slow = TcpStream::connect(gateway.addr).unwrap();
    slow.write_all(b"POST /in/hooks HTTP/1.1\r\nHost: x\r\n").unwrap();
    assert_eq!(valid(&gateway, "msg_during"), 202, "served while a head trickles");
    thread::sleep(Duration::from_millis(1500));
    let _ = slow.write_all(b"X-Late: 1\r\n");
    let answer = read_all(&mut slow);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "the slow head is cut off: {answer:?}");
    assert_eq!(inbox(&setup.db()).receipts, ["msg_during"]);
}

#[test]
fn a_body_longer_than_declared_is_not_taken_as_the_signed_body() {
    let setup = setup();
    let gateway = setup.start();
    let body = body("msg_long", "t");
    let mut stream = TcpStream::connect(gateway.addr).unwrap();
    stream.write_all(signed_head("msg_long", &body, body.len() - 5).as_bytes()).unwrap();
    stream.write_all(&body).unwrap();
    stream.write_all(b"\r\n\r\n").unwrap();
    let answer = read_all(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 401"), "the first Content-Length bytes do not verify: {answer:?}");
    assert!(inbox(&setup.db()).receipts.is_empty());
}

#[test]
fn a_body_shorter_than_declared_times_out_with_408() {
    let setup = setup();
    let gateway = setup.start();
    let body = body("msg_short", "t");
    let mut stream = TcpStream::connect(gateway.addr).unwrap();
    stream.write_all(signed_head("msg_short", &body, body.len() + 100).as_bytes()).unwrap();
    stream.write_all(&body).unwrap();
    let answer = read_all(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(inbox(&setup.db()).receipts.is_empty());
}

#[test]
fn a_declared_length_over_the_limit_is_refused_before_reading() {
    let setup = setup();
    let gateway = setup.start();
    let mut stream = TcpStream::connect(gateway.addr).unwrap();
    stream.write_all(signed_head("msg_huge", b"", 50_000_000).as_bytes()).unwrap();
    let answer = read_all(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer:?}");
}

#[test]
fn many_idle_connections_do_not_stop_valid_traffic() {
    let setup = setup();
    let gateway = setup.start();
    let idle: Vec<TcpStream> = (0..400).map(|_| TcpStream::connect(gateway.addr).unwrap()).collect();
    assert_eq!(valid(&gateway, "msg_idle"), 202);
    drop(idle);
    assert_eq!(inbox(&setup.db()).receipts, ["msg_idle"]);
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_flood_of_bad_signatures_leaves_valid_traffic_answered_and_memory_bounded() {
    let setup = setup();
    let gateway = setup.start();
    let stop = AtomicBool::new(false);
    let (rejected, accepted) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let flood = |addr: SocketAddr| {
        let wrong = Signer::Standard(vec![9; 32]);
        let mut i = 0;
        while !stop.load(Ordering::SeqCst) {
            let body = body(&format!("bad_{i}"), "t");
            let reply =
                crate::harness::post(addr, "/in/hooks", &wrong.headers(&format!("bad_{i}"), &body, unix_now()), &body);
            assert_eq!(reply.status(), 401);
            rejected.fetch_add(1, Ordering::SeqCst);
            i += 1;
        }
    };
    let before = rss_kib(gateway.pid());
    let mut latencies = Vec::new();
    thread::scope(|scope| {
        for _ in 0..6 {
            scope.spawn(|| flood(gateway.addr));
        }
        for i in 0..200 {
            let started = std::time::Instant::now();
            assert_eq!(valid(&gateway, &format!("msg_ok_{i}")), 202, "valid traffic answered during the flood");
            latencies.push(started.elapsed());
            accepted.fetch_add(1, Ordering::SeqCst);
        }
        stop.store(true, Ordering::SeqCst);
    });
    latencies.sort();
    let after = rss_kib(gateway.pid());
    eprintln!(
        "flood: {} bad signatures refused while {} valid deliveries were accepted (p50 {:?}, p99 {:?}); RSS {before} -> {after} KiB",
        rejected.load(Ordering::SeqCst),
        accepted.load(Ordering::SeqCst),
        latencies[latencies.len() / 2],
        latencies[latencies.len() * 99 / 100],
    );
    assert_eq!(inbox(&setup.db()).receipts.len(), 200, "only the valid deliveries are stored");
    assert!(after < 200 * 1024, "RSS grew to {after} KiB");
}
