//! The writers' lock: a file beside the SQLite store (`<store>-lock`) that every process
//! writing the store holds shared (`flock`) for as long as its store is open, and that
//! `restore` takes exclusively.
//!
//! Replacing the store under a running writer lets it go on committing into a WAL that no
//! longer belongs to the file: its acknowledged events vanish and are later accepted a
//! second time. So a restore refuses while any writer holds the lock, and a writer does
//! not open a store that is being restored (it is unavailable until the restore is done).
//! The kernel drops a lock with its process, so a SIGKILL leaves nothing stale behind.
//!
//! A writer that opens the store first tries the lock exclusively ([`WriterLock::writer`]).
//! Getting it means no other process has the store open for writing, so no lease in it
//! can belong to a live worker: the store expires them at once (`jobs::expire_leases`)
//! before sharing the lock, and a restarted process delivers what a killed one held
//! without waiting for the leases to run out.

use std::{
    fmt,
    fs::{File, OpenOptions},
    os::unix::fs::{MetadataExt, OpenOptionsExt},
    path::{Path, PathBuf},
};

use rustix::{
    fs::{FlockOperation, flock},
    io::Errno,
};

use super::SqliteError;
use crate::StoreError;

/// A held writers' lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub(crate) struct WriterLock {
    _file: File,
}

/// The lock file of the store at `store`.
#[must_use]
pub fn lock_path(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push("-lock");
    PathBuf::from(name)
}

impl WriterLock {
    /// Held by every writer for as long as its store is open; many may hold it at once.
    pub(crate) fn shared(store: &Path) -> Result<Self, StoreError> {
        let file = open(store)?;
        match flock(&file, FlockOperation::NonBlockingLockShared) {
            Ok(()) => Ok(Self { _file: file }),
            Err(Errno::WOULDBLOCK) => Err(SqliteError::Restoring.into()),
            Err(err) => Err(SqliteError::Lock { path: lock_path(store), source: err.into() }.into()),
        }
    }

    /// A writer's lock, and whether it is the only one: held exclusively when no other
    /// process holds the store's lock (the caller then shares it with [`Self::share`]),
    /// shared otherwise. Another writer that holds it exclusively for its start is waited
    /// for, briefly; a restore, which holds it for as long as its copy takes, is not.
    pub(crate) fn writer(store: &Path) -> Result<(Self, bool), StoreError> {
        let file = open(store)?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok((Self { _file: file }, true)),
            Err(Errno::WOULDBLOCK) => {}
            Err(err) => return Err(SqliteError::Lock { path: lock_path(store), source: err.into() }.into()),
        }
        for _ in 0..START_WAITS {
            match flock(&file, FlockOperation::NonBlockingLockShared) {
                Ok(()) => return Ok((Self { _file: file }, false)),
                Err(Errno::WOULDBLOCK) => std::thread::sleep(START_WAIT),
                Err(err) => return Err(SqliteError::Lock { path: lock_path(store), source: err.into() }.into()),
            }
        }
        Err(SqliteError::Restoring.into())
    }

    /// Turns the exclusive lock of [`Self::writer`] into a shared one. flock does not
    /// convert atomically: a restore that takes the lock in between makes this fail with
    /// [`SqliteError::Restoring`], as opening during the restore would.
    pub(crate) fn share(&self, store: &Path) -> Result<(), StoreError> {
        match flock(&self._file, FlockOperation::NonBlockingLockShared) {
            Ok(()) => Ok(()),
            Err(Errno::WOULDBLOCK) => Err(SqliteError::Restoring.into()),
            Err(err) => Err(SqliteError::Lock { path: lock_path(store), source: err.into() }.into()),
        }
    }

    /// Held by `restore` alone; refused, naming the holders, while any writer has the store open.
    pub(crate) fn exclusive(store: &Path) -> Result<Self, StoreError> {
        let file = open(store)?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Self { _file: file }),
            Err(Errno::WOULDBLOCK) => Err(SqliteError::InUse(Holders(holders(&file))).into()),
            Err(err) => Err(SqliteError::Lock { path: lock_path(store), source: err.into() }.into()),
        }
    }
}

/// How often, and how long each time, a starting writer looks again for the shared lock
/// while another writer holds it exclusively for its own start (a few milliseconds).
const START_WAITS: u32 = 200;
const START_WAIT: std::time::Duration = std::time::Duration::from_millis(10);

fn open(store: &Path) -> Result<File, StoreError> {
    let path = lock_path(store);
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        // Like the store beside it (`create_private`): its owner's alone.
        .mode(0o600)
        .open(&path)
        .map_err(|source| SqliteError::Lock { path, source }.into())
}

/// The processes holding a lock on `file`, from Linux's `/proc/locks` (empty elsewhere).
fn holders(file: &File) -> Vec<u32> {
    let (Ok(metadata), Ok(locks)) = (file.metadata(), std::fs::read_to_string("/proc/locks")) else {
        return Vec::new();
    };
    let inode = format!(":{}", metadata.ino());
    let mut pids: Vec<u32> = locks
        .lines()
        .filter_map(|line| {
            // "1: FLOCK  ADVISORY  READ  1234 fe:00:770064 0 EOF"; waiters have "->" and hold nothing.
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                [_, "FLOCK", _, _, pid, file, ..] if file.ends_with(&inode) => pid.parse().ok(),
                _ => None,
            }
        })
        .filter(|pid| *pid != std::process::id())
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// The processes that hold a store open, as an error names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holders(pub Vec<u32>);

impl fmt::Display for Holders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [] => f.write_str("another process"),
            [pid] => write!(f, "process {pid}"),
            pids => {
                let list: Vec<String> = pids.iter().map(u32::to_string).collect();
                write!(f, "processes {}", list.join(", "))
            }
        }
    }
}
