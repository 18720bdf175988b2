//! Where a configuration value came from: the file, an `IDEMGATE_*` variable, or the
//! default. `idemgate config check` shows it beside each value, and an error about a key
//! an override created names the variable, since the file does not have that key.

use std::fmt;

/// Where one value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Nobody set it: the default applies.
    Default,
    /// The configuration file.
    File,
    /// This environment variable.
    Environment(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::File => f.write_str("file"),
            Self::Environment(name) => write!(f, "environment {name}"),
        }
    }
}

/// What the file holds and which keys the environment set, each with its variable, in the
/// order applied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Origins {
    file: toml::Table,
    overrides: Vec<(Vec<String>, String)>,
}

impl Origins {
    /// The origins of a configuration read from `file` (before any override).
    pub(crate) fn new(file: toml::Table) -> Self {
        Self { file, overrides: Vec::new() }
    }

    /// Notes that `variable` set the key at `path`.
    pub(crate) fn push(&mut self, path: Vec<String>, variable: &str) {
        self.overrides.push((path, variable.to_owned()));
    }

    /// Whether some variable set exactly `path`.
    pub(crate) fn sets(&self, path: &[&str]) -> bool {
        self.overrides.iter().any(|(set, _)| set.iter().map(String::as_str).eq(path.iter().copied()))
    }

    /// The variable that set `path`, a table above it or a key below it (the last one
    /// applied wins).
    fn variable(&self, path: &[&str]) -> Option<&str> {
        self.overrides
            .iter()
            .rev()
            .find(|(set, _)| set.iter().zip(path).all(|(a, b)| a == b))
            .map(|(_, variable)| variable.as_str())
    }

    /// The variable that set `path` or created a table on the way to it, with the full
    /// key it set.
    pub(crate) fn creator(&self, path: &[&str]) -> Option<(&str, String)> {
        self.overrides
            .iter()
            .rev()
            .find(|(set, _)| set.len() >= path.len() && set.iter().zip(path).all(|(a, b)| a == b))
            .map(|(set, variable)| (variable.as_str(), set.join(".")))
    }

    /// Whether the file has a value at `path` (table keys only).
    pub(crate) fn in_file(&self, path: &[&str]) -> bool {
        let mut table = &self.file;
        for (i, key) in path.iter().enumerate() {
            match table.get(*key) {
                None => return false,
                Some(toml::Value::Table(inner)) => table = inner,
                Some(_) => return i + 1 == path.len(),
            }
        }
        true
    }

    /// Where the value at the dotted `key` came from. List indexes (`secrets[0]`,
    /// `proxy[1].prefix`) are looked up in the file, which alone can hold lists of tables.
    #[must_use]
    pub fn origin(&self, key: &str) -> Origin {
        let path: Vec<&str> = key.split('.').map(|part| part.split('[').next().unwrap_or(part)).collect();
        if let Some(variable) = self.variable(&path) {
            return Origin::Environment(variable.to_owned());
        }
        if self.file_has(key) { Origin::File } else { Origin::Default }
    }

    /// Whether the file holds `key`, walking list indexes too.
    fn file_has(&self, key: &str) -> bool {
        let mut node: Option<&toml::Value> = None;
        let mut table = Some(&self.file);
        for part in key.split('.') {
            let (name, indexes) = part.split_once('[').map_or((part, ""), |(name, rest)| (name, rest));
            node = table.and_then(|t| t.get(name));
            for index in indexes.split('[').filter(|i| !i.is_empty()) {
                let index: usize = index.trim_end_matches(']').parse().unwrap_or(usize::MAX);
                node = node.and_then(toml::Value::as_array).and_then(|items| items.get(index));
            }
            table = node.and_then(toml::Value::as_table);
        }
        node.is_some()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_key_comes_from_the_variable_that_set_it_or_a_table_around_it_else_the_file_or_the_default() {
        let file = "[server]\nlisten = \"x\"\n[sources.a]\nsecrets = [\"s\"]\n[[proxy]]\nprefix = \"/api\"\n";
        let mut origins = Origins::new(toml::from_str(file).unwrap());
        origins.push(vec!["server".into(), "body_timeout".into()], "IDEMGATE_SERVER__BODY_TIMEOUT");
        origins.push(vec!["sources".into(), "a".into(), "identity".into()], "IDEMGATE_SOURCES__A__IDENTITY");
        let env = |name: &str| Origin::Environment(name.into());
        assert_eq!(origins.origin("server.body_timeout"), env("IDEMGATE_SERVER__BODY_TIMEOUT"));
        assert_eq!(origins.origin("server.listen"), Origin::File);
        assert_eq!(origins.origin("server.shutdown_grace"), Origin::Default);
        assert_eq!(origins.origin("sources.a.identity"), env("IDEMGATE_SOURCES__A__IDENTITY"));
        assert_eq!(origins.origin("sources.a.secrets"), Origin::File);
        assert_eq!(origins.origin("sources.a.secrets[0]"), Origin::File);
        assert_eq!(origins.origin("sources.a.secrets[1]"), Origin::Default);
        assert_eq!(origins.origin("proxy[0].prefix"), Origin::File);
        assert_eq!(origins.origin("proxy[0].lock"), Origin::Default);
        assert_eq!(origins.creator(&["server"]), Some(("IDEMGATE_SERVER__BODY_TIMEOUT", "server.body_timeout".into())));
        assert_eq!(origins.creator(&["server", "tls"]), None);
        assert!(origins.in_file(&["sources", "a"]) && !origins.in_file(&["sources", "b"]));
    }
}
