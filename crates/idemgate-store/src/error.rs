//! The store's errors, and the error a handler returns to abort its delivery.

use std::path::PathBuf;

/// What went wrong in the store. Messages never contain payloads or secrets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file could not be opened or configured.
    #[error("cannot open database {path}: {source}")]
    Open {
        /// The file that was being opened.
        path: PathBuf,
        /// The underlying SQLite error.
        source: rusqlite::Error,
    },
    /// The database was written by a newer idemgate whose schema this one does not know.
    #[error("database schema version {found} is newer than this build supports ({supported})")]
    NewerSchema {
        /// The version found in the file.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },
    /// SQLite did not accept WAL mode, so a commit could not be made durable as promised.
    #[error("database refused journal_mode=wal (got {0})")]
    NoWal(String),
    /// A statement failed.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A stored row does not have the shape this build expects.
    #[error("stored row is malformed: {0}")]
    Malformed(&'static str),
    /// A maintenance command refused to run (the reason says why).
    #[error("store maintenance refused: {0}")]
    Maintenance(&'static str),
    /// The write ran but the transaction holding it could not be committed.
    #[error("the write could not be committed")]
    NotCommitted,
    /// The writer thread has stopped; no further writes are possible.
    #[error("the store's writer has stopped")]
    Unavailable,
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

impl From<rusqlite::Error> for HandlerError {
    fn from(err: rusqlite::Error) -> Self {
        Self::Failed(format!("database error in handler: {err}"))
    }
}
