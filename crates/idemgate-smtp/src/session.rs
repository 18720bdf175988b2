//! One SMTP submission session as a state machine, without I/O: it is given each command
//! line (parsed by `smtp-proto`), each SASL response and each message, and says what to
//! answer and what the connection does next. The listener ([`crate::listener`]) owns the
//! socket, the timeouts and the store; everything a client can make the session do is here
//! and unit-tested below.
//!
//! Rules kept here: no mail transaction before `EHLO`/`HELO`; `AUTH` offered and accepted
//! only over TLS, unless the listener is on a loopback address; `MAIL` refused until the
//! client authenticated, unless unauthenticated submission is allowed; a declared `SIZE`
//! over the limit refused at `MAIL`, a message over it at the end of `DATA` (`552`); a
//! bounded number of recipients, of commands and of errors per session, after which the
//! client is told `421` and disconnected. Every answer carries an enhanced status code.

use std::borrow::Cow;

use base64::{Engine, engine::general_purpose::STANDARD};
use idemgate_core::{
    Outcome,
    mail::{self, Envelope, KeyError},
};
use sha2::{Digest, Sha256};
use smtp_proto::{AUTH_LOGIN, AUTH_PLAIN, Error as ParseError, Request};
use subtle::ConstantTimeEq;

/// Most recipients of one message.
pub const MAX_RECIPIENTS: usize = 100;
/// Most commands in one session (`DATA`'s message counts as one).
pub const MAX_COMMANDS: usize = 1000;
/// Most refused commands in one session before it is ended.
pub const MAX_ERRORS: usize = 10;

/// One configured user and the SHA-256 of their password (compared in constant time).
#[derive(Clone)]
pub struct User {
    /// The name given to `AUTH`.
    pub name: String,
    digest: [u8; 32],
}

impl User {
    /// A user with their password.
    #[must_use]
    pub fn new(name: impl Into<String>, password: &[u8]) -> Self {
        Self { name: name.into(), digest: Sha256::digest(password).into() }
    }
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User").field("name", &self.name).finish_non_exhaustive()
    }
}

/// What a listener allows, fixed by its configuration.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The name the listener greets with.
    pub hostname: String,
    /// The largest message accepted, in bytes.
    pub max_message_size: usize,
    /// The users who may authenticate.
    pub users: Vec<User>,
    /// Submission without `AUTH` (only ever set for a loopback listener).
    pub allow_unauthenticated: bool,
    /// Whether `AUTH` is allowed without TLS: a loopback listener.
    pub loopback: bool,
    /// Whether `STARTTLS` is offered (a certificate is configured and the connection is
    /// not TLS already).
    pub starttls: bool,
    /// The header that carries the idempotency key.
    pub key_header: String,
    /// Refuse messages without a key.
    pub require_key: bool,
}

/// A reply: one or more lines, each ending in CRLF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply(pub String);

impl Reply {
    fn line(code: u16, enhanced: &str, text: &str) -> Self {
        Self(format!("{code} {enhanced} {text}\r\n"))
    }

    /// The reply's code.
    #[must_use]
    pub fn code(&self) -> u16 {
        self.0.get(..3).and_then(|code| code.parse().ok()).unwrap_or(0)
    }
}

/// What the connection does after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send the reply and read the next command.
    Reply(Reply),
    /// Send the reply, then close the connection.
    Close(Reply),
    /// Send the reply (`220`), then start TLS and call [`Session::tls_started`].
    StartTls(Reply),
    /// Send the reply (`354`), then read the message up to its final dot and call
    /// [`Session::message`].
    Data(Reply),
    /// Send the reply (`334`), then read one line, the SASL response, and call
    /// [`Session::auth_response`].
    AuthChallenge(Reply),
}

/// A message ready to be offered to the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    /// Who authenticated, if anyone did.
    pub user: Option<String>,
    /// The envelope.
    pub envelope: Envelope,
    /// The message bytes as received (after dot-unstuffing).
    pub message: Vec<u8>,
    /// The idempotency key from the key header.
    pub key: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Sasl {
    /// Waiting for the `PLAIN` response.
    Plain,
    /// Waiting for the `LOGIN` user name.
    LoginUser,
    /// Waiting for the `LOGIN` password of that user.
    LoginPassword(String),
}

/// One session's state.
#[derive(Debug)]
pub struct Session {
    policy: Policy,
    tls: bool,
    greeted: bool,
    user: Option<String>,
    mail_from: Option<String>,
    rcpt_to: Vec<String>,
    sasl: Option<Sasl>,
    commands: usize,
    errors: usize,
}

impl Session {
    /// A new session; `tls` when the connection is TLS from the start (implicit TLS).
    #[must_use]
    pub fn new(policy: Policy, tls: bool) -> Self {
        Self {
            policy,
            tls,
            greeted: false,
            user: None,
            mail_from: None,
            rcpt_to: Vec::new(),
            sasl: None,
            commands: 0,
            errors: 0,
        }
    }

    /// The first thing the server says.
    #[must_use]
    pub fn greeting(&self) -> Reply {
        Reply(format!("220 {} ESMTP idemgate\r\n", self.policy.hostname))
    }

    /// What a client that took too long is told before it is disconnected.
    #[must_use]
    pub fn timed_out() -> Reply {
        Reply::line(421, "4.4.2", "timeout exceeded, closing connection")
    }

    /// What a client whose command line is too long is told before it is disconnected.
    #[must_use]
    pub fn line_too_long() -> Reply {
        Reply::line(500, "5.5.2", "line too long, closing connection")
    }

    /// What a client is told when the server shuts down.
    #[must_use]
    pub fn shutting_down(&self) -> Reply {
        Reply(format!("421 4.3.2 {} shutting down\r\n", self.policy.hostname))
    }

    /// Whether the connection is TLS now.
    #[must_use]
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    fn auth_offered(&self) -> bool {
        !self.policy.users.is_empty() && (self.tls || self.policy.loopback)
    }

    fn refuse(&mut self, reply: Reply) -> Step {
        self.errors += 1;
        if self.errors >= MAX_ERRORS {
            return Step::Close(Reply::line(421, "4.7.0", "too many errors, closing connection"));
        }
        Step::Reply(reply)
    }

    fn reset(&mut self) {
        self.mail_from = None;
        self.rcpt_to.clear();
    }

    /// One command line, CRLF included.
    pub fn command(&mut self, line: &[u8]) -> Step {
        self.commands += 1;
        if self.commands > MAX_COMMANDS {
            return Step::Close(Reply::line(421, "4.7.0", "too many commands, closing connection"));
        }
        match Request::parse(&mut line.iter()) {
            Ok(request) => self.request(request),
            Err(ParseError::UnknownCommand) => self.refuse(Reply::line(500, "5.5.1", "command not recognized")),
            Err(ParseError::InvalidSenderAddress) => self.refuse(Reply::line(501, "5.1.7", "invalid sender address")),
            Err(ParseError::InvalidRecipientAddress) => {
                self.refuse(Reply::line(501, "5.1.3", "invalid recipient address"))
            }
            Err(ParseError::UnsupportedParameter { .. } | ParseError::InvalidParameter { .. }) => {
                self.refuse(Reply::line(555, "5.5.4", "parameter not recognized or not implemented"))
            }
            Err(_) => self.refuse(Reply::line(501, "5.5.2", "syntax error")),
        }
    }

    fn request(&mut self, request: Request<Cow<'_, str>>) -> Step {
        match request {
            Request::Ehlo { host: _ } => {
                self.greeted = true;
                self.reset();
                Step::Reply(self.ehlo())
            }
            Request::Helo { host: _ } => {
                self.greeted = true;
                self.reset();
                Step::Reply(Reply(format!("250 {}\r\n", self.policy.hostname)))
            }
            Request::Lhlo { .. } => self.refuse(Reply::line(500, "5.5.1", "LHLO is not spoken here")),
            Request::StartTls => self.starttls(),
            Request::Auth { mechanism, initial_response } => self.auth(mechanism, &initial_response),
            Request::Mail { from } => self.mail(from.address.into_owned(), from.size),
            Request::Rcpt { to } => self.rcpt(to.address.into_owned()),
            Request::Data => self.data(),
            Request::Bdat { .. } => self.refuse(Reply::line(502, "5.5.1", "BDAT is not supported, use DATA")),
            Request::Rset => {
                self.reset();
                Step::Reply(Reply::line(250, "2.0.0", "OK"))
            }
            Request::Noop { .. } => Step::Reply(Reply::line(250, "2.0.0", "OK")),
            Request::Quit => Step::Close(Reply::line(221, "2.0.0", "bye")),
            Request::Vrfy { .. } => Step::Reply(Reply::line(252, "2.5.0", "cannot verify, send the message")),
            Request::Help { .. } => Step::Reply(Reply::line(214, "2.0.0", "see RFC 5321")),
            Request::Expn { .. } | Request::Etrn { .. } | Request::Atrn { .. } | Request::Burl { .. } => {
                self.refuse(Reply::line(502, "5.5.1", "command not implemented"))
            }
        }
    }

    fn ehlo(&self) -> Reply {
        let mut lines = vec![
            self.policy.hostname.clone(),
            "PIPELINING".to_owned(),
            "8BITMIME".to_owned(),
            format!("SIZE {}", self.policy.max_message_size),
            "ENHANCEDSTATUSCODES".to_owned(),
        ];
        if self.policy.starttls && !self.tls {
            lines.push("STARTTLS".to_owned());
        }
        if self.auth_offered() && self.user.is_none() {
            lines.push("AUTH PLAIN LOGIN".to_owned());
        }
        let last = lines.len() - 1;
        let text = lines
            .iter()
            .enumerate()
            .map(|(i, line)| format!("250{}{line}\r\n", if i == last { ' ' } else { '-' }))
            .collect();
        Reply(text)
    }

    fn starttls(&mut self) -> Step {
        if self.tls {
            return self.refuse(Reply::line(503, "5.5.1", "TLS already active"));
        }
        if !self.policy.starttls {
            return self.refuse(Reply::line(502, "5.5.1", "STARTTLS not available"));
        }
        Step::StartTls(Reply::line(220, "2.0.0", "ready to start TLS"))
    }

    /// The connection is TLS now: everything said before is forgotten (RFC 3207), the
    /// client greets again.
    pub fn tls_started(&mut self) {
        self.tls = true;
        self.greeted = false;
        self.user = None;
        self.sasl = None;
        self.reset();
    }

    fn auth(&mut self, mechanism: u64, initial: &str) -> Step {
        if !self.greeted {
            return self.refuse(Reply::line(503, "5.5.1", "say EHLO first"));
        }
        if self.user.is_some() {
            return self.refuse(Reply::line(503, "5.5.1", "already authenticated"));
        }
        if self.mail_from.is_some() {
            return self.refuse(Reply::line(503, "5.5.1", "AUTH not allowed during a mail transaction"));
        }
        if self.policy.users.is_empty() {
            return self.refuse(Reply::line(502, "5.5.1", "AUTH not available"));
        }
        if !self.auth_offered() {
            return self.refuse(Reply::line(538, "5.7.11", "encryption required: issue STARTTLS first"));
        }
        match mechanism {
            AUTH_PLAIN if initial.is_empty() => {
                self.sasl = Some(Sasl::Plain);
                Step::AuthChallenge(Reply("334 \r\n".to_owned()))
            }
            AUTH_PLAIN => self.plain(initial.as_bytes()),
            AUTH_LOGIN if initial.is_empty() => {
                self.sasl = Some(Sasl::LoginUser);
                Step::AuthChallenge(Reply("334 VXNlcm5hbWU6\r\n".to_owned()))
            }
            AUTH_LOGIN => self.login_user(initial.as_bytes()),
            _ => self.refuse(Reply::line(504, "5.5.4", "mechanism not supported, use PLAIN or LOGIN")),
        }
    }

    /// The client's answer to a `334` challenge: one line, CRLF included.
    pub fn auth_response(&mut self, line: &[u8]) -> Step {
        self.commands += 1;
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(sasl) = self.sasl.take() else {
            return self.refuse(Reply::line(503, "5.5.1", "no authentication in progress"));
        };
        if line == b"*" {
            return self.refuse(Reply::line(501, "5.0.0", "authentication cancelled"));
        }
        match sasl {
            Sasl::Plain => self.plain(line),
            Sasl::LoginUser => self.login_user(line),
            Sasl::LoginPassword(user) => match STANDARD.decode(line) {
                Ok(password) => self.check(&user, &password),
                Err(_) => self.refuse(Reply::line(501, "5.5.2", "cannot decode the response")),
            },
        }
    }

    fn plain(&mut self, encoded: &[u8]) -> Step {
        let Ok(decoded) = STANDARD.decode(encoded) else {
            return self.refuse(Reply::line(501, "5.5.2", "cannot decode the response"));
        };
        let mut parts = decoded.split(|&b| b == 0);
        let (Some(_authzid), Some(user), Some(password), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return self.refuse(Reply::line(501, "5.5.2", "malformed PLAIN response"));
        };
        let user = String::from_utf8_lossy(user).into_owned();
        self.check(&user, password)
    }

    fn login_user(&mut self, encoded: &[u8]) -> Step {
        match STANDARD.decode(encoded) {
            Ok(user) => {
                self.sasl = Some(Sasl::LoginPassword(String::from_utf8_lossy(&user).into_owned()));
                Step::AuthChallenge(Reply("334 UGFzc3dvcmQ6\r\n".to_owned()))
            }
            Err(_) => self.refuse(Reply::line(501, "5.5.2", "cannot decode the response")),
        }
    }

    fn check(&mut self, user: &str, password: &[u8]) -> Step {
        let offered: [u8; 32] = Sha256::digest(password).into();
        // Every user's digest is compared, so the time taken does not tell which names exist.
        let mut found = None;
        for known in &self.policy.users {
            let same = known.digest.ct_eq(&offered);
            if bool::from(same) && known.name == user {
                found = Some(known.name.clone());
            }
        }
        match found {
            Some(name) => {
                self.user = Some(name);
                Step::Reply(Reply::line(235, "2.7.0", "authentication succeeded"))
            }
            None => self.refuse(Reply::line(535, "5.7.8", "authentication credentials invalid")),
        }
    }

    fn mail(&mut self, from: String, size: usize) -> Step {
        if !self.greeted {
            return self.refuse(Reply::line(503, "5.5.1", "say EHLO first"));
        }
        if self.mail_from.is_some() {
            return self.refuse(Reply::line(503, "5.5.1", "nested MAIL command"));
        }
        if self.user.is_none() && !self.policy.allow_unauthenticated {
            let text = if self.auth_offered() || self.policy.users.is_empty() {
                "authentication required"
            } else {
                "authentication required: issue STARTTLS, then AUTH"
            };
            return self.refuse(Reply::line(530, "5.7.0", text));
        }
        if size > self.policy.max_message_size {
            return self.refuse(Reply::line(552, "5.3.4", "message size exceeds the fixed maximum message size"));
        }
        self.mail_from = Some(from);
        Step::Reply(Reply::line(250, "2.1.0", "sender OK"))
    }

    fn rcpt(&mut self, to: String) -> Step {
        if self.mail_from.is_none() {
            return self.refuse(Reply::line(503, "5.5.1", "need MAIL before RCPT"));
        }
        if to.is_empty() {
            return self.refuse(Reply::line(501, "5.1.3", "invalid recipient address"));
        }
        if self.rcpt_to.len() >= MAX_RECIPIENTS {
            return Step::Reply(Reply::line(452, "4.5.3", "too many recipients"));
        }
        self.rcpt_to.push(to);
        Step::Reply(Reply::line(250, "2.1.5", "recipient OK"))
    }

    fn data(&mut self) -> Step {
        if self.mail_from.is_none() {
            return self.refuse(Reply::line(503, "5.5.1", "need MAIL before DATA"));
        }
        if self.rcpt_to.is_empty() {
            return self.refuse(Reply::line(554, "5.5.1", "no valid recipients"));
        }
        // RFC 2034: no enhanced code on a 3xx reply.
        Step::Data(Reply("354 end data with <CR><LF>.<CR><LF>\r\n".to_owned()))
    }

    /// The message after `DATA`, dot-unstuffed; `oversized` when it went past the limit
    /// (its bytes were discarded). Either a submission for the store, or the refusal to
    /// send; the mail transaction ends either way.
    pub fn message(&mut self, message: Vec<u8>, oversized: bool) -> Result<Submission, Reply> {
        let mail_from = self.mail_from.take().unwrap_or_default();
        let rcpt_to = std::mem::take(&mut self.rcpt_to);
        if oversized || message.len() > self.policy.max_message_size {
            return Err(Reply::line(552, "5.3.4", "message size exceeds the fixed maximum message size"));
        }
        let key = match mail::idempotency_key(&message, &self.policy.key_header) {
            Ok(key) => key,
            Err(err @ (KeyError::Repeated | KeyError::Malformed)) => {
                return Err(Reply(format!("550 5.6.0 {}: {err}\r\n", self.policy.key_header)));
            }
        };
        if key.is_none() && self.policy.require_key {
            let text = format!("a {} header is required on this listener", self.policy.key_header);
            return Err(Reply::line(550, "5.7.1", &text));
        }
        Ok(Submission { user: self.user.clone(), envelope: Envelope { mail_from, rcpt_to }, message, key })
    }
}

/// The answer to a submission the store decided: `250` with the queue id for a first
/// submission and for a repeat (the original id), a permanent `550` for a key used for
/// another message, `451` when nothing could be stored.
#[must_use]
pub fn answer(outcome: &Outcome) -> Reply {
    let queue_id = |result: &serde_json::Value| {
        result.get("queue_id").and_then(serde_json::Value::as_str).unwrap_or("unknown").to_owned()
    };
    match outcome {
        Outcome::Applied { result } => Reply::line(250, "2.0.0", &format!("OK queued as {}", queue_id(result))),
        Outcome::Duplicate { result } => {
            Reply::line(250, "2.0.0", &format!("OK already queued as {} (repeated submission)", queue_id(result)))
        }
        Outcome::Conflict => Reply::line(
            550,
            "5.7.0",
            "idempotency key already used for another message (other envelope or content); not sent",
        ),
        Outcome::Refused { reason } => Reply::line(550, "5.7.1", reason),
        Outcome::Failed { .. } => Reply::line(451, "4.3.0", "temporary failure: message not stored, try again later"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use idemgate_core::outcome::FailureCause;
    use serde_json::json;

    use super::*;

    fn policy() -> Policy {
        Policy {
            hostname: "mx.test".into(),
            max_message_size: 100,
            users: vec![User::new("alice", b"secret")],
            allow_unauthenticated: false,
            loopback: false,
            starttls: true,
            key_header: "Idempotency-Key".into(),
            require_key: false,
        }
    }

    fn reply(step: Step) -> Reply {
        match step {
            Step::Reply(reply) => reply,
            other => panic!("expected a reply, got {other:?}"),
        }
    }

    fn code(step: Step) -> u16 {
        match step {
            Step::Reply(r) | Step::Close(r) | Step::StartTls(r) | Step::Data(r) | Step::AuthChallenge(r) => r.code(),
        }
    }

    fn plain(user: &str, password: &str) -> String {
        format!("AUTH PLAIN {}\r\n", STANDARD.encode(format!("\0{user}\0{password}")))
    }

    /// A session over TLS, greeted and authenticated as alice.
    fn ready() -> Session {
        let mut session = Session::new(policy(), true);
        assert_eq!(code(session.command(b"EHLO client\r\n")), 250);
        assert_eq!(code(session.command(plain("alice", "secret").as_bytes())), 235);
        session
    }

    #[test]
    fn ehlo_lists_the_extensions_and_auth_only_over_tls() {
        let mut plain_session = Session::new(policy(), false);
        let text = reply(plain_session.command(b"EHLO client\r\n")).0;
        assert_eq!(
            text,
            "250-mx.test\r\n250-PIPELINING\r\n250-8BITMIME\r\n250-SIZE 100\r\n250-ENHANCEDSTATUSCODES\r\n250 STARTTLS\r\n"
        );
        assert_eq!(code(plain_session.command(plain("alice", "secret").as_bytes())), 538, "no AUTH before TLS");
        assert_eq!(code(plain_session.command(b"MAIL FROM:<a@x>\r\n")), 530);
        assert!(matches!(plain_session.command(b"STARTTLS\r\n"), Step::StartTls(_)));
        plain_session.tls_started();
        assert_eq!(code(plain_session.command(b"MAIL FROM:<a@x>\r\n")), 503, "greet again after STARTTLS");
        let text = reply(plain_session.command(b"EHLO client\r\n")).0;
        assert!(text.ends_with("250-ENHANCEDSTATUSCODES\r\n250 AUTH PLAIN LOGIN\r\n"), "{text}");
        assert_eq!(code(plain_session.command(b"STARTTLS\r\n")), 503);

        let loopback = Policy { loopback: true, starttls: false, ..policy() };
        let mut session = Session::new(loopback, false);
        let text = reply(session.command(b"EHLO client\r\n")).0;
        assert!(text.ends_with("250 AUTH PLAIN LOGIN\r\n"), "a loopback listener offers AUTH without TLS: {text}");
        assert_eq!(code(session.command(plain("alice", "secret").as_bytes())), 235);
    }

    #[test]
    fn plain_and_login_authenticate_and_a_wrong_password_is_refused() {
        let mut session = Session::new(policy(), true);
        session.command(b"EHLO client\r\n");
        assert_eq!(code(session.command(plain("alice", "wrong").as_bytes())), 535);
        assert_eq!(code(session.command(plain("bob", "secret").as_bytes())), 535, "another name, same password");
        assert!(matches!(session.command(b"AUTH LOGIN\r\n"), Step::AuthChallenge(_)));
        assert!(matches!(session.auth_response(STANDARD.encode("alice").as_bytes()), Step::AuthChallenge(_)));
        assert_eq!(code(session.auth_response(format!("{}\r\n", STANDARD.encode("secret")).as_bytes())), 235);
        assert_eq!(code(session.command(b"MAIL FROM:<a@x>\r\n")), 250);

        let mut session = Session::new(policy(), true);
        session.command(b"EHLO client\r\n");
        assert!(matches!(session.command(b"AUTH PLAIN\r\n"), Step::AuthChallenge(_)));
        assert_eq!(code(session.auth_response(STANDARD.encode("\0alice\0secret").as_bytes())), 235);
        assert_eq!(code(session.command(b"AUTH PLAIN\r\n")), 503, "already authenticated");
    }

    #[test]
    fn a_transaction_needs_its_commands_in_order_and_gives_the_submission() {
        let mut session = ready();
        assert_eq!(code(session.command(b"RCPT TO:<b@x>\r\n")), 503);
        assert_eq!(code(session.command(b"DATA\r\n")), 503);
        assert_eq!(code(session.command(b"MAIL FROM:<a@x> BODY=8BITMIME\r\n")), 250);
        assert_eq!(code(session.command(b"MAIL FROM:<a@x>\r\n")), 503);
        assert_eq!(code(session.command(b"DATA\r\n")), 554, "no recipient yet");
        assert_eq!(code(session.command(b"RCPT TO:<b@x>\r\n")), 250);
        assert_eq!(code(session.command(b"RCPT TO:<c@x>\r\n")), 250);
        let data = Step::Data(Reply("354 end data with <CR><LF>.<CR><LF>\r\n".to_owned()));
        assert_eq!(session.command(b"DATA\r\n"), data, "no enhanced code on a 3xx reply");
        let submission = session.message(b"Idempotency-Key: k1\r\n\r\nhi\r\n".to_vec(), false).unwrap();
        assert_eq!(submission.user.as_deref(), Some("alice"));
        assert_eq!(
            submission.envelope,
            Envelope { mail_from: "a@x".into(), rcpt_to: vec!["b@x".into(), "c@x".into()] }
        );
        assert_eq!(submission.key.as_deref(), Some("k1"));
        assert_eq!(code(session.command(b"RCPT TO:<b@x>\r\n")), 503, "the transaction ended");
        assert_eq!(code(session.command(b"MAIL FROM:<>\r\n")), 250, "the null sender");
        assert_eq!(code(session.command(b"RSET\r\n")), 250);
        assert_eq!(code(session.command(b"RCPT TO:<b@x>\r\n")), 503, "RSET ended it");
        assert!(matches!(session.command(b"QUIT\r\n"), Step::Close(_)));
    }

    #[test]
    fn sizes_over_the_limit_are_552_at_mail_and_at_the_end_of_data() {
        let mut session = ready();
        assert_eq!(code(session.command(b"MAIL FROM:<a@x> SIZE=101\r\n")), 552);
        assert_eq!(code(session.command(b"MAIL FROM:<a@x> SIZE=100\r\n")), 250);
        session.command(b"RCPT TO:<b@x>\r\n");
        session.command(b"DATA\r\n");
        assert_eq!(session.message(vec![b'x'; 101], false).unwrap_err().code(), 552);
        session.command(b"MAIL FROM:<a@x>\r\n");
        session.command(b"RCPT TO:<b@x>\r\n");
        session.command(b"DATA\r\n");
        assert_eq!(session.message(Vec::new(), true).unwrap_err().code(), 552);
    }

    #[test]
    fn a_required_or_malformed_key_is_refused_permanently_saying_why() {
        let mut session = Session::new(Policy { require_key: true, ..policy() }, true);
        session.command(b"EHLO c\r\n");
        session.command(plain("alice", "secret").as_bytes());
        let mut send = |message: &[u8]| {
            session.command(b"MAIL FROM:<a@x>\r\n");
            session.command(b"RCPT TO:<b@x>\r\n");
            session.command(b"DATA\r\n");
            session.message(message.to_vec(), false)
        };
        let refused = send(b"Subject: x\r\n\r\nhi\r\n").unwrap_err();
        assert_eq!(refused.0, "550 5.7.1 a Idempotency-Key header is required on this listener\r\n");
        let refused = send(b"Idempotency-Key: a b\r\n\r\nhi\r\n").unwrap_err();
        assert!(refused.0.starts_with("550 5.6.0 Idempotency-Key: the key must be"), "{refused:?}");
        assert!(send(b"Idempotency-Key: ab\r\n\r\nhi\r\n").is_ok());
    }

    #[test]
    fn unauthenticated_submission_only_where_allowed() {
        let open = Policy { allow_unauthenticated: true, users: Vec::new(), loopback: true, ..policy() };
        let mut session = Session::new(open, false);
        let text = reply(session.command(b"EHLO c\r\n")).0;
        assert!(!text.contains("AUTH"), "{text}");
        assert_eq!(code(session.command(b"AUTH PLAIN AGFsaWNlAHNlY3JldA==\r\n")), 502);
        assert_eq!(code(session.command(b"MAIL FROM:<a@x>\r\n")), 250);
    }

    #[test]
    fn a_misbehaving_client_is_disconnected_after_too_many_errors_or_commands() {
        let mut session = ready();
        for _ in 0..MAX_ERRORS - 1 {
            assert_eq!(code(session.command(b"BOGUS\r\n")), 500);
        }
        assert!(matches!(session.command(b"BOGUS\r\n"), Step::Close(r) if r.code() == 421));

        let mut session = ready();
        for _ in 2..MAX_COMMANDS {
            assert_eq!(code(session.command(b"NOOP\r\n")), 250);
        }
        assert!(matches!(session.command(b"NOOP\r\n"), Step::Close(r) if r.code() == 421));
    }

    #[test]
    fn too_many_recipients_are_refused_temporarily() {
        let mut session = ready();
        session.command(b"MAIL FROM:<a@x>\r\n");
        for i in 0..MAX_RECIPIENTS {
            assert_eq!(code(session.command(format!("RCPT TO:<r{i}@x>\r\n").as_bytes())), 250);
        }
        assert_eq!(code(session.command(b"RCPT TO:<one-more@x>\r\n")), 452);
    }

    #[test]
    fn each_outcome_has_its_answer() {
        let result = json!({"queue_id": "Q1"});
        assert_eq!(answer(&Outcome::Applied { result: result.clone() }).0, "250 2.0.0 OK queued as Q1\r\n");
        assert_eq!(
            answer(&Outcome::Duplicate { result }).0,
            "250 2.0.0 OK already queued as Q1 (repeated submission)\r\n"
        );
        let conflict = answer(&Outcome::Conflict).0;
        assert!(conflict.starts_with("550 5.7.0 idempotency key already used for another message"), "{conflict}");
        assert_eq!(answer(&Outcome::Failed { cause: FailureCause::Unavailable }).code(), 451);
        assert!(answer(&Outcome::Failed { cause: FailureCause::Store }).0.starts_with("451 4.3.0 "));
    }
}
