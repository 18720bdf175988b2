//! The audit log on SQLite (what it records: [`crate::model::audit`]): one row per action,
//! inserted on the action's own savepoint, read newest first, purged by age.

use std::time::Duration;

use idemgate_core::UnixTime;
use rusqlite::{Connection, params};

use super::SqliteStore;
use crate::{
    StoreError,
    model::audit::{self, Audit, AuditFilter, AuditRecord},
};

/// Records `audit` at `at` as having changed `affected`, on the caller's transaction.
pub(crate) fn insert(conn: &Connection, audit: &Audit, at: UnixTime, affected: usize) -> Result<(), rusqlite::Error> {
    conn.execute(
        "INSERT INTO audit_log (at, token, action, target, affected) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![at.0, audit.token, audit.action.as_str(), audit.target, audit::affected(affected)],
    )?;
    Ok(())
}

/// Records `audit`, if any, on the caller's transaction.
pub(crate) fn insert_if(
    conn: &Connection,
    audit: Option<&Audit>,
    at: UnixTime,
    affected: usize,
) -> Result<(), rusqlite::Error> {
    audit.map_or(Ok(()), |audit| insert(conn, audit, at, affected))
}

/// The records `filter` selects, newest first.
pub fn list(conn: &Connection, filter: &AuditFilter) -> Result<Vec<AuditRecord>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT id, at, token, action, target, affected FROM audit_log
         WHERE (?1 IS NULL OR at >= ?1) AND (?2 IS NULL OR token = ?2) AND (?3 IS NULL OR action = ?3)
         ORDER BY id DESC LIMIT ?4",
    )?;
    let limit = i64::try_from(filter.limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map(
        params![filter.since.map(|t| t.0), filter.token, filter.action.map(|a| a.as_str()), limit],
        |row| {
            Ok(AuditRecord {
                id: row.get(0)?,
                at: UnixTime(row.get(1)?),
                token: row.get(2)?,
                action: row.get(3)?,
                target: row.get(4)?,
                affected: u64::try_from(row.get::<_, i64>(5)?).unwrap_or(0),
            })
        },
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Deletes the records older than `keep` before `now`; returns how many.
pub fn purge(conn: &Connection, now: UnixTime, keep: Duration) -> Result<usize, rusqlite::Error> {
    conn.execute("DELETE FROM audit_log WHERE at < ?1", [audit::cutoff(now, keep)])
}

/// How many records [`purge`] would delete.
pub fn purgeable(conn: &Connection, now: UnixTime, keep: Duration) -> Result<usize, rusqlite::Error> {
    let count: i64 =
        conn.query_row("SELECT count(*) FROM audit_log WHERE at < ?1", [audit::cutoff(now, keep)], |row| row.get(0))?;
    Ok(usize::try_from(count).unwrap_or(0))
}

impl SqliteStore {
    /// Records `audit` at `at` on its own write (for an action that was several).
    pub(crate) async fn record_audit(&self, audit: Audit, at: UnixTime, affected: usize) -> Result<(), StoreError> {
        self.write(move |conn| insert(conn, &audit, at, affected)).await
    }

    /// [`list`] on a read connection.
    pub(crate) async fn audit_log(&self, filter: AuditFilter) -> Result<Vec<AuditRecord>, StoreError> {
        self.read(move |r| list(r.connection(), &filter)).await
    }

    /// [`purge`] on the writer, or when `dry_run` [`purgeable`] on a read connection.
    pub(crate) async fn purge_audit(&self, now: UnixTime, keep: Duration, dry_run: bool) -> Result<usize, StoreError> {
        if dry_run {
            return self.read(move |r| Ok(purgeable(r.connection(), now, keep)?)).await;
        }
        self.write(move |conn| purge(conn, now, keep)).await
    }
}
