//! What each subcommand does, one module per command group; each runs on the one runtime
//! that `main` builds.

use std::{io::Write, path::Path, process::ExitCode};

use anyhow::anyhow;
use idemgate::{availability, config::Config};
use idemgate_clock::SystemClock;
use idemgate_store::Store;

use crate::cli::{Command, DestinationCommand, EventsCommand};

mod bench;
mod destination;
mod events;
mod reload;
mod send;
mod serve;
mod store;
mod verify;

/// Exit codes: 0 success, 1 runtime failure or failed check, 2 bad configuration or usage.
pub(crate) const EXIT_FAILED: u8 = 1;
pub(crate) const EXIT_CONFIG: u8 = 2;

/// Runs `command`; `config` is loaded from `path` for every command that reads one (and
/// reloaded from there by `serve` and `worker` on SIGHUP).
pub(crate) async fn run(command: Command, config: Option<Config>, path: &Path) -> anyhow::Result<ExitCode> {
    let config = || config.ok_or_else(|| anyhow!("this command needs --config"));
    match command {
        Command::Serve => serve::serve(config()?, true, path).await,
        Command::Worker => serve::serve(config()?, false, path).await,
        Command::Reload => reload::signal(&config()?),
        Command::Verify { source, headers, body, at } => {
            verify::capture(&config()?, &source, &headers, &body, at, &SystemClock)
        }
        Command::Events { command: EventsCommand::Replay { filter } } => {
            events::replay(&config()?, filter, &SystemClock).await
        }
        Command::Events { command } => events::view(&config()?, command).await,
        Command::Destination { command: DestinationCommand::Enable { name } } => {
            destination::enable(&config()?, name, &SystemClock).await
        }
        Command::Bench { workload } => bench::bench(workload, &SystemClock).await,
        Command::Send(args) => send::send(args).await,
        Command::Store { command } => store::store(&config()?, command).await,
    }
}

/// Whether `command` reads the configuration file, and whether it runs long (and so logs
/// the configuration's warnings).
pub(crate) fn reads_config(command: &Command) -> Option<bool> {
    match command {
        Command::Bench { .. } | Command::Send(_) => None,
        Command::Serve | Command::Worker => Some(true),
        _ => Some(false),
    }
}

/// The configured store for a command that needs it now.
async fn open_store(config: &Config) -> anyhow::Result<Store> {
    Ok(availability::open(&config.store).await?)
}

/// The first stdout line (`listening on ADDR`, so scripts and tests learn the real port
/// of `127.0.0.1:0`, or `worker running`).
fn print_line(line: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")?;
    stdout.flush()?;
    Ok(())
}
