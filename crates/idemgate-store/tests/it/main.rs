//! Store behaviour on real SQLite files: the receipt transaction, its rollbacks, its
//! concurrency, migrations and readers.

#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

mod batch;
mod inbox;
mod maintenance;
mod receive;
mod schema;

use std::{path::PathBuf, sync::Arc};

use idemgate_core::{BodyHash, Identity, ReceiptKey, SourceName, UnixTime};
use idemgate_store::{ReceiveRequest, SqliteReader, SqliteStore, Store, StoreOptions};

pub struct TestStore {
    pub store: Arc<SqliteStore>,
    pub path: PathBuf,
    _dir: tempfile::TempDir,
}

impl TestStore {
    /// The store's one door, [`Store`], over this SQLite store: every operation but a
    /// handler's delivery goes through it.
    pub fn shared(&self) -> Store {
        Store::from(Arc::clone(&self.store))
    }

    /// A read connection to the store's file.
    pub fn reader(&self) -> SqliteReader {
        SqliteReader::open(&self.path).unwrap()
    }
}

pub fn open_store() -> TestStore {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite3");
    let store = Arc::new(SqliteStore::open(&path, StoreOptions::default()).unwrap());
    TestStore { store, path, _dir: dir }
}

pub fn request(identity: &str, body: &[u8]) -> ReceiveRequest {
    ReceiveRequest {
        key: ReceiptKey { source: SourceName::new("test").unwrap(), identity: Identity::new(identity).unwrap() },
        body_hash: BodyHash::of(body),
        received_at: UnixTime(1_700_000_000),
        dedupe_body: false,
    }
}
