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

/// The keys the environment set, each with its variable, in the order applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides(Vec<(Vec<String>, String)>);

impl Overrides {
    /// Notes that `variable` set the key at `path`.
    pub(crate) fn push(&mut self, path: Vec<String>, variable: &str) {
        self.0.push((path, variable.to_owned()));
    }

    /// Whether some variable set exactly `path`.
    pub(crate) fn sets(&self, path: &[&str]) -> bool {
        self.0.iter().any(|(set, _)| set.iter().map(String::as_str).eq(path.iter().copied()))
    }

    /// The variable that set `path`, a table above it or a key below it (the last one
    /// applied wins).
    pub(crate) fn variable(&self, path: &[&str]) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(set, _)| set.iter().zip(path).all(|(a, b)| a == b))
            .map(|(_, variable)| variable.as_str())
    }

    /// The variable that set `path` or created a table on the way to it, with the full
    /// key it set.
    pub(crate) fn creator(&self, path: &[&str]) -> Option<(&str, String)> {
        self.0
            .iter()
            .rev()
            .find(|(set, _)| set.len() >= path.len() && set.iter().zip(path).all(|(a, b)| a == b))
            .map(|(set, variable)| (variable.as_str(), set.join(".")))
    }

    /// Where the value at the dotted `key` came from; `given` says whether the file or
    /// the environment set it at all. List indexes (`secrets[0]`, `proxy[1]`) name their
    /// list, which only the file can hold piecewise.
    #[must_use]
    pub fn origin(&self, key: &str, given: bool) -> Origin {
        if !given {
            return Origin::Default;
        }
        let path: Vec<&str> = key.split('.').map(|part| part.split('[').next().unwrap_or(part)).collect();
        match self.variable(&path) {
            Some(variable) => Origin::Environment(variable.to_owned()),
            None => Origin::File,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_set_below_above_or_at_its_path_comes_from_that_variable() {
        let mut overrides = Overrides::default();
        overrides.push(vec!["server".into(), "listen".into()], "IDEMGATE_SERVER__LISTEN");
        overrides.push(vec!["sources".into(), "a".into(), "identity".into()], "IDEMGATE_SOURCES__A__IDENTITY");
        assert_eq!(overrides.origin("server.listen", true), Origin::Environment("IDEMGATE_SERVER__LISTEN".into()));
        assert_eq!(overrides.origin("server.body_timeout", true), Origin::File);
        assert_eq!(overrides.origin("server.body_timeout", false), Origin::Default);
        assert_eq!(
            overrides.origin("sources.a.identity", true),
            Origin::Environment("IDEMGATE_SOURCES__A__IDENTITY".into())
        );
        assert_eq!(overrides.origin("sources.a.secrets[0]", true), Origin::File);
        assert_eq!(overrides.creator(&["server"]), Some(("IDEMGATE_SERVER__LISTEN", "server.listen".to_owned())));
        assert_eq!(overrides.creator(&["server", "tls"]), None);
    }
}
