//! Who sent an event and which event it is: the key a receipt is unique on.
//!
//! A [`SourceName`] comes from configuration (the route and its secrets), never from a
//! request field; an [`Identity`] is the event's stable identity as the source's scheme
//! defines it, never a per-attempt delivery id.

use std::fmt;

/// Longest accepted identity, in bytes. Identities are stored and indexed, so they are bounded.
pub const MAX_IDENTITY_LEN: usize = 255;

/// A configured sender, e.g. `stripe` or `demo-source`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceName(String);

impl SourceName {
    /// Accepts `[a-z0-9][a-z0-9_-]{0,62}`: source names appear in routes, metrics and logs.
    pub fn new(name: impl Into<String>) -> Result<Self, InvalidName> {
        let name = name.into();
        let valid_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
        let first_ok = name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit());
        if first_ok && name.len() <= 63 && name.chars().all(valid_char) {
            Ok(Self(name))
        } else {
            Err(InvalidName::Source)
        }
    }

    /// The name as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SourceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The stable identity of an event within its source.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Identity(String);

impl Identity {
    /// Accepts 1..=[`MAX_IDENTITY_LEN`] bytes of printable ASCII without spaces.
    pub fn new(identity: impl Into<String>) -> Result<Self, InvalidName> {
        let identity = identity.into();
        let printable = identity.bytes().all(|b| b.is_ascii_graphic());
        if !identity.is_empty() && identity.len() <= MAX_IDENTITY_LEN && printable {
            Ok(Self(identity))
        } else {
            Err(InvalidName::Identity)
        }
    }

    /// The identity as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The key a receipt is unique on: (source, identity).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReceiptKey {
    /// The configured source.
    pub source: SourceName,
    /// The event's stable identity within the source.
    pub identity: Identity,
}

/// A name or identity that does not fit its format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidName {
    /// A source name outside `[a-z0-9][a-z0-9_-]{0,62}`.
    #[error("source name must match [a-z0-9][a-z0-9_-]{{0,62}}")]
    Source,
    /// An identity that is empty, too long or not printable ASCII.
    #[error("event identity must be 1 to 255 printable ascii characters")]
    Identity,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_names_are_bounded_and_lowercase() {
        assert!(SourceName::new("demo-source").is_ok());
        assert!(SourceName::new("stripe_live2").is_ok());
        assert!(SourceName::new("").is_err());
        assert!(SourceName::new("-x").is_err());
        assert!(SourceName::new("Stripe").is_err());
        assert!(SourceName::new("a".repeat(64)).is_err());
    }

    #[test]
    fn identities_are_printable_and_bounded() {
        assert!(Identity::new("evt-1").is_ok());
        assert!(Identity::new("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W").is_ok());
        assert!(Identity::new("").is_err());
        assert!(Identity::new("a b").is_err());
        assert!(Identity::new("é").is_err());
        assert!(Identity::new("a".repeat(255)).is_ok());
        assert!(Identity::new("a".repeat(256)).is_err());
    }
}
