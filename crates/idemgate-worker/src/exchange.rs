//! What every HTTP delivery shares, whoever its destination is: the TLS client over a
//! connector (hyper's pooled client with rustls and the public roots, no redirects), one
//! exchange within a total timeout, the answer read to at most [`ANSWER_READ_LIMIT`], and
//! an error text that names the kind of failure only (a client's own messages may include
//! the URL, which may carry credentials). [`crate::HttpDestination`] (an operator's
//! destination) and [`crate::EndpointDelivery`] (a customer's endpoint) build their
//! requests and call this.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Uri, header::RETRY_AFTER};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::{
    client::legacy::{Client, connect::Connection},
    rt::{TokioExecutor, TokioTimer},
};
use idemgate_core::retry::{AttemptResult, parse_retry_after};
use idemgate_store::jobs::MAX_ATTEMPT_TEXT;
use tokio_rustls::rustls::{ClientConfig, RootCertStore, crypto::ring};

use crate::{AttemptOutcome, endpoint::AddressNotAllowed};

/// The `User-Agent` of every attempt.
pub(crate) const USER_AGENT_VALUE: HeaderValue =
    HeaderValue::from_static(concat!("idemgate/", env!("CARGO_PKG_VERSION")));
/// The content type of a body that names none.
pub(crate) const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// How much of an answer's body is read before the connection is given up: an answer read
/// to its end returns the connection to the pool for the next attempt.
pub(crate) const ANSWER_READ_LIMIT: usize = 64 * 1024;
/// How long an unused connection to a destination is kept for the next attempt.
const POOL_IDLE: Duration = Duration::from_secs(90);

/// The client of one destination (or of all endpoints), over `connector`.
pub(crate) type TlsClient<C> = Client<HttpsConnector<C>, Full<Bytes>>;

/// The destination's client could not be built (TLS set-up), or its URL does not parse.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the http client: {0}")]
pub struct ClientError(pub(crate) String);

/// A pooled client reaching `http` and `https` URLs through `connector`, trusting the
/// public roots only. It never follows a redirect: a 3xx is an answer.
pub(crate) fn client<C>(connector: C) -> Result<TlsClient<C>, ClientError>
where
    C: tower::Service<Uri> + Clone + Send + Sync + 'static,
    C::Response: Connection + hyper::rt::Read + hyper::rt::Write + Send + Unpin + 'static,
    C::Future: Send + 'static,
    C::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let tls = ClientConfig::builder_with_provider(ring::default_provider().into())
        .with_safe_default_protocol_versions()
        .map_err(|err| ClientError(err.to_string()))?
        .with_root_certificates(RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() })
        .with_no_client_auth();
    let connector =
        HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http().enable_http1().wrap_connector(connector);
    Ok(Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(POOL_IDLE)
        .build(connector))
}

/// Sends `request` and reads the answer, within `total`.
pub(crate) async fn exchange<C>(client: &TlsClient<C>, request: Request<Full<Bytes>>, total: Duration) -> AttemptOutcome
where
    C: tower::Service<Uri> + Clone + Send + Sync + 'static,
    C::Response: Connection + hyper::rt::Read + hyper::rt::Write + Send + Unpin + 'static,
    C::Future: Send + 'static,
    C::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let attempt = async {
        let response = client.request(request).await?;
        Ok::<_, Failure>(answered(response).await)
    };
    match tokio::time::timeout(total, attempt).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(failure)) => failure.outcome(),
        Err(_) => Failure::TimedOut.outcome(),
    }
}

/// The status, `Retry-After`, and a prefix of the body for the record. The body is read
/// on (up to [`ANSWER_READ_LIMIT`]) so that the connection can serve the next attempt.
async fn answered(response: http::Response<Incoming>) -> AttemptOutcome {
    let status = response.status().as_u16();
    let retry_after = response.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(parse_retry_after);
    let mut body = response.into_body();
    let mut prefix: Option<Vec<u8>> = None;
    let mut read = 0;
    while read <= ANSWER_READ_LIMIT {
        let Some(Ok(frame)) = body.frame().await else { break };
        let Ok(data) = frame.into_data() else { continue };
        read += data.len();
        let kept = prefix.get_or_insert_with(Vec::new);
        let room = MAX_ATTEMPT_TEXT.saturating_sub(kept.len());
        kept.extend_from_slice(&data[..data.len().min(room)]);
    }
    let prefix = prefix.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    let error = (!(200..300).contains(&status)).then(|| format!("status {status}"));
    AttemptOutcome { result: AttemptResult::Status { status, retry_after }, error, response_prefix: prefix }
}

/// Why an attempt got no answer. Its text names the kind of failure only: the client's
/// own messages may include the URL, which may carry credentials.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The total timeout ran out.
    TimedOut,
    /// The request could not be made from the job.
    Unsendable,
    /// The client's error: connecting (its timeout too), sending, or the answer's head.
    Client(hyper_util::client::legacy::Error),
}

impl From<hyper_util::client::legacy::Error> for Failure {
    fn from(err: hyper_util::client::legacy::Error) -> Self {
        Self::Client(err)
    }
}

impl Failure {
    pub(crate) fn outcome(&self) -> AttemptOutcome {
        let (result, text) = match self {
            Self::TimedOut => (AttemptResult::Timeout, "timed out".to_owned()),
            Self::Unsendable => {
                (AttemptResult::Connection, "a header made from the event is not a valid HTTP header".to_owned())
            }
            Self::Client(err) => {
                let named = |result, text: &str| (result, text.to_owned());
                match (cause::<AddressNotAllowed>(err), cause::<std::io::Error>(err).map(std::io::Error::kind)) {
                    (Some(refused), _) => (AttemptResult::Connection, refused.to_string()),
                    (None, Some(std::io::ErrorKind::TimedOut)) => named(AttemptResult::Timeout, "timed out"),
                    (None, Some(std::io::ErrorKind::ConnectionRefused)) => {
                        named(AttemptResult::Connection, "connection refused")
                    }
                    (None, Some(std::io::ErrorKind::ConnectionReset)) => {
                        named(AttemptResult::Connection, "connection reset")
                    }
                    _ if err.is_connect() => named(AttemptResult::Connection, "connection failed"),
                    _ => named(AttemptResult::Connection, "connection broke before an answer"),
                }
            }
        };
        AttemptOutcome { result, error: Some(text), response_prefix: None }
    }
}

/// The first of `err`'s causes that is a `T`.
fn cause<T: std::error::Error + 'static>(err: &hyper_util::client::legacy::Error) -> Option<&T> {
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        if let Some(found) = cause.downcast_ref::<T>() {
            return Some(found);
        }
        source = cause.source();
    }
    None
}
