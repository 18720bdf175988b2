//! The sending side of a scheme: one attempt of a message, and a scheme bound to a key that
//! signs it. Pure like the verifiers: the attempt's timestamp is given, never read.

use std::sync::Arc;

use super::Scheme;
use crate::{Secret, UnixTime, secret::SecretError};

/// One attempt of one message, as a sender signs it.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// The message's id, the same on every attempt: the event identity where the scheme
    /// carries it in a header (`webhook-id`, `X-GitHub-Delivery`, `X-Shopify-Event-Id`).
    pub id: &'a str,
    /// Which attempt this is; a scheme with a per-attempt delivery id (the demo scheme)
    /// derives it from `id` and this number.
    pub attempt: u32,
    /// The attempt's time, signed where the scheme signs a timestamp.
    pub timestamp: UnixTime,
    /// The body bytes exactly as sent.
    pub body: &'a [u8],
}

/// A scheme of the registry and a key it signs with. `Debug` never shows the key.
#[derive(Debug, Clone)]
pub struct Signer {
    scheme: Arc<dyn Scheme>,
    key: Secret,
}

impl Signer {
    /// Signs in `scheme` with `key`: the secret the receiver holds for an HMAC scheme, the
    /// 32-byte private seed for ed25519. Refuses a key the scheme cannot sign with.
    pub fn new(scheme: &'static dyn Scheme, key: Secret) -> Result<Self, SecretError> {
        Self::configured(scheme.configured(None), key)
    }

    /// Signs in a scheme as a source configured it (its signed URL, say) with `key`.
    pub fn configured(scheme: Arc<dyn Scheme>, key: Secret) -> Result<Self, SecretError> {
        scheme.check_signing_key(&key)?;
        Ok(Self { scheme, key })
    }

    /// The scheme this signer signs in.
    #[must_use]
    pub fn scheme(&self) -> &dyn Scheme {
        self.scheme.as_ref()
    }

    /// The headers of one attempt: the scheme's envelope, then its signature.
    #[must_use]
    pub fn headers(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        let mut headers = self.scheme.envelope(message);
        headers.extend(self.scheme.signature(&self.key, message));
        headers
    }
}
