//! What each subcommand does, one module per command group; each runs on the one runtime
//! that `main` builds and loads what it uses of the configuration, no more: `events list`
//! needs no admin token and `worker` no source secret ([`Uses`]).

use std::{
    ffi::OsStr,
    io::{IsTerminal, Write},
    path::Path,
    process::ExitCode,
};

use anyhow::{Context, anyhow};
use idemgate::{
    availability,
    config::{self, Config, ConfigError, Uses},
    traces::Traces,
};
use idemgate_clock::SystemClock;
use idemgate_store::Store;
use tracing_subscriber::{
    Layer,
    filter::{FilterExt, filter_fn},
    layer::SubscriberExt,
    util::SubscriberInitExt,
};

use crate::cli::{Command, ConfigCommand, DestinationCommand, EventsCommand};

mod apps;
mod bench;
mod check;
mod destination;
mod docs;
mod events;
mod reload;
mod send;
mod serve;
mod store;
mod verify;

/// Exit codes: 0 success, 1 runtime failure or failed check, 2 bad configuration or usage.
pub(crate) const EXIT_FAILED: u8 = 1;
pub(crate) const EXIT_CONFIG: u8 = 2;

/// The configuration a command needs is not valid: `main` prints it as a config error and
/// exits with [`EXIT_CONFIG`].
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub(crate) struct BadConfig(#[from] ConfigError);

/// The reader of stdout went away (`idemgate events list | head -1`): `main` exits 0 and
/// says nothing, since the reader has what it wanted.
#[derive(Debug, thiserror::Error)]
#[error("stdout was closed by its reader")]
pub(crate) struct StdoutClosed;

/// The result of writing to stdout, a closed stdout being [`StdoutClosed`].
pub(crate) fn to_stdout(written: std::io::Result<()>) -> anyhow::Result<()> {
    match written {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        written => Ok(written?),
    }
}

/// Runs `command` with the configuration file at `path`.
pub(crate) async fn run(command: Command, path: &Path) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve => serving(path, Uses::Serve).await,
        Command::Worker => serving(path, Uses::Worker).await,
        Command::Reload => reload::signal(&load(path, Uses::Store)?),
        Command::Verify { source, headers, body, at } => {
            logs(None);
            let (found, _) = config::load_source(path, std::env::vars(), &source).map_err(BadConfig)?;
            let source = found.ok_or_else(|| anyhow!("no source {source:?} in the configuration"))?;
            verify::capture(&source, &headers, &body, at, &SystemClock)
        }
        Command::Events { command: EventsCommand::Replay { filter } } => {
            events::replay(&load(path, Uses::Store)?, filter, &SystemClock).await
        }
        Command::Events { command: EventsCommand::Retry { filter } } => {
            events::retry(&load(path, Uses::Store)?, filter, &SystemClock).await
        }
        Command::Events { command } => events::view(&load(path, Uses::Store)?, command, &SystemClock).await,
        Command::Destination { command: DestinationCommand::List { json } } => {
            destination::list(&load(path, Uses::Store)?, json, &SystemClock).await
        }
        Command::Destination { command: DestinationCommand::Enable { name } } => {
            destination::enable(&load(path, Uses::Store)?, name, &SystemClock).await
        }
        Command::Destination { command: DestinationCommand::Setup { name } } => {
            destination::setup(&load_quietly(path, Uses::Worker)?, &name).await
        }
        Command::Apps { command } => apps::view(&load(path, Uses::Store)?, command, &SystemClock).await,
        Command::Store { command } => store::store(&load(path, Uses::Store)?, command, &SystemClock).await,
        Command::Config { command: ConfigCommand::Check } => check::check(path),
        Command::Bench { workload } => bench::bench(workload, &SystemClock).await,
        Command::Send(args) => send::send(*args, path).await,
        Command::Completions { shell } => docs::completions(shell),
        Command::Man { command } => docs::man(&command),
    }
}

/// Loads what a command `uses` of the configuration (a short command: its warnings would
/// repeat on every invocation, so they are not logged).
fn load(path: &Path, uses: Uses) -> Result<Config, BadConfig> {
    logs(None);
    Ok(config::load_for(path, std::env::vars(), uses)?.0)
}

/// [`load`] for a command that talks to brokers: their clients log each connection at INFO,
/// and lapin an ERROR for each "not found" answering `destination setup`'s question whether
/// something exists, so the log is on only when `IDEMGATE_LOG` asks for it.
fn load_quietly(path: &Path, uses: Uses) -> Result<Config, BadConfig> {
    if std::env::var_os("IDEMGATE_LOG").is_some() {
        logs(None);
    }
    Ok(config::load_for(path, std::env::vars(), uses)?.0)
}

/// `serve` (`uses` is [`Uses::Serve`]) or `worker`: loads the configuration, starts the
/// span exporter when `[traces]` is set, logs the warnings, runs, and exports the last
/// spans once the gateway stopped.
async fn serving(path: &Path, uses: Uses) -> anyhow::Result<ExitCode> {
    let (config, warnings) = config::load_for(path, std::env::vars(), uses).map_err(BadConfig)?;
    let traces = config.traces.as_ref().map(Traces::start).transpose()?;
    logs(traces.as_ref());
    for warning in warnings {
        tracing::warn!("{}", warning.0);
    }
    let result = serve::serve(config, matches!(uses, Uses::Serve), path).await;
    if let Some(traces) = traces
        && let Err(err) = traces.shutdown().await
    {
        tracing::warn!("{err}");
    }
    result
}

/// Logs to stderr: `IDEMGATE_LOG` filters (`info` by default), `IDEMGATE_LOG_FORMAT=json`
/// gives one JSON object per line, for log pipelines. With `traces`, idemgate's spans are
/// also exported, whatever the log's filter.
fn logs(traces: Option<&Traces>) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("IDEMGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let colours = log_colours(std::io::stderr().is_terminal(), std::env::var_os("NO_COLOR").as_deref());
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(colours);
    let logs = if std::env::var("IDEMGATE_LOG_FORMAT").is_ok_and(|f| f == "json") {
        logs.json().boxed()
    } else {
        logs.boxed()
    };
    // The log stays as it was before spans: its lines name no span (a trace shows them).
    let filter = filter.and(filter_fn(|meta| !meta.is_span())).and(filter_fn(holds_no_message));
    let spans = traces.map(Traces::layer);
    tracing_subscriber::registry().with(logs.with_filter(filter)).with(spans).init();
}

/// Whether an event may be logged whatever `IDEMGATE_LOG` says: the logs never hold a
/// payload. lapin (the RabbitMQ client) logs a message the broker returns at WARN with its
/// body and headers, and frames at TRACE; only its errors, which describe the connection,
/// pass, and none from the modules that hold messages. idemgate logs a returned message
/// itself, as one line without its contents.
fn holds_no_message(meta: &tracing::Metadata<'_>) -> bool {
    let target = meta.target();
    if target != "lapin" && !target.starts_with("lapin::") {
        return true;
    }
    *meta.level() == tracing::Level::ERROR
        && !target.starts_with("lapin::returned_messages")
        && !target.starts_with("lapin::consumer")
}

/// The configured store for a command that needs it now.
async fn open_store(config: &Config) -> anyhow::Result<Store> {
    Ok(availability::open(&config.store).await?)
}

/// The store of a command that works on what is there: only `serve` and `worker` create
/// it, so for any other command a missing SQLite file is an error naming it.
fn existing_store(config: &Config) -> anyhow::Result<()> {
    if config.store.postgres.is_some() {
        return Ok(());
    }
    let path = &config.store.path;
    match std::fs::metadata(path) {
        Ok(_) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(anyhow!(
            "no store at {}: the file does not exist (`idemgate serve` creates it; store.path is relative to the \
             config file)",
            path.display()
        )),
        Err(err) => Err(err).with_context(|| format!("cannot read the store {}", path.display())),
    }
}

/// A path given on the command line as errors print it: resolved against the working
/// directory, absolute and normalized.
fn shown(path: &Path) -> String {
    config::paths::resolve(Path::new("."), path).display().to_string()
}

/// The first stdout line (`listening on ADDR`, so scripts and tests learn the real port
/// of `127.0.0.1:0`, or `worker running`).
fn print_line(line: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    to_stdout(writeln!(stdout, "{line}").and_then(|()| stdout.flush()))
}

/// Colours in the log only for a person at a terminal: not when stderr is a file or a
/// pipe, nor when `NO_COLOR` is set to anything but the empty string (no-color.org).
fn log_colours(stderr_is_terminal: bool, no_color: Option<&OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(OsStr::is_empty)
}
