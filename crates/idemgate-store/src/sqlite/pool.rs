//! A few read connections kept open beside the writer, for point reads on a hot path (an
//! `Idempotency-Key` replay): opening a connection, with its WAL setup and migration check,
//! costs more than the lookup it would serve. They run on the caller's thread and never
//! wait for a lock, so a read is a few microseconds or an error the caller falls back from.

use std::{path::PathBuf, sync::Mutex, time::Duration};

use super::{SqliteReader, StoreOptions};
use crate::StoreError;

/// Most idle connections kept (about one per request reading at once: a connection opened
/// and closed per read costs more than the read); more are opened when needed.
const MAX_IDLE: usize = 64;

/// Idle read connections to one store file.
#[derive(Debug)]
pub(super) struct ReadPool {
    path: PathBuf,
    options: StoreOptions,
    idle: Mutex<Vec<SqliteReader>>,
}

impl ReadPool {
    pub(super) fn new(path: PathBuf, options: StoreOptions) -> Self {
        Self { path, options, idle: Mutex::new(Vec::new()) }
    }

    /// Runs `read` on an idle connection (or a new one), then keeps the connection for the
    /// next read unless `read` failed.
    pub(super) fn with<T>(&self, read: impl FnOnce(&SqliteReader) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let idle = self.lock().pop();
        let reader = match idle {
            Some(reader) => reader,
            None => {
                let reader = SqliteReader::open_with(&self.path, &self.options)?;
                reader.connection().busy_timeout(Duration::ZERO)?;
                reader
            }
        };
        let result = read(&reader);
        if result.is_ok() {
            let mut idle = self.lock();
            if idle.len() < MAX_IDLE {
                idle.push(reader);
            }
        }
        result
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<SqliteReader>> {
        self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
