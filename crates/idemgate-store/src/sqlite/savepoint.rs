//! The savepoint each batch member runs on, on cached statements.
//!
//! rusqlite's `Savepoint` parses `SAVEPOINT`, `RELEASE` and `ROLLBACK TO` afresh every
//! time; the writer opens one per delivery, so on the hot path the parsing cost as much as
//! the receipt's lookup. These are prepared once per connection instead.

use std::ops::Deref;

use rusqlite::Connection;

/// A savepoint on `conn`: [`Savepoint::release`] keeps its changes in the enclosing
/// transaction; dropping it unreleased rolls them back.
pub(super) struct Savepoint<'c> {
    conn: &'c Connection,
    released: bool,
}

impl<'c> Savepoint<'c> {
    pub(super) fn open(conn: &'c Connection) -> rusqlite::Result<Self> {
        conn.prepare_cached("SAVEPOINT member")?.execute([])?;
        Ok(Self { conn, released: false })
    }

    /// Keeps the changes made since the savepoint opened.
    /// If the release fails, dropping the savepoint still rolls it back.
    pub(super) fn release(mut self) -> rusqlite::Result<()> {
        self.conn.prepare_cached("RELEASE member")?.execute([])?;
        self.released = true;
        Ok(())
    }
}

impl Deref for Savepoint<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Savepoint<'_> {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        // Rolls back to the savepoint, then removes it. If this fails the transaction is
        // already gone (SQLite rolled it back), and the batch fails at its commit.
        let _ = self.conn.prepare_cached("ROLLBACK TO member").and_then(|mut s| s.execute([]));
        let _ = self.conn.prepare_cached("RELEASE member").and_then(|mut s| s.execute([]));
    }
}
