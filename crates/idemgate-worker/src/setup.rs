//! What a queue destination publishes to, created on its broker (`idemgate destination
//! setup`): the worker only publishes, and a message to a queue or a stream that does not
//! exist is returned or refused, so the operator creates them first, with this or with
//! the broker's own tools.
//!
//! Idempotent: what exists already is checked, never changed, and running it twice
//! changes nothing. Something that exists under the name but cannot take the
//! destination's messages as declared is an error that says what differs.
//!
//! - **RabbitMQ**, on the default exchange (`exchange = ""`): a durable queue named by
//!   the routing key. On an exchange of its own: that exchange, durable and `direct`, and a
//!   durable queue bound to it with the routing key, named by the routing key (by the
//!   exchange's name when the routing key is empty).
//! - **NATS JetStream**: a stream that covers the subject. One that does already is kept
//!   (a note says when its duplicate window is shorter than asked); else a stream named
//!   after the subject ([`stream_name`]) is created for exactly that subject, with the
//!   given duplicate window.
//!
//! No error or step shows the broker's URL, which may carry a password.

use std::{fmt, time::Duration};

use async_nats::jetstream::{self, context::CreateStreamErrorKind, context::GetStreamByNameErrorKind};
use lapin::{
    Channel, Connection, ConnectionProperties, ExchangeKind,
    options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions},
    types::FieldTable,
};

/// AMQP's reply code for a declaration that differs from what exists.
const PRECONDITION_FAILED: u16 = 406;
/// AMQP's reply code for a passive declaration of something that does not exist.
const NOT_FOUND: u16 = 404;

/// Why a destination could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    /// The broker could not be reached, or refused the connection or its credentials.
    #[error("cannot connect to the broker: {0}")]
    Connect(String),
    /// Something exists under the name that the destination cannot use as declared.
    #[error("{what} exists, but not as setup declares it: {why}")]
    Incompatible {
        /// The exchange, queue or stream.
        what: String,
        /// What the broker said differs.
        why: String,
    },
    /// The broker refused a declaration for another reason.
    #[error("the broker refused {what}: {why}")]
    Refused {
        /// What was being declared.
        what: String,
        /// The broker's reason.
        why: String,
    },
    /// The broker did not answer within the destination's timeout.
    #[error("the broker did not answer within {0:?}")]
    Timeout(Duration),
}

/// One thing setup made sure of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// What it is, e.g. `queue "webhooks" (durable)`.
    pub what: String,
    /// Whether setup created it.
    pub found: Found,
    /// Something the operator should know about what was there.
    pub note: Option<String>,
}

/// Whether setup created what a [`Step`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// It did not exist; setup created it.
    Created,
    /// It existed and was left as it was.
    AlreadyThere,
    /// Declared either way, as AMQP cannot ask whether it existed (a binding).
    InPlace,
}

impl Step {
    fn new(what: String, found: Found) -> Self {
        Self { what, found, note: None }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let found = match self.found {
            Found::Created => "created",
            Found::AlreadyThere => "already there",
            Found::InPlace => "in place",
        };
        write!(f, "{}: {found}", self.what)?;
        match &self.note {
            Some(note) => write!(f, "; {note}"),
            None => Ok(()),
        }
    }
}

/// [`Found::Created`] unless it `existed`.
fn found(existed: bool) -> Found {
    if existed { Found::AlreadyThere } else { Found::Created }
}

/// The queue a RabbitMQ destination's messages are routed to by setup: the routing key,
/// or the exchange's name when the routing key is empty.
#[must_use]
pub fn queue_name<'a>(exchange: &'a str, routing_key: &'a str) -> &'a str {
    if routing_key.is_empty() { exchange } else { routing_key }
}

/// Declares what a RabbitMQ destination publishes to (see the module's doc), each within
/// `timeout`.
///
/// # Errors
///
/// [`SetupError`]: no connection, an existing exchange or queue declared otherwise, or
/// another refusal.
pub async fn rabbitmq(
    url: &str,
    exchange: &str,
    routing_key: &str,
    timeout: Duration,
) -> Result<Vec<Step>, SetupError> {
    let properties = ConnectionProperties::default().with_connection_name("idemgate setup".into());
    let connection = within(timeout, Connection::connect(url, properties))
        .await?
        .map_err(|err| SetupError::Connect(describe(&err)))?;
    let steps = declare_all(&connection, exchange, routing_key, timeout).await;
    let _ = connection.close(200, "setup done".into()).await;
    steps
}

async fn declare_all(
    connection: &Connection,
    exchange: &str,
    routing_key: &str,
    timeout: Duration,
) -> Result<Vec<Step>, SetupError> {
    let queue = queue_name(exchange, routing_key);
    if exchange.is_empty() {
        let what = format!("queue {queue:?} (durable, on the default exchange)");
        return Ok(vec![declare_queue(connection, what, queue, timeout).await?.0]);
    }
    let declared_exchange = declare_exchange(connection, exchange, timeout).await?;
    let (declared_queue, channel) =
        declare_queue(connection, format!("queue {queue:?} (durable)"), queue, timeout).await?;
    let binding = bind(&channel, queue, exchange, routing_key, timeout).await?;
    Ok(vec![declared_exchange, declared_queue, binding])
}

/// `exchange`, durable and direct.
async fn declare_exchange(connection: &Connection, exchange: &str, timeout: Duration) -> Result<Step, SetupError> {
    let what = format!("exchange {exchange:?} (durable, direct)");
    let existed = exists(connection, Kind::Exchange, exchange, timeout).await?;
    let channel = open_channel(connection, timeout).await?;
    let options = ExchangeDeclareOptions { durable: true, ..ExchangeDeclareOptions::default() };
    let declared = channel.exchange_declare(exchange.into(), ExchangeKind::Direct, options, FieldTable::default());
    within(timeout, declared).await?.map_err(|err| refusal(&what, &err))?;
    Ok(Step::new(what, found(existed)))
}

/// `queue`, durable, without arguments; the step (`what`) and the channel it was declared on.
async fn declare_queue(
    connection: &Connection,
    what: String,
    queue: &str,
    timeout: Duration,
) -> Result<(Step, Channel), SetupError> {
    let existed = exists(connection, Kind::Queue, queue, timeout).await?;
    let channel = open_channel(connection, timeout).await?;
    let options = QueueDeclareOptions { durable: true, ..QueueDeclareOptions::default() };
    let declared = channel.queue_declare(queue.into(), options, FieldTable::default());
    within(timeout, declared).await?.map_err(|err| refusal(&what, &err))?;
    Ok((Step::new(what, found(existed)), channel))
}

/// Binds `queue` to `exchange` with `routing_key`: binding again what is bound is a no-op
/// in AMQP, and AMQP 0.9.1 cannot ask whether a binding exists ([`Found::InPlace`]).
async fn bind(
    channel: &Channel,
    queue: &str,
    exchange: &str,
    routing_key: &str,
    timeout: Duration,
) -> Result<Step, SetupError> {
    let what = format!("binding of queue {queue:?} to exchange {exchange:?} with routing key {routing_key:?}");
    let bound = channel.queue_bind(
        queue.into(),
        exchange.into(),
        routing_key.into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    );
    within(timeout, bound).await?.map_err(|err| refusal(&what, &err))?;
    Ok(Step::new(what, Found::InPlace))
}

#[derive(Clone, Copy)]
enum Kind {
    Exchange,
    Queue,
}

/// Whether the exchange or queue exists: a passive declaration, on a channel of its own
/// since the broker closes the channel when the answer is no.
async fn exists(connection: &Connection, kind: Kind, name: &str, timeout: Duration) -> Result<bool, SetupError> {
    let channel = open_channel(connection, timeout).await?;
    let asked = match kind {
        Kind::Exchange => {
            let options = ExchangeDeclareOptions { passive: true, ..ExchangeDeclareOptions::default() };
            within(timeout, channel.exchange_declare(name.into(), ExchangeKind::Direct, options, FieldTable::default()))
                .await?
        }
        Kind::Queue => {
            let options = QueueDeclareOptions { passive: true, ..QueueDeclareOptions::default() };
            within(timeout, channel.queue_declare(name.into(), options, FieldTable::default())).await?.map(|_| ())
        }
    };
    match asked {
        Ok(()) => {
            let _ = channel.close(200, "checked".into()).await;
            Ok(true)
        }
        Err(err) if reply_code(&err) == Some(NOT_FOUND) => Ok(false),
        Err(err) => Err(SetupError::Refused { what: format!("checking {name:?}"), why: describe(&err) }),
    }
}

async fn open_channel(connection: &Connection, timeout: Duration) -> Result<Channel, SetupError> {
    within(timeout, connection.create_channel()).await?.map_err(|err| SetupError::Connect(describe(&err)))
}

/// A refused declaration: [`SetupError::Incompatible`] when what exists differs.
fn refusal(what: &str, err: &lapin::Error) -> SetupError {
    let (what, why) = (what.to_owned(), describe(err));
    if reply_code(err) == Some(PRECONDITION_FAILED) {
        SetupError::Incompatible { what, why }
    } else {
        SetupError::Refused { what, why }
    }
}

fn reply_code(err: &lapin::Error) -> Option<u16> {
    match err.kind() {
        lapin::ErrorKind::ProtocolError(amqp) => Some(amqp.get_id()),
        _ => None,
    }
}

/// A lapin error without the URL: the broker's reply, or the kind of failure.
fn describe(err: &lapin::Error) -> String {
    match err.kind() {
        lapin::ErrorKind::ProtocolError(amqp) => format!("{} {}", amqp.get_id(), amqp.get_message()),
        lapin::ErrorKind::IOError(io) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
            std::io::ErrorKind::TimedOut => "timed out".to_owned(),
            _ => "connection failed".to_owned(),
        },
        _ => "connection failed".to_owned(),
    }
}

/// The stream setup creates for `subject` when none covers it: the subject in capitals,
/// each character a stream name may not hold (`.`, `*`, `>`, path separators, spaces)
/// as `_`; `webhooks.in` gets `WEBHOOKS_IN`.
#[must_use]
pub fn stream_name(subject: &str) -> String {
    subject
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c.to_ascii_uppercase() } else { '_' })
        .collect()
}

/// Makes sure a JetStream stream covers `subject` (see the module's doc), with
/// `duplicate_window` when it creates one, each request within `timeout`.
///
/// # Errors
///
/// [`SetupError`]: no connection, no JetStream, a stream that covers the subject but does
/// not acknowledge publishes, a name in use by a stream for other subjects, or another
/// refusal.
pub async fn nats(url: &str, subject: &str, duplicate_window: Duration, timeout: Duration) -> Result<Step, SetupError> {
    let connect = async_nats::ConnectOptions::new().connection_timeout(timeout).name("idemgate setup").connect(url);
    let client = within(timeout, connect).await?.map_err(|err| SetupError::Connect(err.kind().to_string()))?;
    let mut context = jetstream::new(client);
    context.set_timeout(timeout);
    match within(timeout, context.stream_by_subject(subject)).await? {
        Ok(name) => existing_stream(&context, &name, subject, duplicate_window, timeout).await,
        Err(err) if err.kind() == GetStreamByNameErrorKind::NotFound => {
            create_stream(&context, subject, duplicate_window, timeout).await
        }
        Err(err) => {
            Err(SetupError::Refused { what: format!("looking up a stream for {subject:?}"), why: err.to_string() })
        }
    }
}

async fn existing_stream(
    context: &jetstream::Context,
    name: &str,
    subject: &str,
    duplicate_window: Duration,
    timeout: Duration,
) -> Result<Step, SetupError> {
    let what = format!("stream {name:?} for subject {subject:?}");
    let stream = within(timeout, context.get_stream(name))
        .await?
        .map_err(|err| SetupError::Refused { what: what.clone(), why: err.to_string() })?;
    let config = &stream.cached_info().config;
    if config.no_ack {
        let why = "it does not acknowledge publishes (no_ack), and a job succeeds only on the ack".to_owned();
        return Err(SetupError::Incompatible { what, why });
    }
    let window = config.duplicate_window;
    let note = (window < duplicate_window).then(|| {
        format!(
            "its duplicate window, {}, is shorter than {}: a republish after it is stored twice",
            humantime::format_duration(window),
            humantime::format_duration(duplicate_window)
        )
    });
    let what = format!("{what}, duplicate window {}", humantime::format_duration(window));
    Ok(Step { what, found: Found::AlreadyThere, note })
}

async fn create_stream(
    context: &jetstream::Context,
    subject: &str,
    duplicate_window: Duration,
    timeout: Duration,
) -> Result<Step, SetupError> {
    let name = stream_name(subject);
    let what = format!("stream {name:?} for subject {subject:?}");
    let config = jetstream::stream::Config {
        name: name.clone(),
        subjects: vec![subject.to_owned()],
        duplicate_window,
        ..Default::default()
    };
    match within(timeout, context.create_stream(config)).await? {
        Ok(_) => {
            let what = format!("{what}, duplicate window {}", humantime::format_duration(duplicate_window));
            Ok(Step::new(what, Found::Created))
        }
        Err(err) => match err.kind() {
            // The one way a create fails on what exists: the name is taken by a stream for
            // other subjects (one for this subject would have been found above).
            CreateStreamErrorKind::JetStream(js) if js.error_code() == jetstream::ErrorCode::STREAM_NAME_EXIST => {
                Err(SetupError::Incompatible { what: format!("stream {name:?}"), why: js.to_string() })
            }
            _ => Err(SetupError::Refused { what, why: err.to_string() }),
        },
    }
}

/// `future`'s output, or [`SetupError::Timeout`] after `timeout`.
async fn within<T>(timeout: Duration, future: impl Future<Output = T>) -> Result<T, SetupError> {
    tokio::time::timeout(timeout, future).await.map_err(|_| SetupError::Timeout(timeout))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_named_after_its_subject_in_capitals() {
        assert_eq!(stream_name("webhooks.in"), "WEBHOOKS_IN");
        assert_eq!(stream_name("orders/paid.v-1"), "ORDERS_PAID_V-1");
    }

    #[test]
    fn the_queue_is_the_routing_key_or_else_the_exchange() {
        assert_eq!(queue_name("", "webhooks"), "webhooks");
        assert_eq!(queue_name("orders", "paid"), "paid");
        assert_eq!(queue_name("orders", ""), "orders");
    }
}
