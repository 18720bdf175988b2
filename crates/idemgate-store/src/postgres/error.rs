//! What only PostgreSQL fails with, nested in [`StoreError::Postgres`] (as sqlx nests its
//! drivers' errors), so that the neutral root names neither driver nor pool.

use crate::{ErrorKind, StoreError};

/// A failure of the PostgreSQL store. Messages never contain payloads or secrets (the
/// pool's configuration, which holds the password, is never printed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// A PostgreSQL statement or connection failed.
    #[error("postgres error: {0}")]
    Statement(#[source] tokio_postgres::Error),
    /// No PostgreSQL connection could be had from the pool in time.
    #[error("no database connection available: {0}")]
    Pool(String),
}

impl PgError {
    /// The backend-neutral kind of this error.
    pub(crate) fn kind(&self) -> ErrorKind {
        match self {
            Self::Statement(err) => statement_kind(err),
            Self::Pool(_) => ErrorKind::Unavailable,
        }
    }
}

fn statement_kind(err: &tokio_postgres::Error) -> ErrorKind {
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

impl From<tokio_postgres::Error> for StoreError {
    fn from(err: tokio_postgres::Error) -> Self {
        Self::Postgres(PgError::Statement(err))
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(err: deadpool_postgres::PoolError) -> Self {
        match err {
            deadpool_postgres::PoolError::Backend(err) => err.into(),
            other => Self::Postgres(PgError::Pool(other.to_string())),
        }
    }
}
