//! HTTP destinations: the event's original bytes and content type, signed in the
//! registry's outgoing scheme ([`idemgate_core::scheme::OUTGOING`], Standard Webhooks) with
//! the destination's own secret, `webhook-id` = the outgoing id fixed when the event was
//! accepted, the source and the original identity in headers of their own (so a receiver
//! can match the provider's logs), and an `Idempotency-Key` that is the same on every
//! attempt.

use std::{sync::LazyLock, time::Duration};

use base64::{Engine, engine::general_purpose::STANDARD as BASE64};
use bytes::Bytes;
use http::{
    HeaderMap, HeaderValue, Method, Request, Uri,
    header::InvalidHeaderValue,
    header::{
        AUTHORIZATION, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderName, PROXY_AUTHENTICATE,
        PROXY_AUTHORIZATION, TE, TRAILER, TRANSFER_ENCODING, UPGRADE, USER_AGENT,
    },
};
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use idemgate_core::{
    Secret, UnixTime,
    fingerprint::delivery_key,
    scheme::{OUTGOING, Outgoing},
};
use idemgate_store::jobs::ClaimedJob;
use percent_encoding::percent_decode_str;

pub use crate::exchange::ClientError;
use crate::{
    AttemptOutcome, Deliver,
    deliver::BoxFuture,
    exchange::{self, Failure, JSON, TlsClient, USER_AGENT_VALUE},
};

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
///
/// Attempts go out through hyper's pooled client (`hyper-util`) with rustls, not through
/// reqwest: the worker needs no redirects, cookies, proxies or body decoding, and in the
/// gateway's profile reqwest's layers over that same client cost more per forward than
/// hyper's exchange itself.
#[derive(Debug, Clone)]
pub struct HttpDestination {
    /// Parsed once, without the URL's credentials; an attempt clones it (shared bytes, no
    /// parse).
    uri: Uri,
    /// `Authorization: Basic` for credentials given in the URL (`https://user:pw@host/`).
    authorization: Option<HeaderValue>,
    secret: Option<Secret>,
    client: TlsClient<HttpConnector>,
    /// The whole attempt: connecting, sending, and reading the answer.
    total: Duration,
}

impl HttpDestination {
    /// A destination at `url` (`http` or `https`), signing with `secret` when given, with a
    /// connect timeout and a total timeout per attempt. Redirects are not followed: a 3xx
    /// is an answer.
    pub fn new(url: &str, secret: Option<Secret>, connect: Duration, total: Duration) -> Result<Self, ClientError> {
        // The messages leave the URL out: it may carry credentials.
        let uri: Uri = url.parse().map_err(|err| ClientError(format!("the destination's URL: {err}")))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(ClientError("the destination's URL must be http:// or https:// with a host".to_owned()));
        }
        let (uri, authorization) = without_credentials(uri)?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(connect));
        let client = exchange::client(http)?;
        Ok(Self { uri, authorization, secret, client, total })
    }

    /// The attempt's request; an error when a header made from the job is not a valid
    /// header value (a control character in the event's identity, say).
    fn request(&self, job: &ClaimedJob, now: UnixTime) -> Result<Request<Full<Bytes>>, InvalidHeaderValue> {
        let message = Outgoing { id: &job.outgoing_id, attempt: job.attempt, timestamp: now, body: &job.body };
        let mut headers = HeaderMap::with_capacity(OWN_HEADERS.len() + job.headers.len());
        let content_type = job.content_type.as_deref().map(HeaderValue::from_str).transpose()?;
        headers.insert(CONTENT_TYPE, content_type.unwrap_or(JSON));
        headers.insert(USER_AGENT, USER_AGENT_VALUE);
        // The envelope (`webhook-id`, `webhook-timestamp`) goes out signed or not.
        let signature = self.secret.as_ref().and_then(|secret| OUTGOING.signature(secret, &message));
        let own = OUTGOING.envelope(&message).into_iter().chain(signature);
        let named = [
            (SOURCE, job.key.source.as_str().to_owned()),
            (EVENT_ID, job.key.identity.as_str().to_owned()),
            (IDEMPOTENCY_KEY, delivery_key(&job.key, &job.destination)),
        ];
        for (name, value) in own.map(|(name, value)| (HeaderName::from_static(name), value)).chain(named) {
            headers.insert(name, HeaderValue::try_from(value)?);
        }
        // The configuration refuses such names; events stored before it did may hold them.
        for (name, value) in &job.headers {
            let Ok(name) = HeaderName::try_from(name) else { continue };
            if !sets_itself(&name) {
                headers.append(name, HeaderValue::from_str(value)?);
            }
        }
        if let Some(authorization) = &self.authorization {
            headers.insert(AUTHORIZATION, authorization.clone());
        }
        let mut request = Request::new(Full::new(job.body.clone()));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = headers;
        Ok(request)
    }
}

/// `uri` without its userinfo, and the `Authorization: Basic` header it stands for (the
/// user and password percent-decoded, as browsers and reqwest send them). Errors name no
/// part of the URL.
fn without_credentials(uri: Uri) -> Result<(Uri, Option<HeaderValue>), ClientError> {
    let Some((userinfo, host)) = uri.authority().and_then(|authority| authority.as_str().rsplit_once('@')) else {
        return Ok((uri, None));
    };
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let mut basic: Vec<u8> = percent_decode_str(user).collect();
    basic.push(b':');
    basic.extend(percent_decode_str(password));
    let unusable = || ClientError("the destination's URL: its credentials cannot be used".to_owned());
    let mut authorization = HeaderValue::try_from(format!("Basic {}", BASE64.encode(basic))).map_err(|_| unusable())?;
    authorization.set_sensitive(true);
    let host = host.parse().map_err(|_| unusable())?;
    let mut parts = uri.into_parts();
    parts.authority = Some(host);
    Ok((Uri::from_parts(parts).map_err(|_| unusable())?, Some(authorization)))
}

impl Deliver for HttpDestination {
    fn deliver<'a>(&'a self, job: &'a ClaimedJob, now: UnixTime) -> BoxFuture<'a, AttemptOutcome> {
        Box::pin(async move {
            match self.request(job, now) {
                Ok(request) => exchange::exchange(&self.client, request, self.total).await,
                Err(_) => Failure::Unsendable.outcome(),
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use idemgate_core::{Identity, ReceiptKey, SourceName, retry::AttemptResult};
    use tokio_rustls::rustls::crypto::ring;

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
            body: bytes::Bytes::from_static(b"{}"),
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
        let request = destination.request(&job(&[]), UnixTime(1)).unwrap();
        assert_eq!(request.headers().len(), OWN_HEADERS.len());
        for name in request.headers().keys() {
            assert!(sets_itself(name), "{name} is set by the worker but could be forwarded too");
        }
    }

    #[tokio::test]
    async fn the_request_carries_the_jobs_body_without_a_copy() {
        use http_body_util::BodyExt;

        let destination =
            HttpDestination::new("http://127.0.0.1:1/", None, Duration::from_secs(1), Duration::from_secs(1)).unwrap();
        let job = job(&[]);
        let request = destination.request(&job, UnixTime(1)).unwrap();
        let sent = request.into_body().frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(sent, job.body);
        assert_eq!(sent.as_ptr(), job.body.as_ptr(), "the attempt shares the job's buffer");
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
        let request = destination.request(&job(&stored), UnixTime(1)).unwrap();
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

    #[tokio::test]
    async fn a_stored_header_that_is_not_valid_http_fails_the_attempt_without_sending_it() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let destination = HttpDestination::new(&url, None, Duration::from_secs(1), Duration::from_secs(1)).unwrap();
        let outcome = destination.deliver(&job(&[("x-a", "line\nbreak")]), UnixTime(1)).await;
        assert_eq!(outcome.result, AttemptResult::Connection);
        assert_eq!(outcome.error.as_deref(), Some("a header made from the event is not a valid HTTP header"));
        let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
        assert!(accepted.is_err(), "nothing was sent");
    }

    #[test]
    fn a_url_that_is_not_http_with_a_host_is_refused_without_showing_it() {
        for url in ["ftp://user:pw@example.com/", "/relative", "http://"] {
            let err = HttpDestination::new(url, None, Duration::from_secs(1), Duration::from_secs(1)).unwrap_err();
            assert!(!err.to_string().contains("pw"), "{err}");
        }
    }

    /// An `https` destination is reached over TLS and trusts the public roots only: a
    /// certificate none of them signs is refused in the handshake, and nothing is sent.
    #[tokio::test]
    async fn an_https_destination_whose_certificate_no_public_root_signs_is_refused_in_the_handshake() {
        use tokio_rustls::{
            TlsAcceptor,
            rustls::{
                ServerConfig,
                pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer},
            },
        };
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der()));
        let config = ServerConfig::builder_with_provider(ring::default_provider().into())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![certified.cert.der().clone()], key)
            .unwrap();
        let acceptor = TlsAcceptor::from(std::sync::Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://127.0.0.1:{}/hook", listener.local_addr().unwrap().port());
        let server = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            acceptor.accept(tcp).await.map(drop).map_err(|err| err.to_string())
        });
        let destination = HttpDestination::new(&url, None, Duration::from_secs(1), Duration::from_secs(5)).unwrap();
        let outcome = destination.deliver(&job(&[]), UnixTime(1)).await;
        assert_eq!(outcome.result, AttemptResult::Connection);
        assert_eq!(outcome.error.as_deref(), Some("connection failed"));
        let handshake = server.await.unwrap();
        assert!(handshake.as_ref().is_err_and(|err| err.contains("UnknownCA")), "{handshake:?}");
    }

    #[test]
    fn credentials_in_the_url_go_out_as_basic_authorization_and_not_in_the_host() {
        let destination = HttpDestination::new(
            "https://hook%20user:p%40ss@hooks.example.com:8443/in?x=1",
            None,
            Duration::from_secs(1),
            Duration::from_secs(1),
        )
        .unwrap();
        let request = destination.request(&job(&[]), UnixTime(1)).unwrap();
        assert_eq!(request.uri().to_string(), "https://hooks.example.com:8443/in?x=1");
        let authorization = &request.headers()[AUTHORIZATION];
        assert_eq!(authorization, &format!("Basic {}", BASE64.encode("hook user:p@ss")));
        assert!(authorization.is_sensitive());
        let shown = format!("{destination:?}");
        assert!(!shown.contains("p%40ss") && !shown.contains(&BASE64.encode("hook user:p@ss")), "{shown}");
        let plain = HttpDestination::new("http://127.0.0.1:1/", None, Duration::from_secs(1), Duration::from_secs(1));
        assert!(!plain.unwrap().request(&job(&[]), UnixTime(1)).unwrap().headers().contains_key(AUTHORIZATION));
    }

    /// Over a real connection: the destination sees the credentials as `Authorization` on
    /// every attempt, and a `Host` without them.
    #[tokio::test]
    async fn a_destination_receives_the_urls_credentials_and_a_host_without_them() {
        let destination = idemgate_testkit::Destination::start(&[]);
        let url = destination.url().replacen("http://", "http://hooks:p%40ss@", 1);
        let http = HttpDestination::new(&url, None, Duration::from_secs(1), Duration::from_secs(5)).unwrap();
        for attempt in 1..=2 {
            let outcome = http.deliver(&job(&[]), UnixTime(attempt)).await;
            assert_eq!(outcome.result, AttemptResult::Status { status: 200, retry_after: None }, "{outcome:?}");
        }
        let received = destination.received();
        assert_eq!(received.len(), 2);
        for request in &received {
            assert_eq!(request.header("authorization"), format!("Basic {}", BASE64.encode("hooks:p@ss")));
            assert!(!request.header("host").contains('@'), "{}", request.header("host"));
            assert_eq!(request.body, b"{}");
        }
    }
}
