//! `idemgate send`: one HTTP request retried safely, signed as a webhook when a scheme is
//! given (or a source of the configuration, signing as that source's provider signs), and
//! what it prints of the answer; an `smtp://` or `smtps://` URL is a mail
//! submission ([`mail`]), `--repeat` many requests at once ([`repeat`]), `--api` a message
//! published to a Svix-compatible API ([`publish`]).
//!
//! Exit codes: 0 when the (every) operation got a 2xx (for mail a `250`), [`EXIT_REJECTED`]
//! when one was refused with a final answer (a 4xx: retrying cannot help, though a `409`
//! for the key still in flight is retried; for mail a `5xx`,
//! a failed TLS handshake, or a server without the STARTTLS or AUTH asked for),
//! [`EXIT_GAVE_UP`] when the retries ran out (the message on stderr then says why, when no
//! answer came).

use std::{path::Path, process::ExitCode, sync::Arc};

use anyhow::{Context, anyhow};
use idemgate::config;
use idemgate_client::{Client, ClientOptions, Final, NoAnswer, Request, Sent, WebhookSigner};
use idemgate_core::{scheme, secret::SecretError};

use super::{BadConfig, print_line, shown};
use crate::cli::{SendArgs, StartTlsArg};

mod mail;
mod publish;
mod repeat;

/// A final non-2xx answer.
pub(super) const EXIT_REJECTED: u8 = 3;
/// Every attempt failed transiently.
pub(super) const EXIT_GAVE_UP: u8 = 4;

/// Why a send could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(super) enum SendSetupError {
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
pub(super) fn signer(scheme_name: &str, secret: &str) -> Result<WebhookSigner, SendSetupError> {
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

/// The signer of the configuration's source `name` (at `config`): its scheme as configured,
/// with `secret` (decoded as the source decodes its own) or else its first secret.
fn source_signer(config: &Path, name: &str, secret: Option<&str>) -> anyhow::Result<WebhookSigner> {
    let (found, _) = config::load_source(config, std::env::vars(), name).map_err(BadConfig)?;
    let source = found.ok_or_else(|| anyhow!("no source {name:?} in the configuration"))?;
    let scheme = source.scheme;
    let what = format!("source {name} ({})", scheme.name());
    if !scheme.secret_signs() {
        return Err(SendSetupError::Scheme(format!(
            "{what} deliveries cannot be signed by send (it needs a private key)"
        ))
        .into());
    }
    let invalid = |err: SecretError| SendSetupError::Secret { scheme: what.clone(), reason: err.to_string() };
    let key = match secret {
        Some(text) => scheme.decode_secret(text).map_err(invalid)?,
        None => source.secrets.iter().next().cloned().ok_or_else(|| anyhow!("{what} has no active secret"))?,
    };
    Ok(WebhookSigner::configured(scheme, key).map_err(invalid)?)
}

/// Parses `-H 'Name: value'`.
fn header(text: &str) -> Result<(String, String), SendSetupError> {
    let (name, value) = text.split_once(':').ok_or_else(|| SendSetupError::Header(text.to_owned()))?;
    Ok((name.trim().to_owned(), value.trim().to_owned()))
}

/// The exit code for how an operation ended.
#[must_use]
fn exit_code(outcome: Final) -> u8 {
    match outcome {
        Final::Succeeded => 0,
        Final::Rejected => EXIT_REJECTED,
        Final::GaveUp => EXIT_GAVE_UP,
    }
}

/// Sends what `args` say and prints the answer; the exit code says how it ended.
/// `config` is the configuration file, read for `--source` alone.
pub(super) async fn send(args: SendArgs, config: &Path) -> anyhow::Result<ExitCode> {
    let Some(url) = args.url.clone() else {
        return publish::send(args).await;
    };
    if is_mail(&url) {
        return mail::send(args, url).await;
    }
    if let Some(flag) = mail_flag(&args) {
        return Err(anyhow!("{flag} is for mail: give an smtp:// or smtps:// URL"));
    }
    let client = Client::new(ClientOptions {
        max_attempts: args.max_attempts.max(1),
        timeout: args.timeout,
        ..Default::default()
    })?;
    let make = request_maker(&args, &url, config)?;
    if args.repeat > 1 {
        let report = repeat::repeat(&client, make, args.repeat, args.concurrency).await?;
        if args.json {
            print_line(&serde_json::to_string(&report)?)?;
        } else {
            print_line(report.table().trim_end())?;
        }
        return Ok(ExitCode::from(report.exit_code()));
    }
    let sent = client.send(make(0)).await?;
    if args.verbose {
        eprint!("{}", describe_attempts(&sent));
    }
    let no_answer = no_answer(&url, &sent);
    if let Some(what) = &no_answer {
        eprintln!("idemgate: {what}");
    }
    if args.json {
        print_line(&serde_json::to_string(&SentReport::from(&sent))?)?;
    } else if no_answer.is_none() {
        print_line(&format!("{}\n{}", sent.status, String::from_utf8_lossy(&sent.body)))?;
    }
    Ok(ExitCode::from(exit_code(sent.outcome)))
}

/// The first mail-only flag given, if any.
fn mail_flag(args: &SendArgs) -> Option<&'static str> {
    let mail_only = [
        ("--from", args.from.is_some()),
        ("--to", !args.to.is_empty()),
        ("--user", args.user.is_some()),
        ("--password", args.password.is_some()),
        ("--key-header", args.key_header != idemgate_client::DEFAULT_KEY_HEADER),
        ("--starttls", args.starttls != StartTlsArg::Required),
        ("--ca-file", args.ca_file.is_some()),
    ];
    mail_only.iter().find(|(_, given)| *given).map(|(flag, _)| *flag)
}

/// The `i`th operation's request: method, URL, headers and body as given, signed with a
/// generated event id unless `--event-id` names one.
fn request_maker(
    args: &SendArgs,
    url: &str,
    config: &Path,
) -> anyhow::Result<Arc<dyn Fn(usize) -> Request + Send + Sync>> {
    let body = body(args)?;
    let method = http::Method::from_bytes(args.method.to_ascii_uppercase().as_bytes())
        .map_err(|_| anyhow!("{:?} is not an HTTP method", args.method))?;
    let headers = args.headers.iter().map(|h| header(h)).collect::<Result<Vec<_>, _>>()?;
    let secret = match &args.secret {
        Some(reference) => Some(config::secrets::resolve("--secret", reference, Path::new("."), &mut Vec::new())?),
        None => None,
    };
    let signer = match (&args.scheme, &args.source, &secret) {
        (Some(scheme), _, Some(text)) => Some(signer(scheme, text)?),
        (None, Some(source), text) => Some(source_signer(config, source, text.as_deref())?),
        _ => None,
    };
    let (url, key, event_id) = (url.to_owned(), args.idempotency_key.clone(), args.event_id.clone());
    Ok(Arc::new(move |i: usize| {
        let mut request = Request::new(method.clone(), url.clone()).body(body.clone());
        if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-type")) && !body.is_empty() {
            request = request.header("content-type", "application/json");
        }
        for (name, value) in &headers {
            request = request.header(name.clone(), value.clone());
        }
        if let Some(key) = &key {
            request = request.idempotency_key(key.clone());
        }
        if let Some(signer) = &signer {
            let identity =
                event_id.clone().unwrap_or_else(|| format!("evt_{:016x}{:04x}", fastrand::u64(..), i % 0xffff));
            request = request.webhook(signer.clone(), identity);
        }
        request
    }))
}

/// `--data`, `--data-file` (`-` for standard input), or nothing.
fn body(args: &SendArgs) -> anyhow::Result<Vec<u8>> {
    Ok(match (&args.data, &args.data_file) {
        (Some(data), _) => data.clone().into_bytes(),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut body = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut body).context("cannot read standard input")?;
            body
        }
        (None, Some(path)) => std::fs::read(path).with_context(|| format!("cannot read {}", shown(path)))?,
        (None, None) => Vec::new(),
    })
}

fn is_mail(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("smtp://") || lower.starts_with("smtps://")
}

/// One line per attempt, for `--verbose`.
#[must_use]
fn describe_attempts(sent: &Sent) -> String {
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
fn no_answer(url: &str, sent: &Sent) -> Option<String> {
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
struct SentReport {
    /// `succeeded`, `rejected` or `gave_up`.
    outcome: &'static str,
    /// The last answer's status, if one came.
    status: Option<u16>,
    /// Why the last attempt got no answer, if none came.
    error: Option<String>,
    /// Attempts made.
    attempts: usize,
    /// The key every attempt carried.
    idempotency_key: Option<String>,
    /// The last answer's body, as text (invalid UTF-8 replaced).
    body: String,
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
