//! Migrations and readers.

use std::sync::Arc;

use idemgate_store::{SqliteError, SqliteReader, SqliteStore, Store, StoreError, StoreOptions};

#[test]
fn opening_twice_applies_migrations_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite3");
    drop(SqliteStore::open(&path, StoreOptions::default()).unwrap());
    drop(SqliteStore::open(&path, StoreOptions::default()).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: u32 = conn.query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
    assert_eq!(version, idemgate_store::SCHEMA_VERSION);
}

#[test]
fn a_file_from_a_newer_build_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite3");
    rusqlite::Connection::open(&path).unwrap().execute_batch("PRAGMA user_version = 99").unwrap();
    let err = SqliteStore::open(&path, StoreOptions::default()).unwrap_err();
    assert!(matches!(err, StoreError::NewerSchema { found: 99, supported: idemgate_store::SCHEMA_VERSION }), "{err}");
    assert!(matches!(SqliteReader::open(&path).unwrap_err(), StoreError::NewerSchema { .. }));
}

#[test]
fn a_reader_needs_an_existing_initialised_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.sqlite3");
    assert!(matches!(SqliteReader::open(&missing).unwrap_err(), StoreError::Sqlite(SqliteError::Open { .. })));
    assert!(!missing.exists(), "a reader must not create the file");
    let blank = dir.path().join("blank.sqlite3");
    rusqlite::Connection::open(&blank).unwrap().execute_batch("CREATE TABLE t (x)").unwrap();
    assert!(matches!(SqliteReader::open(&blank).unwrap_err(), StoreError::Malformed(_)));
}

#[test]
fn a_reader_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite3");
    drop(SqliteStore::open(&path, StoreOptions::default()).unwrap());
    let mut reader = SqliteReader::open(&path).unwrap();
    let attempt = reader.snapshot(|conn| Ok(conn.execute("DELETE FROM receipts", [])?));
    assert!(attempt.is_err());
}

#[tokio::test]
async fn jobs_stored_with_due_times_in_seconds_keep_their_time_after_the_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite3");
    drop(SqliteStore::open(&path, StoreOptions::default()).unwrap());
    // Back to schema 6, where due times were whole seconds, with one job due at 1_700_000_060.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "DROP TABLE endpoint_secrets; DROP TABLE messages; DROP TABLE endpoints; DROP TABLE applications;
             DROP TABLE event_types; DROP TABLE outbound_version; DROP TABLE api_tokens;
             DROP TABLE sessions; DROP TABLE portal_logins;
             ALTER TABLE attempts DROP COLUMN outcome; ALTER TABLE attempts DROP COLUMN manual;
             ALTER TABLE jobs DROP COLUMN manual; DROP TABLE audit_log; DROP TABLE alerts; DROP INDEX jobs_dead_at;
             ALTER TABLE jobs RENAME COLUMN next_attempt_at_ms TO next_attempt_at;
             ALTER TABLE destinations DROP COLUMN failures; ALTER TABLE destinations DROP COLUMN failing_since_ms;
             ALTER TABLE destinations DROP COLUMN paused_at_ms; ALTER TABLE destinations DROP COLUMN next_probe_at_ms;
             ALTER TABLE destinations DROP COLUMN probe_interval_ms; ALTER TABLE destinations DROP COLUMN throttled_since_ms;
             ALTER TABLE destinations DROP COLUMN bucket_level; ALTER TABLE destinations DROP COLUMN bucket_at_ms;
             PRAGMA user_version = 6;
             INSERT INTO receipts VALUES ('src', 'e1', zeroblob(32), 'applied', 'null', 1700000000);
             INSERT INTO events (id, source, identity, outgoing_id, body, received_at) VALUES (1, 'src', 'e1', 'e1', x'7b7d', 1700000000);
             INSERT INTO jobs (event_id, destination, state, next_attempt_at, created_at, updated_at)
             VALUES (1, 'app', 'retrying', 1700000060, 1700000000, 1700000000);",
        )
        .unwrap();
    let store: Store = Arc::new(SqliteStore::open(&path, StoreOptions::default()).unwrap()).into();
    let lease = std::time::Duration::from_secs(30);
    assert!(store.claim_jobs(1_700_000_059_999, lease, 10, Vec::new()).await.unwrap().is_empty());
    assert_eq!(store.claim_jobs(1_700_000_060_000, lease, 10, Vec::new()).await.unwrap().len(), 1);
}
