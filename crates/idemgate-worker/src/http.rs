//! HTTP destinations: the event's original bytes and content type, signed with the
//! destination's own Standard Webhooks secret, `webhook-id` = the outgoing id fixed when
//! the event was accepted, the source and the original identity in headers of their own
//! (so a receiver can match the provider's logs), and an `Idempotency-Key` that is the
//! same on every attempt.

use std::time::Duration;

use idemgate_core::{
    Secret, UnixTime,
    fingerprint::delivery_key,
    retry::{AttemptResult, parse_retry_after},
    scheme::standard,
};
use idemgate_store::jobs::{ClaimedJob, MAX_ATTEMPT_TEXT};
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER, USER_AGENT};

use crate::{AttemptOutcome, Deliver, deliver::BoxFuture};

/// Header naming the source the event came from.
pub const SOURCE_HEADER: &str = "idemgate-source";
/// Header carrying the event's identity as the source gave it.
pub const EVENT_ID_HEADER: &str = "idemgate-event-id";

/// One configured HTTP destination.
#[derive(Debug, Clone)]
pub struct HttpDestination {
    url: String,
    secret: Option<Secret>,
    client: reqwest::Client,
}

/// The destination's client could not be built (TLS set-up).
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
        Ok(Self { url: url.to_owned(), secret, client })
    }

    fn request(&self, job: &ClaimedJob, now: UnixTime) -> reqwest::RequestBuilder {
        let id = job.outgoing_id.as_str();
        let mut request = self
            .client
            .post(&self.url)
            .header(CONTENT_TYPE, job.content_type.as_deref().unwrap_or("application/json"))
            .header(USER_AGENT, concat!("idemgate/", env!("CARGO_PKG_VERSION")))
            .header(standard::ID_HEADER, id)
            .header(standard::TIMESTAMP_HEADER, now.0.to_string())
            .header(SOURCE_HEADER, job.key.source.as_str())
            .header(EVENT_ID_HEADER, job.key.identity.as_str())
            .header("idempotency-key", delivery_key(&job.key, &job.destination));
        if let Some(secret) = &self.secret {
            request = request.header(standard::SIGNATURE_HEADER, standard::sign(secret, id, now.0, &job.body));
        }
        for (name, value) in &job.headers {
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

/// The error text names the kind of failure only: reqwest's own message includes the URL,
/// which may carry credentials.
fn not_answered(err: &reqwest::Error) -> AttemptOutcome {
    let (result, error) = if err.is_timeout() {
        (AttemptResult::Timeout, "timed out")
    } else if err.is_connect() {
        (AttemptResult::Connection, "connection failed")
    } else {
        (AttemptResult::Connection, "connection broke before an answer")
    };
    AttemptOutcome { result, error: Some(error.to_owned()), response_prefix: None }
}
