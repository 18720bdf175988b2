//! `Idempotency-Key` records on SQLite, by the rules of [`crate::idempotency`]: each
//! operation runs on the writer, so a lookup and the insert or take-over that follows it
//! are one step. The one exception is [`completed_at`]: a completed, unexpired record is
//! read on a kept read connection, without the writer, to answer its repeats.

use idemgate_core::idempotency::Fingerprint;
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteStore;
use crate::{
    StoreError,
    idempotency::{Begin, CompletedRecord, Lifetimes, RecordKey, StoredResponse},
    model::{headers_text, idempotency::IdempotencyRow},
};

/// Starts (or looks up) the operation named by `record` at `now_ms`. A new key is one
/// statement (the insert); a key with a record reads it and decides, and an expired record
/// is replaced as if it were not there.
pub fn begin(
    conn: &Connection,
    record: &RecordKey,
    fingerprint: &Fingerprint,
    now_ms: i64,
    lifetimes: Lifetimes,
) -> Result<Begin, rusqlite::Error> {
    let lock_until = lifetimes.locked_until_ms(now_ms);
    let mut insert = conn.prepare_cached(
        "INSERT INTO idempotency_records
             (scope, key, fingerprint, state, lock_token, locked_until_ms, created_at_ms, expires_at_ms)
         VALUES (?1, ?2, ?3, 'in_flight', 1, ?4, ?5, ?6)
         ON CONFLICT (scope, key) DO NOTHING",
    )?;
    let fresh =
        params![record.scope, record.key, &fingerprint.0[..], lock_until, now_ms, lifetimes.expires_at_ms(now_ms)];
    if insert.execute(fresh)? == 1 {
        return Ok(Begin::Proceed { token: 1, expires_at_ms: lifetimes.expires_at_ms(now_ms) });
    }
    let (existing, expires_at_ms) = conn
        .prepare_cached(SELECT_RECORD)?
        .query_row(params![record.scope, record.key], |row| Ok((record_row(row)?, row.get::<_, i64>(8)?)))?;
    if expires_at_ms <= now_ms {
        conn.prepare_cached("DELETE FROM idempotency_records WHERE scope = ?1 AND key = ?2")?
            .execute(params![record.scope, record.key])?;
        insert.execute(fresh)?;
        return Ok(Begin::Proceed { token: 1, expires_at_ms: lifetimes.expires_at_ms(now_ms) });
    }
    let decided = existing.decide(fingerprint, now_ms, expires_at_ms);
    if let Begin::Proceed { token, .. } = decided {
        conn.prepare_cached(
            "UPDATE idempotency_records SET lock_token = ?3, locked_until_ms = ?4 WHERE scope = ?1 AND key = ?2",
        )?
        .execute(params![record.scope, record.key, token, lock_until])?;
    }
    Ok(decided)
}

/// A record with its expiry, read by [`record_row`] and column 8.
const SELECT_RECORD: &str =
    "SELECT fingerprint, state, lock_token, locked_until_ms, status, headers, body, body_omitted,
        expires_at_ms
     FROM idempotency_records WHERE scope = ?1 AND key = ?2";

fn record_row(row: &rusqlite::Row<'_>) -> Result<IdempotencyRow, rusqlite::Error> {
    Ok(IdempotencyRow {
        fingerprint: row.get(0)?,
        state: row.get(1)?,
        lock_token: row.get(2)?,
        locked_until_ms: row.get(3)?,
        status: row.get(4)?,
        headers: row.get(5)?,
        body: row.get(6)?,
        body_omitted: row.get(7)?,
    })
}

/// The completed, unexpired record under `record` at `now_ms`, from a plain read;
/// `None` when a request for it must [`begin`] on the writer (no record, expired, in
/// flight).
pub fn completed_at(
    conn: &Connection,
    record: &RecordKey,
    now_ms: i64,
) -> Result<Option<CompletedRecord>, rusqlite::Error> {
    let found = conn
        .prepare_cached(SELECT_RECORD)?
        .query_row(params![record.scope, record.key], |row| Ok((record_row(row)?, row.get::<_, i64>(8)?)))
        .optional()?;
    Ok(found.and_then(|(row, expires_at_ms)| row.completed(expires_at_ms, now_ms)))
}

/// Stores `response` for `record` if `token` still holds the lock. Returns the record's
/// expiry when it did, `None` when the token was stale.
pub fn complete(
    conn: &Connection,
    record: &RecordKey,
    token: i64,
    response: &StoredResponse,
) -> Result<Option<i64>, rusqlite::Error> {
    conn.prepare_cached(
        "UPDATE idempotency_records
         SET state = 'completed', locked_until_ms = NULL, status = ?4, headers = ?5, body = ?6, body_omitted = ?7
         WHERE scope = ?1 AND key = ?2 AND lock_token = ?3 AND state = 'in_flight'
         RETURNING expires_at_ms",
    )?
    .query_row(
        params![
            record.scope,
            record.key,
            token,
            response.status,
            headers_text(&response.headers),
            response.body,
            response.body_omitted
        ],
        |row| row.get(0),
    )
    .optional()
}

/// Forgets `record` if `token` still holds its lock, so the key can be used again.
pub fn release(conn: &Connection, record: &RecordKey, token: i64) -> Result<bool, rusqlite::Error> {
    let changed = conn
        .prepare_cached(
            "DELETE FROM idempotency_records WHERE scope = ?1 AND key = ?2 AND lock_token = ?3 AND state = 'in_flight'",
        )?
        .execute(params![record.scope, record.key, token])?;
    Ok(changed == 1)
}

/// Deletes up to `limit` records expired at `now_ms`; returns how many.
pub fn purge_expired(conn: &Connection, now_ms: i64, limit: usize) -> Result<usize, rusqlite::Error> {
    conn.execute(
        "DELETE FROM idempotency_records WHERE (scope, key) IN (
             SELECT scope, key FROM idempotency_records WHERE expires_at_ms <= ?1 LIMIT ?2)",
        params![now_ms, i64::try_from(limit).unwrap_or(i64::MAX)],
    )
}

impl SqliteStore {
    /// [`begin`] on the writer.
    pub(crate) async fn begin_idempotent(
        &self,
        record: RecordKey,
        fingerprint: Fingerprint,
        now_ms: i64,
        lifetimes: Lifetimes,
    ) -> Result<Begin, StoreError> {
        self.write(move |conn| begin(conn, &record, &fingerprint, now_ms, lifetimes)).await
    }

    /// [`completed_at`] on a kept read connection, on this thread: no writer queue, no
    /// hand-off (a point lookup that never waits for a lock).
    pub(crate) async fn completed_idempotent(
        &self,
        record: RecordKey,
        now_ms: i64,
    ) -> Result<Option<CompletedRecord>, StoreError> {
        self.read_now(|reader| Ok(completed_at(reader.connection(), &record, now_ms)?))
    }

    /// [`complete`] on the writer.
    pub(crate) async fn complete_idempotent(
        &self,
        record: RecordKey,
        token: i64,
        response: StoredResponse,
    ) -> Result<Option<i64>, StoreError> {
        self.write(move |conn| complete(conn, &record, token, &response)).await
    }

    /// [`release`] on the writer.
    pub(crate) async fn release_idempotent(&self, record: RecordKey, token: i64) -> Result<bool, StoreError> {
        self.write(move |conn| release(conn, &record, token)).await
    }

    /// [`purge_expired`] on the writer.
    pub(crate) async fn purge_idempotency(&self, now_ms: i64, limit: usize) -> Result<usize, StoreError> {
        self.write(move |conn| purge_expired(conn, now_ms, limit)).await
    }
}
