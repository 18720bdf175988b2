//! The effective configuration as text, for `idemgate config check`: every key that
//! validation read, the value in effect and where it came from. It is recorded while
//! validating, so it lists exactly what the gateway runs with, defaults included. No
//! secret value ever enters it: a secret key shows its reference (`env:NAME`,
//! `file:PATH`) or `<redacted>` for a value given literally.

use std::fmt;

use super::origin::Origin;

/// What a secret key shows for a value given literally.
pub const REDACTED: &str = "<redacted>";

/// One key's effective value.
#[derive(Debug, Clone, PartialEq)]
pub enum Shown {
    /// A value, as TOML.
    Value(toml::Value),
    /// No value, only what that means (`(all)`, `(the scheme's own)`).
    Note(&'static str),
}

/// One line of the listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The dotted key, e.g. `sources.demo.tolerance`.
    pub key: String,
    /// Its effective value.
    pub shown: Shown,
    /// Where it came from.
    pub origin: Origin,
}

/// Every key validation read, in the order it read them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing(Vec<Entry>);

impl Listing {
    pub(crate) fn push(&mut self, key: &str, shown: Shown, origin: Origin) {
        self.0.push(Entry { key: key.to_owned(), shown, origin });
    }

    /// The entries.
    #[must_use]
    pub fn entries(&self) -> &[Entry] {
        &self.0
    }
}

/// How a secret reference is shown: `env:` and `file:` references as written (they name
/// where the secret is, not what it is), anything else as [`REDACTED`].
#[must_use]
pub fn reference(reference: &str) -> toml::Value {
    let named = reference.starts_with("env:") || reference.starts_with("file:");
    toml::Value::String(if named { reference.to_owned() } else { REDACTED.to_owned() })
}

/// The order of the sections in the listing, as in the sample file.
const SECTIONS: [&str; 8] = ["server", "store", "sources", "destinations", "worker", "proxy", "admin", "api"];

fn section(key: &str) -> usize {
    let first = key.split(['.', '[']).next().unwrap_or(key);
    SECTIONS.iter().position(|section| *section == first).unwrap_or(SECTIONS.len())
}

/// `key = value`, padded, then `# origin`: TOML with one dotted key per line, section by
/// section, each in the order validation read it.
impl fmt::Display for Listing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut entries: Vec<&Entry> = self.0.iter().collect();
        entries.sort_by_key(|entry| section(&entry.key));
        let lines: Vec<(String, &Origin)> = entries
            .into_iter()
            .map(|entry| {
                let value = match &entry.shown {
                    Shown::Value(value) => value.to_string(),
                    Shown::Note(note) => (*note).to_owned(),
                };
                (format!("{} = {value}", entry.key), &entry.origin)
            })
            .collect();
        let width = lines.iter().map(|(line, _)| line.chars().count()).filter(|n| *n <= 64).max().unwrap_or(0);
        for (line, origin) in lines {
            writeln!(f, "{line:<width$}  # {origin}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_secrets_are_redacted_and_references_shown() {
        assert_eq!(reference("env:HOOKS_SECRET"), toml::Value::String("env:HOOKS_SECRET".into()));
        assert_eq!(reference("file:secrets/a"), toml::Value::String("file:secrets/a".into()));
        assert_eq!(reference("whsec_abc"), toml::Value::String(REDACTED.into()));
        assert_eq!(reference("postgres://u:pw@h/db"), toml::Value::String(REDACTED.into()));
    }

    #[test]
    fn each_line_is_a_dotted_key_with_its_origin() {
        let mut listing = Listing::default();
        listing.push("sources.a.allowed_types", Shown::Note("(all)"), Origin::Default);
        listing.push("server.listen", Shown::Value("127.0.0.1:8080".into()), Origin::File);
        let text = listing.to_string();
        assert_eq!(text, "server.listen = \"127.0.0.1:8080\"  # file\nsources.a.allowed_types = (all)   # default\n");
    }
}
