//! NATS JetStream destinations: each attempt publishes the event to the destination's
//! subject with the header `Nats-Msg-Id` = the event's outgoing webhook-id, and is
//! [`AttemptResult::Accepted`] only once the stream has acknowledged it (the publish ack).
//! A publish whose ack was lost is published again on the next attempt, and the stream's
//! duplicate window drops it: within that window the stream holds each event once. The
//! stream is the operator's: create it for the subject with a duplicate window at least as
//! long as the retry horizon that matters (the destination's `retry_schedule`).
//!
//! No stream for the subject, or an error the stream answers with, is a temporary refusal
//! (the destination's retry schedule: the operator may create the stream); no connection
//! is [`AttemptResult::Connection`], and no ack within the destination's timeout is
//! [`AttemptResult::Timeout`].
//!
//! One client per destination, connected on the first attempt (a failed connect is retried
//! on the next attempt, under the connect timeout); once connected, the client reconnects
//! by itself in the background, and attempts meanwhile end in their timeout.
//!
//! Why async-nats: it is the NATS project's own Rust client, on tokio, and its JetStream
//! context returns the publish ack as a future of its own, so the worker can wait for the
//! stream's acknowledgement of each message.

use std::{fmt, time::Duration};

use async_nats::{
    ConnectErrorKind, HeaderMap,
    jetstream::{self, context::PublishErrorKind},
};
use idemgate_core::{UnixTime, retry::AttemptResult};
use idemgate_store::jobs::ClaimedJob;
use tokio::sync::Mutex;

use crate::{AttemptOutcome, Deliver, deliver::BoxFuture, message};

/// The header JetStream deduplicates on.
pub const MSG_ID_HEADER: &str = "Nats-Msg-Id";

/// One configured NATS JetStream destination.
pub struct NatsDestination {
    /// `nats://` or `tls://`, possibly with credentials: never shown.
    url: String,
    subject: String,
    connect_timeout: Duration,
    timeout: Duration,
    context: Mutex<Option<jetstream::Context>>,
}

impl fmt::Debug for NatsDestination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NatsDestination").field("subject", &self.subject).finish_non_exhaustive()
    }
}

impl NatsDestination {
    /// A destination publishing to `subject` on the server at `url`. It connects on its
    /// first attempt.
    #[must_use]
    pub fn new(url: &str, subject: &str, connect_timeout: Duration, timeout: Duration) -> Self {
        Self { url: url.to_owned(), subject: subject.to_owned(), connect_timeout, timeout, context: Mutex::new(None) }
    }

    async fn context(&self) -> Result<jetstream::Context, AttemptOutcome> {
        let mut context = self.context.lock().await;
        if let Some(open) = context.as_ref() {
            return Ok(open.clone());
        }
        // A first connect that fails is this attempt's failure (the next attempt connects
        // again); a client once connected reconnects by itself.
        let connect = async_nats::ConnectOptions::new()
            .connection_timeout(self.connect_timeout)
            .name("idemgate")
            .connect(self.url.as_str());
        let client = match tokio::time::timeout(self.connect_timeout, connect).await {
            Err(_) => return Err(failed(AttemptResult::Connection, "could not connect to the server")),
            Ok(Err(err)) => return Err(failed(AttemptResult::Connection, connect_error(err.kind()))),
            Ok(Ok(client)) => client,
        };
        let mut open = jetstream::new(client);
        open.set_timeout(self.timeout);
        *context = Some(open.clone());
        Ok(open)
    }

    async fn publish(&self, context: &jetstream::Context, job: &ClaimedJob) -> AttemptOutcome {
        let mut headers = HeaderMap::new();
        headers.insert(MSG_ID_HEADER, job.outgoing_id.as_str());
        headers.insert("Content-Type", message::content_type(job));
        for (name, value) in message::headers(job) {
            headers.insert(name.as_str(), value.as_str());
        }
        let subject = self.subject.clone();
        let ack = match context.publish_with_headers(subject, headers, job.body.clone()).await {
            Ok(ack) => ack.await,
            Err(err) => Err(err),
        };
        match ack {
            Ok(_) => AttemptOutcome { result: AttemptResult::Accepted, error: None, response_prefix: None },
            Err(err) => match err.kind() {
                PublishErrorKind::TimedOut => failed(AttemptResult::Timeout, "timed out waiting for the stream's ack"),
                PublishErrorKind::BrokenPipe => failed(AttemptResult::Connection, "the connection to the server broke"),
                PublishErrorKind::StreamNotFound => refused("no stream for the subject"),
                PublishErrorKind::MaxPayloadExceeded => AttemptOutcome {
                    result: AttemptResult::Refused { permanent: true },
                    error: Some("the message exceeds the server's max_payload".to_owned()),
                    response_prefix: None,
                },
                _ => refused(&format!("the stream refused the message: {err}")),
            },
        }
    }
}

impl Deliver for NatsDestination {
    fn deliver<'a>(&'a self, job: &'a ClaimedJob, _now: UnixTime) -> BoxFuture<'a, AttemptOutcome> {
        // The whole attempt, connecting included, takes at most `timeout` (the worker's
        // lease is set above it), as an HTTP attempt does.
        let attempt = async move {
            match self.context().await {
                Ok(context) => self.publish(&context, job).await,
                Err(outcome) => outcome,
            }
        };
        Box::pin(async move {
            tokio::time::timeout(self.timeout, attempt)
                .await
                .unwrap_or_else(|_| failed(AttemptResult::Timeout, "timed out waiting for the stream's ack"))
        })
    }
}

fn connect_error(kind: ConnectErrorKind) -> &'static str {
    match kind {
        ConnectErrorKind::Io => "connection failed",
        ConnectErrorKind::TimedOut => "timed out connecting",
        ConnectErrorKind::Authentication | ConnectErrorKind::AuthorizationViolation => {
            "the server refused the credentials"
        }
        ConnectErrorKind::ServerParse => "the url is not a server address",
        ConnectErrorKind::Dns => "the server's name does not resolve",
        ConnectErrorKind::Tls => "tls set-up failed",
        _ => "connection failed",
    }
}

fn refused(error: &str) -> AttemptOutcome {
    failed(AttemptResult::Refused { permanent: false }, error)
}

fn failed(result: AttemptResult, error: &str) -> AttemptOutcome {
    AttemptOutcome { result, error: Some(error.to_owned()), response_prefix: None }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use idemgate_core::{Identity, ReceiptKey, SourceName};

    use super::*;

    #[tokio::test]
    async fn a_refused_connection_is_a_connection_failure_and_never_shows_the_url() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("nats://user:hunter2@{}", closed.local_addr().unwrap());
        drop(closed);
        let destination = NatsDestination::new(&url, "events", Duration::from_secs(2), Duration::from_secs(2));
        let job = ClaimedJob {
            id: 1,
            lease_token: 1,
            attempt: 1,
            destination: "stream".into(),
            key: ReceiptKey { source: SourceName::new("a").unwrap(), identity: Identity::new("evt_1").unwrap() },
            outgoing_id: "evt_1".into(),
            event_type: None,
            body: bytes::Bytes::from_static(b"{}"),
            content_type: None,
            headers: Vec::new(),
        };
        let outcome = destination.deliver(&job, UnixTime(1)).await;
        assert_eq!(outcome.result, AttemptResult::Connection, "{outcome:?}");
        assert!(!outcome.error.unwrap().contains("hunter2"));
        assert!(!format!("{destination:?}").contains("hunter2"));
    }
}
