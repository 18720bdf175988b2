//! idemgate: verify webhook deliveries on their raw bytes, record a receipt in the same
//! transaction as their effect (or the jobs that will perform it), answer only after the
//! commit is durable, and give every repeat its original answer.
//!
//! This crate is the gateway (`idemgate serve`): [`config`] turns the TOML file into typed
//! settings, [`gateway`] turns them into the routes `idemgate_http::gateway` builds and
//! serves, [`run`] starts everything on one clock, [`reload`] decides what a configuration
//! reload changes while running, [`traces`] builds the span exporter, and [`outbound`]
//! builds the worker that forwards stored events; [`operator`] and [`applications`] print
//! the operator's views in a terminal. Each command's own code is the binary's
//! (`src/commands/`). It builds no router and chooses no status: that is `idemgate-http`'s. It also
//! re-exports the workspace crates so an application depends on one crate: [`core`] (pure
//! decisions), [`clock`] (where the time is read), [`store`] (receipts on SQLite and
//! PostgreSQL), [`http`] (the HTTP edge), [`worker`] (delivery). `examples/counter.rs` shows
//! the library path.

pub mod alerts;
pub mod applications;
pub mod availability;
pub mod config;
pub mod errors;
pub mod gateway;
pub mod operator;
pub mod outbound;
pub mod reload;
pub mod run;
pub mod traces;

pub use idemgate_clock as clock;
pub use idemgate_core as core;
pub use idemgate_http as http;
pub use idemgate_store as store;
pub use idemgate_worker as worker;
