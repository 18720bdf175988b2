//! The scripted destination over a plain socket: it answers its script in order, then its
//! fallback, records what it was sent, and closes a connection without an answer when told.

#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

use idemgate_testkit::{Destination, Step};

/// One POST on a fresh connection; the raw answer, empty if the connection was closed.
fn post(addr: SocketAddr, path: &str, header: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let request =
        format!("POST {path} HTTP/1.1\r\nHost: x\r\n{header}\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8(answer).unwrap()
}

fn status(answer: &str) -> &str {
    answer.split(' ').nth(1).unwrap_or("none")
}

#[test]
fn it_answers_its_script_then_its_fallback_and_records_every_request_in_order() {
    let destination = Destination::start(&[Step::Status(503), Step::RetryAfter(429, 7), Step::Close]);
    let first = post(destination.addr, "/hook", "X-N: 1", "one");
    assert_eq!(status(&first), "503");
    assert!(!first.to_ascii_lowercase().contains("retry-after"), "{first}");
    let second = post(destination.addr, "/hook?q=1", "X-N: 2", "two");
    assert_eq!(status(&second), "429");
    assert!(second.to_ascii_lowercase().contains("retry-after: 7\r\n"), "{second}");
    assert_eq!(post(destination.addr, "/other", "X-N: 3", "three"), "", "closed without an answer");
    assert_eq!(status(&post(destination.addr, "/hook", "X-N: 4", "four")), "200", "the script is used up");
    destination.otherwise(Step::Status(500));
    destination.retry_after(2);
    let fallback = post(destination.addr, "/hook", "X-N: 5", "five");
    assert_eq!(status(&fallback), "500");
    assert!(fallback.to_ascii_lowercase().contains("retry-after: 2\r\n"), "{fallback}");

    let received = destination.received();
    let seen: Vec<_> = received.iter().map(|r| (r.path.as_str(), r.header("x-n"), &r.body[..])).collect();
    assert_eq!(
        seen,
        [
            ("/hook", "1", &b"one"[..]),
            ("/hook?q=1", "2", b"two"),
            ("/other", "3", b"three"),
            ("/hook", "4", b"four"),
            ("/hook", "5", b"five")
        ]
    );
    assert!(received.windows(2).all(|pair| pair[0].at <= pair[1].at));
    assert!(received.iter().all(|r| r.method == http::Method::POST));
}

#[test]
fn a_sleep_answers_200_after_its_wait_and_wait_until_sees_the_request_first() {
    let destination = Destination::start(&[Step::Sleep(Duration::from_millis(200))]);
    let addr = destination.addr;
    let sender = std::thread::spawn(move || post(addr, "/hook", "X-N: 1", "{}"));
    destination.wait_until("the sleeping request", |received| received.len() == 1);
    assert_eq!(status(&sender.join().unwrap()), "200");
}
