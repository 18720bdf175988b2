//! What only SQLite fails with, nested in [`StoreError::Sqlite`] (as sqlx nests its
//! drivers' errors), so that the neutral root names neither driver nor file locks.

use std::path::PathBuf;

use super::Holders;
use crate::{ErrorKind, HandlerError, StoreError};

/// A failure of the SQLite store. Messages never contain payloads or secrets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SqliteError {
    /// The database file could not be opened or configured.
    #[error("cannot open database {path}: {cause}")]
    Open {
        /// The file that was being opened.
        path: PathBuf,
        /// The underlying SQLite error. The message says it, so it is not also a
        /// `source()`: an error chain printed whole (anyhow's `{:#}`) would repeat it.
        cause: rusqlite::Error,
    },
    /// SQLite did not accept WAL mode, so a commit could not be made durable as promised.
    #[error("database refused journal_mode=wal (got {0})")]
    NoWal(String),
    /// A statement failed. The message says SQLite's error, so it is not also a
    /// `source()` (see [`SqliteError::Open`]).
    #[error("database error: {0}")]
    Statement(rusqlite::Error),
    /// `restore` refused: processes have the store open for writing.
    #[error(
        "the store is in use by {0}; stop every idemgate process on it (serve, worker, commands) and restore again"
    )]
    InUse(Holders),
    /// The store is being restored; it can be opened once the restore has finished.
    #[error("the store is being restored; it opens once the restore has finished")]
    Restoring,
    /// The writers' lock file beside the store could not be opened or locked.
    #[error("cannot lock {path}: {source}")]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl SqliteError {
    /// The backend-neutral kind of this error.
    pub(crate) fn kind(&self) -> ErrorKind {
        match self {
            Self::Statement(err) | Self::Open { cause: err, .. } => statement_kind(err),
            Self::Restoring | Self::Lock { .. } => ErrorKind::Unavailable,
            Self::NoWal(_) | Self::InUse(_) => ErrorKind::Other,
        }
    }
}

fn statement_kind(err: &rusqlite::Error) -> ErrorKind {
    use rusqlite::ffi::{self, ErrorCode};
    let rusqlite::Error::SqliteFailure(failure, _) = err else { return ErrorKind::Other };
    match failure.code {
        ErrorCode::ConstraintViolation
            if matches!(failure.extended_code, ffi::SQLITE_CONSTRAINT_PRIMARYKEY | ffi::SQLITE_CONSTRAINT_UNIQUE) =>
        {
            ErrorKind::UniqueViolation
        }
        ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => ErrorKind::SerializationFailure,
        ErrorCode::CannotOpen | ErrorCode::NotADatabase => ErrorKind::Unavailable,
        _ => ErrorKind::Other,
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(err: rusqlite::Error) -> Self {
        Self::Sqlite(SqliteError::Statement(err))
    }
}

impl From<rusqlite::Error> for HandlerError {
    fn from(err: rusqlite::Error) -> Self {
        Self::Failed(format!("database error in handler: {err}"))
    }
}
