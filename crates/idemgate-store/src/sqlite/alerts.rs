//! The alert checker's reads and its one write on SQLite (rules in [`crate::model::alerts`]).

use idemgate_core::{
    UnixTime,
    alert::{AlertRecord, Snapshot},
};
use rusqlite::{Connection, params};

use super::SqliteStore;
use crate::{StoreError, model::alerts};

/// The queue's health at one time, leaving out `exclude` (the alert destination): dead
/// jobs that went dead at or after `dead_since`, disabled destinations, the oldest waiting job.
pub(crate) fn alert_snapshot(conn: &Connection, exclude: &str, dead_since: UnixTime) -> Result<Snapshot, StoreError> {
    let mut dead = conn.prepare(
        "SELECT destination, count(*), min(updated_at), max(updated_at) FROM jobs
         WHERE state = 'dead' AND updated_at >= ?1 AND destination <> ?2 GROUP BY destination",
    )?;
    let dead = dead
        .query_map(params![dead_since.0, exclude], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))?
        .collect::<Result<_, _>>()?;
    let mut disabled = conn.prepare(
        "SELECT name, disabled_at, paused_at_ms FROM destinations
                 WHERE (disabled_at IS NOT NULL OR paused_at_ms IS NOT NULL) AND name <> ?1",
    )?;
    let disabled =
        disabled.query_map([exclude], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?.collect::<Result<_, _>>()?;
    let oldest: Option<i64> = conn.query_row(
        "SELECT min(created_at) FROM jobs WHERE state IN ('pending', 'retrying') AND destination <> ?1",
        [exclude],
        |row| row.get(0),
    )?;
    Ok(alerts::snapshot(dead, disabled, oldest))
}

/// The last alert of each (condition, target).
pub(crate) fn alert_records(conn: &Connection) -> Result<Vec<AlertRecord>, StoreError> {
    let mut stmt =
        conn.prepare("SELECT condition, target, since, opened_at, resolved_at FROM alerts ORDER BY condition, target")?;
    let rows =
        stmt.query_map([], |row| Ok((row.get::<_, String>(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?)))?;
    rows.map(|row| {
        let (condition, target, since, opened_at, resolved_at) = row?;
        alerts::record(&condition, target, since, opened_at, resolved_at)
    })
    .collect()
}

/// Keeps `record` as the last alert of its (condition, target).
fn record_alert(conn: &Connection, record: &AlertRecord) -> Result<(), rusqlite::Error> {
    conn.execute(
        "INSERT INTO alerts (condition, target, since, opened_at, resolved_at) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (condition, target) DO UPDATE
         SET since = excluded.since, opened_at = excluded.opened_at, resolved_at = excluded.resolved_at",
        params![
            record.condition.name(),
            record.target,
            record.since.0,
            record.opened_at.0,
            record.resolved_at.map(|at| at.0)
        ],
    )?;
    Ok(())
}

impl SqliteStore {
    /// [`alert_snapshot`] on a read connection, in one read transaction.
    pub(crate) async fn alert_snapshot(&self, exclude: String, dead_since: UnixTime) -> Result<Snapshot, StoreError> {
        self.read(move |r| {
            let conn = r.connection();
            conn.execute_batch("BEGIN")?;
            let snapshot = alert_snapshot(conn, &exclude, dead_since);
            conn.execute_batch("COMMIT")?;
            snapshot
        })
        .await
    }

    /// [`alert_records`] on a read connection.
    pub(crate) async fn alert_records(&self) -> Result<Vec<AlertRecord>, StoreError> {
        self.read(|r| alert_records(r.connection())).await
    }

    /// Keeps `record` as the last alert of its (condition, target), on the writer.
    pub(crate) async fn record_alert(&self, record: AlertRecord) -> Result<(), StoreError> {
        self.write(move |conn| record_alert(conn, &record)).await
    }
}
