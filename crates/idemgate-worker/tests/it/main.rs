//! The worker against a real local destination (`idemgate_testkit::Destination`) that
//! records what it receives and can be told to fail, with the clock injected so retry
//! timing needs no sleeping.

#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

mod delivery;
mod endpoints;
mod pipeline;
mod protect;
mod queue;
