//! What to send: method, URL, headers, the body bytes exactly as given, and how the
//! operation is named across attempts.

use std::fmt;

use bytes::Bytes;
use http::Method;

use crate::WebhookSigner;

/// One logical operation, sent as many times as it takes. `Debug` shows the body's length
/// only and hides the values of credential headers (`Authorization`, `Cookie`, …).
#[derive(Clone)]
pub struct Request {
    pub(crate) method: Method,
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Bytes,
    pub(crate) idempotency_key: Option<String>,
    pub(crate) webhook: Option<(WebhookSigner, String)>,
}

/// Headers whose values are credentials, never shown.
const CREDENTIALS: [&str; 4] = ["authorization", "proxy-authorization", "cookie", "x-api-key"];

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, value)| {
                let hidden = CREDENTIALS.iter().any(|c| name.eq_ignore_ascii_case(c));
                (name.as_str(), if hidden { "<redacted>" } else { value.as_str() })
            })
            .collect();
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("headers", &headers)
            .field("body", &format_args!("<{} bytes>", self.body.len()))
            .field("idempotency_key", &self.idempotency_key)
            .field("webhook", &self.webhook)
            .finish()
    }
}

impl Request {
    /// A request with `method` to `url` and an empty body.
    #[must_use]
    pub fn new(method: Method, url: impl Into<String>) -> Self {
        Self { method, url: url.into(), headers: Vec::new(), body: Bytes::new(), idempotency_key: None, webhook: None }
    }

    /// A POST to `url`.
    #[must_use]
    pub fn post(url: impl Into<String>) -> Self {
        Self::new(Method::POST, url)
    }

    /// Adds a header.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The body, sent byte for byte (never re-serialised).
    #[must_use]
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// The body with `Content-Type: application/json`.
    #[must_use]
    pub fn json_body(self, body: impl Into<Bytes>) -> Self {
        self.header("content-type", "application/json").body(body)
    }

    /// Names the operation with this `Idempotency-Key`, so that separate invocations share
    /// it. Without one, a mutation gets a generated key, kept across its own retries.
    #[must_use]
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Signs every attempt as webhook event `identity` with `signer`.
    #[must_use]
    pub fn webhook(mut self, signer: WebhookSigner, identity: impl Into<String>) -> Self {
        self.webhook = Some((signer, identity.into()));
        self
    }

    /// Whether the method changes state, so that a key is attached.
    pub(crate) fn is_mutation(&self) -> bool {
        matches!(self.method, Method::POST | Method::PATCH | Method::DELETE)
    }
}

/// A fresh random identifier: 128 bits, hex, with a prefix.
#[must_use]
pub(crate) fn generate_id(prefix: &str) -> String {
    format!("{prefix}{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}
