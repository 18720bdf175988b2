//! Applications: one customer of the user's, owning endpoints and messages. A uid is
//! unique among live applications; a deleted application's endpoints and messages are
//! not served.

use super::Metadata;

/// An application as created or replaced (`ApplicationIn`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApplicationIn {
    /// Its name.
    pub name: String,
    /// The caller's own name for it, usable in paths instead of its id.
    pub uid: Option<String>,
    /// Free text → text pairs.
    pub metadata: Metadata,
    /// Most messages per second its endpoints get by default.
    pub throttle_rate: Option<u16>,
}

/// A partial change (`ApplicationPatch`): `None` leaves a field as it is; `Some(None)`
/// clears a nullable one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApplicationPatch {
    /// A new name.
    pub name: Option<String>,
    /// A new uid, or none.
    pub uid: Option<Option<String>>,
    /// New metadata.
    pub metadata: Option<Metadata>,
    /// A new rate, or none.
    pub throttle_rate: Option<Option<u16>>,
}

impl ApplicationPatch {
    /// `app` with this patch applied.
    pub(crate) fn apply(self, app: &Application) -> ApplicationIn {
        ApplicationIn {
            name: self.name.unwrap_or_else(|| app.name.clone()),
            uid: self.uid.unwrap_or_else(|| app.uid.clone()),
            metadata: self.metadata.unwrap_or_else(|| app.metadata.clone()),
            throttle_rate: self.throttle_rate.unwrap_or(app.throttle_rate),
        }
    }
}

/// A stored, live application (`ApplicationOut`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Application {
    /// `app_…`.
    pub id: String,
    /// See [`ApplicationIn`].
    pub uid: Option<String>,
    /// See [`ApplicationIn`].
    pub name: String,
    /// See [`ApplicationIn`].
    pub metadata: Metadata,
    /// See [`ApplicationIn`].
    pub throttle_rate: Option<u16>,
    /// When it was created, unix milliseconds.
    pub created_at_ms: i64,
    /// When it last changed, unix milliseconds.
    pub updated_at_ms: i64,
}

/// The columns both backends select for an [`Application`], in its fields' order.
pub(crate) const COLUMNS: &str = "id, uid, name, metadata, throttle_rate, created_at, updated_at";

/// How an application's deletion goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deletion {
    /// Marked deleted (its uid is free again); its rows stay for the record.
    Soft,
    /// Its rows (endpoints, secrets, messages, itself) are removed.
    Hard,
}

/// The reason a job of a deleted application's endpoint ends with.
pub(crate) const APPLICATION_DELETED: &str = "application deleted";
