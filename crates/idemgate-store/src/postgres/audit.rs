//! The audit log on PostgreSQL (what it records: [`crate::model::audit`]): one row per
//! action, inserted in the action's own transaction, read newest first, purged by age.

use std::time::Duration;

use deadpool_postgres::GenericClient;
use idemgate_core::UnixTime;

use super::{PgStore, sql_limit};
use crate::{
    StoreError,
    model::audit::{self, Audit, AuditFilter, AuditRecord},
};

/// Records `audit`, if any, at `at` as having changed `affected`, on `client` (the
/// action's transaction).
pub(crate) async fn insert_if(
    client: &impl GenericClient,
    audit: Option<&Audit>,
    at: UnixTime,
    affected: usize,
) -> Result<(), StoreError> {
    let Some(audit) = audit else { return Ok(()) };
    client
        .execute(
            "INSERT INTO audit_log (at, token, action, target, affected) VALUES ($1, $2, $3, $4, $5)",
            &[&at.0, &audit.token, &audit.action.as_str(), &audit.target, &audit::affected(affected)],
        )
        .await?;
    Ok(())
}

impl PgStore {
    /// Records `audit` at `at` on its own (for an action that was several transactions).
    pub(crate) async fn record_audit(&self, audit: Audit, at: UnixTime, affected: usize) -> Result<(), StoreError> {
        insert_if(&self.client().await?, Some(&audit), at, affected).await
    }

    /// The records `filter` selects, newest first.
    pub(crate) async fn audit_log(&self, filter: AuditFilter) -> Result<Vec<AuditRecord>, StoreError> {
        let client = self.client().await?;
        let since = filter.since.map(|t| t.0);
        let action = filter.action.map(|a| a.as_str());
        let rows = client
            .query(
                "SELECT id, at, token, action, target, affected FROM audit_log
                 WHERE ($1::bigint IS NULL OR at >= $1) AND ($2::text IS NULL OR token = $2)
                   AND ($3::text IS NULL OR action = $3)
                 ORDER BY id DESC LIMIT $4",
                &[&since, &filter.token, &action, &sql_limit(filter.limit)],
            )
            .await?;
        rows.iter()
            .map(|row| {
                Ok(AuditRecord {
                    id: row.try_get(0)?,
                    at: UnixTime(row.try_get(1)?),
                    token: row.try_get(2)?,
                    action: row.try_get(3)?,
                    target: row.try_get(4)?,
                    affected: u64::try_from(row.try_get::<_, i64>(5)?).unwrap_or(0),
                })
            })
            .collect()
    }

    /// Deletes the records older than `keep` before `now`, or when `dry_run` only counts
    /// them; returns how many.
    pub(crate) async fn purge_audit(&self, now: UnixTime, keep: Duration, dry_run: bool) -> Result<usize, StoreError> {
        let mut client = self.client().await?;
        let cutoff = audit::cutoff(now, keep);
        if dry_run {
            let row = client.query_one("SELECT count(*) FROM audit_log WHERE at < $1", &[&cutoff]).await?;
            return Ok(usize::try_from(row.try_get::<_, i64>(0)?).unwrap_or(0));
        }
        let retired = super::partitions::retire_audit(&mut client, cutoff).await?;
        let deleted = client.execute("DELETE FROM audit_log WHERE at < $1", &[&cutoff]).await?;
        Ok(retired.saturating_add(usize::try_from(deleted).unwrap_or(usize::MAX)))
    }
}
