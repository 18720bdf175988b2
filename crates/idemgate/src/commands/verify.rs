//! `idemgate verify`: why a captured delivery would be accepted or refused, check by check,
//! at `--at` or else at the clock's now.

use std::{io::Write, path::Path, process::ExitCode};

use anyhow::{Context, anyhow};
use idemgate::{config::SourceConfig, verify};
use idemgate_clock::Clock;
use idemgate_core::UnixTime;

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
    let headers = verify::parse_headers(&head).map_err(|err| anyhow!("{}: {err}", shown(headers)))?;
    let body = std::fs::read(body).with_context(|| format!("cannot read {}", shown(body)))?;
    let now = at.map_or_else(|| clock.now(), UnixTime);
    let checks = verify::verify_capture(source, &headers, &body, now);
    let mut stdout = std::io::stdout().lock();
    for check in &checks {
        to_stdout(match &check.result {
            Ok(found) => writeln!(stdout, "{:<9} ok      {found}", check.name),
            Err(why) => writeln!(stdout, "{:<9} FAILED  {why}", check.name),
        })?;
    }
    let passed = checks.iter().all(|c| c.result.is_ok());
    Ok(if passed { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED) })
}
