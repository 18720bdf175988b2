//! `idemgate config check`: the configuration validated as `serve` would validate it
//! (every secret resolved and decoded, every TLS file loaded), then the values in effect
//! printed with where each came from. Secrets are never printed, only their references.

use std::{path::Path, process::ExitCode};

use idemgate::config;

use super::{EXIT_FAILED, print_line};

pub(super) fn check(path: &Path) -> anyhow::Result<ExitCode> {
    let (config, warnings) = match config::load(path, std::env::vars()) {
        Ok(loaded) => loaded,
        Err(err) => {
            eprintln!("idemgate: config error: {err}");
            return Ok(ExitCode::from(EXIT_FAILED));
        }
    };
    let shown = config::paths::resolve(Path::new("."), path);
    let mut text = format!("# {}: valid\n{}", shown.display(), config.effective());
    for warning in warnings {
        text.push_str(&format!("# warning: {}\n", warning.0));
    }
    print_line(text.trim_end())?;
    Ok(ExitCode::SUCCESS)
}
