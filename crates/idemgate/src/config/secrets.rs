//! Where secrets come from: `env:NAME`, `file:PATH`, or (for samples only) a literal.
//! The value is resolved here once and never printed, logged or put in an error.

use std::path::Path;

use super::{ConfigError, ConfigWarning};

/// Resolves one secret reference found at `key`. Literals are accepted with a warning.
pub fn resolve(
    key: &str,
    reference: &str,
    base: &Path,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<String, ConfigError> {
    if let Some(name) = reference.strip_prefix("env:") {
        return std::env::var(name)
            .map_err(|_| ConfigError::new(key, format!("environment variable {name} is not set")));
    }
    if let Some(file) = reference.strip_prefix("file:") {
        let path = super::paths::resolve(base, file);
        let text = std::fs::read_to_string(&path).map_err(|err| {
            ConfigError::new(key, format!("cannot read secret file {}: {}", path.display(), err.kind()))
        })?;
        return Ok(text.trim_end_matches(['\r', '\n']).to_owned());
    }
    if reference.is_empty() {
        return Err(ConfigError::new(key, "secret is empty"));
    }
    warnings.push(ConfigWarning(format!(
        "{key}: secret given literally in the config file; use env:NAME or file:PATH outside samples"
    )));
    Ok(reference.to_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn env_file_and_literal_references() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.txt"), "from-file\n").unwrap();
        let mut warnings = Vec::new();
        assert_eq!(resolve("k", "file:s.txt", dir.path(), &mut warnings).unwrap(), "from-file");
        assert!(warnings.is_empty());
        assert_eq!(resolve("k", "plain", dir.path(), &mut warnings).unwrap(), "plain");
        assert_eq!(warnings.len(), 1);
        assert!(!warnings[0].0.contains("plain"), "a warning must not show the secret");
        let missing = resolve("k", "env:IDEMGATE_TEST_SURELY_UNSET", dir.path(), &mut warnings).unwrap_err();
        assert_eq!(missing.to_string(), "k: environment variable IDEMGATE_TEST_SURELY_UNSET is not set");
    }
}
