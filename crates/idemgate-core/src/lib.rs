//! The pure core of idemgate: everything that decides, nothing that waits.
//!
//! Verification, strict JSON, fingerprints, outcomes and identities live here so they can
//! be tested without sockets, files or clocks. This crate performs no I/O, spawns nothing
//! and never reads the time: callers pass the current time in ([`time::UnixTime`]).

pub mod alert;
pub mod breaker;
pub mod catalog;
pub mod comparison;
pub mod fingerprint;
pub mod form;
pub mod idempotency;

pub mod job;

pub mod limit;

pub mod json;
pub mod mail;
pub mod outbound;
pub mod outcome;
pub mod receipt;
pub mod retry;
pub mod routing;

pub mod scheme;
pub mod secret;
pub mod time;
pub mod traceparent;

pub use fingerprint::BodyHash;
pub use outcome::{Outcome, Rejection};
pub use receipt::{Identity, ReceiptKey, SourceName};
pub use scheme::{AuthError, Scheme, VerifiedDelivery};
pub use secret::{Secret, SecretSet};
pub use time::UnixTime;
