//! `Idempotency-Key` records on PostgreSQL. A new record is `INSERT ... ON CONFLICT DO
//! NOTHING`: of two instances racing with one key, the second waits for the first's
//! insert to commit and then finds it in flight. An expired lock is taken over under
//! `FOR UPDATE`, with the same fencing token as on SQLite. A completed, unexpired
//! record is read with a plain `SELECT`, outside any transaction, to answer its repeats.

use std::time::Duration;

use idemgate_core::idempotency::Fingerprint;

use super::{PgStore, retrying, sql_limit};
use crate::{
    StoreError,
    idempotency::{Begin, CompletedRecord, Lifetimes, RecordKey, StoredResponse},
    model::{headers_text, idempotency::IdempotencyRow},
};

impl PgStore {
    /// Starts (or looks up) the operation named by `record` at `now_ms`, by the rules of
    /// [`crate::idempotency`].
    pub(crate) async fn begin_idempotent(
        &self,
        record: RecordKey,
        fingerprint: Fingerprint,
        now_ms: i64,
        lifetimes: Lifetimes,
    ) -> Result<Begin, StoreError> {
        retrying(|| self.try_begin(&record, &fingerprint, now_ms, lifetimes)).await
    }

    /// The completed, unexpired record under `record` at `now_ms`, from a plain `SELECT`;
    /// `None` when a request for it must [`Self::begin_idempotent`] (no record, expired,
    /// in flight).
    pub(crate) async fn completed_idempotent(
        &self,
        record: RecordKey,
        now_ms: i64,
    ) -> Result<Option<CompletedRecord>, StoreError> {
        let client = self.client().await?;
        let lookup = client
            .prepare_cached(
                "SELECT fingerprint, state, lock_token, locked_until_ms, status, headers, body, body_omitted, expires_at_ms
                 FROM idempotency_records WHERE scope = $1 AND key = $2",
            )
            .await?;
        let row = client.query_opt(&lookup, &[&record.scope, &record.key]).await?;
        let Some(row) = row else { return Ok(None) };
        let expires_at_ms: i64 = row.try_get(8)?;
        Ok(record_row(&row)?.completed(expires_at_ms, now_ms))
    }

    async fn try_begin(
        &self,
        record: &RecordKey,
        fingerprint: &Fingerprint,
        now_ms: i64,
        lifetimes: Lifetimes,
    ) -> Result<Begin, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let forget_expired = tx
            .prepare_cached("DELETE FROM idempotency_records WHERE scope = $1 AND key = $2 AND expires_at_ms <= $3")
            .await?;
        tx.execute(&forget_expired, &[&record.scope, &record.key, &now_ms]).await?;
        let lock_until = lifetimes.locked_until_ms(now_ms);
        let expires = lifetimes.expires_at_ms(now_ms);
        let insert = tx
            .prepare_cached(
                "INSERT INTO idempotency_records
                     (scope, key, fingerprint, state, lock_token, locked_until_ms, created_at_ms, expires_at_ms)
                 VALUES ($1, $2, $3, 'in_flight', 1, $4, $5, $6) ON CONFLICT DO NOTHING",
            )
            .await?;
        let inserted = tx
            .execute(&insert, &[&record.scope, &record.key, &&fingerprint.0[..], &lock_until, &now_ms, &expires])
            .await?;
        if inserted == 1 {
            tx.commit().await?;
            return Ok(Begin::Proceed { token: 1, expires_at_ms: expires });
        }
        let lookup = tx
            .prepare_cached(
                "SELECT fingerprint, state, lock_token, locked_until_ms, status, headers, body, body_omitted,
                        expires_at_ms
                 FROM idempotency_records WHERE scope = $1 AND key = $2 FOR UPDATE",
            )
            .await?;
        let row = tx.query_opt(&lookup, &[&record.scope, &record.key]).await?;
        let Some(row) = row else {
            // Deleted between the insert and the lookup (expired and purged): the caller
            // may simply try again.
            return Ok(Begin::InFlight { retry_after: Duration::from_millis(10) });
        };
        let existing = record_row(&row)?;
        let expires_at_ms: i64 = row.try_get(8)?;
        let decided = existing.decide(fingerprint, now_ms, expires_at_ms);
        if let Begin::Proceed { token, .. } = decided {
            let take_over = tx
                .prepare_cached(
                    "UPDATE idempotency_records SET lock_token = $3, locked_until_ms = $4 WHERE scope = $1 AND key = $2",
                )
                .await?;
            tx.execute(&take_over, &[&record.scope, &record.key, &token, &lock_until]).await?;
            tx.commit().await?;
        }
        Ok(decided)
    }

    /// Stores `response` for `record` if `token` still holds the lock. Returns the
    /// record's expiry when it did, `None` when the token was stale.
    pub(crate) async fn complete_idempotent(
        &self,
        record: RecordKey,
        token: i64,
        response: StoredResponse,
    ) -> Result<Option<i64>, StoreError> {
        let client = self.client().await?;
        let complete = client
            .prepare_cached(
                "UPDATE idempotency_records
                 SET state = 'completed', locked_until_ms = NULL, status = $4, headers = $5, body = $6, body_omitted = $7
                 WHERE scope = $1 AND key = $2 AND lock_token = $3 AND state = 'in_flight'
                 RETURNING expires_at_ms",
            )
            .await?;
        let row = client
            .query_opt(
                &complete,
                &[
                    &record.scope,
                    &record.key,
                    &token,
                    &i32::from(response.status),
                    &headers_text(&response.headers),
                    &response.body,
                    &response.body_omitted,
                ],
            )
            .await?;
        Ok(row.map(|row| row.try_get(0)).transpose()?)
    }

    /// Forgets `record` if `token` still holds its lock, so the key can be used again.
    pub(crate) async fn release_idempotent(&self, record: RecordKey, token: i64) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let release = client
            .prepare_cached(
                "DELETE FROM idempotency_records
                 WHERE scope = $1 AND key = $2 AND lock_token = $3 AND state = 'in_flight'",
            )
            .await?;
        let changed = client.execute(&release, &[&record.scope, &record.key, &token]).await?;
        Ok(changed == 1)
    }

    /// Deletes up to `limit` records expired at `now_ms`; returns how many.
    pub(crate) async fn purge_idempotency(&self, now_ms: i64, limit: usize) -> Result<usize, StoreError> {
        let client = self.client().await?;
        let deleted = client
            .execute(
                "DELETE FROM idempotency_records WHERE (scope, key) IN (
                     SELECT scope, key FROM idempotency_records WHERE expires_at_ms <= $1 LIMIT $2)",
                &[&now_ms, &sql_limit(limit)],
            )
            .await?;
        Ok(usize::try_from(deleted).unwrap_or(usize::MAX))
    }
}

fn record_row(row: &tokio_postgres::Row) -> Result<IdempotencyRow, tokio_postgres::Error> {
    let status: Option<i32> = row.try_get(4)?;
    Ok(IdempotencyRow {
        fingerprint: row.try_get(0)?,
        state: row.try_get(1)?,
        lock_token: row.try_get(2)?,
        locked_until_ms: row.try_get(3)?,
        status: status.and_then(|s| u16::try_from(s).ok()),
        headers: row.try_get(5)?,
        body: row.try_get(6)?,
        body_omitted: row.try_get(7)?,
    })
}
