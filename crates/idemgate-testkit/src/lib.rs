//! What idemgate's tests share, as a dev-dependency of every crate that needs it and
//! never of a product crate: today, the one scripted [`Destination`].
//!
//! It lives in a crate of its own so that the worker's, the client's and the gateway's
//! tests talk to the same server, and a fix to it is made once. It is built only on what
//! the workspace already uses (tokio and hyper) and on none of idemgate's own crates, so
//! the code under test never answers its own requests.

mod destination;

pub use destination::{Destination, Received, Step};
