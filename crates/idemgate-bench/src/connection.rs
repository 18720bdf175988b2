//! One load-generator connection: a raw hyper HTTP/1.1 client connection driven by one
//! task, sending requests that were built before the run. Nothing is signed, built or
//! pooled per request, so the generator takes as little as it can of the cores it shares
//! with the server it measures.

use std::{borrow::Cow, pin::Pin, sync::Mutex, time::Duration};

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Request, Uri, header};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::{BenchError, Prepared};

/// How long one request may take before it counts as an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the requests go: `http://HOST:PORT/PATH` split once before the run.
#[derive(Debug, Clone)]
pub(super) struct Target {
    /// `HOST:PORT`, to connect to.
    authority: String,
    /// The same, as the `Host` header.
    host: HeaderValue,
    /// The path and query, sent in origin form.
    path: Uri,
}

impl Target {
    /// Parses an `http://` URL (the generator speaks plain HTTP/1.1 only).
    pub(super) fn parse(url: &str) -> Result<Self, BenchError> {
        let bad = || BenchError::Target(url.to_owned());
        let uri: Uri = url.parse().map_err(|_| bad())?;
        if uri.scheme_str() != Some("http") {
            return Err(bad());
        }
        let authority = uri.authority().ok_or_else(bad)?;
        let host = HeaderValue::from_str(authority.as_str()).map_err(|_| bad())?;
        let authority = format!("{}:{}", authority.host(), authority.port_u16().unwrap_or(80));
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).parse().map_err(|_| bad())?;
        Ok(Self { authority, host, path })
    }
}

/// One work item's request, built before the run and sent once.
pub(super) struct Ready(Mutex<Option<Request<Full<Bytes>>>>);

impl Ready {
    /// Builds `prepared` as a POST with its headers and body; the target's path and `Host`
    /// are set when it is sent.
    pub(super) fn new(prepared: &Prepared) -> Result<Self, BenchError> {
        let mut request = Request::post("/").body(Full::new(Bytes::from(prepared.body.clone())))?;
        let headers = request.headers_mut();
        headers.reserve(prepared.headers.len() + 1);
        for (name, value) in &prepared.headers {
            let bad = || BenchError::Header(name.clone());
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            headers.append(name, HeaderValue::from_str(value).map_err(|_| bad())?);
        }
        Ok(Self(Mutex::new(Some(request))))
    }

    fn take(&self) -> Option<Request<Full<Bytes>>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }
}

/// The answer to one request, as far as the report needs it.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) replay: bool,
    pub(super) body: Bytes,
}

/// hyper's half of a client connection: it reads and writes the socket.
type Driver = http1::Connection<TokioIo<TcpStream>, Full<Bytes>>;

/// An open connection: where requests go in, and its driver.
type Open = (SendRequest<Full<Bytes>>, Pin<Box<Driver>>);

/// One keep-alive connection; reconnects after an error or a close. The connection's
/// driver is polled in the same task as the request (not spawned), so a request and its
/// answer do not hop between tasks.
pub(super) struct Connection {
    target: Target,
    open: Option<Open>,
}

impl Connection {
    pub(super) fn new(target: Target) -> Self {
        Self { target, open: None }
    }

    /// Sends `ready` and reads the whole answer; `None` on any failure (the connection is
    /// then dropped and the next request opens a new one).
    pub(super) async fn send(&mut self, ready: &Ready) -> Option<Answer> {
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, self.exchange(ready)).await.ok().flatten();
        if answer.is_none() {
            self.open = None;
        }
        answer
    }

    async fn exchange(&mut self, ready: &Ready) -> Option<Answer> {
        let mut request = ready.take()?;
        *request.uri_mut() = self.target.path.clone();
        request.headers_mut().insert(header::HOST, self.target.host.clone());
        let (sender, driver) = match &mut self.open {
            Some(open) => open,
            None => self.open.insert(connect(&self.target.authority).await?),
        };
        let exchange = async {
            sender.ready().await.ok()?;
            let response = sender.send_request(request).await.ok()?;
            let status = response.status().as_u16();
            let replay = response.headers().contains_key("idempotency-replay");
            let body = response.into_body().collect().await.ok()?.to_bytes();
            Some(Answer { status, replay, body })
        };
        tokio::select! {
            answer = exchange => answer,
            // The driver ends only when the connection does: this request failed.
            _ = driver.as_mut() => None,
        }
    }
}

async fn connect(authority: &str) -> Option<Open> {
    let stream = TcpStream::connect(authority).await.ok()?;
    stream.set_nodelay(true).ok()?;
    let (sender, driver) = http1::handshake(TokioIo::new(stream)).await.ok()?;
    Some((sender, Box::pin(driver)))
}

/// `applied`/`duplicate`/`accepted` from a counter or gateway answer's `status`, else the
/// HTTP status (with ` replay` for a replayed `Idempotency-Key` answer).
pub(super) fn outcome(answer: &Answer) -> Cow<'static, str> {
    #[derive(serde::Deserialize)]
    struct Body<'a> {
        #[serde(borrow)]
        status: Option<Cow<'a, str>>,
    }
    let kind = serde_json::from_slice::<Body<'_>>(&answer.body).ok().and_then(|b| b.status);
    match kind.as_deref() {
        Some(kind) if answer.status == 200 || (answer.status == 202 && kind == "accepted") => match kind {
            "applied" => Cow::Borrowed("applied"),
            "duplicate" => Cow::Borrowed("duplicate"),
            "accepted" => Cow::Borrowed("accepted"),
            other => Cow::Owned(other.to_owned()),
        },
        _ if answer.replay => Cow::Owned(format!("{} replay", answer.status)),
        _ => match answer.status {
            200 => Cow::Borrowed("200"),
            201 => Cow::Borrowed("201"),
            202 => Cow::Borrowed("202"),
            status => Cow::Owned(status.to_string()),
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn answer(status: u16, replay: bool, body: &str) -> Answer {
        Answer { status, replay, body: Bytes::from(body.to_owned()) }
    }

    #[test]
    fn outcomes_from_status_and_body() {
        assert_eq!(outcome(&answer(200, false, r#"{"status":"applied","result":3}"#)), "applied");
        assert_eq!(outcome(&answer(200, false, r#"{"result":3,"status":"duplicate"}"#)), "duplicate");
        assert_eq!(outcome(&answer(202, false, r#"{"status":"accepted"}"#)), "accepted");
        assert_eq!(outcome(&answer(202, false, r#"{"status":"queued"}"#)), "202");
        assert_eq!(outcome(&answer(409, false, r#"{"status":"conflict"}"#)), "409");
        assert_eq!(outcome(&answer(201, true, r#"{"id":1}"#)), "201 replay");
        assert_eq!(outcome(&answer(201, false, "not json")), "201");
    }

    #[test]
    fn targets_are_plain_http() {
        let target = Target::parse("http://127.0.0.1:8081/webhook?x=1").unwrap();
        assert_eq!(target.authority, "127.0.0.1:8081");
        assert_eq!(target.host, "127.0.0.1:8081");
        assert_eq!(target.path, "/webhook?x=1");
        assert_eq!(Target::parse("http://localhost/").unwrap().authority, "localhost:80");
        assert!(Target::parse("https://127.0.0.1:8081/webhook").is_err());
        assert!(Target::parse("127.0.0.1:8081").is_err());
    }
}
