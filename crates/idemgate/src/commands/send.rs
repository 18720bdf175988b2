//! `idemgate send`: one request (or, with `--repeat`, many) retried safely, signed as a
//! webhook when a scheme is given.

use std::{path::Path, process::ExitCode, sync::Arc};

use anyhow::{Context, anyhow};
use idemgate::{config, send};
use idemgate_client::{Client, ClientOptions, Request};

use super::print_line;
use crate::cli::SendArgs;

pub(super) async fn send(args: SendArgs) -> anyhow::Result<ExitCode> {
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
        (None, Some(path)) => std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?,
        (None, None) => Vec::new(),
    })
}
