//! `idemgate send smtp://…` (or `smtps://`): one mail submission whose key is written into
//! the message once and kept on every retry ([`idemgate_client::MailClient`]), and what it
//! prints of the reply.

use std::{path::Path, process::ExitCode};

use anyhow::{Context, anyhow};
use idemgate::config;
use idemgate_client::{ClientOptions, Final, MailClient, MailCredentials, MailRequest, MailSent, NoAnswer, StartTls};

use super::{body, exit_code, outcome_name};
use crate::{
    cli::{SendArgs, StartTlsArg},
    commands::{print_line, shown},
};

/// `send smtp://…`: the message of `--data-file` to `--to` from `--from`, its key written
/// into `--key-header` once (or the message's own used) and kept on every retry.
pub(super) async fn send(args: SendArgs, url: String) -> anyhow::Result<ExitCode> {
    let http_only = [
        ("--method", !args.method.eq_ignore_ascii_case("POST")),
        ("--header", !args.headers.is_empty()),
        ("--data", args.data.is_some()),
        ("--scheme", args.scheme.is_some()),
        ("--event-id", args.event_id.is_some()),
        ("--repeat", args.repeat > 1),
    ];
    if let Some((flag, _)) = http_only.iter().find(|(_, given)| *given) {
        return Err(anyhow!("{flag} is for HTTP sends, not for mail to {url}"));
    }
    let from = args.from.clone().ok_or_else(|| anyhow!("mail needs --from, the envelope sender"))?;
    if args.to.is_empty() {
        return Err(anyhow!("mail needs at least one --to, an envelope recipient"));
    }
    if args.data_file.is_none() {
        return Err(anyhow!("mail needs --data-file, the message (RFC 5322 text; `-` for standard input)"));
    }
    let message = body(&args)?;
    let mut request = MailRequest::new(url.clone(), from, args.to.clone(), message)
        .key_header(args.key_header.clone())
        .starttls(match args.starttls {
            StartTlsArg::Required => StartTls::Required,
            StartTlsArg::Opportunistic => StartTls::Opportunistic,
            StartTlsArg::Never => StartTls::Never,
        });
    if let Some(key) = &args.idempotency_key {
        request = request.idempotency_key(key.clone());
    }
    if let (Some(user), Some(reference)) = (&args.user, &args.password) {
        if !reference.starts_with("env:") && !reference.starts_with("file:") {
            return Err(anyhow!("--password takes env:NAME or file:PATH (a literal would show in `ps`)"));
        }
        let password = config::secrets::resolve("--password", reference, Path::new("."), &mut Vec::new())?;
        request = request.credentials(MailCredentials::new(user.clone(), password));
    }
    if let Some(path) = &args.ca_file {
        let pem = std::fs::read(path).with_context(|| format!("cannot read --ca-file {}", shown(path)))?;
        request = request.ca_pem(pem);
    }
    let client = MailClient::new(&ClientOptions {
        max_attempts: args.max_attempts.max(1),
        timeout: args.timeout,
        ..Default::default()
    });
    let sent = client.send(request).await?;
    if args.verbose {
        eprint!("{}", describe_attempts(&sent));
    }
    let failure = failure(&url, &sent);
    if let Some(what) = &failure {
        eprintln!("idemgate: {what}");
    }
    if args.json {
        print_line(&serde_json::to_string(&MailSentReport::from(&sent))?)?;
    } else if let Some(reply) = &sent.reply {
        print_line(&reply.to_string())?;
    }
    Ok(ExitCode::from(exit_code(sent.outcome)))
}

/// One line per mail attempt, for `--verbose` with an `smtp://` URL.
fn describe_attempts(sent: &MailSent) -> String {
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
fn failure(url: &str, sent: &MailSent) -> Option<String> {
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
struct MailSentReport {
    /// `succeeded`, `rejected` or `gave_up`.
    outcome: &'static str,
    /// The last reply's code, if one came.
    code: Option<u16>,
    /// The last reply's text, if one came.
    reply: Option<String>,
    /// Why the last attempt ended without a reply, if it did.
    error: Option<String>,
    /// Attempts made.
    attempts: usize,
    /// The key every attempt carried in the message's key header.
    idempotency_key: String,
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
