//! The `idemgate` command: parse the command line (`cli`), build the one runtime, run the
//! command (`commands`, which loads what it uses of the configuration) and map its result
//! to an exit code.

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod commands;
mod report;

use commands::{BadConfig, EXIT_CONFIG, EXIT_FAILED};

/// mimalloc instead of the system allocator: the gateway allocates per request (bodies,
/// headers, futures), and glibc's malloc and free were about a tenth of its CPU time under
/// load (docs/benchmarks/log-2026-12.md, "Profile").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli::Cli { config, command } = cli::Cli::parse();
    let result = tokio::runtime::Runtime::new()
        .map_err(|err| anyhow::anyhow!("cannot start the runtime: {err}"))
        .and_then(|runtime| runtime.block_on(commands::run(command, &config)));
    match result {
        Ok(code) => code,
        Err(err) if report::is_closed_stdout(&err) => ExitCode::SUCCESS,
        Err(err) => match err.downcast_ref::<BadConfig>() {
            Some(bad) => {
                eprintln!("idemgate: config error: {bad}");
                ExitCode::from(EXIT_CONFIG)
            }
            None => {
                eprintln!("idemgate: {}", report::message(&err));
                ExitCode::from(EXIT_FAILED)
            }
        },
    }
}
