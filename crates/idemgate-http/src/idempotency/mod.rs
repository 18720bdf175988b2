//! `Idempotency-Key` for any axum/hyper service, as a tower layer ([`IdempotencyLayer`]).
//!
//! For the configured methods (POST, PATCH, DELETE by default; GET and HEAD never), a
//! request with an `Idempotency-Key` runs at most once per (caller scope, key) within the
//! retention window (3 h by default):
//!
//! - the first request takes a lock (30 s by default) and runs; a 2xx or 3xx answer is
//!   stored (status, the configured headers, the body up to a size limit) and every repeat
//!   gets it back with `Idempotency-Replay: true`, without the handler being called;
//! - a 5xx is not stored and a 4xx releases the key (unless configured to be stored), so a
//!   retry, or the corrected request, runs again under the same key;
//! - a repeat while the first is still running gets `409` with `Retry-After`; the same key
//!   with another method, path, query or body (JSON whitespace included) gets `422`;
//! - after the lock expires another request may run. That does not tell whether the first
//!   one's side effect happened: a handler that can outlive the lock must be safe to run
//!   twice. A late completion from the expired holder is discarded (fencing by token).
//!
//! **Security property: keys are scoped to the caller.** The scope comes from
//! configuration ([`Scope`]): by default a SHA-256 of the `Authorization` header. One
//! caller's key can never replay another caller's response, even if both choose the same
//! key; requests without credentials share the `anonymous` scope.
//!
//! When the store cannot be reached, [`WhenUnavailable`] decides: `Refuse` (503 with
//! `Retry-After`, the default) or `PassThrough` (the request runs unprotected; counted and
//! logged). A response body larger than `max_stored_body` is streamed to the client, never
//! held whole: as soon as it passes the limit the record is completed with its status and
//! headers only (the effect has happened, so a retry must not run it again), and a replay
//! has an empty body with `Idempotency-Replay-Body: omitted`. Memory per request is
//! bounded by `max_request_body` plus `max_stored_body`.
//!
//! A repeat of a completed record is answered without a write: from the records this
//! process has kept in memory (`replay_cache_bytes`, see [`replays`]), else from a plain
//! read of the store. Everything else takes the writing path, decided under the write lock.

mod layer;
mod replays;
mod service;

use std::{sync::Arc, time::Duration};

use http::{HeaderName, Method, header};
use idemgate_core::idempotency::KeyError;

pub use layer::{IdempotencyLayer, purge_expired_every};

pub use service::Idempotency;

/// Put in a response's extensions by a handler whose answer must not rest in the store
/// (a new token, a new signing key): the key's record is completed with its status and
/// headers only, and a replay has an empty body with `Idempotency-Replay-Body: omitted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyNotStored;

/// The operation an `Idempotency-Key` names, handed to the handler as a request extension
/// when the layer runs it: the caller's scope, the key, and the record's expiry (fixed when
/// the record was created, kept through a take-over). A handler whose effect is in the same
/// store can make it a receipt: a run after a take-over (the first run's process died after
/// its commit and before the layer completed the record) then finds the first run's effect
/// instead of making a second, and the same key after its window is a new operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// The caller, as the layer's scope names it.
    pub scope: String,
    /// The client's key.
    pub key: String,
    /// When the key's record expires, unix milliseconds.
    pub expires_at_ms: i64,
}

/// The request header carrying the key.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
/// Set on every replayed response.
pub const IDEMPOTENCY_REPLAY: HeaderName = HeaderName::from_static("idempotency-replay");

/// Who a request belongs to, for scoping keys.
#[derive(Clone)]
pub enum Scope {
    /// A SHA-256 of this header's value (`Authorization`, an API-key header); requests
    /// without it share the `anonymous` scope.
    HeaderHash(HeaderName),
    /// The caller's scope as the application determines it from the request head.
    Custom(Arc<dyn Fn(&http::request::Parts) -> String + Send + Sync>),
}

impl std::fmt::Debug for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::HeaderHash(name) => write!(f, "HeaderHash({name})"),
            Self::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

/// What to do when the store cannot be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenUnavailable {
    /// Answer 503 with `Retry-After`: nothing runs unprotected.
    Refuse,
    /// Run the request without protection, counted and logged.
    PassThrough,
}

/// The layer's settings.
#[derive(Debug, Clone)]
pub struct IdempotencyConfig {
    /// Methods the key applies to.
    pub methods: Vec<Method>,
    /// Refuse (400) a request of those methods without a key.
    pub require_key: bool,
    /// How long the first request's lock holds.
    pub lock: Duration,
    /// How long a record (and so a replay) lives.
    pub retention: Duration,
    /// Largest request body accepted with a key, in bytes.
    pub max_request_body: usize,
    /// How long a client may take to send that body (408 after).
    pub body_timeout: Duration,
    /// Largest response body kept for replay, in bytes.
    pub max_stored_body: usize,
    /// Response headers kept and replayed.
    pub stored_headers: Vec<HeaderName>,
    /// Store 4xx answers too (instead of releasing the key).
    pub store_client_errors: bool,
    /// What to do when the store cannot be reached.
    pub when_unavailable: WhenUnavailable,
    /// How the caller's scope is found.
    pub scope: Scope,
    /// Bytes of completed records kept in memory to answer repeats without reading the
    /// store (`0`: every repeat reads it).
    pub replay_cache_bytes: usize,
    /// The shape of the layer's own refusals on this mount.
    pub refusals: RefusalStyle,
}

/// The shape of the layer's own refusals, by where it is mounted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RefusalStyle {
    /// `application/problem+json` (RFC 9457): proxies and applications embedding the layer.
    #[default]
    Problem,
    /// Svix's `HttpErrorOut` / `HTTPValidationError`, on the outbound API (`/api/v1`).
    Svix,
}

impl Default for IdempotencyConfig {
    fn default() -> Self {
        Self {
            methods: vec![Method::POST, Method::PATCH, Method::DELETE],
            require_key: false,
            lock: Duration::from_secs(30),
            retention: Duration::from_secs(3 * 3600),
            max_request_body: 1 << 20,
            body_timeout: crate::body::BODY_TIMEOUT,
            max_stored_body: 1 << 20,
            stored_headers: vec![header::CONTENT_TYPE, header::LOCATION],
            store_client_errors: false,
            when_unavailable: WhenUnavailable::Refuse,
            scope: Scope::HeaderHash(header::AUTHORIZATION),
            replay_cache_bytes: 32 << 20,
            refusals: RefusalStyle::Problem,
        }
    }
}

/// Why the layer answered instead of the handler. Mapped to statuses in [`crate::answer`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The route requires a key and none was sent (400).
    MissingKey,
    /// The key is malformed (400).
    BadKey(KeyError),
    /// The body is over `max_request_body` (413).
    BodyTooLarge,
    /// The body did not arrive within `body_timeout` (408).
    BodyTimeout,
    /// The body stream broke (400).
    BodyUnreadable,
    /// The key was used for another request (422).
    Mismatch,
    /// The key's first request is still running (409).
    InFlight {
        /// Time left on its lock.
        retry_after: Duration,
    },
    /// The store cannot be reached and the layer refuses (503).
    StoreUnavailable,
}
