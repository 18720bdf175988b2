//! The SQLite store, the embedded default: one writer thread owns the write connection
//! and group-commits what is queued ([`SqliteStore`]); reads use their own connections
//! ([`SqliteReader`]). One writer plus `BEGIN IMMEDIATE` plus the primary key on (source,
//! identity) makes duplicate handling correct by construction, also across processes
//! sharing the file.
//!
//! The public modules are the connection-level API for code that holds a SQLite
//! connection itself: a handler's outbox ([`inbox::accept_event`]), file maintenance
//! ([`maintenance`]: backup, restore, purge, seeding), and the queue, idempotency and view
//! queries on a given connection. Everything else goes through [`crate::Store`].
//!
//! Of [`SqliteStore`] itself only what is SQLite's own is public, because callers outside
//! need it and [`crate::Store`] cannot offer it: [`SqliteStore::open`] (a file and its
//! [`StoreOptions`]), the handler contract of an application that brings its own SQL
//! effect ([`SqliteStore::receive`], [`SqliteStore::write`] for its tables, [`Handler`]:
//! the counter example, the binary's tests), [`SqliteStore::path`] and
//! [`SqliteStore::close`]. Its operations, one form each, are `pub(crate)`: callers reach
//! them through [`crate::Store`] (`Store::from(Arc<SqliteStore>)`). [`SqliteReader`]
//! stays public for reading a file without opening a writer (`idemgate events`' check of a
//! foreign file, the counter example's state).

mod alerts;
pub mod audit;
mod error;
pub mod handover;
pub mod idempotency;
pub mod inbox;
pub mod jobs;
mod lock;
pub mod maintenance;
mod migrations;
mod outbound;
mod pool;
mod reader;
mod receive;
mod savepoint;
mod session;
pub mod views;
mod writer;

use std::{os::unix::fs::OpenOptionsExt, path::Path, time::Duration};

use rusqlite::{Connection, OpenFlags};

pub use self::{
    error::SqliteError,
    lock::{Holders, lock_path},
    migrations::CURRENT_VERSION,
    reader::{SqliteReader, receipt, receipts},
    writer::{Handler, SqliteStore, WriterStats},
};
use crate::StoreError;

/// How connections to the database file are set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// How long a statement waits for a lock held by another connection or process.
    pub busy_timeout: Duration,
    /// Capacity of the writer's queue; senders wait (backpressure) when it is full.
    pub queue_capacity: usize,
    /// Most deliveries committed together in one transaction (group commit).
    pub max_batch: usize,
    /// How long the writer waits for more deliveries to join a batch; zero adds no wait
    /// (a lone delivery commits at once, and batches form only from what is queued).
    pub batch_wait: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self { busy_timeout: Duration::from_secs(5), queue_capacity: 1024, max_batch: 128, batch_wait: Duration::ZERO }
    }
}

/// Opens `path` with WAL and `synchronous=FULL`, so that a returned commit is on disk.
///
/// `create` decides whether a missing file is created; readers pass `false`.
pub fn open_connection(path: &Path, create: bool, options: &StoreOptions) -> Result<Connection, StoreError> {
    let open_error = |cause| StoreError::from(SqliteError::Open { path: path.to_owned(), cause });
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        // Failing here (a folder not writable) is SQLite's to report, in its own words.
        let _ = create_private(path);
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(path, flags).map_err(open_error)?;
    conn.busy_timeout(options.busy_timeout).map_err(open_error)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)).map_err(open_error)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(SqliteError::NoWal(mode).into());
    }
    // FULL syncs the WAL on every commit: NORMAL could lose the last commits on power loss,
    // and a 2xx promises the commit survives that.
    conn.pragma_update(None, "synchronous", "FULL").map_err(open_error)?;
    conn.pragma_update(None, "foreign_keys", "ON").map_err(open_error)?;
    Ok(conn)
}

/// Creates `path` empty and readable by its owner alone (0600, or less with the umask)
/// unless it exists: SQLite would create it 0644, readable by every local user, and it
/// holds payloads. SQLite gives the `-wal` and `-shm` files it creates beside a database
/// the database file's mode; an empty file is a new database to it.
pub(crate) fn create_private(path: &Path) -> std::io::Result<()> {
    match new_private(path) {
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        created => created.map(drop),
    }
}

/// A new file at `path`, mode 0600; an error if it exists.
pub(crate) fn new_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)
}
