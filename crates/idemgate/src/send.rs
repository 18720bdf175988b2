//! `idemgate send`: one operation, retried safely from the command line; or, with
//! `--repeat`, many operations at once as a load generator. With an `smtp://` or
//! `smtps://` URL the operation is a mail submission whose key travels in a message header
//! ([`idemgate_client::MailClient`]).
//!
//! Exit codes: 0 when the (every) operation got a 2xx (for mail a `250`), [`EXIT_REJECTED`]
//! when one was refused with a final answer (a 4xx: retrying cannot help; for mail a `5xx`,
//! a failed TLS handshake, or a server without the STARTTLS or AUTH asked for),
//! [`EXIT_GAVE_UP`] when the retries ran out (the message on stderr then says why, when no
//! answer came).

use std::{collections::BTreeMap, sync::Arc, time::Instant};

use idemgate_client::{Client, Final, MailSent, NoAnswer, Request, SendError, Sent, WebhookSigner};
use idemgate_core::{scheme, secret::SecretError};

/// A final non-2xx answer.
pub const EXIT_REJECTED: u8 = 3;
/// Every attempt failed transiently.
pub const EXIT_GAVE_UP: u8 = 4;

/// Why a send could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendSetupError {
    /// The scheme is unknown or cannot sign.
    #[error("{0}")]
    Scheme(String),
    /// The secret does not fit the scheme (never echoed).
    #[error("the secret is not valid for {scheme}: {reason}")]
    Secret {
        /// The scheme.
        scheme: String,
        /// Why, without the secret.
        reason: String,
    },
    /// A `-H` argument is not `Name: value`.
    #[error("header {0:?} is not `Name: value`")]
    Header(String),
}

/// The signer for the registry's scheme `scheme_name` with the secret text `secret`,
/// decoded as the scheme's verifier decodes it.
pub fn signer(scheme_name: &str, secret: &str) -> Result<WebhookSigner, SendSetupError> {
    let scheme = scheme::lookup(scheme_name).map_err(|err| SendSetupError::Scheme(err.to_string()))?;
    let invalid = |err: SecretError| SendSetupError::Secret { scheme: scheme_name.to_owned(), reason: err.to_string() };
    let key = scheme.decode_secret(secret).map_err(invalid)?;
    if !scheme.secret_signs() {
        return Err(SendSetupError::Scheme(format!(
            "{scheme_name} deliveries cannot be signed by send (it needs a private key)"
        )));
    }
    WebhookSigner::new(scheme, key).map_err(invalid)
}

/// Parses `-H 'Name: value'`.
pub fn header(text: &str) -> Result<(String, String), SendSetupError> {
    let (name, value) = text.split_once(':').ok_or_else(|| SendSetupError::Header(text.to_owned()))?;
    Ok((name.trim().to_owned(), value.trim().to_owned()))
}

/// The exit code for how an operation ended.
#[must_use]
pub fn exit_code(outcome: Final) -> u8 {
    match outcome {
        Final::Succeeded => 0,
        Final::Rejected => EXIT_REJECTED,
        Final::GaveUp => EXIT_GAVE_UP,
    }
}

/// One line per attempt, for `--verbose`.
#[must_use]
pub fn describe_attempts(sent: &Sent) -> String {
    let mut lines = String::new();
    for (n, attempt) in sent.attempts.iter().enumerate() {
        let what = match (&attempt.status, &attempt.error) {
            (Some(status), _) => format!("status {status}"),
            (None, Some(error)) => error.to_string(),
            (None, None) => "no answer".to_owned(),
        };
        let next = attempt.waited.map_or(String::new(), |w| format!("; retrying in {:.1} s", w.as_secs_f64()));
        lines.push_str(&format!("attempt {}: {what}{next}\n", n + 1));
    }
    if let Some(key) = &sent.idempotency_key {
        lines.push_str(&format!("idempotency-key: {key}\n"));
    }
    lines
}

/// What happened to an operation whose last attempt got no answer, for `url` (`None`
/// when an answer came): `cannot connect to http://127.0.0.1:1/x: connection refused
/// (2 attempts)`.
#[must_use]
pub fn no_answer(url: &str, sent: &Sent) -> Option<String> {
    let last = sent.attempts.last()?;
    let what = match last.error.as_ref()? {
        NoAnswer::Connect(cause) => format!("cannot connect to {url}: {cause}"),
        NoAnswer::TimedOut => format!("no answer from {url} before the timeout"),
        NoAnswer::Lost(cause) => format!("the connection to {url} broke before an answer: {cause}"),
        other => format!("no answer from {url}: {other}"),
    };
    Some(match sent.attempts.len() {
        1 => what,
        n => format!("{what} ({n} attempts)"),
    })
}

/// The outcome's name in reports.
fn outcome_name(outcome: Final) -> &'static str {
    match outcome {
        Final::Succeeded => "succeeded",
        Final::Rejected => "rejected",
        Final::GaveUp => "gave_up",
    }
}

/// One operation as `send --json` prints it.
#[derive(Debug, serde::Serialize)]
pub struct SentReport {
    /// `succeeded`, `rejected` or `gave_up`.
    pub outcome: &'static str,
    /// The last answer's status, if one came.
    pub status: Option<u16>,
    /// Why the last attempt got no answer, if none came.
    pub error: Option<String>,
    /// Attempts made.
    pub attempts: usize,
    /// The key every attempt carried.
    pub idempotency_key: Option<String>,
    /// The last answer's body, as text (invalid UTF-8 replaced).
    pub body: String,
}

impl From<&Sent> for SentReport {
    fn from(sent: &Sent) -> Self {
        let last_error = sent.attempts.last().and_then(|attempt| attempt.error.as_ref());
        Self {
            outcome: outcome_name(sent.outcome),
            status: (sent.status != 0).then_some(sent.status),
            error: last_error.map(ToString::to_string),
            attempts: sent.attempts.len(),
            idempotency_key: sent.idempotency_key.clone(),
            body: String::from_utf8_lossy(&sent.body).into_owned(),
        }
    }
}

/// Operations by how they ended.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Outcomes {
    /// Got a 2xx.
    pub succeeded: usize,
    /// Got a final refusal.
    pub rejected: usize,
    /// Ran out of attempts.
    pub gave_up: usize,
}

/// What `send --repeat` did: outcome and final answer counts over all operations.
#[derive(Debug, Default, serde::Serialize)]
pub struct RepeatReport {
    /// Operations sent.
    pub operations: usize,
    /// Wall time of the whole run.
    pub seconds: f64,
    /// Operations per second.
    pub per_second: f64,
    /// Operations by outcome.
    pub outcomes: Outcomes,
    /// Operations by their last answer's status.
    pub statuses: BTreeMap<u16, usize>,
    /// Operations whose last attempt got no answer, by why (`cannot connect: connection
    /// refused`).
    pub no_answer: BTreeMap<String, usize>,
}

impl RepeatReport {
    fn count(&mut self, sent: &Sent) {
        let outcome = match sent.outcome {
            Final::Succeeded => &mut self.outcomes.succeeded,
            Final::Rejected => &mut self.outcomes.rejected,
            Final::GaveUp => &mut self.outcomes.gave_up,
        };
        *outcome += 1;
        match sent.attempts.last().and_then(|attempt| attempt.error.as_ref()) {
            Some(error) if sent.status == 0 => *self.no_answer.entry(error.to_string()).or_insert(0) += 1,
            _ => *self.statuses.entry(sent.status).or_insert(0) += 1,
        }
    }

    /// The exit code: the worst outcome's.
    #[must_use]
    pub fn exit_code(&self) -> u8 {
        if self.outcomes.gave_up > 0 {
            EXIT_GAVE_UP
        } else if self.outcomes.rejected > 0 {
            EXIT_REJECTED
        } else {
            0
        }
    }

    /// The report as text: a headline, then outcome → operations and answer → operations.
    #[must_use]
    pub fn table(&self) -> String {
        let outcomes = [
            ("succeeded".to_owned(), self.outcomes.succeeded),
            ("rejected".to_owned(), self.outcomes.rejected),
            ("gave up".to_owned(), self.outcomes.gave_up),
        ];
        let answers: Vec<(String, usize)> = self
            .statuses
            .iter()
            .map(|(status, n)| (status.to_string(), *n))
            .chain(self.no_answer.iter().map(|(why, n)| (format!("none: {why}"), *n)))
            .collect();
        let width = outcomes.iter().chain(&answers).map(|(label, _)| label.len()).max().unwrap_or(0).max(7);
        let mut text = format!(
            "{} operations in {:.2} s ({:.0}/s)\n\n{:<width$}  operations\n",
            self.operations, self.seconds, self.per_second, "outcome"
        );
        for (label, n) in &outcomes {
            text.push_str(&format!("{label:<width$}  {n:>10}\n"));
        }
        text.push_str(&format!("\n{:<width$}  operations\n", "status"));
        for (label, n) in &answers {
            text.push_str(&format!("{label:<width$}  {n:>10}\n"));
        }
        text
    }
}

/// Sends `count` operations built by `make` over `concurrency` tasks and counts how they
/// ended. A request that cannot be built at all stops the run with its error.
pub async fn repeat(
    client: &Client,
    make: Arc<dyn Fn(usize) -> Request + Send + Sync>,
    count: usize,
    concurrency: usize,
) -> Result<RepeatReport, SendError> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (client, make, next) = (client.clone(), Arc::clone(&make), Arc::clone(&next));
            tokio::spawn(async move {
                let mut results = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= count {
                        return Ok(results);
                    }
                    results.push(client.send(make(i)).await?);
                }
            })
        })
        .collect();
    let mut report = RepeatReport::default();
    for task in tasks {
        let sent = match task.await {
            Ok(sent) => sent?,
            Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
        };
        for sent in sent {
            report.count(&sent);
        }
    }
    report.operations = count;
    report.seconds = started.elapsed().as_secs_f64();
    report.per_second = count as f64 / report.seconds.max(f64::EPSILON);
    Ok(report)
}

/// One line per mail attempt, for `--verbose` with an `smtp://` URL.
#[must_use]
pub fn describe_mail_attempts(sent: &MailSent) -> String {
    let mut lines = String::new();
    let last = sent.attempts.len();
    for (n, attempt) in sent.attempts.iter().enumerate() {
        let what = match (&attempt.reply, &attempt.error) {
            (Some(reply), _) => reply.to_string(),
            (None, Some(error)) => error.to_string(),
            (None, None) if n + 1 == last => sent.error.clone().unwrap_or_else(|| "no reply".to_owned()),
            (None, None) => "no reply".to_owned(),
        };
        let next = attempt.waited.map_or(String::new(), |w| format!("; retrying in {:.1} s", w.as_secs_f64()));
        lines.push_str(&format!("attempt {}: {what}{next}\n", n + 1));
    }
    lines.push_str(&format!("idempotency-key: {}\n", sent.idempotency_key));
    lines
}

/// What went wrong for a mail submission to `url` that did not succeed (`None` when it
/// did): why, and, when the retries ran out, how to go on with the same operation.
#[must_use]
pub fn mail_failure(url: &str, sent: &MailSent) -> Option<String> {
    if sent.outcome == Final::Succeeded {
        return None;
    }
    let why = match (&sent.reply, sent.attempts.last().and_then(|a| a.error.as_ref())) {
        (Some(reply), _) if sent.outcome == Final::Rejected => format!("{url} refused the message: {reply}"),
        (Some(reply), _) => format!("{url} answered {reply}"),
        (None, Some(NoAnswer::Connect(cause))) => format!("cannot connect to {url}: {cause}"),
        (None, Some(NoAnswer::TimedOut)) => format!("no reply from {url} before the timeout"),
        (None, Some(NoAnswer::Lost(cause))) => format!("the connection to {url} broke before a reply: {cause}"),
        (None, _) => format!("{url}: {}", sent.error.as_deref().unwrap_or("no reply")),
    };
    let attempts = match sent.attempts.len() {
        1 => String::new(),
        n => format!(" ({n} attempts)"),
    };
    Some(match sent.outcome {
        Final::GaveUp => format!(
            "{why}{attempts}; to go on with the same message, send again with --idempotency-key {}",
            sent.idempotency_key
        ),
        _ => format!("{why}{attempts}"),
    })
}

/// One mail submission as `send --json` prints it.
#[derive(Debug, serde::Serialize)]
pub struct MailSentReport {
    /// `succeeded`, `rejected` or `gave_up`.
    pub outcome: &'static str,
    /// The last reply's code, if one came.
    pub code: Option<u16>,
    /// The last reply's text, if one came.
    pub reply: Option<String>,
    /// Why the last attempt ended without a reply, if it did.
    pub error: Option<String>,
    /// Attempts made.
    pub attempts: usize,
    /// The key every attempt carried in the message's key header.
    pub idempotency_key: String,
}

impl From<&MailSent> for MailSentReport {
    fn from(sent: &MailSent) -> Self {
        Self {
            outcome: outcome_name(sent.outcome),
            code: sent.reply.as_ref().map(|r| r.code),
            reply: sent.reply.as_ref().map(|r| r.text.clone()),
            error: sent.error.clone(),
            attempts: sent.attempts.len(),
            idempotency_key: sent.idempotency_key.clone(),
        }
    }
}
