//! The HTTP edge of idemgate: the only crate that knows status codes and JSON wire shapes.
//!
//! - [`body`]: reads a request body under a size limit, never buffering more than it allows;
//! - [`idempotency`]: the `Idempotency-Key` tower layer for HTTP APIs;

//! - [`inbound`]: one delivery from raw request to outcome (size, verify, parse, contract,
//!   store), in that order;
//! - [`answer`]: the one place where a rejection or an outcome becomes a status and a body;
//! - [`server`]: the accept loop with graceful shutdown;
//! - [`session`]: the dashboard's signed-in sessions and the admin token's comparison;
//! - [`tls`]: TLS termination from PEM files;
//! - [`views`]: the operator's views of the store, one shape for the admin API and the CLI.

pub mod admin;
pub mod answer;
pub mod body;
pub mod dashboard;
pub mod idempotency;

pub mod inbound;
pub mod server;
pub mod session;
pub mod tls;
pub mod views;

pub use answer::DeliveryAnswer;
pub use inbound::{Accepted, AnswerStyle, Checked, Delivered, Inbound, RejectionCounts, system_now};
pub use server::{CloseWithoutResponse, Peer, ServeOptions, serve, termination_signal};
