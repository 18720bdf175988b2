//! Configuration in two stages: [`raw`] is what the TOML file and the `IDEMGATE_*`
//! environment say, with every key optional and unknown keys refused; [`validated`] is the
//! typed, ready-to-use result, holding the secrets and files of what its command uses.
//! Validation happens at start-up and on each SIGHUP reload, and the first problem becomes one line naming
//! the key (`sources.stripe.tolerance: invalid duration "5 mins"`), or the variable when
//! only an override has that key. Every path in the file is relative to the file's folder.
//! While validating, [`effective`] records each key's value and [`origin`], for
//! `idemgate config check`.

mod alerts;
mod api;
mod destinations;
pub mod effective;
mod listeners;
mod metrics;
pub mod origin;
pub mod paths;
mod portal;
mod proxies;
pub mod raw;
mod reading;
pub mod secrets;
mod smtp;
mod sources;
mod store;
mod syntax;
pub mod traces;
pub mod validated;

use std::path::{Path, PathBuf};

pub use destinations::{Encryption, SmtpRelay};
pub use traces::TracesConfig;
pub use validated::{
    AdminConfig, AlertsConfig, ApiConfig, Config, DestinationConfig, DestinationUrl, MetricsConfig, MetricsListen,
    OrderingConfig, PostgresConfig, ProxyConfig, ServerConfig, SmtpConfig, SourceConfig, StoreConfig, Target,
    TlsConfig, Uses, WorkerConfig,
};

/// A configuration problem, located by its dotted key. Never contains a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct ConfigError {
    /// The dotted key, e.g. `sources.stripe.secrets[0]`, the variable of an override, the
    /// file for read errors, or `FILE:LINE:COLUMN` for a syntax error (whose message then
    /// shows the line).
    pub key: String,
    /// What is wrong with it.
    pub message: String,
}

impl ConfigError {
    pub(crate) fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self { key: key.into(), message: message.into() }
    }
}

/// Something worth telling the operator at start-up that does not stop it (a literal
/// secret in the file, for instance). Never contains a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning(pub String);

/// Reads `path`, applies `env` overrides (`IDEMGATE_SECTION__KEY=value`), and validates,
/// resolving every secret and file.
pub fn load(
    path: &Path,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<(Config, Vec<ConfigWarning>), ConfigError> {
    load_for(path, env, Uses::Everything)
}

/// [`load`] for a command that resolves only the secrets and files it `uses`.
pub fn load_for(
    path: &Path,
    env: impl IntoIterator<Item = (String, String)>,
    uses: Uses,
) -> Result<(Config, Vec<ConfigWarning>), ConfigError> {
    let raw = read(path, env)?;
    validated::validate_for(raw, &folder(path), uses)
}

/// Validates the whole configuration and resolves the secrets of source `id` alone (for
/// `idemgate verify`); `None` when there is no such source.
pub fn load_source(
    path: &Path,
    env: impl IntoIterator<Item = (String, String)>,
    id: &str,
) -> Result<(Option<SourceConfig>, Vec<ConfigWarning>), ConfigError> {
    let raw = read(path, env)?;
    validated::validate_source(raw, &folder(path), id)
}

fn read(path: &Path, env: impl IntoIterator<Item = (String, String)>) -> Result<raw::RawConfig, ConfigError> {
    let shown = paths::resolve(Path::new("."), path).display().to_string();
    let text = std::fs::read_to_string(path).map_err(|err| ConfigError::new(&shown, format!("cannot read: {err}")))?;
    raw::parse_file(&shown, &text, env)
}

/// The folder relative paths in the file at `path` start from, absolute (for the paths
/// printed) and normalized.
fn folder(path: &Path) -> PathBuf {
    paths::resolve(Path::new("."), path.parent().unwrap_or(Path::new(".")))
}
