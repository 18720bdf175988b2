//! The durable store of idemgate: receipts, and the in-transaction effect that commits
//! together with the receipt.
//!
//! [`Store`] is the one interface the gateway uses, over two backends. On SQLite (the
//! embedded default), all writes go through one writer thread that owns the write
//! connection and group-commits what is queued ([`SqliteStore`]); reads use their own
//! connections ([`SqliteReader`]). One writer plus `BEGIN IMMEDIATE` plus the primary key
//! on (source, identity) makes duplicate handling correct by construction, also across
//! processes sharing the file. On PostgreSQL ([`PgStore`], for several instances), unique
//! constraints with `ON CONFLICT`, `FOR UPDATE SKIP LOCKED` and lease fencing give the
//! same guarantees across any number of processes. This is the only crate that writes
//! SQL for idemgate's own tables.

mod error;
pub mod idempotency;
pub mod inbox;

pub mod jobs;
mod lock;
pub mod maintenance;

mod migrations;
mod model;
mod postgres;
mod reader;
mod sqlite;
mod store;
pub mod views;
mod writer;

pub use error::{ErrorKind, HandlerError, StoreError};
pub use lock::{Holders, lock_path};
/// The schema version this build writes (`PRAGMA user_version`).
pub use migrations::CURRENT_VERSION as SCHEMA_VERSION;

pub use postgres::{PgOptions, PgStore, create_schema};
pub use reader::{ConflictRecord, Receipt, SqliteReader, receipt, receipts};
pub use sqlite::{StoreOptions, open_connection};
pub use store::{Receiver, Store};
pub use writer::{Handler, ReceiveRequest, SqliteStore, WriterStats};

/// rusqlite, re-exported so handlers use the same version the store does.
pub use rusqlite;
/// The connection type a handler sees: the open transaction of its delivery.
pub use rusqlite::Connection;
