//! Event types: addressed by name; a delete archives unless it expunges.

/// An event type as created or replaced (`EventTypeIn` without the name, which the path
/// or the caller gives apart).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventTypeIn {
    /// What it means.
    pub description: String,
    /// Archived: still accepted, hidden from lists unless asked for.
    pub archived: bool,
    /// Deprecated: shown as such.
    pub deprecated: bool,
    /// A feature flag that hides it.
    pub feature_flag: Option<String>,
    /// Its JSON schemas by version, as the JSON text of one object.
    pub schemas: Option<String>,
}

/// A partial change (`EventTypePatch`): `None` leaves a field; `Some(None)` clears it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventTypePatch {
    /// A new description.
    pub description: Option<String>,
    /// Archived or not.
    pub archived: Option<bool>,
    /// Deprecated or not.
    pub deprecated: Option<bool>,
    /// A new flag, or none.
    pub feature_flag: Option<Option<String>>,
    /// New schemas, or none.
    pub schemas: Option<Option<String>>,
}

impl EventTypePatch {
    /// `stored` with this patch applied.
    pub(crate) fn apply(self, stored: &EventType) -> EventTypeIn {
        EventTypeIn {
            description: self.description.unwrap_or_else(|| stored.description.clone()),
            archived: self.archived.unwrap_or(stored.archived),
            deprecated: self.deprecated.unwrap_or(stored.deprecated),
            feature_flag: self.feature_flag.unwrap_or_else(|| stored.feature_flag.clone()),
            schemas: self.schemas.unwrap_or_else(|| stored.schemas.clone()),
        }
    }
}

/// A stored event type (`EventTypeOut`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventType {
    /// Its name (`user.signup`).
    pub name: String,
    /// See [`EventTypeIn`].
    pub description: String,
    /// See [`EventTypeIn`].
    pub archived: bool,
    /// See [`EventTypeIn`].
    pub deprecated: bool,
    /// See [`EventTypeIn`].
    pub feature_flag: Option<String>,
    /// See [`EventTypeIn`].
    pub schemas: Option<String>,
    /// When it was created, unix milliseconds.
    pub created_at_ms: i64,
    /// When it last changed, unix milliseconds.
    pub updated_at_ms: i64,
}

impl EventType {
    /// `input` stored under `name`.
    pub(crate) fn of(name: String, input: EventTypeIn, created_at_ms: i64, updated_at_ms: i64) -> Self {
        let EventTypeIn { description, archived, deprecated, feature_flag, schemas } = input;
        Self { name, description, archived, deprecated, feature_flag, schemas, created_at_ms, updated_at_ms }
    }
}

/// The columns both backends select for an [`EventType`], in its fields' order.
pub(crate) const COLUMNS: &str =
    "name, description, archived, deprecated, feature_flag, schemas, created_at, updated_at";

/// How a delete goes: archived (Svix's default), or removed (`expunge=true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventTypeDeletion {
    /// Marked archived.
    Archive,
    /// Removed.
    Expunge,
}
