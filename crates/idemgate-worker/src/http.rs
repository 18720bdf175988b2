//! HTTP destinations: the event's original bytes and content type, signed in the
//! registry's outgoing scheme ([`idemgate_core::scheme::OUTGOING`], Standard Webhooks) with
//! the destination's own secret, `webhook-id` = the outgoing id fixed when the event was
//! accepted, the source and the original identity in headers of their own (so a receiver
//! can match the provider's logs), and an `Idempotency-Key` that is the same on every
//! attempt.

use std::{sync::LazyLock, time::Duration};

use idemgate_core::{
    Secret, UnixTime,
    fingerprint::delivery_key,
    retry::{AttemptResult, parse_retry_after},
    scheme::{OUTGOING, Outgoing},
};
use idemgate_store::jobs::{ClaimedJob, MAX_ATTEMPT_TEXT};
use reqwest::header::{
    CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderName, PROXY_AUTHENTICATE, PROXY_AUTHORIZATION, RETRY_AFTER,
    TE, TRAILER, TRANSFER_ENCODING, UPGRADE, USER_AGENT,
};

use crate::{AttemptOutcome, Deliver, deliver::BoxFuture};

/// Header naming the source the event came from.
pub const SOURCE_HEADER: &str = "idemgate-source";
/// Header carrying the event's identity as the source gave it.
pub const EVENT_ID_HEADER: &str = "idemgate-event-id";

const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
const SOURCE: HeaderName = HeaderName::from_static(SOURCE_HEADER);
const EVENT_ID: HeaderName = HeaderName::from_static(EVENT_ID_HEADER);

/// The headers [`HttpDestination`] sets on every attempt itself: its own, and every one
/// the outgoing scheme signs with.
static OWN_HEADERS: LazyLock<Vec<HeaderName>> = LazyLock::new(|| {
    let signing = OUTGOING.signing_headers().iter().map(|name| HeaderName::from_static(name));
    [CONTENT_TYPE, USER_AGENT].into_iter().chain(signing).chain([IDEMPOTENCY_KEY, SOURCE, EVENT_ID]).collect()
});

/// The headers the HTTP client sets from the body and the URL, and those that describe
/// one hop only (RFC 9110, 7.6.1).
const TRANSPORT_HEADERS: [HeaderName; 11] = [
    CONTENT_LENGTH,
    HOST,
    TRANSFER_ENCODING,
    CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    PROXY_AUTHENTICATE,
    PROXY_AUTHORIZATION,
    TE,
    TRAILER,
    UPGRADE,
];

/// Whether an attempt's `name` header is the worker's own (or its HTTP client's, or one
/// hop's), so that an event's forwarded headers may not carry it: the `webhook-*`
/// family, `idemgate-source`, `idemgate-event-id`, `Idempotency-Key`, `Content-Type`, `Content-Length`, `Transfer-Encoding`,
/// `User-Agent`, `Host` and the hop-by-hop headers.
#[must_use]
pub fn sets_itself(name: &HeaderName) -> bool {
    name.as_str().starts_with("webhook-") || OWN_HEADERS.contains(name) || TRANSPORT_HEADERS.contains(name)
}

/// One configured HTTP destination.
#[derive(Debug, Clone)]
pub struct HttpDestination {
    /// Parsed once: parsing it again for every attempt was a tenth of the client's cost.
    url: reqwest::Url,
    secret: Option<Secret>,
    client: reqwest::Client,
}

/// The destination's client could not be built (TLS set-up), or its URL does not parse.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the http client: {0}")]
pub struct ClientError(String);

impl HttpDestination {
    /// A destination at `url`, signing with `secret` when given, with a connect timeout
    /// and a total timeout per attempt. Redirects are not followed: a 3xx is an answer.
    pub fn new(url: &str, secret: Option<Secret>, connect: Duration, total: Duration) -> Result<Self, ClientError> {
        let client = reqwest::Client::builder()
            .connect_timeout(connect)
            .timeout(total)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|err| ClientError(err.to_string()))?;
        // The message leaves the URL out: it may carry credentials.
        let url = reqwest::Url::parse(url).map_err(|err| ClientError(format!("the destination's URL: {err}")))?;
        Ok(Self { url, secret, client })
    }

    fn request(&self, job: &ClaimedJob, now: UnixTime) -> reqwest::RequestBuilder {
        let message = Outgoing { id: &job.outgoing_id, attempt: job.attempt, timestamp: now, body: &job.body };
        let mut request = self
            .client
            .post(self.url.clone())
            .header(CONTENT_TYPE, job.content_type.as_deref().unwrap_or("application/json"))
            .header(USER_AGENT, concat!("idemgate/", env!("CARGO_PKG_VERSION")));
        // The envelope (`webhook-id`, `webhook-timestamp`) goes out signed or not.
        let signature = self.secret.as_ref().and_then(|secret| OUTGOING.signature(secret, &message));
        for (name, value) in OUTGOING.envelope(&message).into_iter().chain(signature) {
            request = request.header(name, value);
        }
        request = request
            .header(SOURCE, job.key.source.as_str())
            .header(EVENT_ID, job.key.identity.as_str())
            .header(IDEMPOTENCY_KEY, delivery_key(&job.key, &job.destination));
        // The configuration refuses such names; events stored before it did may hold them.
        let forwarded = job.headers.iter().filter_map(|(name, value)| Some((HeaderName::try_from(name).ok()?, value)));
        for (name, value) in forwarded.filter(|(name, _)| !sets_itself(name)) {
            request = request.header(name, value);
        }
        request.body(job.body.clone())
    }
}

impl Deliver for HttpDestination {
    fn deliver<'a>(&'a self, job: &'a ClaimedJob, now: UnixTime) -> BoxFuture<'a, AttemptOutcome> {
        Box::pin(async move {
            match self.request(job, now).send().await {
                Ok(response) => answered(response).await,
                Err(err) => not_answered(&err),
            }
        })
    }
}

async fn answered(mut response: reqwest::Response) -> AttemptOutcome {
    let status = response.status().as_u16();
    let retry_after = response.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(parse_retry_after);
    let prefix = match response.chunk().await {
        Ok(Some(chunk)) => Some(String::from_utf8_lossy(&chunk[..chunk.len().min(MAX_ATTEMPT_TEXT)]).into_owned()),
        _ => None,
    };
    let error = (!(200..300).contains(&status)).then(|| format!("status {status}"));
    AttemptOutcome { result: AttemptResult::Status { status, retry_after }, error, response_prefix: prefix }
}

/// The error text names the kind of failure only (`timed out`, `connection refused`, …):
/// reqwest's own message includes the URL, which may carry credentials.
fn not_answered(err: &reqwest::Error) -> AttemptOutcome {
    let result = if err.is_timeout() { AttemptResult::Timeout } else { AttemptResult::Connection };
    AttemptOutcome { result, error: Some(failure_class(err).to_owned()), response_prefix: None }
}

fn failure_class(err: &reqwest::Error) -> &'static str {
    if err.is_timeout() {
        return "timed out";
    }
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return "connection refused",
                std::io::ErrorKind::ConnectionReset => return "connection reset",
                std::io::ErrorKind::TimedOut => return "timed out",
                _ => {}
            }
        }
        source = cause.source();
    }
    if err.is_connect() { "connection failed" } else { "connection broke before an answer" }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use idemgate_core::{Identity, ReceiptKey, SourceName};

    use super::*;

    fn job(headers: &[(&str, &str)]) -> ClaimedJob {
        ClaimedJob {
            id: 1,
            lease_token: 1,
            attempt: 1,
            destination: "app".into(),
            key: ReceiptKey { source: SourceName::new("a").unwrap(), identity: Identity::new("evt_1").unwrap() },
            outgoing_id: "evt_1".into(),
            event_type: None,
            body: b"{}".to_vec(),
            content_type: Some("application/json".into()),
            headers: headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect(),
        }
    }

    #[test]
    fn every_header_the_worker_sets_is_one_a_source_may_not_forward() {
        let secret = Secret::new(vec![7; 32]);
        let destination =
            HttpDestination::new("http://127.0.0.1:1/", Some(secret), Duration::from_secs(1), Duration::from_secs(1))
                .unwrap();
        let request = destination.request(&job(&[]), UnixTime(1)).build().unwrap();
        assert_eq!(request.headers().len(), OWN_HEADERS.len());
        for name in request.headers().keys() {
            assert!(sets_itself(name), "{name} is set by the worker but could be forwarded too");
        }
    }

    #[test]
    fn a_stored_forwarded_header_never_replaces_or_doubles_the_workers_own() {
        let destination =
            HttpDestination::new("http://127.0.0.1:1/", None, Duration::from_secs(1), Duration::from_secs(1)).unwrap();
        let stored = [
            ("content-type", "text/evil"),
            ("webhook-id", "other"),
            ("idemgate-source", "other"),
            ("connection", "close"),
            ("x-a", "1"),
        ];
        let request = destination.request(&job(&stored), UnixTime(1)).build().unwrap();
        let values =
            |name: &str| request.headers().get_all(name).iter().map(|v| v.to_str().unwrap()).collect::<Vec<_>>();
        assert_eq!(values("content-type"), ["application/json"]);
        assert_eq!(values("webhook-id"), ["evt_1"]);
        assert_eq!(values("idemgate-source"), ["a"]);
        assert!(values("connection").is_empty());
        assert_eq!(values("x-a"), ["1"]);
    }

    #[tokio::test]
    async fn a_refused_connection_is_named_as_such() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", closed.local_addr().unwrap());
        drop(closed);
        let destination = HttpDestination::new(&url, None, Duration::from_secs(1), Duration::from_secs(1)).unwrap();
        let outcome = destination.deliver(&job(&[]), UnixTime(1)).await;
        assert_eq!(outcome.result, AttemptResult::Connection);
        assert_eq!(outcome.error.as_deref(), Some("connection refused"));
    }
}
