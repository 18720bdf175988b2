//! The rules for the outbound API's names (`docs/design/outbound-api.md` §1.3, from Svix's
//! `validate_limited_str` and `BaseUid` in `core/types/mod.rs`), and the one error every
//! refused field of a request becomes: a [`FieldError`] carrying the field's location, which
//! the API answers as one item of Svix's `HTTPValidationError` (`loc`, `msg`, `type`).
//!
//! - uid (application, endpoint) and `eventId` (a message's uid): 1 to 256 bytes of
//!   `[a-zA-Z0-9-_.]`, and not starting with the id's prefix (`app_`, `ep_`, `msg_`), so that
//!   a path segment is an id or a uid, never both (`invalid_uid_prefix`);
//! - event type name: the same 256 / pattern rule;
//! - channel: the same pattern, up to 128 bytes.

use std::fmt;

use super::id::{ApplicationId, EndpointId, MessageId};

/// Where a field is in a request: Svix's `loc`, e.g. `["body","uid"]`, `["query","limit"]`,
/// `["body","channels","[0]"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loc(Vec<String>);

impl Loc {
    /// A field of the JSON body.
    #[must_use]
    pub fn body(field: &str) -> Self {
        Self(vec!["body".to_owned(), field.to_owned()])
    }

    /// A query parameter.
    #[must_use]
    pub fn query(name: &str) -> Self {
        Self(vec!["query".to_owned(), name.to_owned()])
    }

    /// A path parameter.
    #[must_use]
    pub fn path(name: &str) -> Self {
        Self(vec!["path".to_owned(), name.to_owned()])
    }

    /// A request header.
    #[must_use]
    pub fn header(name: &str) -> Self {
        Self(vec!["header".to_owned(), name.to_owned()])
    }

    /// The member `key` of this object (e.g. one header of `headers`).
    #[must_use]
    pub fn key(&self, key: &str) -> Self {
        let mut parts = self.0.clone();
        parts.push(key.to_owned());
        Self(parts)
    }

    /// Item `index` of this list, written `[index]` as Svix writes it.
    #[must_use]
    pub fn item(&self, index: usize) -> Self {
        self.key(&format!("[{index}]"))
    }

    /// The parts, outermost first.
    #[must_use]
    pub fn parts(&self) -> &[String] {
        &self.0
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("."))
    }
}

/// Why a field's value is refused. Never carries the value: a header value or URL may be
/// a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rule {
    /// An empty string where at least one character is required.
    #[error("String must be at least one character")]
    Empty,
    /// Longer than allowed.
    #[error("String too long (at most {max} bytes)")]
    TooLong {
        /// The most bytes allowed.
        max: usize,
    },
    /// A character outside `[a-zA-Z0-9-_.]`.
    #[error("String must match the following pattern: [a-zA-Z0-9\\-_.].")]
    Pattern,
    /// A uid starting with its kind's id prefix.
    #[error("Uids are not allowed to have the same prefix as the ID. Prefix with _?")]
    InvalidUidPrefix {
        /// The prefix it may not start with.
        prefix: &'static str,
    },
    /// A list with fewer items than required.
    #[error("List must have at least {min} items")]
    TooFewItems {
        /// The fewest items allowed.
        min: usize,
    },
    /// A list with more items than allowed.
    #[error("List must have at most {max} items")]
    TooManyItems {
        /// The most items allowed.
        max: usize,
    },
    /// An endpoint header the API refuses; see [`super::headers`].
    #[error(transparent)]
    Header(#[from] super::headers::HeaderError),
    /// An endpoint URL the API refuses; see [`super::address`].
    #[error(transparent)]
    Url(#[from] super::address::UrlError),
    /// A secret that is not `whsec_` + base64 of 24 to 64 bytes; see [`super::sealing`].
    #[error("Secret must be whsec_ followed by the base64 of 24 to 64 bytes")]
    Secret,
}

impl Rule {
    /// A short stable code, usable as a metric label (`invalid_uid_prefix` as Svix names it).
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Self::Empty | Self::TooLong { .. } => "length",
            Self::Pattern => "illegal_string_pattern",
            Self::InvalidUidPrefix { .. } => "invalid_uid_prefix",
            Self::TooFewItems { .. } | Self::TooManyItems { .. } => "length",
            Self::Header(_) => "header",
            Self::Url(err) => err.code(),
            Self::Secret => "secret",
        }
    }
}

/// One refused field: where it is and why. The API answers it as a `ValidationErrorItem`
/// `{"loc": loc.parts(), "msg": rule.to_string(), "type": "value_error"}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{loc}: {rule}")]
pub struct FieldError {
    /// Where the field is.
    pub loc: Loc,
    /// What it breaks.
    pub rule: Rule,
}

impl FieldError {
    /// Svix's `type` of every validation item.
    pub const TYPE: &'static str = "value_error";

    /// `rule` broken at `loc`.
    #[must_use]
    pub fn new(loc: Loc, rule: impl Into<Rule>) -> Self {
        Self { loc, rule: rule.into() }
    }
}

/// The longest uid, event type name or `eventId`, in bytes.
pub const MAX_NAME_LEN: usize = 256;
/// The longest channel, in bytes.
pub const MAX_CHANNEL_LEN: usize = 128;

/// Svix's `validate_limited_str` with a maximum: 1 to `max` bytes of `[a-zA-Z0-9-_.]`.
fn limited(text: &str, max: usize) -> Result<(), Rule> {
    if text.is_empty() {
        Err(Rule::Empty)
    } else if text.len() > max {
        Err(Rule::TooLong { max })
    } else if !text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
        Err(Rule::Pattern)
    } else {
        Ok(())
    }
}

macro_rules! checked_name {
    ($(#[$doc:meta])* $name:ident, $check:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// Checks `text`; a refusal names `loc`.
            pub fn parse(text: &str, loc: Loc) -> Result<Self, FieldError> {
                let check: fn(&str) -> Result<(), Rule> = $check;
                check(text).map(|()| Self(text.to_owned())).map_err(|rule| FieldError::new(loc, rule))
            }

            /// The checked text.
            #[must_use]
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

/// A uid may not start with its kind's prefix; the other rules first, as Svix reports them.
fn uid(text: &str, prefix: &'static str) -> Result<(), Rule> {
    limited(text, MAX_NAME_LEN)?;
    if text.starts_with(prefix) { Err(Rule::InvalidUidPrefix { prefix }) } else { Ok(()) }
}

checked_name!(
    /// An application's uid: the caller's own name for it, usable in paths instead of its id.
    ApplicationUid,
    |text| uid(text, ApplicationId::PREFIX)
);
checked_name!(
    /// An endpoint's uid, unique within its application.
    EndpointUid,
    |text| uid(text, EndpointId::PREFIX)
);
checked_name!(
    /// A message's `eventId` (Svix's message uid), unique within its application.
    EventId,
    |text| uid(text, MessageId::PREFIX)
);
checked_name!(
    /// An event type's name (`user.signup`), how event types are addressed.
    EventTypeName,
    |text| limited(text, MAX_NAME_LEN)
);
checked_name!(
    /// A channel a message is sent on and an endpoint listens to.
    Channel,
    |text| limited(text, MAX_CHANNEL_LEN)
);

/// A list field (`channels`, `eventTypes`) of `min..=max` names, each checked by `parse`
/// at its index (`["body","channels","[1]"]`); duplicates are dropped, order is kept.
pub fn parse_list<T: PartialEq>(
    items: &[String],
    loc: &Loc,
    (min, max): (usize, usize),
    parse: impl Fn(&str, Loc) -> Result<T, FieldError>,
) -> Result<Vec<T>, FieldError> {
    if items.len() < min {
        return Err(FieldError::new(loc.clone(), Rule::TooFewItems { min }));
    }
    let mut parsed = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let value = parse(item, loc.item(index))?;
        if !parsed.contains(&value) {
            parsed.push(value);
        }
    }
    if parsed.len() > max {
        return Err(FieldError::new(loc.clone(), Rule::TooManyItems { max }));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule<T>(result: Result<T, FieldError>) -> Option<Rule> {
        result.err().map(|err| err.rule)
    }

    #[test]
    fn names_need_one_to_the_maximum_bytes_of_the_pattern() {
        let loc = || Loc::body("name");
        assert!(EventTypeName::parse("user.signup", loc()).is_ok());
        assert!(EventTypeName::parse("A-z_0.9", loc()).is_ok());
        assert_eq!(rule(EventTypeName::parse("", loc())), Some(Rule::Empty));
        assert!(EventTypeName::parse(&"a".repeat(256), loc()).is_ok());
        assert_eq!(rule(EventTypeName::parse(&"a".repeat(257), loc())), Some(Rule::TooLong { max: 256 }));
        for bad in ["user signup", "user/signup", "é", "a:b", "a\nb"] {
            assert_eq!(rule(EventTypeName::parse(bad, loc())), Some(Rule::Pattern), "{bad:?}");
        }
        assert!(Channel::parse(&"c".repeat(128), loc()).is_ok());
        assert_eq!(rule(Channel::parse(&"c".repeat(129), loc())), Some(Rule::TooLong { max: 128 }));
    }

    #[test]
    fn a_uid_may_not_start_with_its_kinds_id_prefix() {
        fn prefix<T>(result: Result<T, FieldError>) -> Option<&'static str> {
            result.err().map(|err| err.rule.code())
        }
        assert_eq!(prefix(ApplicationUid::parse("app_mine", Loc::body("uid"))), Some("invalid_uid_prefix"));
        assert_eq!(prefix(EndpointUid::parse("ep_mine", Loc::body("uid"))), Some("invalid_uid_prefix"));
        assert_eq!(prefix(EventId::parse("msg_mine", Loc::body("eventId"))), Some("invalid_uid_prefix"));
        // Another kind's prefix, or the prefix elsewhere, is fine.
        assert!(ApplicationUid::parse("ep_mine", Loc::body("uid")).is_ok());
        assert!(EventId::parse("_msg_mine", Loc::body("eventId")).is_ok());
        assert!(EndpointUid::parse("my-app_ep_", Loc::body("uid")).is_ok());
        // The pattern is checked first, as Svix does.
        assert_eq!(rule(ApplicationUid::parse("app_ x", Loc::body("uid"))), Some(Rule::Pattern));
    }

    #[test]
    fn the_error_names_the_fields_location_and_never_its_value() {
        let err = Channel::parse("secret value", Loc::body("channels").item(2)).err();
        let err = err.unwrap_or_else(|| unreachable!());
        assert_eq!(err.loc.parts(), ["body", "channels", "[2]"]);
        assert!(!err.to_string().contains("secret"));
        assert_eq!(Loc::query("limit").parts(), ["query", "limit"]);
        assert_eq!(Loc::body("headers").key("X-Foo").to_string(), "body.headers.X-Foo");
    }

    #[test]
    fn lists_check_each_item_at_its_index_and_their_size() {
        let loc = Loc::body("channels");
        let list = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let ok = parse_list(&list(&["a", "b", "a"]), &loc, (1, 2), Channel::parse);
        assert_eq!(ok.map(|v| v.len()), Ok(2));
        let bad = parse_list(&list(&["a", "b c"]), &loc, (1, 5), Channel::parse).err();
        assert_eq!(bad.map(|e| e.loc), Some(loc.item(1)));
        let empty = parse_list(&[], &loc, (1, 5), Channel::parse).err();
        assert_eq!(empty.map(|e| e.rule), Some(Rule::TooFewItems { min: 1 }));
        let many = parse_list(&list(&["a", "b", "c"]), &loc, (1, 2), Channel::parse).err();
        assert_eq!(many.map(|e| e.rule), Some(Rule::TooManyItems { max: 2 }));
    }
}
