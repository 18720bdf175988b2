//! What became of a delivery. Exactly one outcome per delivery: a rejection before the
//! store is touched, or one of applied / duplicate / conflict / failed from the store.
//! The HTTP edge maps each to exactly one status; this module knows nothing of HTTP.

use serde_json::Value;

use crate::{AuthError, BodyHash, form::FormError, json::JsonError};

/// The result of offering an authenticated, parsed delivery to the store.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// First time: the effect and the receipt were committed together. Carries the result
    /// the handler produced.
    Applied {
        /// The handler's result, now stored in the receipt.
        result: Value,
    },
    /// Same identity, same bytes: nothing new happened; carries the original result.
    Duplicate {
        /// The result stored in the receipt when the event was first applied.
        result: Value,
    },
    /// Same identity, other bytes: refused, the receipt is unchanged and the conflict is
    /// recorded for the operator.
    Conflict,
    /// The handler refused the event by a business or validation rule; everything was
    /// rolled back and nothing is stored, so a corrected delivery may follow.
    Refused {
        /// A bounded description, never payload text.
        reason: &'static str,
    },
    /// Something failed before the commit; everything was rolled back. Safe to retry.
    Failed {
        /// Why, as a bounded cause.
        cause: FailureCause,
    },
}

impl Outcome {
    /// A short stable name: `applied`, `duplicate`, `conflict`, `failed`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Applied { .. } => "applied",
            Self::Duplicate { .. } => "duplicate",
            Self::Conflict => "conflict",
            Self::Refused { .. } => "refused",
            Self::Failed { .. } => "failed",
        }
    }
}

/// What a delivery is when its identity already has a receipt: the stored body hash decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// The same bytes again: answered with the stored result, nothing new happens.
    Duplicate,
    /// Other bytes under the same identity: refused, and recorded for the operator.
    Conflict,
}

impl Repeat {
    /// Judges `offered` against the receipt's `stored` body hash.
    #[must_use]
    pub fn judge(stored: &[u8], offered: &BodyHash) -> Self {
        if stored == offered.0 { Self::Duplicate } else { Self::Conflict }
    }
}

/// Why a delivery failed before its commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureCause {
    /// The handler returned an error or panicked; its effect was rolled back.
    Handler,
    /// The database refused or failed the transaction (I/O, full disk, lock timeout).
    Store,
    /// The store is not running (its writer has stopped).
    Unavailable,
}

impl FailureCause {
    /// A short stable code, usable as a metric label.
    #[must_use]
    pub fn reason(self) -> &'static str {
        match self {
            Self::Handler => "handler",
            Self::Store => "store",
            Self::Unavailable => "unavailable",
        }
    }
}

/// A delivery refused before it reached the store. Nothing is stored for a rejection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
    /// The body is larger than the source's limit (by Content-Length or by bytes read).
    #[error("body exceeds {limit} bytes")]
    BodyTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The signature, its headers or its timestamp did not hold.
    #[error("authentication failed: {0}")]
    Authentication(#[from] AuthError),
    /// The authenticated body is not strict JSON.
    #[error("invalid json: {0}")]
    InvalidJson(#[from] JsonError),
    /// The authenticated body of a form source is not a strict form.
    #[error("invalid form: {0}")]
    InvalidForm(#[from] FormError),
    /// The JSON is well formed but breaks the source's event contract.
    #[error("event contract violated: {reason}")]
    Contract {
        /// A bounded description, never payload text.
        reason: &'static str,
        /// The field the contract could not use, when it is one the source's
        /// configuration names: told to the sender so it can fix its side.
        field: Option<Field>,
    },
}

/// A field of an event that a source's contract needs, and where the source's
/// configuration says it is. Its value is never part of it: a refusal names the field,
/// not what the sender put there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// What the field is for, from a fixed set: [`Field::IDENTITY`] or [`Field::EVENT_TYPE`].
    pub name: &'static str,
    /// Where it is looked for.
    pub location: Location,
}

impl Field {
    /// The event's stable identity.
    pub const IDENTITY: &'static str = "identity";
    /// The event's type.
    pub const EVENT_TYPE: &'static str = "event_type";
}

/// Where a field is looked for, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// This request header (its configured name).
    Header(String),
    /// This JSON pointer (RFC 6901) into the body.
    Pointer(String),
}

impl Rejection {
    /// A short stable code, usable as a metric label.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::BodyTooLarge { .. } => "body_size",
            Self::Authentication(err) => err.reason(),
            Self::InvalidJson(err) => err.reason(),
            Self::InvalidForm(err) => err.reason(),
            Self::Contract { .. } => "event_contract",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_repeat_as_duplicate_other_bytes_conflict() {
        let first = BodyHash::of(br#"{"id":1}"#);
        assert_eq!(Repeat::judge(&first.0, &BodyHash::of(br#"{"id":1}"#)), Repeat::Duplicate);
        assert_eq!(Repeat::judge(&first.0, &BodyHash::of(br#"{"id": 1}"#)), Repeat::Conflict);
        assert_eq!(Repeat::judge(&first.0[..31], &first), Repeat::Conflict);
    }
}
