//! The outbound API's data on SQLite, one file per resource. Every change runs on the
//! writer (so it is ordered with every accept) on a savepoint of its own, which a refusal
//! (a uid taken, a row not found) rolls back, and writes its audit record there
//! ([`record`]); reads use a read connection.

mod app_token;
mod application;
mod attempt;
mod endpoint;
mod event_type;
pub(super) mod message;
mod redelivery;

use rusqlite::{Connection, OptionalExtension, params};

use super::{SqliteStore, audit, savepoint::Savepoint};
use crate::{
    StoreError,
    model::{
        audit::{Action, Actor, at_ms},
        outbound::{Lookup, OutboundError, Resource},
    },
};

impl From<rusqlite::Error> for OutboundError {
    fn from(err: rusqlite::Error) -> Self {
        Self::Store(err.into())
    }
}

impl SqliteStore {
    /// Runs `change` on the writer, on a savepoint that is kept only if it succeeds.
    async fn change<T, F>(&self, change: F) -> Result<T, OutboundError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, OutboundError> + Send + 'static,
    {
        self.write(move |conn| {
            let savepoint = Savepoint::open(conn)?;
            let result = change(&savepoint);
            if result.is_ok() {
                savepoint.release()?;
            }
            Ok::<_, StoreError>(result)
        })
        .await?
    }

    /// Runs `read` on a read connection.
    async fn look<T, F>(&self, read: F) -> Result<T, OutboundError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, OutboundError> + Send + 'static,
    {
        self.read(move |reader| Ok(read(reader.connection()))).await?
    }
}

/// Moves the outbound version on and returns it: every application, endpoint or secret
/// change calls this in its transaction.
fn bump_version(conn: &Connection) -> Result<i64, rusqlite::Error> {
    conn.prepare_cached("UPDATE outbound_version SET version = version + 1 RETURNING version")?
        .query_row([], |row| row.get(0))
}

/// Records that `by` did `action` to `target` (one row) at `now_ms`, on the change's own
/// savepoint: the record is kept exactly when the change is.
fn record(conn: &Connection, by: &Actor, action: Action, target: String, now_ms: i64) -> Result<(), OutboundError> {
    audit::insert(conn, &by.did(action, target), at_ms(now_ms), 1)?;
    Ok(())
}

/// The id of the live application `app` names.
fn live_app_id(conn: &Connection, app: &Lookup) -> Result<String, OutboundError> {
    let (column, value) = app.column("uid");
    conn.prepare_cached(&format!("SELECT id FROM applications WHERE {column} = ?1 AND deleted_at IS NULL"))?
        .query_row(params![value], |row| row.get(0))
        .optional()?
        .ok_or(OutboundError::NotFound(Resource::Application))
}
