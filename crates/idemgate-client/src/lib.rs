//! The sending side: requests that can be retried safely because every attempt names the
//! same operation.
//!
//! - An API mutation (POST, PATCH, DELETE) gets an `Idempotency-Key` generated once, or
//!   the one given, and keeps it on every retry.
//! - A webhook is signed with a scheme of the core's registry ([`WebhookSigner`], the
//!   same code that verifies it): its event identity is chosen once and kept on every
//!   retry, while each attempt gets a fresh timestamp and signature.
//! - Connection errors, timeouts, 5xx, 408 and 429 are retried with exponential backoff
//!   and jitter, honouring `Retry-After`; so is, for a keyed request, a `409` that says
//!   the same key is still in flight (`Retry-After` with a Svix-compatible API's code
//!   `idempotency_conflict`, as idemgate's `/api/v1` answers, or with a 409 problem, as
//!   the gateway's own `Idempotency-Key` layer and proxy answer); other 4xx are final.
//! - A message is published to such an API as one such operation ([`Publish`],
//!   [`Client::publish`]): its answer is the message's id and whether it was a replay.
//! - A mail submission ([`MailRequest`], [`MailClient`]) carries an idempotency key in a
//!   message header, chosen once (or the message's own) and kept on every retry; connection
//!   errors, timeouts and `4xx` replies are retried on the same schedule, a `5xx` is final.
//!
//! ```no_run
//! # async fn run() -> Result<(), idemgate_client::SendError> {
//! use idemgate_client::{Client, Request};
//! let client = Client::new(Default::default())?;
//! let request = Request::post("http://127.0.0.1:7000/orders").json_body(&br#"{"qty":1}"#[..]);
//! let sent = client.send(request).await?;
//! println!("{} after {} attempt(s)", sent.status, sent.attempts.len());
//! # Ok(()) }
//! ```

mod api_answer;
mod client;
mod mail;
mod publish;
mod request;

pub use client::{Attempt, Client, ClientOptions, Final, NoAnswer, SendError, Sent, Sleeper, TokioSleeper};
/// A scheme and its key, ready to sign attempts: the core's [`idemgate_core::scheme::Signer`].
pub use idemgate_core::scheme::Signer as WebhookSigner;
pub use mail::{
    DEFAULT_KEY_HEADER, MAX_KEY_LEN, MailAttempt, MailClient, MailCredentials, MailError, MailRequest, MailSent,
    PreparedMessage, Reply, StartTls, prepare_message,
};
pub use publish::{Publish, PublishError, Published};
pub use request::Request;
