//! A destination for tests: a real HTTP/1.1 server on 127.0.0.1 that answers each request
//! by the next [`Step`] of its script and records every request it gets (method, path,
//! headers, body, and when its body had been read), in the order they arrived.
//!
//! It runs on a thread and a tokio runtime of its own, so the same server serves plain
//! `#[test]`s (which have no runtime) and `#[tokio::test]`s alike, keeps answering while a
//! test blocks its own thread waiting for it, and is not slowed or paused with the test's
//! runtime. Every answer closes its connection, so each attempt a client makes is a
//! request on a fresh connection, as a [`Step::Close`] needs. It runs until the test
//! process ends, like a server a test would have started itself.

use std::{
    collections::VecDeque,
    net::SocketAddr,
    sync::{
        Arc, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header::RETRY_AFTER};
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};

/// What the destination does with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Answers this status (with `Retry-After` if [`Destination::retry_after`] was set and
    /// the status is not a 2xx).
    Status(u16),
    /// Answers this status with `Retry-After: secs`.
    RetryAfter(u16, u64),
    /// Waits this long, then answers 200: a client with a shorter timeout gives up first.
    Sleep(Duration),
    /// Closes the connection without an answer.
    Close,
}

/// One request as the destination received it.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request's method.
    pub method: Method,
    /// The request target's path and query, as sent.
    pub path: String,
    /// Every header, as sent.
    pub headers: HeaderMap,
    /// The body, byte for byte.
    pub body: Vec<u8>,
    /// When the body had been read in full.
    pub at: Instant,
}

impl Received {
    /// The text of header `name`; panics if the request has none (or not as text), as a
    /// test's assertion would.
    pub fn header(&self, name: &str) -> &str {
        let value = self.headers.get(name).unwrap_or_else(|| panic!("no {name} header in {self:?}"));
        value.to_str().unwrap_or_else(|_| panic!("the {name} header is not text: {value:?}"))
    }
}

/// The steps still to come and what holds once they are used up.
#[derive(Debug)]
struct Script {
    steps: VecDeque<Step>,
    otherwise: Step,
    delay: Duration,
    retry_after: Option<u64>,
}

#[derive(Debug)]
struct Shared {
    script: Mutex<Script>,
    received: Mutex<Vec<Received>>,
    /// Requests being answered now, and the most there ever were at once.
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

/// A running destination; clones share its script and its record.
#[derive(Debug, Clone)]
pub struct Destination {
    shared: Arc<Shared>,
    /// Where it listens, on 127.0.0.1.
    pub addr: SocketAddr,
}

impl Destination {
    /// Starts a destination answering by `script` in order, then with 200 (or what
    /// [`otherwise`](Self::otherwise) says).
    pub fn start(script: &[Step]) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port on 127.0.0.1");
        listener.set_nonblocking(true).expect("a non-blocking listener");
        let addr = listener.local_addr().expect("the listener's address");
        let script = Script {
            steps: script.iter().copied().collect(),
            otherwise: Step::Status(200),
            delay: Duration::ZERO,
            retry_after: None,
        };
        let shared = Arc::new(Shared {
            script: Mutex::new(script),
            received: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            most_in_flight: AtomicUsize::new(0),
        });
        let serving = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(format!("destination {addr}"))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the destination's runtime");
                runtime.block_on(accept(listener, serving));
            })
            .expect("the destination's thread");
        Self { shared, addr }
    }

    /// The URL a test configures as the destination: `http://{addr}/hook`.
    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    /// What the destination does once the script is used up (200 until told otherwise).
    pub fn otherwise(&self, step: Step) {
        lock(&self.shared.script).otherwise = step;
    }

    /// Every answer from now on waits this long first.
    pub fn delay(&self, delay: Duration) {
        lock(&self.shared.script).delay = delay;
    }

    /// Every [`Step::Status`] answer other than a 2xx carries `Retry-After: secs`.
    pub fn retry_after(&self, secs: u64) {
        lock(&self.shared.script).retry_after = Some(secs);
    }

    /// Every request received so far, in the order they arrived.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.shared.received).clone()
    }

    /// The most requests it was answering at once so far (a request counts from its
    /// arrival until its answer is ready).
    pub fn most_in_flight(&self) -> usize {
        self.shared.most_in_flight.load(Ordering::SeqCst)
    }

    /// Blocks (for at most 30 s, then panics naming `what`) until `done` holds for what
    /// was received.
    pub fn wait_until(&self, what: &str, done: impl Fn(&[Received]) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(&self.received()) {
            assert!(Instant::now() < deadline, "gave up waiting for {what}; received {}", self.received().len());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A lock that a panicking test thread did not poison for the others.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn accept(listener: std::net::TcpListener, shared: Arc<Shared>) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("the listener on the runtime");
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let service = service_fn(move |request| answer(Arc::clone(&shared), request));
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            // A connection closed on purpose ends with an error; there is no one to tell.
            let _ = connection.await;
        });
    }
}

/// Counts a request in flight for as long as it lives.
struct InFlight(Arc<Shared>);

impl InFlight {
    fn new(shared: &Arc<Shared>) -> Self {
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.most_in_flight.fetch_max(now, Ordering::SeqCst);
        Self(Arc::clone(shared))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn answer(shared: Arc<Shared>, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, std::io::Error> {
    let _counted = InFlight::new(&shared);
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map_err(std::io::Error::other)?.to_bytes().to_vec();
    let path = parts.uri.path_and_query().map_or_else(|| parts.uri.to_string(), ToString::to_string);
    let received = Received { method: parts.method, path, headers: parts.headers, body, at: Instant::now() };
    lock(&shared.received).push(received);
    let delay = lock(&shared.script).delay;
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let (step, retry_after) = {
        let mut script = lock(&shared.script);
        let step = script.steps.pop_front().unwrap_or(script.otherwise);
        (step, script.retry_after)
    };
    let (status, retry_after) = match step {
        Step::Status(status) => (status, retry_after.filter(|_| !(200..300).contains(&status))),
        Step::RetryAfter(status, secs) => (status, Some(secs)),
        Step::Sleep(duration) => {
            tokio::time::sleep(duration).await;
            (200, None)
        }
        Step::Close => return Err(std::io::Error::other("closed without an answer, as scripted")),
    };
    let mut response = Response::new(Full::new(Bytes::from_static(b"ok")));
    *response.status_mut() = StatusCode::from_u16(status).expect("a scripted status from 100 to 999");
    if let Some(secs) = retry_after {
        response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    Ok(response)
}
