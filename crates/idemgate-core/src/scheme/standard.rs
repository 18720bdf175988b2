//! `standard-webhooks` and `standard-webhooks-ed25519`: the Standard Webhooks signature
//! scheme (<https://www.standardwebhooks.com>, spec 1.0.0 in
//! `standard-webhooks/standard-webhooks`, `spec/standard-webhooks.md`), which Svix sends too.
//!
//! A sender signs `"{webhook-id}.{webhook-timestamp}.{body}"` and sends the result in
//! `webhook-signature` as a space-separated list of `version,base64` entries, so that it can
//! sign with an old and a new key during rotation. Version `v1` is HMAC-SHA256 under a
//! `whsec_` secret; version `v1a` is ed25519 under a key pair whose public half is
//! published as `whpk_` + base64. Each scheme here accepts only its own version and skips
//! every other entry, as the reference libraries do. `webhook-id` is the event's identity:
//! the spec keeps it the same across retries and recommends it as the idempotency key.
//! Svix's `svix-id`, `svix-timestamp` and `svix-signature` spelling is accepted when no
//! `webhook-*` header is present; the two spellings are never mixed.

use base64::Engine;
use base64::alphabet;
use base64::engine::general_purpose::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use std::sync::Arc;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use http::HeaderMap;

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, any_tag_matches, check_tolerance,
    hmac_sha256, single_header,
};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// The configuration name of Standard Webhooks `v1` (HMAC).
pub const NAME: &str = "standard-webhooks";
/// The configuration name of Standard Webhooks `v1a` (ed25519).
pub const ED25519_NAME: &str = "standard-webhooks-ed25519";
/// Header carrying the message id, stable across retries.
pub const ID_HEADER: &str = "webhook-id";
/// Header carrying the signed unix timestamp of the attempt, in seconds.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// Header carrying the space-separated `version,base64` signature entries.
pub const SIGNATURE_HEADER: &str = "webhook-signature";
/// Svix's spelling of [`ID_HEADER`].
pub const SVIX_ID_HEADER: &str = "svix-id";
/// Svix's spelling of [`TIMESTAMP_HEADER`].
pub const SVIX_TIMESTAMP_HEADER: &str = "svix-timestamp";
/// Svix's spelling of [`SIGNATURE_HEADER`].
pub const SVIX_SIGNATURE_HEADER: &str = "svix-signature";
/// Both spellings of the signed message id, the event's identity.
const SIGNED_ID_HEADERS: &[&str] = &[ID_HEADER, SVIX_ID_HEADER];
/// The headers a sender sets, in the `webhook-*` spelling.
const SIGNING_HEADERS: &[&str] = &[ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER];
/// Prefix of a serialized symmetric (`v1`) secret.
pub const SECRET_PREFIX: &str = "whsec_";
/// Prefix of a serialized ed25519 (`v1a`) public key.
pub const PUBLIC_KEY_PREFIX: &str = "whpk_";
/// Prefix of a serialized ed25519 private key, which a receiver must never be given.
const PRIVATE_KEY_PREFIX: &str = "whsk_";
/// More entries than this in the signature header is malformed (bounded work).
pub const MAX_SIGNATURE_ENTRIES: usize = 16;
/// A signature header longer than this many bytes is malformed (bounded work).
pub const MAX_SIGNATURE_HEADER_LEN: usize = 4096;
/// The longest accepted message id.
const MAX_ID_LEN: usize = 256;
/// The spec's range for symmetric keys: 24 to 64 bytes.
const SECRET_LEN: std::ops::RangeInclusive<usize> = 24..=64;
const SYMMETRIC_VERSION: &str = "v1";
const ASYMMETRIC_VERSION: &str = "v1a";
/// Standard alphabet, padding optional and non-zero trailing bits allowed, as Python's
/// `base64.b64decode` and Go's `base64.StdEncoding` decode keys (the Python reference tests
/// an unpadded `...SwBr` secret, whose last character carries non-zero spare bits).
const KEY_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// One spelling of the three headers.
struct HeaderNames {
    id: &'static str,
    timestamp: &'static str,
    signature: &'static str,
}

static WEBHOOK_NAMES: HeaderNames =
    HeaderNames { id: ID_HEADER, timestamp: TIMESTAMP_HEADER, signature: SIGNATURE_HEADER };

static SVIX_NAMES: HeaderNames =
    HeaderNames { id: SVIX_ID_HEADER, timestamp: SVIX_TIMESTAMP_HEADER, signature: SVIX_SIGNATURE_HEADER };

/// The parsed headers of one delivery, before any signature is checked.
struct Signed<'h> {
    id: &'h str,
    timestamp: UnixTime,
    signatures: &'h str,
    signature_header: &'static str,
}

impl Signed<'_> {
    fn verified(&self) -> VerifiedDelivery {
        VerifiedDelivery {
            delivery_id: Some(self.id.to_owned()),
            event_identity: Some(self.id.to_owned()),
            timestamp: Some(self.timestamp),
        }
    }
}

/// The `webhook-*` spelling if any of its headers is present, else `svix-*` if any of
/// those is, else `webhook-*` (so that a bare request reports `webhook-id` missing).
fn header_names(headers: &HeaderMap) -> &'static HeaderNames {
    let present = |names: &HeaderNames| {
        [names.id, names.timestamp, names.signature].iter().any(|name| headers.contains_key(*name))
    };
    if !present(&WEBHOOK_NAMES) && present(&SVIX_NAMES) { &SVIX_NAMES } else { &WEBHOOK_NAMES }
}

fn read_signed(headers: &HeaderMap) -> Result<Signed<'_>, AuthError> {
    let names = header_names(headers);
    let id = parse_id(single_header(headers, names.id)?, names.id)?;
    let timestamp = parse_timestamp(single_header(headers, names.timestamp)?, names.timestamp)?;
    let signatures = single_header(headers, names.signature)?;
    Ok(Signed { id, timestamp, signatures, signature_header: names.signature })
}

/// 1 to 256 visible ASCII characters without `.`: the spec forbids `.` in the id so that
/// the signed content `id.timestamp.body` splits one way only.
fn parse_id<'h>(value: &'h str, name: &'static str) -> Result<&'h str, AuthError> {
    let valid = |b: u8| b.is_ascii_graphic() && b != b'.';
    if (1..=MAX_ID_LEN).contains(&value.len()) && value.bytes().all(valid) {
        Ok(value)
    } else {
        Err(AuthError::MalformedHeader(name))
    }
}

/// Canonical decimal seconds (digits only, no sign, no leading zero), so the header text
/// is exactly what the sender formatted and signed.
fn parse_timestamp(value: &str, name: &'static str) -> Result<UnixTime, AuthError> {
    let digits = value.bytes().all(|b| b.is_ascii_digit());
    if !digits || !(1..=18).contains(&value.len()) || value.starts_with('0') {
        return Err(AuthError::MalformedHeader(name));
    }
    value.parse().map(UnixTime).map_err(|_| AuthError::MalformedHeader(name))
}

/// The decoded `version` signatures of the header. Other versions and entries that are not
/// `version,base64` of `N` bytes are skipped, as the reference libraries skip them; an
/// oversized header or list is refused outright.
fn entries<const N: usize>(signed: &Signed<'_>, version: &str) -> Result<Vec<[u8; N]>, AuthError> {
    let list = signed.signatures;
    if list.len() > MAX_SIGNATURE_HEADER_LEN || list.split(' ').count() > MAX_SIGNATURE_ENTRIES {
        return Err(AuthError::MalformedHeader(signed.signature_header));
    }
    Ok(list
        .split(' ')
        .filter_map(|entry| entry.split_once(','))
        .filter(|(entry_version, _)| *entry_version == version)
        .filter_map(|(_, signature)| decode_signature(signature))
        .collect())
}

/// Standard base64 with padding, exactly `N` bytes.
fn decode_signature<const N: usize>(text: &str) -> Option<[u8; N]> {
    STANDARD.decode(text).ok()?.try_into().ok()
}

/// The bytes both versions sign: `"{msg_id}.{timestamp}.{body}"`.
fn signed_content(msg_id: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
    let mut content = format!("{msg_id}.{timestamp}.").into_bytes();
    content.extend_from_slice(body);
    content
}

/// Decodes standard base64 (padding optional, see [`KEY_BASE64`]) after an optional `prefix`, or fails with
/// `reason`; never echoes the text.
fn decode_key(text: &str, prefix: &str, reason: &'static str) -> Result<Vec<u8>, SecretError> {
    let encoded = text.strip_prefix(prefix).unwrap_or(text);
    KEY_BASE64.decode(encoded).map_err(|_| SecretError::Invalid { reason })
}

/// Standard Webhooks `v1`: HMAC-SHA256 under a shared `whsec_` secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StandardWebhooks {
    /// How far the signed timestamp may be from now, in seconds, either way.
    pub tolerance_secs: u64,
}

impl StandardWebhooks {
    /// The reference libraries' five minutes.
    pub const DEFAULT: Self = Self { tolerance_secs: 300 };
}

impl Default for StandardWebhooks {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Signs a message the way a Standard Webhooks sender does; returns a `v1,<base64>` entry
/// for the `webhook-signature` header.
///
/// ```
/// # use idemgate_core::{Secret, scheme::standard};
/// let sig = standard::sign(&Secret::new(vec![7; 32]), "msg_1", 1_700_000_000, b"{}");
/// assert!(sig.starts_with("v1,"));
/// ```
#[must_use]
pub fn sign(secret: &Secret, msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    format!("{SYMMETRIC_VERSION},{}", STANDARD.encode(tag(secret, msg_id, timestamp, body)))
}

/// What both versions send besides the signature: the id and the timestamp.
fn envelope(message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
    vec![(ID_HEADER, message.id.to_owned()), (TIMESTAMP_HEADER, message.timestamp.0.to_string())]
}

fn tag(secret: &Secret, msg_id: &str, timestamp: i64, body: &[u8]) -> [u8; 32] {
    hmac_sha256(secret, &[msg_id.as_bytes(), b".", timestamp.to_string().as_bytes(), b".", body])
}

impl Scheme for StandardWebhooks {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Header(ID_HEADER.into())
    }

    fn signed_identity_headers(&self) -> &'static [&'static str] {
        SIGNED_ID_HEADERS
    }

    /// `whsec_` + standard base64 (padding optional) of 24 to 64 key bytes, the spec's
    /// range. The bare base64 without `whsec_` is accepted too, as every reference library
    /// (Python, JavaScript, Go, Rust) and Svix's own accept it.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        if text.starts_with(PUBLIC_KEY_PREFIX) || text.starts_with(PRIVATE_KEY_PREFIX) {
            return Err(SecretError::Invalid { reason: "an ed25519 key belongs to scheme standard-webhooks-ed25519" });
        }
        let key = decode_key(text, SECRET_PREFIX, "expected whsec_ followed by base64")?;
        if !SECRET_LEN.contains(&key.len()) {
            return Err(SecretError::Invalid { reason: "the decoded key must be 24 to 64 bytes" });
        }
        Ok(Secret::new(key))
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let signed = read_signed(delivery.headers)?;
        let given = entries::<32>(&signed, SYMMETRIC_VERSION)?;
        check_tolerance(signed.timestamp, now, self.tolerance_secs)?;
        if !any_tag_matches(secrets, &given, |secret| tag(secret, signed.id, signed.timestamp.0, delivery.body)) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(signed.verified())
    }

    fn configured(&self, tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        Arc::new(Self { tolerance_secs: tolerance_secs.unwrap_or(self.tolerance_secs) })
    }

    fn envelope(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        envelope(message)
    }

    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        Some((SIGNATURE_HEADER, sign(key, message.id, message.timestamp.0, message.body)))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        SIGNING_HEADERS
    }
}

/// Standard Webhooks `v1a`: ed25519 under the sender's key pair; the receiver is
/// configured with `whpk_` public keys only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StandardWebhooksEd25519 {
    /// How far the signed timestamp may be from now, in seconds, either way.
    pub tolerance_secs: u64,
}

impl StandardWebhooksEd25519 {
    /// The reference libraries' five minutes.
    pub const DEFAULT: Self = Self { tolerance_secs: 300 };
}

impl Default for StandardWebhooksEd25519 {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Signs a message with the ed25519 key whose 32-byte seed is `signing_key_bytes` (the
/// RFC 8032 private key); returns a `v1a,<base64>` entry for `webhook-signature`.
///
/// ```
/// # use idemgate_core::scheme::standard;
/// let sig = standard::sign_ed25519(&[1; 32], "msg_1", 1_700_000_000, b"{}");
/// assert!(sig.starts_with("v1a,"));
/// ```
#[must_use]
pub fn sign_ed25519(signing_key_bytes: &[u8; 32], msg_id: &str, timestamp: i64, body: &[u8]) -> String {
    let key = SigningKey::from_bytes(signing_key_bytes);
    let signature = key.sign(&signed_content(msg_id, timestamp, body));
    format!("{ASYMMETRIC_VERSION},{}", STANDARD.encode(signature.to_bytes()))
}

/// Whether any of `given` is a valid signature of `message` by the public key `secret`.
///
/// `verify_strict` rather than `verify`: it also refuses small-order (weak) public keys and
/// small-order or non-canonical `R`, so one signature cannot be valid for several messages
/// or keys and cannot be re-encoded into a second valid one. Honest signers never produce
/// such values, so no genuine delivery is refused.
pub(super) fn ed25519_matches(secret: &Secret, message: &[u8], given: &[[u8; 64]]) -> bool {
    let Ok(key) = VerifyingKey::try_from(secret.expose()) else {
        return false;
    };
    given.iter().any(|entry| key.verify_strict(message, &Signature::from_bytes(entry)).is_ok())
}

/// `whpk_` + standard base64 (padding optional) of a 32-byte ed25519 public key that is a
/// valid, not small-order, curve point.
fn decode_public_key(text: &str) -> Result<Secret, SecretError> {
    const REASON: &str = "expected whpk_ followed by the base64 of a 32-byte ed25519 public key";
    if text.starts_with(PRIVATE_KEY_PREFIX) {
        return Err(SecretError::Invalid {
            reason: "a private key (whsk_) must not be configured; use its public key (whpk_)",
        });
    }
    if !text.starts_with(PUBLIC_KEY_PREFIX) {
        return Err(SecretError::Invalid { reason: REASON });
    }
    let bytes: [u8; 32] =
        decode_key(text, PUBLIC_KEY_PREFIX, REASON)?.try_into().map_err(|_| SecretError::Invalid { reason: REASON })?;
    match VerifyingKey::from_bytes(&bytes) {
        Ok(key) if !key.is_weak() => Ok(Secret::new(bytes.to_vec())),
        _ => Err(SecretError::Invalid { reason: "not a usable ed25519 public key" }),
    }
}

impl Scheme for StandardWebhooksEd25519 {
    fn name(&self) -> &'static str {
        ED25519_NAME
    }

    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Header(ID_HEADER.into())
    }

    fn signed_identity_headers(&self) -> &'static [&'static str] {
        SIGNED_ID_HEADERS
    }

    /// `whpk_` + base64 of a 32-byte public key. The prefix is required, so that a `whsec_`
    /// secret or a bare base64 HMAC key is never mistaken for a public key, and a `whsk_`
    /// private key is refused: the receiver must never hold it.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        decode_public_key(text)
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let signed = read_signed(delivery.headers)?;
        let given = entries::<64>(&signed, ASYMMETRIC_VERSION)?;
        check_tolerance(signed.timestamp, now, self.tolerance_secs)?;
        // Public keys are not secret, so stopping at the first match leaks nothing.
        let message = signed_content(signed.id, signed.timestamp.0, delivery.body);
        if !secrets.iter().any(|key| ed25519_matches(key, &message, &given)) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(signed.verified())
    }

    fn configured(&self, tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        Arc::new(Self { tolerance_secs: tolerance_secs.unwrap_or(self.tolerance_secs) })
    }

    fn envelope(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        envelope(message)
    }

    /// Signs with the sender's private seed (see [`sign_ed25519`]).
    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        let seed: &[u8; 32] = key.expose().try_into().ok()?;
        Some((SIGNATURE_HEADER, sign_ed25519(seed, message.id, message.timestamp.0, message.body)))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        SIGNING_HEADERS
    }

    fn check_signing_key(&self, key: &Secret) -> Result<(), SecretError> {
        match key.expose().len() {
            32 => Ok(()),
            _ => Err(SecretError::Invalid { reason: "an ed25519 signing key is its 32-byte private seed" }),
        }
    }

    /// The receiver holds the public key only.
    fn secret_signs(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
