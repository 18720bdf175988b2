//! idemgate: verify webhook deliveries on their raw bytes, record a receipt in the same
//! transaction as their effect, answer only after the commit is durable, and give every
//! repeat its original answer.
//!
//! This facade re-exports the workspace crates so an application depends on one crate:
//! [`core`] (pure decisions), [`store`] (receipts on SQLite), [`http`] (the axum edge).
//! `examples/counter.rs` shows the whole path in about two hundred lines.

pub use idemgate_core as core;
pub use idemgate_http as http;
pub use idemgate_store as store;
