//! What a destination is to the worker: something that takes one claimed job and says
//! how the attempt went. HTTP endpoints are one kind; a Rust application registers its
//! own for side effects it enqueued in its receipt transaction (the outbox).

use std::{future::Future, pin::Pin};

use idemgate_core::{UnixTime, retry::AttemptResult};
use idemgate_store::jobs::ClaimedJob;

/// A boxed future, so [`Deliver`] stays object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How one attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptOutcome {
    /// What the retry policy decides on.
    pub result: AttemptResult,
    /// A short, bounded error text for the record (never secrets or payloads).
    pub error: Option<String>,
    /// A bounded prefix of the response body, for the operator.
    pub response_prefix: Option<String>,
}

impl AttemptOutcome {
    /// A handler's success: it took the job (no HTTP status, it is not HTTP).
    #[must_use]
    pub fn succeeded() -> Self {
        Self { result: AttemptResult::Accepted, error: None, response_prefix: None }
    }

    /// A handler's transient failure, retried on the destination's schedule: a temporary
    /// refusal (no HTTP status, it is not HTTP).
    #[must_use]
    pub fn failed(error: impl Into<String>) -> Self {
        Self { result: AttemptResult::Refused { permanent: false }, error: Some(error.into()), response_prefix: None }
    }
}

/// Performs one attempt of a job. Implementations must be safe to call again for the
/// same job (a retry, a replay, a takeover after a crash): use the job's identity.
pub trait Deliver: Send + Sync + std::fmt::Debug {
    /// Attempts `job` at `now`.
    fn deliver<'a>(&'a self, job: &'a ClaimedJob, now: UnixTime) -> BoxFuture<'a, AttemptOutcome>;
}
