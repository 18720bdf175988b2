//! SMTP submission with an idempotency header: a listener whose deliveries are messages.
//!
//! An application that submits mail and retries after a lost `250` would otherwise send
//! the message twice. Here a message carrying a key header (`Idempotency-Key` by default)
//! is stored with its receipt, its envelope and one relay job per smarthost in one
//! transaction, answered `250` only after the commit, and a repeat gets the original queue
//! id without being relayed again; the worker's `smtp` destination relays it.
//!
//! [`session`] is the protocol's state machine, pure and unit-tested; [`listener`] is the
//! I/O around it (sockets, TLS, timeouts, the store). Command lines and the `DATA` stream
//! are parsed by `smtp-proto` (Stalwart's SMTP parser, maintained with their mail server
//! and fuzzed there): it gives the commands and their parameters (`SIZE`, `BODY`, AUTH
//! mechanisms) and the dot-unstuffing, and no server, so the state machine is ours.

pub mod listener;
pub mod session;

pub use listener::{ListenerConfig, serve, serve_all};
pub use session::{Policy, User};
