//! Read connections: receipts and conflicts as the operator and the tests see them,
//! independently of the writer.

use std::path::Path;

use idemgate_core::{BodyHash, ReceiptKey, SourceName, UnixTime};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{SqliteStore, StoreOptions, inbox, migrations, open_connection};
use crate::{
    ConflictRecord, Receipt, StoreError,
    inbox::{JobRecord, StoredEvent},
    model::{body_hash, key, receive::parse_result},
};

/// A read-only view of an existing store file.
#[derive(Debug)]
pub struct SqliteReader {
    conn: Connection,
}

impl SqliteReader {
    /// Opens an existing store file for reading; fails if it does not exist or was not
    /// initialised. Does not need a running server.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_with(path, &StoreOptions::default())
    }

    pub(crate) fn open_with(path: &Path, options: &StoreOptions) -> Result<Self, StoreError> {
        // Opened read-write (but query-only) so that a WAL left by a killed process is
        // recovered normally instead of needing a writable -shm in read-only mode.
        let conn = open_connection(path, false, options)?;
        conn.pragma_update(None, "query_only", "ON")?;
        migrations::check_current(&conn)?;
        Ok(Self { conn })
    }

    /// The read connection, for the [`super::views`].
    #[must_use]
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Runs `read` in one read transaction: everything it sees is one consistent snapshot.
    pub fn snapshot<T>(&mut self, read: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let tx = self.conn.transaction()?;
        let value = read(&tx)?;
        tx.finish()?;
        Ok(value)
    }

    /// The receipt for `key`, if any.
    pub fn receipt(&self, key: &ReceiptKey) -> Result<Option<Receipt>, StoreError> {
        receipt(&self.conn, key)
    }

    /// Every receipt of `source`, ordered by identity.
    pub fn receipts(&self, source: &SourceName) -> Result<Vec<Receipt>, StoreError> {
        receipts(&self.conn, source)
    }

    /// The event stored under `key` by the gateway's inbox, if any.
    pub fn event(&self, key: &ReceiptKey) -> Result<Option<StoredEvent>, StoreError> {
        inbox::event(&self.conn, key)
    }

    /// The body bytes of the event stored under `key`, as received; `None` when there is
    /// no such event or retention purged its payload.
    pub fn event_body(&self, key: &ReceiptKey) -> Result<Option<Vec<u8>>, StoreError> {
        let body = self
            .conn
            .query_row(
                "SELECT body FROM events WHERE source = ?1 AND identity = ?2 AND payload_purged = 0",
                params![key.source.as_str(), key.identity.as_str()],
                |row| row.get(0),
            )
            .optional()?;
        Ok(body)
    }

    /// The delivery jobs of the event stored under `key`.
    pub fn jobs(&self, key: &ReceiptKey) -> Result<Vec<JobRecord>, StoreError> {
        inbox::jobs(&self.conn, key)
    }

    /// How many jobs are in each state.
    pub fn job_states(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let mut stmt = self.conn.prepare("SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state")?;
        let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// How many jobs are waiting, running and dead ([`crate::Store::queue_states`]).
    pub fn queue_states(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT state, count(*) FROM jobs WHERE state IN ('pending', 'retrying', 'running', 'dead')
             GROUP BY state ORDER BY state",
        )?;
        let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// When the oldest job still waiting to be delivered (pending or retrying) was created.
    pub fn oldest_waiting_job(&self) -> Result<Option<UnixTime>, StoreError> {
        let oldest: Option<i64> = self.conn.query_row(
            "SELECT min(created_at) FROM jobs WHERE state IN ('pending', 'retrying')",
            [],
            |row| row.get(0),
        )?;
        Ok(oldest.map(UnixTime))
    }

    /// Every recorded conflict of `source`, ordered by identity.
    pub fn conflicts(&self, source: &SourceName) -> Result<Vec<ConflictRecord>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT source, identity, body_sha256, first_seen_at, last_seen_at, seen_count
             FROM conflicts WHERE source = ?1 ORDER BY identity, first_seen_at",
        )?;
        let rows = stmt.query_map(params![source.as_str()], |row| Ok(conflict_from_row(row)))?;
        rows.map(|row| row?).collect()
    }
}

/// The reads of [`crate::Store`], each on a fresh read connection off the async threads.
impl SqliteStore {
    /// The receipt for `key`, if any.
    pub(crate) async fn receipt(&self, key: ReceiptKey) -> Result<Option<Receipt>, StoreError> {
        self.read(move |r| r.receipt(&key)).await
    }

    /// Every receipt of `source`, ordered by identity.
    pub(crate) async fn receipts(&self, source: SourceName) -> Result<Vec<Receipt>, StoreError> {
        self.read(move |r| r.receipts(&source)).await
    }

    /// Every recorded conflict of `source`, ordered by identity.
    pub(crate) async fn conflicts(&self, source: SourceName) -> Result<Vec<ConflictRecord>, StoreError> {
        self.read(move |r| r.conflicts(&source)).await
    }

    /// The event stored under `key`, if any.
    pub(crate) async fn event(&self, key: ReceiptKey) -> Result<Option<StoredEvent>, StoreError> {
        self.read(move |r| r.event(&key)).await
    }

    /// The body of the event stored under `key`, unless its payload was purged.
    pub(crate) async fn event_body(&self, key: ReceiptKey) -> Result<Option<Vec<u8>>, StoreError> {
        self.read(move |r| r.event_body(&key)).await
    }

    /// The jobs of the event stored under `key`, by destination.
    pub(crate) async fn jobs(&self, key: ReceiptKey) -> Result<Vec<JobRecord>, StoreError> {
        self.read(move |r| r.jobs(&key)).await
    }

    /// How many jobs are in each state.
    pub(crate) async fn job_states(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.read(SqliteReader::job_states).await
    }

    pub(crate) async fn queue_states(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.read(SqliteReader::queue_states).await
    }

    /// When the oldest job still waiting to be delivered was created.
    pub(crate) async fn oldest_waiting_job(&self) -> Result<Option<UnixTime>, StoreError> {
        self.read(SqliteReader::oldest_waiting_job).await
    }
}

/// The receipt for `key` as seen by `conn` (inside a snapshot, for example).
pub fn receipt(conn: &Connection, key: &ReceiptKey) -> Result<Option<Receipt>, StoreError> {
    let row = conn
        .query_row(
            "SELECT source, identity, body_sha256, outcome, result, received_at
             FROM receipts WHERE source = ?1 AND identity = ?2",
            params![key.source.as_str(), key.identity.as_str()],
            |row| Ok(receipt_from_row(row)),
        )
        .optional()?;
    row.transpose()
}

/// Every receipt of `source` as seen by `conn`, ordered by identity.
pub fn receipts(conn: &Connection, source: &SourceName) -> Result<Vec<Receipt>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT source, identity, body_sha256, outcome, result, received_at
         FROM receipts WHERE source = ?1 ORDER BY identity",
    )?;
    let rows = stmt.query_map(params![source.as_str()], |row| Ok(receipt_from_row(row)))?;
    rows.map(|row| row?).collect()
}

fn key_from_row(row: &Row<'_>) -> Result<ReceiptKey, StoreError> {
    key(&row.get::<_, String>(0)?, &row.get::<_, String>(1)?)
}

fn hash_from_row(row: &Row<'_>, index: usize) -> Result<BodyHash, StoreError> {
    body_hash(row.get(index)?)
}

fn receipt_from_row(row: &Row<'_>) -> Result<Receipt, StoreError> {
    Ok(Receipt {
        key: key_from_row(row)?,
        body_hash: hash_from_row(row, 2)?,
        outcome: row.get(3)?,
        result: parse_result(&row.get::<_, String>(4)?)?,
        received_at: UnixTime(row.get(5)?),
    })
}

fn conflict_from_row(row: &Row<'_>) -> Result<ConflictRecord, StoreError> {
    Ok(ConflictRecord {
        key: key_from_row(row)?,
        body_hash: hash_from_row(row, 2)?,
        first_seen_at: UnixTime(row.get(3)?),
        last_seen_at: UnixTime(row.get(4)?),
        seen_count: row.get(5)?,
    })
}
