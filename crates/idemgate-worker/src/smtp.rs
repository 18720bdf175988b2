//! `smtp` destinations: a message accepted by an SMTP listener relayed to a smarthost with
//! its stored envelope, the key header removed (unless the destination keeps it), its
//! `Message-ID` kept, or one derived from the event's outgoing id (its queue id) added, so
//! that every attempt of one job carries the same id.
//!
//! Built on lettre's connection API (tokio, rustls with ring) rather than its transport, so
//! that each `RCPT TO` has its own answer: a recipient the upstream refuses permanently is
//! recorded with the attempt and the others still get the message; a temporary refusal of
//! any recipient aborts the transaction before `DATA` (nothing was sent) and the job is
//! retried whole, so no recipient gets the message twice from one job.
//!
//! Outcomes: `250` after the data → [`AttemptResult::Accepted`]; a `4xx` →
//! `Refused { permanent: false }` (the schedule); a `5xx` → `Refused { permanent: true }`
//! (dead, with the upstream's reply); no connection or a broken one → `Connection`; past
//! the timeout → `Timeout`. Delivery is at least once: a connection lost after the data
//! but before the upstream's `250` is retried, with the same `Message-ID`.

use std::{str::FromStr, time::Duration};

use idemgate_core::{
    Secret, UnixTime,
    mail::{self, Envelope},
    retry::AttemptResult,
};
use idemgate_store::jobs::{ClaimedJob, MAX_ATTEMPT_TEXT};
use lettre::{
    Address,
    transport::smtp::{
        Error as SmtpError,
        authentication::{Credentials, Mechanism},
        client::{AsyncSmtpConnection, TlsParameters},
        commands::{Data, Mail, Rcpt},
        extension::{ClientId, MailBodyParameter, MailParameter},
    },
};

use crate::{AttemptOutcome, Deliver, deliver::BoxFuture};

/// When the connection to the upstream is encrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encryption {
    /// TLS from the first byte (`smtps://`).
    Implicit,
    /// `STARTTLS`, and no relaying when the upstream does not offer it.
    StartTlsRequired,
    /// `STARTTLS` when the upstream offers it, plain otherwise.
    StartTlsOpportunistic,
    /// Never (a relay on the same host or network).
    Never,
}

/// One configured `smtp` destination.
#[derive(Clone)]
pub struct SmtpDestination {
    host: String,
    port: u16,
    encryption: Encryption,
    credentials: Option<(String, Secret)>,
    /// Relay the key header too.
    keep_key_header: bool,
    hello: ClientId,
    timeout: Duration,
}

impl std::fmt::Debug for SmtpDestination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpDestination")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("encryption", &self.encryption)
            .field("username", &self.credentials.as_ref().map(|(user, _)| user))
            .finish_non_exhaustive()
    }
}

impl SmtpDestination {
    /// A smarthost at `host:port`; the listener's key header (stored with the event) is
    /// removed unless `keep_key_header`; `timeout` bounds each attempt as a whole.
    #[must_use]
    pub fn new(
        host: impl Into<String>,
        port: u16,
        encryption: Encryption,
        credentials: Option<(String, Secret)>,
        keep_key_header: bool,
        timeout: Duration,
    ) -> Self {
        Self {
            host: host.into(),
            port,
            encryption,
            credentials,
            keep_key_header,
            hello: ClientId::Domain("idemgate".to_owned()),
            timeout,
        }
    }

    async fn relay(&self, envelope: &Envelope, message: &[u8]) -> AttemptOutcome {
        let tls = || TlsParameters::new_rustls(self.host.clone());
        let implicit = match self.encryption {
            Encryption::Implicit => match tls() {
                Ok(params) => Some(params),
                Err(err) => return failure(&err, "tls set-up"),
            },
            _ => None,
        };
        let address = (self.host.as_str(), self.port);
        let connected = AsyncSmtpConnection::connect_tokio1(address, Some(self.timeout), &self.hello, implicit, None);
        let mut connection = match connected.await {
            Ok(connection) => connection,
            Err(err) => return failure(&err, "connect"),
        };
        let starttls = match self.encryption {
            Encryption::StartTlsRequired => true,
            Encryption::StartTlsOpportunistic => connection.can_starttls(),
            Encryption::Implicit | Encryption::Never => false,
        };
        if starttls {
            if !connection.can_starttls() {
                connection.abort().await;
                return refused(false, "the upstream does not offer STARTTLS, which this destination requires");
            }
            let params = match tls() {
                Ok(params) => params,
                Err(err) => return failure(&err, "tls set-up"),
            };
            if let Err(err) = connection.starttls(params, &self.hello).await {
                return failure(&err, "starttls");
            }
        }
        if let Some((user, password)) = &self.credentials {
            let password = String::from_utf8_lossy(password.expose()).into_owned();
            let credentials = Credentials::new(user.clone(), password);
            if let Err(err) = connection.auth(&[Mechanism::Plain, Mechanism::Login], &credentials).await {
                connection.abort().await;
                return failure(&err, "auth");
            }
        }
        let outcome = transaction(&mut connection, envelope, message).await;
        if outcome.result == AttemptResult::Accepted {
            let _ = connection.quit().await;
        } else {
            connection.abort().await;
        }
        outcome
    }
}

/// `MAIL`, one `RCPT` per recipient, `DATA` and the message, on an open connection.
async fn transaction(connection: &mut AsyncSmtpConnection, envelope: &Envelope, message: &[u8]) -> AttemptOutcome {
    let from = if envelope.mail_from.is_empty() {
        None
    } else {
        match Address::from_str(&envelope.mail_from) {
            Ok(address) => Some(address),
            Err(_) => return refused(true, "the stored sender is not an address lettre can send"),
        }
    };
    let mut parameters = Vec::new();
    if !message.is_ascii() {
        parameters.push(MailParameter::Body(MailBodyParameter::EightBitMime));
    }
    if let Err(err) = connection.command(Mail::new(from, parameters)).await {
        return failure(&err, "MAIL FROM");
    }
    let mut accepted = 0;
    let mut refusals = Vec::new();
    for to in &envelope.rcpt_to {
        let Ok(address) = Address::from_str(to) else {
            refusals.push(format!("{to}: not an address"));
            continue;
        };
        match connection.command(Rcpt::new(address, Vec::new())).await {
            Ok(_) => accepted += 1,
            Err(err) if err.is_permanent() => refusals.push(format!("{to}: {err}")),
            // A temporary refusal: nothing is sent now, the whole job is retried.
            Err(err) => return failure(&err, &format!("RCPT TO {to}")),
        }
    }
    let refused_text = (!refusals.is_empty()).then(|| format!("recipients refused: {}", refusals.join("; ")));
    if accepted == 0 {
        return refused(true, refused_text.as_deref().unwrap_or("no recipient"));
    }
    if let Err(err) = connection.command(Data).await {
        return failure(&err, "DATA");
    }
    // lettre ends the data with CRLF "." CRLF itself: the message's own last line end is
    // that CRLF, so the upstream receives the bytes as they were submitted.
    let body = message.strip_suffix(b"\r\n").unwrap_or(message);
    match connection.message(body).await {
        Ok(response) => {
            let reply = format!("{} {}", response.code(), response.message().collect::<Vec<_>>().join(" "));
            AttemptOutcome {
                result: AttemptResult::Accepted,
                error: refused_text.map(|text| bounded(&text)),
                response_prefix: Some(bounded(&reply)),
            }
        }
        Err(err) => failure(&err, "end of data"),
    }
}

fn bounded(text: &str) -> String {
    text.chars().take(MAX_ATTEMPT_TEXT).collect()
}

fn refused(permanent: bool, text: &str) -> AttemptOutcome {
    AttemptOutcome { result: AttemptResult::Refused { permanent }, error: Some(bounded(text)), response_prefix: None }
}

/// What a lettre error at `stage` makes of the attempt; its text is the upstream's reply,
/// never a credential (lettre does not echo what it sent).
fn failure(err: &SmtpError, stage: &str) -> AttemptOutcome {
    let text = bounded(&format!("{stage}: {err}"));
    let result = if err.is_permanent() {
        AttemptResult::Refused { permanent: true }
    } else if err.is_transient() {
        AttemptResult::Refused { permanent: false }
    } else if err.is_timeout() {
        AttemptResult::Timeout
    } else {
        AttemptResult::Connection
    };
    AttemptOutcome { result, error: Some(text), response_prefix: None }
}

impl Deliver for SmtpDestination {
    fn deliver<'a>(&'a self, job: &'a ClaimedJob, _now: UnixTime) -> BoxFuture<'a, AttemptOutcome> {
        Box::pin(async move {
            let Some(envelope) = Envelope::from_headers(&job.headers) else {
                return refused(true, "the event has no stored envelope: it did not come from an SMTP listener");
            };
            let fallback_id = format!("{}@idemgate", job.outgoing_id);
            let key_header =
                job.headers.iter().find(|(name, _)| name == mail::KEY_HEADER_HEADER).map(|(_, v)| v.as_str());
            let strip = if self.keep_key_header { None } else { key_header };
            let message = mail::relayed(&job.body, strip, &fallback_id);
            match tokio::time::timeout(self.timeout, self.relay(&envelope, &message)).await {
                Ok(outcome) => outcome,
                Err(_) => AttemptOutcome {
                    result: AttemptResult::Timeout,
                    error: Some("timed out".to_owned()),
                    response_prefix: None,
                },
            }
        })
    }
}
