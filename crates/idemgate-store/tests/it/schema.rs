//! Migrations and readers.

use idemgate_store::{SqliteReader, SqliteStore, StoreError, StoreOptions};

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
    assert!(matches!(SqliteReader::open(&missing).unwrap_err(), StoreError::Open { .. }));
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
