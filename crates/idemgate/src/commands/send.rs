//! `idemgate send`: one request (or, with `--repeat`, many) retried safely, signed as a
//! webhook when a scheme is given; or, for an `smtp://`/`smtps://` URL, one mail
//! submission whose key is written into the message once and kept on every retry.

use std::{path::Path, process::ExitCode, sync::Arc};

use anyhow::{Context, anyhow};
use idemgate::{config, send};
use idemgate_client::{Client, ClientOptions, MailClient, MailCredentials, MailRequest, Request, StartTls};

use super::{print_line, shown};
use crate::cli::{SendArgs, StartTlsArg};

pub(super) async fn send(args: SendArgs) -> anyhow::Result<ExitCode> {
    if is_mail(&args.url) {
        return send_mail(args).await;
    }
    let mail_only = [
        ("--from", args.from.is_some()),
        ("--to", !args.to.is_empty()),
        ("--user", args.user.is_some()),
        ("--password", args.password.is_some()),
        ("--key-header", args.key_header != idemgate_client::DEFAULT_KEY_HEADER),
        ("--starttls", args.starttls != StartTlsArg::Required),
        ("--ca-file", args.ca_file.is_some()),
    ];
    if let Some((flag, _)) = mail_only.iter().find(|(_, given)| *given) {
        return Err(anyhow!("{flag} is for mail: give an smtp:// or smtps:// URL"));
    }
    let client = Client::new(ClientOptions {
        max_attempts: args.max_attempts.max(1),
        timeout: args.timeout,
        ..Default::default()
    })?;
    let make = request_maker(&args)?;
    if args.repeat > 1 {
        let report = send::repeat(&client, make, args.repeat, args.concurrency).await?;
        if args.json {
            print_line(&serde_json::to_string(&report)?)?;
        } else {
            print_line(report.table().trim_end())?;
        }
        return Ok(ExitCode::from(report.exit_code()));
    }
    let sent = client.send(make(0)).await?;
    if args.verbose {
        eprint!("{}", send::describe_attempts(&sent));
    }
    let no_answer = send::no_answer(&args.url, &sent);
    if let Some(what) = &no_answer {
        eprintln!("idemgate: {what}");
    }
    if args.json {
        print_line(&serde_json::to_string(&send::SentReport::from(&sent))?)?;
    } else if no_answer.is_none() {
        print_line(&format!("{}\n{}", sent.status, String::from_utf8_lossy(&sent.body)))?;
    }
    Ok(ExitCode::from(send::exit_code(sent.outcome)))
}

/// The `i`th operation's request: method, URL, headers and body as given, signed with a
/// generated event id unless `--event-id` names one.
fn request_maker(args: &SendArgs) -> anyhow::Result<Arc<dyn Fn(usize) -> Request + Send + Sync>> {
    let body = body(args)?;
    let method = http::Method::from_bytes(args.method.to_ascii_uppercase().as_bytes())
        .map_err(|_| anyhow!("{:?} is not an HTTP method", args.method))?;
    let headers = args.headers.iter().map(|h| send::header(h)).collect::<Result<Vec<_>, _>>()?;
    let signer = match (&args.scheme, &args.secret) {
        (Some(scheme), Some(reference)) => {
            let mut warnings = Vec::new();
            let text = config::secrets::resolve("--secret", reference, Path::new("."), &mut warnings)?;
            Some(send::signer(scheme, &text)?)
        }
        _ => None,
    };
    let (url, key, event_id) = (args.url.clone(), args.idempotency_key.clone(), args.event_id.clone());
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

/// `send smtp://…`: the message of `--data-file` to `--to` from `--from`, its key written
/// into `--key-header` once (or the message's own used) and kept on every retry.
async fn send_mail(args: SendArgs) -> anyhow::Result<ExitCode> {
    let http_only = [
        ("--method", !args.method.eq_ignore_ascii_case("POST")),
        ("--header", !args.headers.is_empty()),
        ("--data", args.data.is_some()),
        ("--scheme", args.scheme.is_some()),
        ("--event-id", args.event_id.is_some()),
        ("--repeat", args.repeat > 1),
    ];
    if let Some((flag, _)) = http_only.iter().find(|(_, given)| *given) {
        return Err(anyhow!("{flag} is for HTTP sends, not for mail to {}", args.url));
    }
    let from = args.from.clone().ok_or_else(|| anyhow!("mail needs --from, the envelope sender"))?;
    if args.to.is_empty() {
        return Err(anyhow!("mail needs at least one --to, an envelope recipient"));
    }
    if args.data_file.is_none() {
        return Err(anyhow!("mail needs --data-file, the message (RFC 5322 text; `-` for standard input)"));
    }
    let message = body(&args)?;
    let mut request = MailRequest::new(args.url.clone(), from, args.to.clone(), message)
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
        eprint!("{}", send::describe_mail_attempts(&sent));
    }
    let failure = send::mail_failure(&args.url, &sent);
    if let Some(what) = &failure {
        eprintln!("idemgate: {what}");
    }
    if args.json {
        print_line(&serde_json::to_string(&send::MailSentReport::from(&sent))?)?;
    } else if let Some(reply) = &sent.reply {
        print_line(&reply.to_string())?;
    }
    Ok(ExitCode::from(send::exit_code(sent.outcome)))
}
