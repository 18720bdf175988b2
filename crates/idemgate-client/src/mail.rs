//! Mail submission that can be retried safely: the message carries an idempotency key in a
//! header (`Idempotency-Key` by default), chosen once and kept on every attempt, so that a
//! server that deduplicates (idemgate's SMTP listener) recognises a resubmission after a
//! lost `250` as the same operation.
//!
//! The message is prepared once ([`prepare_message`], pure): line endings made CRLF, the
//! key header added at the top unless the message already has one (then that key is the
//! operation's). Every attempt then submits the same bytes to the same envelope over a
//! fresh connection with lettre's async SMTP transport (tokio, rustls): a well-kept client
//! that does the protocol, STARTTLS, implicit TLS, AUTH and dot-stuffing, while the retry
//! decisions stay the core's [`RetryPolicy`](idemgate_core::retry::RetryPolicy), the same as
//! for HTTP sends: connection errors, timeouts and `4xx` replies are retried with backoff;
//! a `5xx` reply (including a refused recipient or refused credentials) is final, as are
//! TLS failures and a server that lacks what was required (STARTTLS, an AUTH mechanism),
//! which retrying cannot change.

use std::{fmt, sync::Arc, time::Duration};

use bytes::Bytes;
use idemgate_core::retry::{AttemptResult, DeadReason, Decision, RetryPolicy};
use lettre::{
    Address, AsyncSmtpTransport, AsyncTransport, Tokio1Executor,
    address::Envelope,
    transport::smtp::{
        authentication::Credentials,
        client::{Certificate, CertificateStore, Tls, TlsParameters},
    },
};

use crate::{ClientOptions, Final, NoAnswer, Sleeper, TokioSleeper, request::generate_id};

/// The default name of the key header.
pub const DEFAULT_KEY_HEADER: &str = "Idempotency-Key";

/// The longest key accepted (the listener's limit).
pub const MAX_KEY_LEN: usize = 255;

/// How `smtp://` uses STARTTLS (`smtps://` is TLS from the first byte, whatever this says).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartTls {
    /// Upgrade, or fail when the server does not offer it: the default, so that a
    /// password and the message never cross the network in clear by surprise.
    #[default]
    Required,
    /// Upgrade when the server offers it, otherwise send in clear.
    Opportunistic,
    /// Never upgrade.
    Never,
}

/// A user and a password for AUTH; the password never appears in `Debug` or errors.
#[derive(Clone)]
pub struct MailCredentials {
    user: String,
    password: String,
}

impl MailCredentials {
    /// `user` with `password`.
    #[must_use]
    pub fn new(user: impl Into<String>, password: impl Into<String>) -> Self {
        Self { user: user.into(), password: password.into() }
    }
}

impl fmt::Debug for MailCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MailCredentials").field("user", &self.user).field("password", &"<redacted>").finish()
    }
}

/// One message to submit, as many times as it takes.
#[derive(Debug, Clone)]
pub struct MailRequest {
    url: String,
    from: String,
    to: Vec<String>,
    message: Bytes,
    idempotency_key: Option<String>,
    key_header: String,
    credentials: Option<MailCredentials>,
    starttls: StartTls,
    ca_pem: Option<Vec<u8>>,
}

impl MailRequest {
    /// `message` (RFC 5322 text) from `from` to `to` through the server at `url`
    /// (`smtp://host[:port]`, port 25 by default, or `smtps://host[:port]`, 465).
    #[must_use]
    pub fn new(url: impl Into<String>, from: impl Into<String>, to: Vec<String>, message: impl Into<Bytes>) -> Self {
        Self {
            url: url.into(),
            from: from.into(),
            to,
            message: message.into(),
            idempotency_key: None,
            key_header: DEFAULT_KEY_HEADER.to_owned(),
            credentials: None,
            starttls: StartTls::default(),
            ca_pem: None,
        }
    }

    /// Names the operation with this key, so that separate invocations share it. Without
    /// one, the message's own key header is used, or a key is generated once.
    #[must_use]
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The header that carries the key (default [`DEFAULT_KEY_HEADER`]).
    #[must_use]
    pub fn key_header(mut self, name: impl Into<String>) -> Self {
        self.key_header = name.into();
        self
    }

    /// Authenticates with these credentials (AUTH PLAIN or LOGIN, whichever the server offers).
    #[must_use]
    pub fn credentials(mut self, credentials: MailCredentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// The STARTTLS policy for `smtp://` (default [`StartTls::Required`]).
    #[must_use]
    pub fn starttls(mut self, starttls: StartTls) -> Self {
        self.starttls = starttls;
        self
    }

    /// Trusts only the CA certificates in this PEM text, instead of the public roots.
    #[must_use]
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_pem = Some(pem.into());
        self
    }
}

/// The server's reply: its code and text (the lines joined by spaces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The three-digit reply code.
    pub code: u16,
    /// The text after the code.
    pub text: String,
}

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code, self.text)
    }
}

/// One attempt as it went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailAttempt {
    /// The reply that ended it, if one came.
    pub reply: Option<Reply>,
    /// Why no reply ended it, if none did.
    pub error: Option<NoAnswer>,
    /// How long the client waited before the next attempt, if there was one.
    pub waited: Option<Duration>,
}

/// How the submission ended and its history.
#[derive(Debug, Clone)]
pub struct MailSent {
    /// How it ended.
    pub outcome: Final,
    /// The last reply, if one came.
    pub reply: Option<Reply>,
    /// Why the last attempt failed without a reply, when it did: a TLS failure or what the
    /// server lacked (final), or why no reply came (given up).
    pub error: Option<String>,
    /// The key every attempt carried.
    pub idempotency_key: String,
    /// Every attempt.
    pub attempts: Vec<MailAttempt>,
}

/// The submission could not be attempted at all: bad input, nothing sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MailError {
    /// The URL is not `smtp://host[:port]` or `smtps://host[:port]`.
    #[error("{0:?} is not smtp://host[:port] or smtps://host[:port]")]
    Url(String),
    /// The URL has credentials in it (they would show in `ps` and logs).
    #[error("put no user or password in the URL: give them as credentials (--user and --password)")]
    CredentialsInUrl,
    /// An envelope address does not parse.
    #[error("{what} {address:?} is not a mail address")]
    Address {
        /// `from` or `to`.
        what: &'static str,
        /// The address as given.
        address: String,
    },
    /// No recipient.
    #[error("a message needs at least one recipient")]
    NoRecipient,
    /// The key header's name is not a header field name.
    #[error("{0:?} is not a header name")]
    KeyHeader(String),
    /// The key is empty, too long or not printable ASCII.
    #[error("the idempotency key must be 1 to {MAX_KEY_LEN} printable ASCII characters without spaces; {0}")]
    Key(String),
    /// The message's own key header differs from the key given.
    #[error("the message already has {header}: {in_message:?}, not the key given ({given:?})")]
    KeyConflict {
        /// The header.
        header: String,
        /// The key in the message.
        in_message: String,
        /// The key given.
        given: String,
    },
    /// The message is empty.
    #[error("the message is empty")]
    EmptyMessage,
    /// The CA file is not PEM certificates.
    #[error("the CA certificates are not valid PEM: {0}")]
    Ca(String),
}

/// The message as every attempt submits it, and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedMessage {
    /// The message with CRLF line endings and the key header.
    pub bytes: Vec<u8>,
    /// The operation's key.
    pub key: String,
}

/// Prepares `message` for submission: bare LF line endings made CRLF, then the key: the
/// message's own `header` when it has one (which must equal `given` when that is given),
/// otherwise `given` or `generate()` written as a new first header line.
pub fn prepare_message(
    message: &[u8],
    header: &str,
    given: Option<&str>,
    generate: impl FnOnce() -> String,
) -> Result<PreparedMessage, MailError> {
    if header.is_empty() || !header.bytes().all(|b| (33..=126).contains(&b) && b != b':') {
        return Err(MailError::KeyHeader(header.to_owned()));
    }
    if message.is_empty() {
        return Err(MailError::EmptyMessage);
    }
    if let Some(key) = given {
        check_key(key)?;
    }
    let bytes = crlf(message);
    if let Some(in_message) = header_value(&bytes, header) {
        check_key(&in_message)?;
        if let Some(given) = given
            && given != in_message
        {
            return Err(MailError::KeyConflict { header: header.to_owned(), in_message, given: given.to_owned() });
        }
        return Ok(PreparedMessage { bytes, key: in_message });
    }
    let key = given.map_or_else(generate, str::to_owned);
    let mut keyed = format!("{header}: {key}\r\n").into_bytes();
    keyed.extend_from_slice(&bytes);
    Ok(PreparedMessage { bytes: keyed, key })
}

fn check_key(key: &str) -> Result<(), MailError> {
    if key.is_empty() {
        return Err(MailError::Key("it is empty".to_owned()));
    }
    if key.len() > MAX_KEY_LEN {
        return Err(MailError::Key(format!("it has {} characters", key.len())));
    }
    if !key.bytes().all(|b| (33..=126).contains(&b)) {
        return Err(MailError::Key("it has a space, a control character or non-ASCII".to_owned()));
    }
    Ok(())
}

/// `message` with every line ending CRLF (a bare LF becomes CRLF).
fn crlf(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + message.len() / 32);
    for (i, &b) in message.iter().enumerate() {
        if b == b'\n' && (i == 0 || message[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

/// The unfolded, trimmed value of the first header `name` in the header section of a CRLF
/// message (up to its first empty line).
fn header_value(message: &[u8], name: &str) -> Option<String> {
    let text = String::from_utf8_lossy(message);
    let mut found: Option<String> = None;
    for line in text.split("\r\n") {
        if line.is_empty() {
            break;
        }
        if let Some(value) = found.as_mut() {
            if line.starts_with([' ', '\t']) {
                value.push(' ');
                value.push_str(line.trim());
                continue;
            }
            break;
        }
        if let Some((field, value)) = line.split_once(':')
            && field.trim_end().eq_ignore_ascii_case(name)
        {
            found = Some(value.trim().to_owned());
        }
    }
    found.map(|v| v.trim().to_owned())
}

/// Where to connect and how.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Server {
    host: String,
    port: u16,
    implicit_tls: bool,
}

fn parse_url(url: &str) -> Result<Server, MailError> {
    let bad = || MailError::Url(url.to_owned());
    let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
    let (implicit_tls, default_port) = match scheme.to_ascii_lowercase().as_str() {
        "smtp" => (false, 25),
        "smtps" => (true, 465),
        _ => return Err(bad()),
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.contains('@') {
        return Err(MailError::CredentialsInUrl);
    }
    if authority.is_empty() || authority.contains(['/', '?', '#']) {
        return Err(bad());
    }
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']').ok_or_else(bad)?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':').ok_or_else(bad)?),
        };
        (host, port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(port) => port.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(bad)?,
        None => default_port,
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok(Server { host: host.to_owned(), port, implicit_tls })
}

/// Submits [`MailRequest`]s with retries.
#[derive(Debug, Clone)]
pub struct MailClient {
    policy: RetryPolicy,
    timeout: Duration,
    sleeper: Arc<dyn Sleeper>,
}

impl MailClient {
    /// A client with `options` (attempts, backoff, the timeout of one attempt) and real
    /// sleeping.
    #[must_use]
    pub fn new(options: &ClientOptions) -> Self {
        Self { policy: options.policy(), timeout: options.timeout, sleeper: Arc::new(TokioSleeper) }
    }

    /// Replaces the sleeper (tests record the waits instead of sleeping).
    #[must_use]
    pub fn with_sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// Submits `request` until it gets a final reply or the attempts run out; every
    /// attempt carries the same bytes and key. Bad input is refused before any attempt.
    pub async fn send(&self, request: MailRequest) -> Result<MailSent, MailError> {
        let server = parse_url(&request.url)?;
        let from = request
            .from
            .parse::<Address>()
            .map_err(|_| MailError::Address { what: "from", address: request.from.clone() })?;
        let to = request
            .to
            .iter()
            .map(|a| a.parse::<Address>().map_err(|_| MailError::Address { what: "to", address: a.clone() }))
            .collect::<Result<Vec<_>, _>>()?;
        let envelope = Envelope::new(Some(from), to).map_err(|_| MailError::NoRecipient)?;
        let prepared =
            prepare_message(&request.message, &request.key_header, request.idempotency_key.as_deref(), || {
                generate_id("idg-")
            })?;
        let transport = self.transport(&server, &request)?;
        // lettre ends the data with CRLF "." CRLF, whose CRLF ends the last line: without
        // the message's own last CRLF the server receives exactly the prepared bytes.
        let wire = prepared.bytes.strip_suffix(b"\r\n").unwrap_or(&prepared.bytes);

        let mut attempts = Vec::new();
        let mut attempt = 1;
        loop {
            let (result, reply, error, no_answer) = self.attempt(&transport, &envelope, wire).await;
            let decision = self.policy.decide(attempt, result, fastrand::f64());
            let (outcome, waited) = match decision {
                Decision::Succeeded => (Some(Final::Succeeded), None),
                Decision::RetryAfter(delay) => (None, Some(delay)),
                Decision::Dead(DeadReason::AttemptsExhausted) => (Some(Final::GaveUp), None),
                Decision::Dead(_) | Decision::DisableDestination => (Some(Final::Rejected), None),
            };
            attempts.push(MailAttempt { reply: reply.clone(), error: no_answer, waited });
            if let Some(outcome) = outcome {
                return Ok(MailSent { outcome, reply, error, idempotency_key: prepared.key, attempts });
            }
            if let Some(delay) = waited {
                self.sleeper.sleep(delay).await;
            }
            attempt += 1;
        }
    }

    fn transport(
        &self,
        server: &Server,
        request: &MailRequest,
    ) -> Result<AsyncSmtpTransport<Tokio1Executor>, MailError> {
        let mut tls = TlsParameters::builder(server.host.clone());
        if let Some(pem) = &request.ca_pem {
            let ca = Certificate::from_pem(pem).map_err(|err| MailError::Ca(err.to_string()))?;
            tls = tls.certificate_store(CertificateStore::None).add_root_certificate(ca);
        }
        let tls = tls.build_rustls().map_err(|err| MailError::Ca(err.to_string()))?;
        let tls = match (server.implicit_tls, request.starttls) {
            (true, _) => Tls::Wrapper(tls),
            (false, StartTls::Required) => Tls::Required(tls),
            (false, StartTls::Opportunistic) => Tls::Opportunistic(tls),
            (false, StartTls::Never) => Tls::None,
        };
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(server.host.clone())
            .port(server.port)
            .tls(tls)
            .timeout(Some(self.timeout));
        if let Some(credentials) = &request.credentials {
            builder = builder.credentials(Credentials::new(credentials.user.clone(), credentials.password.clone()));
        }
        Ok(builder.build())
    }

    /// One attempt: what the policy judges, the reply, the error text of a failure
    /// without a reply, and why no reply came when none did.
    async fn attempt(
        &self,
        transport: &AsyncSmtpTransport<Tokio1Executor>,
        envelope: &Envelope,
        wire: &[u8],
    ) -> (AttemptResult, Option<Reply>, Option<String>, Option<NoAnswer>) {
        let sent = tokio::time::timeout(self.timeout, transport.send_raw(envelope, wire)).await;
        match sent {
            Err(_elapsed) => {
                (AttemptResult::Timeout, None, Some(NoAnswer::TimedOut.to_string()), Some(NoAnswer::TimedOut))
            }
            Ok(Ok(response)) => {
                let reply =
                    Reply { code: code(&response.code()), text: response.message().collect::<Vec<_>>().join(" ") };
                (AttemptResult::Accepted, Some(reply), None, None)
            }
            Ok(Err(err)) => judge(&err),
        }
    }
}

fn code(code: &lettre::transport::smtp::response::Code) -> u16 {
    code.to_string().parse().unwrap_or(0)
}

/// How a lettre error counts: a negative reply is temporary (`4xx`) or final (`5xx`); a
/// timeout or a broken connection is retried; a TLS failure or what the client could not
/// do with this server (STARTTLS or AUTH not offered) is final.
fn judge(err: &lettre::transport::smtp::Error) -> (AttemptResult, Option<Reply>, Option<String>, Option<NoAnswer>) {
    if let Some(status) = err.status() {
        // The error's text is `permanent error (554): <the server's text>`.
        let text = err.to_string();
        let text = text.split_once("): ").map_or(String::new(), |(_, t)| t.to_owned());
        let reply = Reply { code: code(&status), text };
        return (AttemptResult::Refused { permanent: err.is_permanent() }, Some(reply), None, None);
    }
    if err.is_timeout() {
        return (AttemptResult::Timeout, None, Some(NoAnswer::TimedOut.to_string()), Some(NoAnswer::TimedOut));
    }
    if err.is_tls() || err.is_client() {
        return (AttemptResult::Refused { permanent: true }, None, Some(err.to_string()), None);
    }
    // A handshake that fails (an untrusted certificate, another host's name) comes back
    // as an I/O error around rustls's: final too.
    if let Some(tls) =
        io_error(err).and_then(|io| io.get_ref()).and_then(|e| e.downcast_ref::<tokio_rustls::rustls::Error>())
    {
        return (AttemptResult::Refused { permanent: true }, None, Some(format!("tls error: {tls}")), None);
    }
    let cause = deepest_cause(err);
    let no_answer = if is_connect(err) { NoAnswer::Connect(cause) } else { NoAnswer::Lost(cause) };
    (AttemptResult::Connection, None, Some(no_answer.to_string()), Some(no_answer))
}

/// Whether no connection was made: the operating system refused or could not reach it.
fn is_connect(err: &lettre::transport::smtp::Error) -> bool {
    io_error(err).is_some_and(|io| {
        matches!(
            io.kind(),
            std::io::ErrorKind::ConnectionRefused
                | std::io::ErrorKind::HostUnreachable
                | std::io::ErrorKind::NetworkUnreachable
                | std::io::ErrorKind::AddrNotAvailable
        )
    })
}

fn io_error(err: &lettre::transport::smtp::Error) -> Option<&std::io::Error> {
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        if let Some(io) = inner.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        source = inner.source();
    }
    None
}

/// The operating system's words for an I/O failure (`connection refused`), otherwise the
/// innermost message.
fn deepest_cause(err: &lettre::transport::smtp::Error) -> String {
    if let Some(io) = io_error(err) {
        if io.raw_os_error().is_some() {
            return io.kind().to_string();
        }
        return io.to_string();
    }
    let mut deepest: &dyn std::error::Error = err;
    while let Some(source) = deepest.source() {
        deepest = source;
    }
    deepest.to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn prepare(message: &str, given: Option<&str>) -> Result<PreparedMessage, MailError> {
        prepare_message(message.as_bytes(), DEFAULT_KEY_HEADER, given, || "idg-generated".to_owned())
    }

    #[test]
    fn a_message_without_the_header_gets_the_generated_key_first_and_crlf_endings() {
        let p = prepare("Subject: hi\n\nbody\n", None).unwrap();
        assert_eq!(p.key, "idg-generated");
        assert_eq!(p.bytes, b"Idempotency-Key: idg-generated\r\nSubject: hi\r\n\r\nbody\r\n");
    }

    #[test]
    fn a_given_key_is_written_and_crlf_is_kept_as_it_is() {
        let p = prepare("Subject: hi\r\n\r\nbody\r\n", Some("order-7")).unwrap();
        assert_eq!(p.key, "order-7");
        assert_eq!(p.bytes, b"Idempotency-Key: order-7\r\nSubject: hi\r\n\r\nbody\r\n");
    }

    #[test]
    fn the_messages_own_header_is_kept_and_used_whatever_its_case_and_folding() {
        let text = "Subject: hi\r\nidempotency-key:\r\n  folded-key\r\n\r\nIdempotency-Key: in-the-body\r\n";
        let p = prepare(text, None).unwrap();
        assert_eq!(p.key, "folded-key");
        assert_eq!(p.bytes, text.as_bytes());
        assert_eq!(prepare(text, Some("folded-key")).unwrap().key, "folded-key");
    }

    #[test]
    fn a_header_only_in_the_body_does_not_count() {
        let p = prepare("Subject: hi\r\n\r\nIdempotency-Key: in-the-body\r\n", None).unwrap();
        assert_eq!(p.key, "idg-generated");
    }

    #[test]
    fn a_given_key_that_contradicts_the_messages_is_refused() {
        let err = prepare("Idempotency-Key: a\r\n\r\nx\r\n", Some("b")).unwrap_err();
        assert!(matches!(err, MailError::KeyConflict { .. }), "{err}");
    }

    #[test]
    fn a_custom_header_name_is_used() {
        let p = prepare_message(b"Subject: x\r\n\r\n", "X-Request-Key", Some("k"), String::new).unwrap();
        assert_eq!(p.bytes, b"X-Request-Key: k\r\nSubject: x\r\n\r\n");
        let kept = prepare_message(b"x-request-key: mine\r\n\r\n", "X-Request-Key", None, String::new).unwrap();
        assert_eq!(kept.key, "mine");
    }

    #[test]
    fn bad_keys_headers_and_messages_are_refused() {
        assert!(matches!(prepare("S: x\r\n\r\n", Some("")), Err(MailError::Key(_))));
        assert!(matches!(prepare("S: x\r\n\r\n", Some(&"k".repeat(256))), Err(MailError::Key(_))));
        assert!(prepare("S: x\r\n\r\n", Some(&"k".repeat(255))).is_ok());
        assert!(matches!(prepare("S: x\r\n\r\n", Some("a b")), Err(MailError::Key(_))));
        assert!(matches!(prepare("S: x\r\n\r\n", Some("a\r\nBcc: x")), Err(MailError::Key(_))));
        assert!(matches!(prepare("Idempotency-Key: \r\n\r\n", None), Err(MailError::Key(_))));
        assert!(matches!(prepare("", None), Err(MailError::EmptyMessage)));
        for header in ["", "Bad Header", "Key:"] {
            assert!(matches!(prepare_message(b"x", header, None, String::new), Err(MailError::KeyHeader(_))));
        }
    }

    #[test]
    fn urls_name_the_scheme_host_and_port() {
        let server = |host: &str, port, implicit_tls| Server { host: host.to_owned(), port, implicit_tls };
        assert_eq!(parse_url("smtp://mail.example:587").unwrap(), server("mail.example", 587, false));
        assert_eq!(parse_url("smtp://mail.example").unwrap(), server("mail.example", 25, false));
        assert_eq!(parse_url("SMTPS://127.0.0.1/").unwrap(), server("127.0.0.1", 465, true));
        assert_eq!(parse_url("smtp://[::1]:2525").unwrap(), server("::1", 2525, false));
        for bad in ["http://x", "smtp://", "smtp://x:0", "smtp://x:port", "smtp://x/path", "x:25", "smtp://[::1"] {
            assert!(matches!(parse_url(bad), Err(MailError::Url(_))), "{bad}");
        }
        assert!(matches!(parse_url("smtp://me:pw@x:25"), Err(MailError::CredentialsInUrl)));
    }

    #[test]
    fn credentials_never_show_their_password() {
        let shown = format!("{:?}", MailCredentials::new("app", "hunter2"));
        assert!(shown.contains("app") && !shown.contains("hunter2"), "{shown}");
    }
}
