//! The SMTP submission listener: accepts connections, frames command lines and messages,
//! runs each connection's [`Session`], upgrades to TLS on `STARTTLS` (or from the first
//! byte, for implicit TLS), and offers each message to the store.
//!
//! A message is a delivery of the listener's source: its receipt is keyed by the listener
//! and the authenticated user's idempotency key, its body hash is the submission's
//! fingerprint, and its event (the message bytes, the envelope as stored headers) and one
//! relay job per configured destination are committed with the receipt by
//! [`Store::accept`], the same transaction as a webhook's. `250` is written only after that
//! returned, which is after the commit is durable.
//!
//! Each connection runs in a task of its own with its own limits (line length, commands,
//! errors, a timeout on every read), and the number of connections is bounded, so one
//! misbehaving client is disconnected without affecting the others.

use std::{sync::Arc, time::Duration};

use idemgate_clock::Clock;
use idemgate_core::{Identity, Outcome, ReceiptKey, SourceName, mail};
use idemgate_store::{ReceiveRequest, Store, inbox::IncomingEvent};
use sha2::{Digest, Sha256};
use smtp_proto::request::receiver::DataReceiver;
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::{Semaphore, watch},
};
use tokio_rustls::TlsAcceptor;

use crate::session::{self, Policy, Reply, Session, Step, Submission};

/// Longest command line, CRLF included (RFC 5321 asks for at least 512).
pub const MAX_COMMAND_LINE: usize = 2048;
/// Most connections served at once by one listener; more are told `421` and closed.
pub const MAX_CONNECTIONS: usize = 512;

/// How long a client may take to send one command, or one chunk of its message.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(300);

/// One configured listener.
#[derive(Clone)]
pub struct ListenerConfig {
    /// The listener's name: the source of its receipts.
    pub name: SourceName,
    /// What a session allows (`starttls` is set per connection from `tls`).
    pub policy: Policy,
    /// The certificate for `STARTTLS`, or for every connection with `implicit_tls`.
    pub tls: Option<TlsAcceptor>,
    /// TLS from the first byte (SMTPS), instead of `STARTTLS`.
    pub implicit_tls: bool,
    /// One relay job is stored for each.
    pub destinations: Arc<[String]>,
    /// Header fields left out of the fingerprint.
    pub fingerprint_exclude_headers: Vec<String>,
    /// How long one read may wait.
    pub timeout: Duration,
}

impl std::fmt::Debug for ListenerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenerConfig")
            .field("name", &self.name)
            .field("policy", &self.policy)
            .field("tls", &self.tls.is_some())
            .field("implicit_tls", &self.implicit_tls)
            .field("destinations", &self.destinations)
            .finish_non_exhaustive()
    }
}

/// Serves `listener` until `stopped` turns true.
pub async fn serve(
    listener: TcpListener,
    config: Arc<ListenerConfig>,
    store: Store,
    clock: Arc<dyn Clock>,
    mut stopped: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.wait_for(|stop| *stop) => return,
        };
        let (mut stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                tracing::warn!(listener = %config.name, error = %err, "smtp accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            tokio::spawn(async move {
                let _ = stream.write_all(b"421 4.7.0 too many connections, try again later\r\n").await;
            });
            continue;
        };
        let (config, store, clock) = (Arc::clone(&config), store.clone(), Arc::clone(&clock));
        tokio::spawn(async move {
            let context = Context { config: &config, store: &store, clock: clock.as_ref() };
            if let Err(err) = connection(stream, &context).await {
                tracing::debug!(listener = %config.name, %peer, error = %err, "smtp connection ended");
            }
            drop(slot);
        });
    }
}

struct Context<'a> {
    config: &'a ListenerConfig,
    store: &'a Store,
    clock: &'a dyn Clock,
}

/// How a conversation on one stream ended.
enum End {
    Closed,
    /// The client asked for TLS; the session continues on the TLS stream.
    StartTls(Box<Session>),
}

async fn connection(stream: TcpStream, context: &Context<'_>) -> std::io::Result<()> {
    let config = context.config;
    let mut policy = config.policy.clone();
    policy.starttls = config.tls.is_some() && !config.implicit_tls;
    if let (true, Some(tls)) = (config.implicit_tls, &config.tls) {
        let tls_stream = tokio::time::timeout(config.timeout, tls.accept(stream)).await??;
        let session = Session::new(policy, true);
        let greeting = session.greeting();
        converse(tls_stream, session, Some(greeting), context).await?;
        return Ok(());
    }
    let session = Session::new(policy, false);
    let greeting = session.greeting();
    let mut stream = stream;
    match converse_on(&mut stream, session, Some(greeting), context).await? {
        End::Closed => Ok(()),
        End::StartTls(mut session) => {
            let Some(tls) = &config.tls else { return Ok(()) };
            let tls_stream = tokio::time::timeout(config.timeout, tls.accept(stream)).await??;
            session.tls_started();
            converse(tls_stream, *session, None, context).await?;
            Ok(())
        }
    }
}

async fn converse<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    session: Session,
    greeting: Option<Reply>,
    context: &Context<'_>,
) -> std::io::Result<()> {
    // STARTTLS is refused on a TLS stream, so this conversation can only close.
    converse_on(&mut stream, session, greeting, context).await?;
    Ok(())
}

/// A connection's bytes: what was read and not yet used, and replies not yet written (so
/// pipelined commands get their replies in one write).
struct Wire<'s, S> {
    stream: &'s mut S,
    input: Vec<u8>,
    output: Vec<u8>,
    timeout: Duration,
}

enum Line {
    Complete(Vec<u8>),
    TooLong,
    Eof,
    TimedOut,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Wire<'_, S> {
    async fn flush(&mut self) -> std::io::Result<()> {
        if !self.output.is_empty() {
            self.stream.write_all(&self.output).await?;
            self.stream.flush().await?;
            self.output.clear();
        }
        Ok(())
    }

    fn send(&mut self, reply: &Reply) {
        self.output.extend_from_slice(reply.0.as_bytes());
    }

    /// Reads more bytes after writing what is pending; `Ok(false)` at end of stream.
    async fn fill(&mut self) -> std::io::Result<Option<bool>> {
        self.flush().await?;
        let mut chunk = [0u8; 16 * 1024];
        match tokio::time::timeout(self.timeout, self.stream.read(&mut chunk)).await {
            Err(_) => Ok(None),
            Ok(read) => {
                let n = read?;
                self.input.extend_from_slice(&chunk[..n]);
                Ok(Some(n > 0))
            }
        }
    }

    async fn line(&mut self, max: usize) -> std::io::Result<Line> {
        loop {
            if let Some(end) = self.input.iter().position(|&b| b == b'\n') {
                if end + 1 > max {
                    return Ok(Line::TooLong);
                }
                return Ok(Line::Complete(self.input.drain(..=end).collect()));
            }
            if self.input.len() >= max {
                return Ok(Line::TooLong);
            }
            match self.fill().await? {
                None => return Ok(Line::TimedOut),
                Some(false) => return Ok(Line::Eof),
                Some(true) => {}
            }
        }
    }

    /// The message after `354`, up to its final dot, dot-unstuffed; past `max` its bytes
    /// are read and discarded (`oversized`). `None`: the client went away or timed out.
    async fn message(&mut self, max: usize) -> std::io::Result<Option<(Vec<u8>, bool)>> {
        // The receiver recognises the final dot after a line end; an empty message has
        // its dot first.
        loop {
            if self.input.starts_with(b".\r\n") {
                self.input.drain(..3);
                return Ok(Some((Vec::new(), false)));
            }
            if self.input.len() >= 3 || !b".\r\n".starts_with(&self.input) {
                break;
            }
            if self.fill().await? != Some(true) {
                return Ok(None);
            }
        }
        let mut receiver = DataReceiver::new();
        let mut message = Vec::new();
        let mut oversized = false;
        loop {
            let mut bytes = self.input.iter();
            let done = receiver.ingest(&mut bytes, &mut message);
            let used = self.input.len() - bytes.as_slice().len();
            self.input.drain(..used);
            if message.len() > max {
                oversized = true;
                message.clear();
            }
            if done {
                return Ok(Some((message, oversized)));
            }
            if self.fill().await? != Some(true) {
                return Ok(None);
            }
        }
    }
}

async fn converse_on<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    mut session: Session,
    greeting: Option<Reply>,
    context: &Context<'_>,
) -> std::io::Result<End> {
    let max_message = context.config.policy.max_message_size;
    let mut wire = Wire { stream, input: Vec::new(), output: Vec::new(), timeout: context.config.timeout };
    if let Some(greeting) = greeting {
        wire.send(&greeting);
    }
    let step_line = |session: &mut Session, line: &[u8], auth: bool| {
        if auth { session.auth_response(line) } else { session.command(line) }
    };
    let mut in_auth = false;
    loop {
        let line = match wire.line(MAX_COMMAND_LINE).await? {
            Line::Complete(line) => line,
            Line::TooLong => {
                wire.send(&Session::line_too_long());
                wire.flush().await?;
                return Ok(End::Closed);
            }
            Line::TimedOut => {
                wire.send(&Session::timed_out());
                wire.flush().await?;
                return Ok(End::Closed);
            }
            Line::Eof => return Ok(End::Closed),
        };
        let step = step_line(&mut session, &line, in_auth);
        in_auth = false;
        match step {
            Step::Reply(reply) => wire.send(&reply),
            Step::AuthChallenge(reply) => {
                wire.send(&reply);
                in_auth = true;
            }
            Step::Close(reply) => {
                wire.send(&reply);
                wire.flush().await?;
                return Ok(End::Closed);
            }
            Step::StartTls(reply) => {
                wire.send(&reply);
                wire.flush().await?;
                if !wire.input.is_empty() {
                    // Commands pipelined after STARTTLS would be read as if sent over TLS.
                    return Ok(End::Closed);
                }
                return Ok(End::StartTls(Box::new(session)));
            }
            Step::Data(reply) => {
                wire.send(&reply);
                let Some((message, oversized)) = wire.message(max_message).await? else {
                    return Ok(End::Closed);
                };
                let reply = match session.message(message, oversized) {
                    Ok(submission) => submit(submission, context).await,
                    Err(refusal) => refusal,
                };
                wire.send(&reply);
            }
        }
    }
}

/// A fresh queue id: 16 hex digits from the OS's randomness.
fn queue_id() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: a unique enough id from the time and a counter is still an id.
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let count = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        bytes = count.to_be_bytes();
    }
    hex::encode_upper(bytes)
}

/// The receipt's identity of a keyed message: the user and the key, so that keys are per
/// user. A pair too long for an identity is kept as the key's SHA-256 instead.
pub fn scoped_identity(user: Option<&str>, key: &str) -> Option<Identity> {
    let user = user.unwrap_or("*");
    Identity::new(format!("{user}:{key}"))
        .or_else(|_| Identity::new(format!("{user}:sha256:{}", hex::encode(Sha256::digest(key.as_bytes())))))
        .ok()
}

async fn submit(submission: Submission, context: &Context<'_>) -> Reply {
    let config = context.config;
    let listener = config.name.as_str().to_owned();
    let queue_id = queue_id();
    let identity = match &submission.key {
        Some(key) => scoped_identity(submission.user.as_deref(), key),
        None => {
            metrics::counter!("idemgate_smtp_unkeyed_total", "listener" => listener.clone()).increment(1);
            Identity::new(queue_id.clone()).ok()
        }
    };
    let Some(identity) = identity else {
        return session::answer(&Outcome::Refused { reason: "the key cannot be used as an identity" });
    };
    let body_hash = mail::fingerprint(&submission.envelope, &submission.message, &config.fingerprint_exclude_headers);
    let request = ReceiveRequest {
        key: ReceiptKey { source: config.name.clone(), identity },
        body_hash,
        received_at: context.clock.now(),
        dedupe_body: false,
    };
    let event = IncomingEvent {
        result: serde_json::json!({ "queue_id": queue_id }),
        outgoing_id: Some(queue_id),
        event_type: Some("message".to_owned()),
        content_type: Some("message/rfc822".to_owned()),
        headers: stored_headers(&submission, &config.policy.key_header),
        body: submission.message.into(),
        ordering: None,
        destinations: Arc::clone(&config.destinations),
        dead: Vec::new(),
        refusal: None,
    };
    let key = request.key.clone();
    let outcome = context.store.accept(request, event).await;
    metrics::counter!("idemgate_smtp_submissions_total", "listener" => listener, "outcome" => outcome.name())
        .increment(1);
    match &outcome {
        Outcome::Failed { cause } => {
            tracing::warn!(listener = %key.source, identity = %key.identity, ?cause, "smtp submission not stored")
        }
        other => {
            tracing::info!(listener = %key.source, identity = %key.identity, outcome = other.name(), "smtp submission")
        }
    }
    session::answer(&outcome)
}

/// The envelope and the listener's key header name, stored with the event for the relay.
fn stored_headers(submission: &Submission, key_header: &str) -> Vec<(String, String)> {
    let mut headers = submission.envelope.to_headers();
    headers.push((mail::KEY_HEADER_HEADER.to_owned(), key_header.to_owned()));
    headers
}

/// Runs `serve` for each listener until `stopped`; a future to spawn.
pub async fn serve_all(
    listeners: Vec<(TcpListener, Arc<ListenerConfig>)>,
    store: Store,
    clock: Arc<dyn Clock>,
    stopped: watch::Receiver<bool>,
) {
    let tasks: Vec<_> = listeners
        .into_iter()
        .map(|(listener, config)| {
            tokio::spawn(serve(listener, config, store.clone(), Arc::clone(&clock), stopped.clone()))
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_scoped_per_user_and_bounded() {
        let alice = scoped_identity(Some("alice"), "k1").unwrap();
        assert_eq!(alice.as_str(), "alice:k1");
        assert_ne!(alice, scoped_identity(Some("bob"), "k1").unwrap());
        assert_eq!(scoped_identity(None, "k1").unwrap().as_str(), "*:k1");
        let long = "k".repeat(255);
        let hashed = scoped_identity(Some("alice"), &long).unwrap();
        assert!(hashed.as_str().starts_with("alice:sha256:"), "{hashed}");
        assert_eq!(hashed, scoped_identity(Some("alice"), &long).unwrap(), "stable");
    }

    #[test]
    fn queue_ids_are_sixteen_hex_digits_and_differ() {
        let (a, b) = (queue_id(), queue_id());
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
