//! The durable store of idemgate: receipts, and the in-transaction effect that commits
//! together with the receipt.
//!
//! [`Store`] is the one interface the gateway uses, over two backends that sit side by
//! side and share only this crate's neutral root:
//! - [`sqlite`] (the embedded default, [`SqliteStore`]): all writes go through one writer
//!   thread that owns the write connection and group-commits what is queued; reads use
//!   their own connections ([`SqliteReader`]). One writer plus `BEGIN IMMEDIATE` plus the
//!   primary key on (source, identity) makes duplicate handling correct by construction,
//!   also across processes sharing the file.
//! - `postgres` ([`PgStore`], for several instances): unique constraints with
//!   `ON CONFLICT`, `FOR UPDATE SKIP LOCKED` and lease fencing give the same guarantees
//!   across any number of processes.
//!
//! The neutral root holds what both take and return, one module per concept
//! ([`jobs`], [`inbox`], [`idempotency`], [`views`], [`maintenance`], the outbound API's
//! data in [`outbound`], and the receipt types re-exported here), the rules and pure helpers both use below their SQL, the
//! errors, and the [`Store`] facade, whose every method makes the same call on either
//! backend: both take each operation's arguments by value. Neither backend imports the
//! other. This is the only crate that writes SQL for idemgate's own tables.
//!
//! [`Store`] is the one door (sqlx's shape: one public surface, drivers behind it). Each
//! backend has exactly one form of each operation, `pub(crate)`, with audit, limits and
//! breakers as plain parameters; the conveniences (`claim_jobs` beside
//! `claim_jobs_limited`, `complete_job` beside `complete_jobs`, the [`Audited`] view) are
//! on [`Store`] alone. What stays public of a backend is what only it has and a caller
//! needs: opening it with its options ([`SqliteStore::open`], [`PgStore::connect`]), the
//! SQLite handler contract for applications that bring their own effect
//! ([`SqliteStore::receive`], [`SqliteStore::write`], [`Handler`]), reading a SQLite file
//! without a writer ([`SqliteReader`]), file maintenance and the writers' lock
//! ([`sqlite::maintenance`], [`Holders`], [`lock_path`]), and [`create_schema`].

mod error;
mod model;
mod postgres;
pub mod sqlite;
mod store;

pub use error::{ErrorKind, HandlerError, StoreError};
pub use model::{
    audit, idempotency, inbox, jobs, maintenance, outbound,
    receive::{ConflictRecord, Receipt, ReceiveRequest},
    replication, session, views,
};
pub use postgres::{PgError, PgOptions, PgStore, create_schema, migrate_schema_to};
/// rusqlite, re-exported so handlers use the same version the store does.
pub use rusqlite;
/// The connection type a handler sees: the open transaction of its delivery.
pub use rusqlite::Connection;
/// The schema version this build writes (`PRAGMA user_version`).
pub use sqlite::CURRENT_VERSION as SCHEMA_VERSION;
pub use sqlite::{
    Handler, Holders, SqliteError, SqliteReader, SqliteStore, StoreOptions, WriterStats, lock_path, open_connection,
    receipt, receipts,
};
pub use store::{Audited, Receiver, Store};
