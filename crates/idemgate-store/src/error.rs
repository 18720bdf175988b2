//! The store's errors, and the error a handler returns to abort its delivery.

use crate::{PgError, SqliteError};

/// What went wrong in the store. Messages never contain payloads or secrets.
///
/// A backend's own failures are nested in its variant ([`crate::SqliteError`],
/// [`crate::PgError`]), as sqlx nests its drivers' errors, with their own messages;
/// [`StoreError::kind`] answers the same neutral [`ErrorKind`] for either.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database was written by a newer idemgate whose schema this one does not know.
    #[error("database schema version {found} is newer than this build supports ({supported})")]
    NewerSchema {
        /// The version found in the file.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },
    /// What only the SQLite store fails with: its file, its statements, its lock.
    #[error(transparent)]
    Sqlite(#[from] SqliteError),
    /// What only the PostgreSQL store fails with: its statements and connections, its pool.
    #[error(transparent)]
    Postgres(#[from] PgError),
    /// A stored row does not have the shape this build expects.
    #[error("stored row is malformed: {0}")]
    Malformed(&'static str),
    /// A job filter asks for what the operation cannot do (replaying a waiting job, say).
    #[error("{0}")]
    Filter(&'static str),
    /// A maintenance command refused to run (the reason says why).
    #[error("store maintenance refused: {0}")]
    Maintenance(&'static str),
    /// The write ran but the transaction holding it could not be committed.
    #[error("the write could not be committed")]
    NotCommitted,
    /// The writer thread has stopped; no further writes are possible.
    #[error("the store's writer has stopped")]
    Unavailable,
    /// The store could not be opened yet (the server started without it and keeps trying).
    #[error("the store is not open yet")]
    NotOpen,
    /// The store's configuration cannot work (the reason says why, without secrets).
    #[error("store configuration: {0}")]
    Config(&'static str),
}

/// What kind of failure a [`StoreError`] is, the same for both backends, so that callers
/// decide (retry, answer 503, give up) without matching on a driver's message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A unique or primary key constraint refused a row.
    UniqueViolation,
    /// The transaction lost a race (serialization failure, deadlock, SQLite busy): running
    /// it again may succeed.
    SerializationFailure,
    /// The database cannot be reached or is shutting down.
    Unavailable,
    /// Anything else: a bug, a malformed row, a full disk, a refused configuration.
    Other,
}

impl StoreError {
    /// The backend-neutral kind of this error.
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Sqlite(err) => err.kind(),
            Self::Postgres(err) => err.kind(),
            Self::Unavailable | Self::NotOpen => ErrorKind::Unavailable,
            _ => ErrorKind::Other,
        }
    }
}

/// Returned by a handler to abort its delivery. Either way the transaction is rolled back
/// and no receipt is stored, so a later delivery of the same event starts afresh.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerError {
    /// Something went wrong (a bug, an unavailable resource): answered as failed, retryable.
    #[error("{0}")]
    Failed(String),
    /// A business or validation rule refuses this event: answered as refused (422). Since
    /// nothing is stored, the sender may correct it and deliver it again under the same
    /// identity.
    #[error("refused: {0}")]
    Refused(&'static str),
}

impl HandlerError {
    /// A failure with a bounded, payload-free message.
    pub fn new(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }
}
