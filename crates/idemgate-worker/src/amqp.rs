//! RabbitMQ destinations (AMQP 0.9.1): each job is published once per attempt as a
//! persistent message (`delivery_mode` 2) with `mandatory` set, on a channel in publisher
//! confirm mode, and the attempt is [`AttemptResult::Accepted`] only once the broker has
//! confirmed it. A nack or an unroutable message the broker returns is a temporary refusal
//! (the destination's retry schedule), a failed connection is [`AttemptResult::Connection`],
//! and a confirm that does not come within the destination's timeout is
//! [`AttemptResult::Timeout`].
//!
//! At least once: a confirm lost with the connection means the message may be in the queue
//! and is published again on the next attempt, a second message with the same
//! `message_id` (the event's outgoing webhook-id); consumers dedupe on it.
//!
//! One connection and one confirm channel per destination, shared by its concurrent
//! attempts. After any failure it is dropped and the next attempt connects again, under
//! the connect timeout, so a broker that is down costs each attempt at most that long and
//! never holds up the worker.
//!
//! Why lapin: it is the maintained pure-Rust AMQP 0.9.1 client that runs on tokio and
//! implements publisher confirms with returned messages (`mandatory`), which is what makes
//! "the broker has it" something the worker can wait for.

use std::{
    fmt,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use idemgate_core::{UnixTime, retry::AttemptResult};
use idemgate_store::jobs::ClaimedJob;
use lapin::{
    BasicProperties, Channel, Confirmation, Connection, ConnectionProperties, ErrorKind,
    options::{BasicPublishOptions, ConfirmSelectOptions},
    types::{AMQPValue, FieldTable, LongString, ShortString},
};
use tokio::sync::Mutex;

use crate::{AttemptOutcome, Deliver, deliver::BoxFuture, message};

/// AMQP's `delivery_mode` of a message the broker writes to disk.
const PERSISTENT: u8 = 2;

/// One configured RabbitMQ destination.
pub struct AmqpDestination {
    /// `amqp://` or `amqps://`, with credentials: never shown.
    url: String,
    exchange: String,
    routing_key: String,
    connect_timeout: Duration,
    timeout: Duration,
    link: Mutex<Option<Link>>,
    generations: AtomicU64,
}

/// The open connection and its confirm channel.
struct Link {
    connection: Connection,
    channel: Channel,
    /// Which connection of this destination it is, so that a failed attempt drops only
    /// the link it used.
    generation: u64,
}

impl fmt::Debug for AmqpDestination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AmqpDestination")
            .field("exchange", &self.exchange)
            .field("routing_key", &self.routing_key)
            .finish_non_exhaustive()
    }
}

impl AmqpDestination {
    /// A destination publishing to `exchange` (`""` is the default exchange) with
    /// `routing_key` on the broker at `url`. It connects on its first attempt.
    #[must_use]
    pub fn new(url: &str, exchange: &str, routing_key: &str, connect_timeout: Duration, timeout: Duration) -> Self {
        Self {
            url: url.to_owned(),
            exchange: exchange.to_owned(),
            routing_key: routing_key.to_owned(),
            connect_timeout,
            timeout,
            link: Mutex::new(None),
            generations: AtomicU64::new(0),
        }
    }

    /// The confirm channel and its link's generation, connecting first if there is none
    /// or it broke.
    async fn channel(&self) -> Result<(Channel, u64), AttemptOutcome> {
        let mut link = self.link.lock().await;
        if let Some(open) = link.as_ref()
            && open.connection.status().connected()
            && open.channel.status().connected()
        {
            return Ok((open.channel.clone(), open.generation));
        }
        *link = None;
        let (connection, channel) = tokio::time::timeout(self.connect_timeout, self.connect())
            .await
            .map_err(|_| failed(AttemptResult::Timeout, "timed out connecting"))?
            .map_err(|err| failed(AttemptResult::Connection, &describe(&err)))?;
        let generation = self.generations.fetch_add(1, Ordering::Relaxed);
        *link = Some(Link { connection, channel: channel.clone(), generation });
        Ok((channel, generation))
    }

    async fn connect(&self) -> lapin::Result<(Connection, Channel)> {
        let properties = ConnectionProperties::default().with_connection_name("idemgate".into());
        let connection = Connection::connect(&self.url, properties).await?;
        let channel = connection.create_channel().await?;
        channel.confirm_select(ConfirmSelectOptions::default()).await?;
        Ok((connection, channel))
    }

    /// Forgets the link after a failure, unless another attempt already replaced it.
    async fn drop_link(&self, generation: u64) {
        let mut link = self.link.lock().await;
        if link.as_ref().is_some_and(|open| open.generation == generation)
            && let Some(open) = link.take()
        {
            // Closing tells the broker at once; a broken connection is gone anyway.
            let _ = open.connection.close(200, "idemgate reconnects".into()).await;
        }
    }

    async fn publish(&self, channel: &Channel, job: &ClaimedJob, now: UnixTime) -> lapin::Result<Confirmation> {
        let options = BasicPublishOptions { mandatory: true, ..BasicPublishOptions::default() };
        let confirm = channel
            .basic_publish(
                self.exchange.as_str().into(),
                self.routing_key.as_str().into(),
                options,
                &job.body,
                properties(job, now),
            )
            .await?;
        confirm.await
    }
}

/// The message's properties: persistent, `message_id` = the outgoing webhook-id, the
/// event's content type, and the source, identity and event type in headers.
fn properties(job: &ClaimedJob, now: UnixTime) -> BasicProperties {
    let mut headers = FieldTable::default();
    for (name, value) in message::headers(job) {
        headers.insert(ShortString::from(name), AMQPValue::LongString(LongString::from(value)));
    }
    BasicProperties::default()
        .with_delivery_mode(PERSISTENT)
        .with_message_id(job.outgoing_id.as_str().into())
        .with_content_type(message::content_type(job).into())
        .with_timestamp(u64::try_from(now.0).unwrap_or(0))
        .with_app_id("idemgate".into())
        .with_headers(headers)
}

impl Deliver for AmqpDestination {
    fn deliver<'a>(&'a self, job: &'a ClaimedJob, now: UnixTime) -> BoxFuture<'a, AttemptOutcome> {
        Box::pin(async move {
            // The whole attempt, connecting included, takes at most `timeout` (the worker's
            // lease is set above it), as an HTTP attempt does.
            let deadline = tokio::time::Instant::now() + self.timeout;
            let (channel, generation) = match tokio::time::timeout_at(deadline, self.channel()).await {
                Err(_) => return failed(AttemptResult::Timeout, "timed out connecting"),
                Ok(Err(outcome)) => return outcome,
                Ok(Ok(link)) => link,
            };
            let outcome = match tokio::time::timeout_at(deadline, self.publish(&channel, job, now)).await {
                Err(_) => failed(AttemptResult::Timeout, "timed out waiting for the broker's confirm"),
                Ok(Err(err)) => failed(AttemptResult::Connection, &describe(&err)),
                Ok(Ok(confirmation)) => confirmed(job, confirmation),
            };
            if matches!(outcome.result, AttemptResult::Timeout | AttemptResult::Connection) {
                self.drop_link(generation).await;
            }
            outcome
        })
    }
}

/// What the broker's confirm of `job`'s message means for the attempt.
fn confirmed(job: &ClaimedJob, confirmation: Confirmation) -> AttemptOutcome {
    match confirmation {
        Confirmation::Ack(None) => {
            AttemptOutcome { result: AttemptResult::Accepted, error: None, response_prefix: None }
        }
        Confirmation::Ack(Some(message)) | Confirmation::Nack(Some(message)) => {
            returned(job, message.reply_code, message.reply_text.as_str())
        }
        Confirmation::Nack(None) => refused("nacked by the broker"),
        Confirmation::NotRequested => failed(AttemptResult::Connection, "the channel is not in confirm mode"),
    }
}

/// `job`'s message, which the broker returned (it is `mandatory`, and no queue is bound
/// for its routing key), logged as one line of ours: which message and the broker's
/// reason, never its body or headers. lapin's own log of a returned message holds both;
/// the log's filter drops it (see where `serve` sets up logging).
fn returned(job: &ClaimedJob, reply_code: u16, reply_text: &str) -> AttemptOutcome {
    tracing::warn!(
        destination = %job.destination,
        outgoing_id = %job.outgoing_id,
        reply_code,
        reply_text,
        "the broker returned the message: no queue is bound for its routing key"
    );
    refused(&format!("returned by the broker: {reply_code} {reply_text} (no queue is bound for the routing key)"))
}

fn refused(error: &str) -> AttemptOutcome {
    failed(AttemptResult::Refused { permanent: false }, error)
}

fn failed(result: AttemptResult, error: &str) -> AttemptOutcome {
    AttemptOutcome { result, error: Some(error.to_owned()), response_prefix: None }
}

/// A failure's text without the URL (which may carry credentials): the kind of I/O
/// failure, or the broker's own reply (`NOT_FOUND - no exchange 'x' in vhost '/'`).
fn describe(err: &lapin::Error) -> String {
    match err.kind() {
        ErrorKind::IOError(io) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
            std::io::ErrorKind::ConnectionReset => "connection reset".to_owned(),
            std::io::ErrorKind::TimedOut => "timed out".to_owned(),
            _ => "connection failed".to_owned(),
        },
        ErrorKind::ProtocolError(amqp) => format!("broker error: {amqp}"),
        ErrorKind::InvalidChannelState(..) | ErrorKind::InvalidConnectionState(_) => {
            "the connection to the broker is closed".to_owned()
        }
        ErrorKind::MissingHeartbeatError => "the broker stopped sending heartbeats".to_owned(),
        _ => "connection failed".to_owned(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use idemgate_core::{Identity, ReceiptKey, SourceName};

    use super::*;

    fn job() -> ClaimedJob {
        ClaimedJob {
            id: 1,
            lease_token: 1,
            attempt: 1,
            destination: "queue".into(),
            key: ReceiptKey { source: SourceName::new("a").unwrap(), identity: Identity::new("evt_1").unwrap() },
            outgoing_id: "msg_1".into(),
            event_type: Some("invoice.paid".into()),
            body: bytes::Bytes::from_static(b"{}"),
            content_type: None,
            headers: vec![("x-a".into(), "1".into())],
        }
    }

    #[test]
    fn a_message_is_persistent_and_carries_the_outgoing_id_and_the_events_names() {
        let properties = properties(&job(), UnixTime(7));
        assert_eq!(properties.delivery_mode(), &Some(PERSISTENT));
        assert_eq!(properties.message_id().as_ref().map(ShortString::as_str), Some("msg_1"));
        assert_eq!(properties.content_type().as_ref().map(ShortString::as_str), Some("application/json"));
        let headers = properties.headers().clone().unwrap();
        let header = |name: &str| match headers.inner().get(name) {
            Some(AMQPValue::LongString(value)) => Some(value.to_string()),
            _ => None,
        };
        assert_eq!(header("idemgate-source").as_deref(), Some("a"));
        assert_eq!(header("idemgate-event-id").as_deref(), Some("evt_1"));
        assert_eq!(header("idemgate-event-type").as_deref(), Some("invoice.paid"));
        assert_eq!(header("x-a").as_deref(), Some("1"));
    }

    #[tokio::test]
    async fn a_refused_connection_is_a_connection_failure_and_never_shows_the_url() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("amqp://user:hunter2@{}/%2f", closed.local_addr().unwrap());
        drop(closed);
        let destination = AmqpDestination::new(&url, "", "q", Duration::from_secs(2), Duration::from_secs(2));
        let outcome = destination.deliver(&job(), UnixTime(1)).await;
        assert_eq!(outcome.result, AttemptResult::Connection);
        assert_eq!(outcome.error.as_deref(), Some("connection refused"));
        assert!(!format!("{destination:?}").contains("hunter2"));
    }
}
