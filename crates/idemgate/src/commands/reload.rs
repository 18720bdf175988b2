//! `idemgate reload`: asks the running `serve` or `worker` to reload its configuration by
//! sending it SIGHUP, exactly as `kill -HUP` would. The process is the one named in
//! `[server] pid_file`, which the server writes at start and removes at exit; a pid file
//! left by a crash is refused when the process it names is not an idemgate.

use std::process::ExitCode;

use anyhow::{Context, bail};
use idemgate::config::Config;
use rustix::process::{Pid, Signal, kill_process};

use super::print_line;

/// Sends SIGHUP to the server named in the pid file.
pub(super) fn signal(config: &Config) -> anyhow::Result<ExitCode> {
    let Some(path) = &config.server.pid_file else {
        bail!("[server] pid_file is not set: set it, or send SIGHUP to the server yourself");
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read {} (is idemgate serve running?)", path.display()))?;
    let raw: i32 = text.trim().parse().with_context(|| format!("{} does not hold a process id", path.display()))?;
    let pid = Pid::from_raw(raw).with_context(|| format!("{} does not hold a process id", path.display()))?;
    if let Ok(name) = std::fs::read_to_string(format!("/proc/{raw}/comm"))
        && !name.trim().starts_with("idemgate")
    {
        bail!("process {raw} named in {} is not idemgate (a stale pid file?)", path.display());
    }
    kill_process(pid, Signal::HUP).with_context(|| format!("cannot signal process {raw}"))?;
    print_line(&format!("sent SIGHUP to process {raw}"))?;
    Ok(ExitCode::SUCCESS)
}
