//! The `idemgate` command: parse the command line (`cli`), build the one runtime, run the
//! command (`commands`) and map its result to an exit code.

use std::{path::Path, process::ExitCode};

use clap::Parser;
use idemgate::config::{self, Config};

mod cli;
mod commands;

use commands::{EXIT_CONFIG, EXIT_FAILED};

/// mimalloc instead of the system allocator: the gateway allocates per request (bodies,
/// headers, futures), and glibc's malloc and free were about a tenth of its CPU time under
/// load (BENCHMARKS.md, "Profile").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli::Cli { config: path, command } = cli::Cli::parse();
    let config = match commands::reads_config(&command) {
        None => None,
        Some(long_running) => match load_config(&path, long_running) {
            Ok(config) => Some(config),
            Err(err) => {
                eprintln!("idemgate: config error: {err}");
                return ExitCode::from(EXIT_CONFIG);
            }
        },
    };
    let result = tokio::runtime::Runtime::new()
        .map_err(|err| anyhow::anyhow!("cannot start the runtime: {err}"))
        .and_then(|runtime| runtime.block_on(commands::run(command, config, &path)));
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("idemgate: {err:#}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// Loads the configuration; `long_running` commands log its warnings (the short ones
/// would repeat them on every invocation).
fn load_config(path: &Path, long_running: bool) -> Result<Config, config::ConfigError> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("IDEMGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter);
    // IDEMGATE_LOG_FORMAT=json: one JSON object per line, for log pipelines.
    if std::env::var("IDEMGATE_LOG_FORMAT").is_ok_and(|f| f == "json") {
        logs.json().init();
    } else {
        logs.init();
    }
    let (config, warnings) = config::load(path, std::env::vars())?;
    for warning in warnings.iter().filter(|_| long_running) {
        tracing::warn!("{}", warning.0);
    }
    Ok(config)
}
