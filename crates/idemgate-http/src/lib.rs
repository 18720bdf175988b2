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
//! - [`outbound`]: the outbound API on `/api/v1` (Svix-compatible), its tokens and pages;
//! - [`console`]: the operator console on its own listener: the admin API (`admin/`, one
//!   module per resource, with its extractors and its OpenAPI document) and the dashboard
//!   (`dashboard/`, one module per page), the state they share, the dashboard's sessions
//!   ([`console::session`]) and the operator's views of the store ([`console::views`]), one
//!   shape for the admin API and the CLI;
//! - [`current`]: the router and the admin token a configuration reload replaces;
//! - [`answer`]: where every status is chosen, one mapping per family of answers;
//! - [`server`]: the accept loop with graceful shutdown;
//! - [`tls`]: TLS termination from PEM files;
//! - [`trace`]: the delivery's span and the `traceparent` it continues.

pub mod access;
pub mod answer;
pub mod body;
pub mod console;
pub mod current;
pub mod gateway;
pub mod idempotency;
pub mod inbound;
pub mod outbound;
pub mod portal;
pub mod proxy;
pub mod scrape;
pub mod server;
pub mod tls;
pub mod trace;

pub use answer::DeliveryAnswer;
pub use inbound::{Accepted, AnswerStyle, Checked, Delivered, Inbound, RejectionCounts, Verified};
pub use server::{CloseWithoutResponse, Peer, ServeOptions, serve, termination_signal};
