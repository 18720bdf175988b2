//! Signature schemes: how a source proves that a delivery's raw bytes are its own, and how
//! a sender makes that proof.
//!
//! A scheme sees the headers, the raw body bytes exactly as received, the source's active
//! secrets and the current time, and either vouches for the delivery or says why not. It
//! runs before any parsing: nothing from an unauthenticated body is ever interpreted. The
//! same scheme signs one attempt of a message for a sender (`idemgate send`, the bench, the
//! worker's outgoing deliveries, the tests), so what is sent is made by the code that checks it.
//! Every scheme is listed once, in [`registry`]; adding a provider means adding one module
//! that implements [`Scheme`] and one entry there.

pub mod box_v2;
pub mod demo;
pub mod discord;
mod ed25519;
pub mod generic;
pub mod github;
pub mod plivo;
pub mod registry;
pub mod rsa;
pub mod sendgrid;
pub mod shopify;
mod signing;
pub mod slack;
pub mod standard;
pub mod stripe;
pub mod telnyx;
pub mod twilio;

use std::sync::Arc;

use hmac::{Hmac, Mac};
use http::HeaderMap;
use sha2::Sha256;
use subtle::{Choice, ConstantTimeEq};

use crate::{
    Identity, Rejection, Secret, SecretSet, UnixTime,
    json::Json,
    outcome::{Field, Location},
    secret::SecretError,
};

pub use box_v2::BoxV2;
pub use demo::DemoV1;
pub use discord::Discord;
pub use generic::{BasicAuth, GenericHmac, SharedToken};
pub use github::GitHub;
pub use plivo::Plivo;
pub use registry::{OUTGOING, SCHEMES, UnknownScheme, lookup, names};
pub use sendgrid::SendGrid;
pub use shopify::Shopify;
pub use signing::{Outgoing, Signer};
pub use slack::Slack;
pub use standard::{StandardWebhooks, StandardWebhooksEd25519};
pub use stripe::Stripe;
pub use telnyx::Telnyx;
pub use twilio::Twilio;

/// What a scheme needs to see of one delivery.
#[derive(Debug, Clone, Copy)]
pub struct RawDelivery<'a> {
    /// The request headers as received.
    pub headers: &'a HeaderMap,
    /// The body bytes exactly as received, before any decoding.
    pub body: &'a [u8],
}

/// A delivery whose signature holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedDelivery {
    /// The per-attempt transport id, when the scheme has one. Never used as an event
    /// identity unless the provider documents that it survives redelivery (GitHub).
    pub delivery_id: Option<String>,
    /// The event's stable identity when the scheme carries it in a header, read from the
    /// header it verified (Standard Webhooks' `webhook-id` or `svix-id`); `None` when it
    /// lives in the body.
    pub event_identity: Option<String>,
    /// The signed timestamp; `None` for schemes that sign none (GitHub, Shopify), whose
    /// replay protection then rests on the receipt alone.
    pub timestamp: Option<UnixTime>,
}

/// Where a source's stable event identity is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityLocation {
    /// In this request header (case-insensitive name).
    Header(String),
    /// At this JSON pointer (RFC 6901) into the parsed body; a string or an integer.
    Body(String),
}

impl std::fmt::Display for IdentityLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Header(name) => write!(f, "header {name}"),
            Self::Body(pointer) => write!(f, "body {pointer}"),
        }
    }
}

impl IdentityLocation {
    /// Whether `scheme`'s signature covers the identity found here: always for the body,
    /// which every scheme signs but `token` and `basic` (which sign nothing, and where
    /// another identity in the body is other bytes anyway, so a body receipt adds nothing);
    /// for a header only if the scheme signs that header.
    #[must_use]
    pub fn is_signed_by(&self, scheme: &dyn Scheme) -> bool {
        match self {
            Self::Header(name) => scheme.signed_identity_headers().iter().any(|h| h.eq_ignore_ascii_case(name)),
            Self::Body(_) => true,
        }
    }

    /// The identity as a contract's field, for a refusal to name.
    #[must_use]
    pub fn field(&self) -> Field {
        let location = match self {
            Self::Header(name) => Location::Header(name.clone()),
            Self::Body(pointer) => Location::Pointer(pointer.clone()),
        };
        Field { name: Field::IDENTITY, location }
    }

    /// Finds the identity in a delivery that `scheme` verified, and parsed. A header the
    /// scheme signs as the identity is taken from what it verified, whichever of its
    /// spellings the sender used (`svix-id` for `webhook-id`). A JSON integer is accepted
    /// and used in its decimal form; anything else missing or malformed is a contract
    /// rejection.
    pub fn resolve(
        &self,
        scheme: &dyn Scheme,
        headers: &HeaderMap,
        delivery: &VerifiedDelivery,
        event: &Json,
    ) -> Result<Identity, Rejection> {
        let missing =
            Rejection::Contract { reason: "event identity is missing or malformed", field: Some(self.field()) };
        let text = match self {
            Self::Header(_) if self.is_signed_by(scheme) => delivery.event_identity.clone().ok_or(missing.clone())?,
            Self::Header(name) => {
                let mut values = headers.get_all(name.as_str()).iter();
                match (values.next(), values.next()) {
                    (Some(value), None) => value.to_str().map_err(|_| missing.clone())?.to_owned(),
                    _ => return Err(missing),
                }
            }
            Self::Body(pointer) => match event.pointer(pointer) {
                Some(Json::String(text)) => text.clone(),
                Some(number @ Json::Number(_)) => number.as_i64().ok_or(missing.clone())?.to_string(),
                _ => return Err(missing),
            },
        };
        Identity::new(text).map_err(|_| missing)
    }
}

/// One way of verifying deliveries. Implementations are pure and must compare MACs in
/// constant time.
pub trait Scheme: Send + Sync + std::fmt::Debug {
    /// The scheme's configuration name, e.g. `demo-webhook-v1`.
    fn name(&self) -> &'static str;

    /// Where the provider documents its stable event identity.
    fn default_identity(&self) -> IdentityLocation;

    /// Whether [`Scheme::default_identity`] is the provider's own; `false` for the
    /// configured schemes (and catalog providers that send no stable identity), whose
    /// sources must name one.
    fn carries_identity(&self) -> bool {
        true
    }

    /// Whether the signature covers the URL the provider posts to (Square, HubSpot,
    /// Twilio): a source using the scheme then configures that URL as `signed_url`, as it
    /// is registered with the provider (behind a proxy it is not the URL idemgate sees).
    fn signs_url(&self) -> bool {
        false
    }

    /// This scheme, signing and verifying with `url` as the URL posted to; `None` for a
    /// scheme that signs no URL.
    fn with_signed_url(&self, _url: &str) -> Option<Arc<dyn Scheme>> {
        None
    }

    /// The headers the signature covers whose value the scheme reports as
    /// [`VerifiedDelivery::event_identity`], in every spelling it accepts. Empty when the
    /// identity header is not signed (GitHub, Shopify) or the identity is in the body.
    fn signed_identity_headers(&self) -> &'static [&'static str] {
        &[]
    }

    /// Decodes one configured secret in the scheme's own format (hex, `whsec_` base64, a
    /// plain string, a public key). Errors never contain the secret.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError>;

    /// Verifies `delivery` against any of `secrets` at time `now`.
    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError>;

    /// The scheme as a source configures it: `tolerance_secs` replaces the default
    /// timestamp tolerance where the scheme signs a timestamp, and changes nothing where it
    /// signs none.
    fn configured(&self, tolerance_secs: Option<u64>) -> Arc<dyn Scheme>;

    /// The headers that name one attempt of `message` (its id and timestamp, as this
    /// scheme spells them), which it carries whether or not it is signed.
    fn envelope(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)>;

    /// The signature header of `message` under `key`, made as the provider's sender makes
    /// it. `None` only for a key that [`Scheme::check_signing_key`] refuses.
    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)>;

    /// Every header that [`Scheme::envelope`] and [`Scheme::signature`] set.
    fn signing_headers(&self) -> &'static [&'static str];

    /// Whether `key` can sign in this scheme; the reason never contains the key. HMAC
    /// schemes sign with any key bytes.
    fn check_signing_key(&self, _key: &Secret) -> Result<(), SecretError> {
        Ok(())
    }

    /// Whether the secret a receiver holds also signs (HMAC schemes), so that a sender
    /// given the source's secret can sign; `false` where signing needs a private key the
    /// receiver never holds (ed25519).
    fn secret_signs(&self) -> bool {
        true
    }
}

/// Why a delivery failed authentication. Reasons are bounded and carry header names only,
/// never header values, signatures or secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A required header is absent.
    #[error("header {0} is missing")]
    MissingHeader(&'static str),
    /// A header is repeated or does not have the scheme's format.
    #[error("header {0} is malformed")]
    MalformedHeader(&'static str),
    /// The signed timestamp is further from now than the tolerance allows.
    #[error("timestamp is outside the tolerance of {tolerance_secs} s")]
    TimestampOutOfTolerance {
        /// The configured tolerance.
        tolerance_secs: u64,
    },
    /// No active secret produces the given signature.
    #[error("signature does not match")]
    SignatureMismatch,
}

impl AuthError {
    /// A short stable code, usable as a metric label.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::MissingHeader(_) => "missing_header",
            Self::MalformedHeader(_) => "malformed_header",
            Self::TimestampOutOfTolerance { .. } => "timestamp_out_of_tolerance",
            Self::SignatureMismatch => "signature_mismatch",
        }
    }
}

/// The one value of header `name`, as text; absent, repeated or non-ASCII values are refused.
pub(crate) fn single_header<'h>(headers: &'h HeaderMap, name: &'static str) -> Result<&'h str, AuthError> {
    let mut values = headers.get_all(name).iter();
    let value = values.next().ok_or(AuthError::MissingHeader(name))?;
    if values.next().is_some() {
        return Err(AuthError::MalformedHeader(name));
    }
    value.to_str().map_err(|_| AuthError::MalformedHeader(name))
}

/// HMAC-SHA256 under `secret` of the concatenation of `parts`.
pub(crate) fn hmac_sha256(secret: &Secret, parts: &[&[u8]]) -> [u8; 32] {
    // HMAC accepts keys of any length, so `new_from_slice` cannot fail here.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose()).unwrap_or_else(|_| unreachable!());
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// Whether any of `secrets` produces any of the `given` tags. Every secret meets every
/// tag, in constant time, so the time taken tells neither which matched nor how far.
pub(crate) fn any_tag_matches(secrets: &SecretSet, given: &[[u8; 32]], tag: impl Fn(&Secret) -> [u8; 32]) -> bool {
    let matched = secrets.iter().fold(Choice::from(0), |acc, secret| {
        let expected = tag(secret);
        given.iter().fold(acc, |acc, candidate| acc | expected.ct_eq(candidate))
    });
    bool::from(matched)
}

/// A secret as the provider shows it (GitHub, Shopify, Slack): its UTF-8 bytes are the
/// key. Empty ones, and ones with surrounding whitespace (a copy-paste slip), are refused.
pub(crate) fn plain_secret(text: &str) -> Result<Secret, SecretError> {
    if text.is_empty() {
        return Err(SecretError::Invalid { reason: "the secret is empty" });
    }
    if text.trim() != text {
        return Err(SecretError::Invalid { reason: "the secret starts or ends with whitespace" });
    }
    Ok(Secret::new(text.as_bytes().to_vec()))
}

/// Whether `now` lies within `tolerance_secs` of `signed`, in either direction.
pub(crate) fn check_tolerance(signed: UnixTime, now: UnixTime, tolerance_secs: u64) -> Result<(), AuthError> {
    if signed.abs_diff(now) > tolerance_secs {
        return Err(AuthError::TimestampOutOfTolerance { tolerance_secs });
    }
    Ok(())
}

/// Canonical decimal Unix seconds in `header` (digits only, no sign, no leading zero), so
/// the header's text is exactly what the sender formatted and signed.
pub(crate) fn canonical_seconds(value: &str, header: &'static str) -> Result<UnixTime, AuthError> {
    let digits = value.bytes().all(|b| b.is_ascii_digit());
    if !digits || !(1..=18).contains(&value.len()) || value.starts_with('0') {
        return Err(AuthError::MalformedHeader(header));
    }
    value.parse().map(UnixTime).map_err(|_| AuthError::MalformedHeader(header))
}
