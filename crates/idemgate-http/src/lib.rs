//! The HTTP edge of idemgate: the only crate that knows status codes and JSON wire shapes,
//! and where every router is built.
//!
//! - [`body`]: reads a request body under a size limit, never buffering more than it allows;
//! - [`idempotency`]: the `Idempotency-Key` tower layer for HTTP APIs;
//! - [`inbound`]: one delivery from raw request to outcome (size, verify, parse, contract,
//!   store), in that order;
//! - [`gateway`]: the gateway's router (sources, health, metrics, proxies) from plain settings;
//! - [`proxy`]: one `[[proxy]]`'s forwarding routes behind the layer;
//! - [`scrape`]: `/metrics`, and the queue's gauges refreshed on an interval;
//! - [`admin`] and [`dashboard`]: the admin API and the dashboard, on their own listener;
//!   `extract` (the API's extractors, refusing as JSON) and `openapi` (its document's
//!   security scheme, refusals and enums) beside them;
//! - [`current`]: the router and the admin token a configuration reload replaces;
//! - [`answer`]: where every status is chosen, one mapping per family of answers;
//! - [`views`]: the operator's views of the store, one shape for the admin API and the CLI;
//! - [`server`]: the accept loop with graceful shutdown;
//! - [`session`]: the dashboard's signed-in sessions and the admin token's comparison;
//! - [`tls`]: TLS termination from PEM files;
//! - [`trace`]: the delivery's span and the `traceparent` it continues.

pub mod access;
pub mod admin;
pub mod answer;
pub mod body;
pub mod current;
pub mod dashboard;
mod extract;
pub mod gateway;
pub mod idempotency;
pub mod inbound;
mod openapi;
pub mod proxy;
pub mod scrape;
pub mod server;
pub mod session;
pub mod tls;
pub mod trace;
pub mod views;

pub use answer::DeliveryAnswer;
pub use inbound::{Accepted, AnswerStyle, Checked, Delivered, Inbound, RejectionCounts, Verified};
pub use server::{CloseWithoutResponse, Peer, ServeOptions, serve, termination_signal};
