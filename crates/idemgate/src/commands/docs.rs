//! `idemgate completions` and `idemgate man`: what the command line says about itself,
//! generated from the clap definitions in `cli`, so they cannot drift from the parser.

use std::{io::Write, process::ExitCode};

use clap::CommandFactory;
use clap_complete::aot::Shell;
use clap_mangen::{
    Man,
    roff::{Roff, bold, roman},
};

use super::{
    EXIT_CONFIG, EXIT_FAILED,
    send::{EXIT_GAVE_UP, EXIT_REJECTED},
};
use crate::cli::Cli;

const BIN: &str = "idemgate";

/// The completion script for `shell`.
pub(super) fn completions(shell: Shell) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::aot::generate(shell, &mut Cli::command(), BIN, &mut script);
    write_out(&script)
}

/// idemgate(1) when `path` is empty, else the page of the command it names
/// (`idemgate-events-list(1)` for `events list`); an unknown command is bad usage.
pub(super) fn man(path: &[String]) -> anyhow::Result<ExitCode> {
    let mut top = Cli::command().disable_help_subcommand(true);
    top.build();
    let mut page = Vec::new();
    if path.is_empty() {
        render_top(top, &mut page)?;
        return write_out(&page);
    }
    let mut command = &top;
    for name in path {
        let Some(sub) = command.find_subcommand(name) else {
            let mut usage = top.find_subcommand("man").cloned().unwrap_or_else(|| top.clone());
            let err = usage.error(
                clap::error::ErrorKind::InvalidSubcommand,
                format!("there is no command `{BIN} {}`; `{BIN} --help` lists them", path.join(" ")),
            );
            err.print()?;
            return Ok(ExitCode::from(EXIT_CONFIG));
        };
        command = sub;
    }
    page_of(command.clone()).render(&mut page)?;
    write_out(&page)
}

/// idemgate(1): clap's sections, then the exit codes and the environment, which clap does
/// not know.
fn render_top(top: clap::Command, page: &mut Vec<u8>) -> std::io::Result<()> {
    let man = page_of(top);
    man.render_title(page)?;
    man.render_name_section(page)?;
    man.render_synopsis_section(page)?;
    man.render_description_section(page)?;
    man.render_options_section(page)?;
    man.render_subcommands_section(page)?;
    let mut extra = Roff::new();
    extra.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in [
        (0, "success, also when the reader of the output stopped early (| head)".to_owned()),
        (EXIT_FAILED, "a runtime failure or a failed check".to_owned()),
        (EXIT_CONFIG, "a bad configuration or bad usage".to_owned()),
        (EXIT_REJECTED, format!("{BIN} send: a final refusal (a 4xx)")),
        (EXIT_GAVE_UP, format!("{BIN} send: the retries ran out")),
    ] {
        extra.control("TP", []).text([bold(code.to_string())]).text([roman(meaning)]);
    }
    extra.control("SH", ["ENVIRONMENT"]);
    for (name, meaning) in [
        ("IDEMGATE_CONFIG", "the configuration file, as --config"),
        ("IDEMGATE_<SECTION>__<KEY>", "overrides one key of the configuration file"),
        ("IDEMGATE_LOG", "the log filter, e.g. debug or idemgate=debug (default info)"),
        ("IDEMGATE_LOG_FORMAT", "json: one JSON object per log line"),
        ("NO_COLOR", "set and not empty: no colours in the log (there are none unless stderr is a terminal)"),
    ] {
        extra.control("TP", []).text([bold(name)]).text([roman(meaning)]);
    }
    extra.to_writer(page)?;
    man.render_version_section(page)
}

/// The page of `command`, its footer naming this version of idemgate.
fn page_of(command: clap::Command) -> Man {
    Man::new(command).source(format!("{BIN} {}", env!("CARGO_PKG_VERSION")))
}

/// Writes `bytes` to stdout; a reader that stopped early (`| head`) is not an error.
fn write_out(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(err.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}
