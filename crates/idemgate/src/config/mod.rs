//! Configuration in two stages: [`raw`] is what the TOML file and the `IDEMGATE_*`
//! environment say, with every key optional and unknown keys refused; [`validated`] is the
//! typed, ready-to-use result. Validation happens at start-up and on each SIGHUP reload,
//! and the first problem becomes one line naming the key:
//! `sources.stripe.tolerance: invalid duration "5 mins"`.

pub mod raw;
pub mod secrets;
pub mod validated;

use std::path::Path;

pub use validated::{
    AdminConfig, Config, DestinationConfig, OrderingConfig, ProxyConfig, ServerConfig, SourceConfig, StoreConfig,
    TlsConfig, WorkerConfig,
};

/// A configuration problem, located by its dotted key. Never contains a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct ConfigError {
    /// The dotted key, e.g. `sources.stripe.secrets[0]`, or the file for read errors.
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

/// Reads `path`, applies `env` overrides (`IDEMGATE_SECTION__KEY=value`), and validates.
pub fn load(
    path: &Path,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<(Config, Vec<ConfigWarning>), ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| ConfigError::new(path.display().to_string(), format!("cannot read: {err}")))?;
    let raw = raw::parse(&text, env)?;
    let base = path.parent().unwrap_or(Path::new("."));
    validated::validate(raw, base)
}
