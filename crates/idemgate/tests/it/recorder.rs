//! A destination for the gateway's worker: a plain blocking HTTP/1.1 server on 127.0.0.1
//! that records every request and answers from a script.

use std::{
    collections::{BTreeMap, VecDeque},
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    sync::{Arc, Mutex},
    thread,
    time::{Duration, Instant},
};

#[derive(Debug, Clone)]
pub struct Request {
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
    /// When the request's body had been read.
    pub at: Instant,
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<u16>>,
    otherwise: Mutex<u16>,
    delay: Mutex<Duration>,
    retry_after: Mutex<Option<u64>>,
    received: Mutex<Vec<Request>>,
}

pub struct Recorder {
    shared: Arc<Shared>,
    pub addr: SocketAddr,
}

impl Recorder {
    /// Answers the statuses of `script` in order, then 200.
    pub fn start(script: &[u16]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared::default());
        *shared.otherwise.lock().unwrap() = 200;
        shared.script.lock().unwrap().extend(script);
        let accepting = Arc::clone(&shared);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = Arc::clone(&accepting);
                thread::spawn(move || handle(stream, &shared));
            }
        });
        Self { shared, addr }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub fn otherwise(&self, status: u16) {
        *self.shared.otherwise.lock().unwrap() = status;
    }

    /// Every answer waits this long first.
    pub fn delay(&self, delay: Duration) {
        *self.shared.delay.lock().unwrap() = delay;
    }

    /// Every answer other than a 2xx carries `Retry-After: secs`.
    pub fn retry_after(&self, secs: u64) {
        *self.shared.retry_after.lock().unwrap() = Some(secs);
    }

    pub fn received(&self) -> Vec<Request> {
        self.shared.received.lock().unwrap().clone()
    }

    /// Waits (bounded) until `done` holds for what was received.
    pub fn wait_until(&self, what: &str, done: impl Fn(&[Request]) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(&self.received()) {
            assert!(Instant::now() < deadline, "gave up waiting for {what}; received {}", self.received().len());
            thread::sleep(Duration::from_millis(20));
        }
    }
}

fn handle(stream: TcpStream, shared: &Shared) {
    let mut reader = BufReader::new(stream);
    let mut headers = BTreeMap::new();
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.trim_end().split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
        }
    }
    let length = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    shared.received.lock().unwrap().push(Request { headers, body, at: Instant::now() });
    thread::sleep(*shared.delay.lock().unwrap());
    let next = shared.script.lock().unwrap().pop_front();
    let status = next.unwrap_or(*shared.otherwise.lock().unwrap());
    let retry_after = match *shared.retry_after.lock().unwrap() {
        Some(secs) if !(200..300).contains(&status) => format!("Retry-After: {secs}\r\n"),
        _ => String::new(),
    };
    let answer = format!("HTTP/1.1 {status} X\r\n{retry_after}Content-Length: 2\r\nConnection: close\r\n\r\nok");
    let _ = reader.get_mut().write_all(answer.as_bytes());
}
