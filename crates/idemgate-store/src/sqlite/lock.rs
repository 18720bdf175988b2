//! The writers' lock: a file beside the SQLite store (`<store>-lock`) that every process
//! writing the store holds shared (`flock`) for as long as its store is open, and that
//! `restore` takes exclusively.
//!
//! Replacing the store under a running writer lets it go on committing into a WAL that no
//! longer belongs to the file: its acknowledged events vanish and are later accepted a
//! second time. So a restore refuses while any writer holds the lock, and a writer does
//! not open a store that is being restored (it is unavailable until the restore is done).
//! The kernel drops a lock with its process, so a SIGKILL leaves nothing stale behind.

use std::{
    fmt,
    fs::{File, OpenOptions},
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
};

use rustix::{
    fs::{FlockOperation, flock},
    io::Errno,
};

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
            Err(Errno::WOULDBLOCK) => Err(StoreError::Restoring),
            Err(err) => Err(StoreError::Lock { path: lock_path(store), source: err.into() }),
        }
    }

    /// Held by `restore` alone; refused, naming the holders, while any writer has the store open.
    pub(crate) fn exclusive(store: &Path) -> Result<Self, StoreError> {
        let file = open(store)?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Self { _file: file }),
            Err(Errno::WOULDBLOCK) => Err(StoreError::InUse(Holders(holders(&file)))),
            Err(err) => Err(StoreError::Lock { path: lock_path(store), source: err.into() }),
        }
    }
}

fn open(store: &Path) -> Result<File, StoreError> {
    let path = lock_path(store);
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|source| StoreError::Lock { path, source })
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
