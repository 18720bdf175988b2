//! What idemgate's tests share, as a dev-dependency of every crate that needs it and
//! never of a product crate: the scripted HTTP [`Destination`], and [`smtp::Upstream`], a
//! recording SMTP server on aiosmtpd for the mail tests.
//!
//! It lives in a crate of its own so that the worker's, the client's and the gateway's
//! tests talk to the same server, and a fix to it is made once. It is built only on what
//! the workspace already uses (tokio and hyper) and on none of idemgate's own crates, so
//! the code under test never answers its own requests.

mod destination;
pub mod smtp;

pub use destination::{Destination, Received, Step};
