//! `idemgate verify`: replays the gateway's checks on a captured request, offline, at
//! `--at` or else at the clock's now, and prints each check's result up to the first that
//! fails. A refused signature also prints the gateway's answer (`answer    401 {…}`), whose
//! `reason` and `header` say what to fix. Nothing is stored; no secret is printed.

use std::{io::Write, path::Path, process::ExitCode};

use anyhow::{Context, anyhow};
use http::{HeaderMap, HeaderName, HeaderValue};
use idemgate::config::SourceConfig;
use idemgate_clock::Clock;
use idemgate_core::{
    AuthError, UnixTime,
    form::{self, BodyFormat},
    json,
    scheme::{RawDelivery, VerifiedDelivery},
};
use idemgate_http::answer::DeliveryAnswer;

use super::{EXIT_FAILED, shown, to_stdout};

/// Checks the captured request against `source`, loaded with its secrets alone, at `at` or
/// the clock's now.
pub(super) fn capture(
    source: &SourceConfig,
    headers: &Path,
    body: &Path,
    at: Option<i64>,
    clock: &dyn Clock,
) -> anyhow::Result<ExitCode> {
    let head = std::fs::read_to_string(headers).with_context(|| format!("cannot read {}", shown(headers)))?;
    let headers = parse_headers(&head).map_err(|err| anyhow!("{}: {err}", shown(headers)))?;
    let body = std::fs::read(body).with_context(|| format!("cannot read {}", shown(body)))?;
    let now = at.map_or_else(|| clock.now(), UnixTime);
    let (checks, refused) = verify_capture(source, &headers, &body, now);
    let mut stdout = std::io::stdout().lock();
    for check in &checks {
        to_stdout(match &check.result {
            Ok(found) => writeln!(stdout, "{:<9} ok      {found}", check.name),
            Err(why) => writeln!(stdout, "{:<9} FAILED  {why}", check.name),
        })?;
    }
    if let Some(refused) = refused {
        let answer = DeliveryAnswer::Rejected(refused.into());
        to_stdout(writeln!(stdout, "{:<9} {} {}", "answer", answer.status().as_u16(), answer.body()))?;
    }
    let passed = checks.iter().all(|c| c.result.is_ok());
    Ok(if passed { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED) })
}

/// One check and what came of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Check {
    /// `signature`, `json` (`form` for a form source), `identity` or `type`.
    name: &'static str,
    /// What was found, or why it failed.
    result: Result<String, String>,
}

/// Runs the checks in the gateway's order and stops at the first failure; with why the
/// scheme refused the delivery, if it did.
fn verify_capture(
    source: &SourceConfig,
    headers: &HeaderMap,
    body: &[u8],
    now: UnixTime,
) -> (Vec<Check>, Option<AuthError>) {
    let mut checks = Vec::new();
    let delivery = source.scheme.verify(&source.secrets, RawDelivery { headers, body }, now);
    let signed = match &delivery {
        Ok(d) => Ok(match d.timestamp {
            Some(ts) => format!("{} signature holds; timestamp {} s from now", source.scheme.name(), ts.0 - now.0),
            None => format!("{} signature holds; the scheme signs no timestamp", source.scheme.name()),
        }),
        Err(err) => Err(err.to_string()),
    };
    push(&mut checks, "signature", signed);
    let delivery = match delivery {
        Ok(delivery) => delivery,
        Err(refused) => return (checks, Some(refused)),
    };
    (checks_after_signature(source, headers, body, &delivery, checks), None)
}

/// The checks of a delivery whose signature holds, after `checks`.
fn checks_after_signature(
    source: &SourceConfig,
    headers: &HeaderMap,
    body: &[u8],
    delivery: &VerifiedDelivery,
    mut checks: Vec<Check>,
) -> Vec<Check> {
    // Named by the source's format: `json`, or `form` for a form read into its JSON view.
    let (check, read) = match source.body {
        BodyFormat::Json => ("json", json::parse(body, source.json_limits).map_err(|err| err.to_string())),
        BodyFormat::Form => ("form", form::parse(body).map_err(|err| err.to_string())),
    };
    let event = match read {
        Ok(event) => event,
        Err(err) => {
            push(&mut checks, check, Err(err));
            return checks;
        }
    };
    let strict = if source.body == BodyFormat::Json { "strict JSON" } else { "strict form, read as JSON fields" };
    push(&mut checks, check, Ok(strict.into()));
    let identity = source
        .identity
        .resolve(source.scheme.as_ref(), headers, delivery, &event)
        .map(|id| format!("{id} (from {})", source.identity));
    if !push(&mut checks, "identity", identity.map_err(|err| format!("{err} (looked in {})", source.identity))) {
        return checks;
    }
    push(&mut checks, "type", type_check(source, &event));
    checks
}

fn push(checks: &mut Vec<Check>, name: &'static str, result: Result<String, String>) -> bool {
    let ok = result.is_ok();
    checks.push(Check { name, result });
    ok
}

fn type_check(source: &SourceConfig, event: &json::Json) -> Result<String, String> {
    let found = source.event_type.as_deref().and_then(|p| event.pointer(p)).and_then(json::Json::as_str);
    match (&source.allowed_types, found) {
        (None, Some(t)) => Ok(format!("{t} (all types accepted)")),
        (None, None) => Ok("all types accepted".into()),
        (Some(allowed), Some(t)) if allowed.contains(t) => Ok(format!("{t} is accepted")),
        (Some(_), Some(t)) => Err(format!(
            "{t} is not in allowed_types (a repeat of an event already received would still be a duplicate)"
        )),
        (Some(_), None) => Err("no event type found at the configured pointer".into()),
    }
}

/// Parses a captured head: `Name: value` lines; a request or status line first and
/// everything after the first blank line are ignored.
fn parse_headers(text: &str) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            if number == 0 {
                continue;
            }
            return Err(format!("line {}: not a `Name: value` header", number + 1));
        };
        let name =
            HeaderName::try_from(name.trim()).map_err(|_| format!("line {}: invalid header name", number + 1))?;
        let value =
            HeaderValue::try_from(value.trim()).map_err(|_| format!("line {}: invalid header value", number + 1))?;
        headers.append(name, value);
    }
    Ok(headers)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn captured_heads_parse_with_or_without_a_request_line() {
        let headers =
            parse_headers("POST /in/x HTTP/1.1\r\nWebhook-Id: msg_1\r\nA: b\r\n\r\nbody: not a header").unwrap();
        assert_eq!(headers.get("webhook-id").unwrap(), "msg_1");
        assert_eq!(headers.len(), 2);
        assert!(parse_headers("A: b\nnot a header\n").is_err());
    }
}
