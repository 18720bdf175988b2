//! `idemgate send --api URL --app APP --event-type T --token env:NAME -d '{…}'`: one message
//! published to a Svix-compatible API ([`idemgate_client::Client::publish`]) under one
//! `Idempotency-Key` (`--idempotency-key`, or one generated once) kept on every retry, and
//! what it prints: the message's id and whether the answer was a replay.

use std::{path::Path, process::ExitCode};

use anyhow::anyhow;
use idemgate::config;
use idemgate_client::{Client, ClientOptions, Publish, PublishError, Published, Sent};

use super::{EXIT_GAVE_UP, EXIT_REJECTED, body, describe_attempts, mail_flag, no_answer};
use crate::{cli::SendArgs, commands::print_line};

/// `send --api`: publishes the `--data`/`--data-file` payload and prints `<id> published`
/// or `<id> replayed` (`--json`: one object); a refusal or running out of attempts is said
/// on stderr with its exit code.
pub(super) async fn send(args: SendArgs) -> anyhow::Result<ExitCode> {
    let message = message(&args)?;
    let api = message.api_url.clone();
    let client = Client::new(ClientOptions {
        max_attempts: args.max_attempts.max(1),
        timeout: args.timeout,
        ..Default::default()
    })?;
    let result = client.publish(message).await;
    if let Some(sent) = result.as_ref().map_or_else(PublishError::sent, |published| Some(&published.sent))
        && args.verbose
    {
        eprint!("{}", describe_attempts(sent));
    }
    let report = PublishReport::of(&result, &api);
    if let Err(err) = &result {
        eprintln!("idemgate: {}", failure(&api, err));
    }
    if args.json {
        print_line(&serde_json::to_string(&report)?)?;
    } else if let Ok(published) = &result {
        let how = if published.replayed { "replayed" } else { "published" };
        print_line(&format!("{} {how}", published.message_id))?;
    }
    match result {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(PublishError::Refused { .. }) => Ok(ExitCode::from(EXIT_REJECTED)),
        Err(PublishError::GaveUp { .. }) => Ok(ExitCode::from(EXIT_GAVE_UP)),
        Err(PublishError::NoMessage { .. }) => Err(anyhow!("{api} accepted the message but its answer names none")),
        Err(err) => Err(err.into()),
    }
}

/// The message `args` describe; flags that do not apply to publishing are refused.
fn message(args: &SendArgs) -> anyhow::Result<Publish> {
    let http_only = [
        ("--method", !args.method.eq_ignore_ascii_case("POST")),
        ("--header", !args.headers.is_empty()),
        ("--scheme", args.scheme.is_some()),
        ("--repeat", args.repeat > 1),
    ];
    if let Some(flag) = http_only.iter().find(|(_, given)| *given).map(|(flag, _)| *flag).or_else(|| mail_flag(args)) {
        return Err(anyhow!("{flag} does not apply to publishing with --api"));
    }
    let (Some(api_url), Some(app), Some(event_type), Some(reference)) =
        (&args.api, &args.app, &args.event_type, &args.token)
    else {
        return Err(anyhow!("--api needs --app, --event-type and --token"));
    };
    if args.data.is_none() && args.data_file.is_none() {
        return Err(anyhow!("--api needs the payload, a JSON object: --data or --data-file"));
    }
    if !reference.starts_with("env:") && !reference.starts_with("file:") {
        return Err(anyhow!("--token takes env:NAME or file:PATH (a literal would show in `ps`)"));
    }
    let token = config::secrets::resolve("--token", reference, Path::new("."), &mut Vec::new())?;
    Ok(Publish {
        api_url: api_url.clone(),
        token,
        app: app.clone(),
        event_type: event_type.clone(),
        payload: body(args)?,
        event_id: args.event_id.clone(),
        channels: args.channels.clone(),
        idempotency_key: args.idempotency_key.clone(),
    })
}

/// What stderr says of a publish to `api` that did not succeed: the API's reason for a
/// refusal, why no answer came, or how to go on with the same operation.
fn failure(api: &str, err: &PublishError) -> String {
    match err {
        PublishError::Refused { reason, sent } => format!("{api} refused the message ({}): {reason}", sent.status),
        PublishError::GaveUp { sent } => {
            let why = no_answer(api, sent)
                .unwrap_or_else(|| format!("{api} answered {} ({} attempts)", sent.status, sent.attempts.len()));
            match &sent.idempotency_key {
                Some(key) => {
                    format!("{why}; to go on with the same operation, send again with --idempotency-key {key}")
                }
                None => why,
            }
        }
        other => other.to_string(),
    }
}

/// One publish as `send --api --json` prints it.
#[derive(Debug, Default, serde::Serialize)]
struct PublishReport {
    /// `succeeded`, `rejected`, `gave_up` or `failed`.
    outcome: &'static str,
    /// The message's id, when it was published.
    message_id: Option<String>,
    /// Whether the answer was the key's first answer given again.
    replayed: bool,
    /// The last answer's status, if one came.
    status: Option<u16>,
    /// Why it was not published, if it was not.
    error: Option<String>,
    /// Attempts made.
    attempts: usize,
    /// The key every attempt carried.
    idempotency_key: Option<String>,
}

impl PublishReport {
    fn of(result: &Result<Published, PublishError>, api: &str) -> Self {
        let sent = result.as_ref().map_or_else(PublishError::sent, |published| Some(&published.sent));
        let of_sent = |sent: &Sent| Self {
            status: (sent.status != 0).then_some(sent.status),
            attempts: sent.attempts.len(),
            idempotency_key: sent.idempotency_key.clone(),
            ..Self::default()
        };
        let mut report = sent.map(of_sent).unwrap_or_default();
        match result {
            Ok(published) => {
                report.outcome = "succeeded";
                report.message_id = Some(published.message_id.clone());
                report.replayed = published.replayed;
            }
            Err(err) => {
                report.outcome = match err {
                    PublishError::Refused { .. } => "rejected",
                    PublishError::GaveUp { .. } => "gave_up",
                    _ => "failed",
                };
                report.error = Some(match err {
                    PublishError::Refused { reason, .. } => reason.clone(),
                    PublishError::GaveUp { sent } => no_answer(api, sent).unwrap_or_else(|| err.to_string()),
                    other => other.to_string(),
                });
            }
        }
        report
    }
}
