//! The alert checker's reads and its one write on PostgreSQL, the same statements as
//! SQLite's (rules in [`crate::model::alerts`]).

use idemgate_core::{
    UnixTime,
    alert::{AlertRecord, Snapshot},
};

use super::PgStore;
use crate::{StoreError, model::alerts};

impl PgStore {
    /// The queue's health at one time, leaving out `exclude` (the alert destination): jobs
    /// that went dead at or after `dead_since`, disabled destinations, the oldest waiting
    /// job; read in one repeatable-read transaction.
    pub(crate) async fn alert_snapshot(&self, exclude: String, dead_since: UnixTime) -> Result<Snapshot, StoreError> {
        let mut client = self.client().await?;
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await?;
        let dead = tx
            .query(
                "SELECT destination, count(*), min(updated_at), max(updated_at) FROM jobs
                 WHERE state = 'dead' AND updated_at >= $1 AND destination <> $2 GROUP BY destination",
                &[&dead_since.0, &exclude],
            )
            .await?
            .iter()
            .map(|row| Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?)))
            .collect::<Result<_, StoreError>>()?;
        let disabled = tx
            .query(
                "SELECT name, disabled_at, paused_at_ms FROM destinations
                 WHERE (disabled_at IS NOT NULL OR paused_at_ms IS NOT NULL) AND name <> $1",
                &[&exclude],
            )
            .await?
            .iter()
            .map(|row| Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?)))
            .collect::<Result<_, StoreError>>()?;
        let oldest: Option<i64> = tx
            .query_one(
                "SELECT min(created_at) FROM jobs WHERE state IN ('pending', 'retrying') AND destination <> $1",
                &[&exclude],
            )
            .await?
            .try_get(0)?;
        tx.commit().await?;
        Ok(alerts::snapshot(dead, disabled, oldest))
    }

    /// The last alert of each (condition, target).
    pub(crate) async fn alert_records(&self) -> Result<Vec<AlertRecord>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT condition, target, since, opened_at, resolved_at FROM alerts ORDER BY condition, target",
                &[],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let condition: String = row.try_get(0)?;
                alerts::record(&condition, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?, row.try_get(4)?)
            })
            .collect()
    }

    /// Keeps `record` as the last alert of its (condition, target).
    pub(crate) async fn record_alert(&self, record: AlertRecord) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "INSERT INTO alerts (condition, target, since, opened_at, resolved_at) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (condition, target) DO UPDATE
                 SET since = excluded.since, opened_at = excluded.opened_at, resolved_at = excluded.resolved_at",
                &[
                    &record.condition.name(),
                    &record.target,
                    &record.since.0,
                    &record.opened_at.0,
                    &record.resolved_at.map(|at| at.0),
                ],
            )
            .await?;
        Ok(())
    }
}
