//! The store's errors, and the error a handler returns to abort its delivery.

use std::path::PathBuf;

/// What went wrong in the store. Messages never contain payloads or secrets.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file could not be opened or configured.
    #[error("cannot open database {path}: {cause}")]
    Open {
        /// The file that was being opened.
        path: PathBuf,
        /// The underlying SQLite error. The message says it, so it is not also a
        /// `source()`: an error chain printed whole (anyhow's `{:#}`) would repeat it.
        cause: rusqlite::Error,
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
    /// A statement failed. The message says SQLite's error, so it is not also a
    /// `source()` (see [`StoreError::Open`]).
    #[error("database error: {0}")]
    Sqlite(rusqlite::Error),
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
    /// A PostgreSQL statement or connection failed.
    #[error("postgres error: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// No PostgreSQL connection could be had from the pool in time.
    #[error("no database connection available: {0}")]
    Pool(String),
    /// The store's configuration cannot work (the reason says why, without secrets).
    #[error("store configuration: {0}")]
    Config(&'static str),
    /// `restore` refused: processes have the store open for writing.
    #[error(
        "the store is in use by {0}; stop every idemgate process on it (serve, worker, commands) and restore again"
    )]
    InUse(crate::sqlite::Holders),
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
            Self::Sqlite(err) | Self::Open { cause: err, .. } => sqlite_kind(err),
            Self::Postgres(err) => postgres_kind(err),
            Self::Unavailable | Self::NotOpen | Self::Pool(_) | Self::Restoring | Self::Lock { .. } => {
                ErrorKind::Unavailable
            }
            _ => ErrorKind::Other,
        }
    }
}

fn sqlite_kind(err: &rusqlite::Error) -> ErrorKind {
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

fn postgres_kind(err: &tokio_postgres::Error) -> ErrorKind {
    use tokio_postgres::error::SqlState;
    let Some(code) = err.code() else {
        // No SQLSTATE: the connection itself failed (refused, closed, timed out).
        return if err.is_closed() || err.as_db_error().is_none() { ErrorKind::Unavailable } else { ErrorKind::Other };
    };
    if *code == SqlState::UNIQUE_VIOLATION {
        ErrorKind::UniqueViolation
    } else if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED {
        ErrorKind::SerializationFailure
    } else if code.code().starts_with("08")
        || *code == SqlState::ADMIN_SHUTDOWN
        || *code == SqlState::CRASH_SHUTDOWN
        || *code == SqlState::CANNOT_CONNECT_NOW
        || *code == SqlState::TOO_MANY_CONNECTIONS
    {
        ErrorKind::Unavailable
    } else {
        ErrorKind::Other
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

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(err: deadpool_postgres::PoolError) -> Self {
        match err {
            deadpool_postgres::PoolError::Backend(err) => Self::Postgres(err),
            other => Self::Pool(other.to_string()),
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(err: rusqlite::Error) -> Self {
        Self::Sqlite(err)
    }
}

impl From<rusqlite::Error> for HandlerError {
    fn from(err: rusqlite::Error) -> Self {
        Self::Failed(format!("database error in handler: {err}"))
    }
}
