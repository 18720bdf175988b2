//! How validation reads the raw configuration, shared by every part's module: the
//! [`Reading`] state (the config file's folder, where each key came from, the warnings and
//! the listing of every key's effective value), which sources have their secrets resolved
//! ([`Verifies`]), and the defaults several parts share. A leaf: it imports no part and
//! not [`super::validated`], which composes the parts.

use std::{path::Path, time::Duration};

use super::{
    ConfigError, ConfigWarning,
    effective::{Listing, Shown},
    origin::{Origin, Origins},
    secrets,
};

/// Which sources have their secrets resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verifies<'a> {
    All,
    One(&'a str),
    None,
}

/// Defaults shared by several parts, also documented in `idemgate.toml`.
pub(super) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Validation's state: the config file's folder (relative paths are relative to it),
/// where each key came from, the warnings so far and the listing of what was read.
pub(super) struct Reading<'a> {
    pub(super) base: &'a Path,
    origins: Origins,
    pub(super) warnings: Vec<ConfigWarning>,
    listing: Listing,
}

impl<'a> Reading<'a> {
    /// Starts reading the file in the folder `base`, whose keys came from `origins`.
    pub(super) fn new(base: &'a Path, origins: Origins) -> Self {
        Self { base, origins, warnings: Vec::new(), listing: Listing::default() }
    }

    /// What was read, and the warnings.
    pub(super) fn finish(self) -> (Listing, Vec<ConfigWarning>) {
        (self.listing, self.warnings)
    }
}

impl Reading<'_> {
    /// Records `key`'s effective value.
    pub(super) fn show(&mut self, key: &str, shown: Shown) {
        let origin = self.origins.origin(key);
        self.listing.push(key, shown, origin);
    }

    /// Records a value given or defaulted.
    pub(super) fn value<T: Clone + Into<toml::Value>>(&mut self, key: &str, given: Option<T>, default: T) -> T {
        let value = given.unwrap_or(default);
        self.show(key, Shown::Value(value.clone().into()));
        value
    }

    /// A count given or defaulted.
    pub(super) fn count(&mut self, key: &str, given: Option<usize>, default: usize) -> usize {
        let value = given.unwrap_or(default);
        self.show(key, Shown::Value(toml::Value::Integer(i64::try_from(value).unwrap_or(i64::MAX))));
        value
    }

    /// A duration given as text (`"30s"`, `"5m"`, `"2h"`) or defaulted.
    pub(super) fn duration(
        &mut self,
        key: &str,
        text: Option<&str>,
        default: Duration,
    ) -> Result<Duration, ConfigError> {
        let value = match text {
            None => default,
            Some(text) => humantime::parse_duration(text).map_err(|_| {
                ConfigError::new(key, format!("invalid duration {text:?} (use e.g. \"30s\", \"5m\", \"2h\")"))
            })?,
        };
        self.show(key, Shown::Value(shown_duration(value)));
        Ok(value)
    }

    /// Resolves one secret reference at `key` (`env:`, `file:` relative to the config
    /// file, or a literal, with a warning when the file holds it).
    pub(super) fn resolve(&mut self, key: &str, reference: &str) -> Result<String, ConfigError> {
        let mut warnings = Vec::new();
        let value = secrets::resolve(key, reference, self.base, &mut warnings)?;
        if !self.set_by_environment(key) {
            self.warnings.extend(warnings);
        }
        Ok(value)
    }

    /// Whether an `IDEMGATE_*` variable gave `key`, rather than the file.
    pub(super) fn set_by_environment(&self, key: &str) -> bool {
        matches!(self.origins.origin(key), Origin::Environment(_))
    }
}

/// A duration as the file would say it.
pub(super) fn shown_duration(duration: Duration) -> toml::Value {
    // humantime counts months of 30.44 days: 90 days would read "2months 29days 2h 52m 48s".
    let secs = duration.as_secs();
    if duration.subsec_nanos() == 0 && secs >= 31 * 86_400 && secs.is_multiple_of(86_400) {
        return toml::Value::String(format!("{}days", secs / 86_400));
    }
    toml::Value::String(humantime::format_duration(duration).to_string())
}
