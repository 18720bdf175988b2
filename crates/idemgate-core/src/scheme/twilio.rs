//! `twilio`: Twilio's `X-Twilio-Signature` request validation
//! (<https://www.twilio.com/docs/usage/webhooks/webhooks-security>), as the official
//! libraries compute it (`twilio` on PyPI, `RequestValidator.compute_signature`).
//!
//! Twilio signs the URL it requested, as registered with it (the source's `signed_url`),
//! followed by the POST form parameters sorted by name, each name and value appended with
//! no delimiter; the key is the account's Auth Token (its UTF-8 bytes) and the signature is
//! the standard base64 of the HMAC-SHA1. A request whose body is JSON instead carries a
//! `bodySHA256` query parameter (the lowercase hex SHA-256 of the body) on the URL, and the
//! signature covers that URL alone, no parameters. The scheme sees no request URL, so it
//! rebuilds the one Twilio requested: the configured URL with `bodySHA256` appended, which
//! binds the body through its hash exactly as the library's check does.
//!
//! A request carrying `X-Twilio-Webhooks-Signature-Settings` (`key=…,algorithm=…`) is
//! signed with a shared key under the algorithm named there, `HMAC_SHA1` or `HMAC_SHA256`
//! (the library's `get_signature_algorithm`); without that header it is HMAC-SHA1.
//!
//! As the library does, the URL is tried with and without its port (Twilio's own servers
//! are inconsistent about a default port): a URL with a port is also tried without it, one
//! without a port also with the scheme's default port.
//!
//! Twilio signs no timestamp and no identity: a captured request stays valid for as long as
//! the Auth Token does. Its identity is the `I-Twilio-Idempotency-Token` header, which the
//! signature does not cover, so a source of this scheme keeps body receipts by default.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use http::HeaderMap;
use sha1::Sha1;
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, plain_secret, single_header,
};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// The scheme's configuration name.
pub const NAME: &str = "twilio";
/// Header carrying the base64 HMAC of the URL and the sorted parameters.
pub const SIGNATURE_HEADER: &str = "x-twilio-signature";
/// Header naming the shared key and its algorithm, when Twilio signs with a shared key.
pub const SETTINGS_HEADER: &str = "x-twilio-webhooks-signature-settings";
/// Header carrying Twilio's idempotency token, the same on every retry of a request.
pub const IDEMPOTENCY_HEADER: &str = "i-twilio-idempotency-token";
/// The query parameter carrying the hex SHA-256 of a JSON body.
pub const BODY_HASH_PARAMETER: &str = "bodySHA256";
/// The headers a sender sets.
const SIGNING_HEADERS: &[&str] = &[IDEMPOTENCY_HEADER, SIGNATURE_HEADER];
/// A signature header longer than this is malformed (a SHA-256 tag is 44 characters).
const MAX_SIGNATURE_LEN: usize = 64;
/// The longest idempotency token accepted, in bytes.
const MAX_TOKEN_LEN: usize = 256;

/// The MAC Twilio names in [`SETTINGS_HEADER`]; SHA-1 when the header is absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// `HMAC_SHA1`, the Auth Token signature.
    Sha1,
    /// `HMAC_SHA256`, offered for shared keys.
    Sha256,
}

/// Twilio's scheme, bound to the URL Twilio signs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Twilio {
    /// The URL as registered with Twilio (the source's `signed_url`); without it nothing
    /// verifies, and the configuration requires it.
    pub signed_url: Option<String>,
}

impl Twilio {
    /// The registry's entry: no URL yet, which a source's configuration supplies.
    pub const DEFAULT: Self = Self { signed_url: None };

    /// The scheme for deliveries Twilio sends to `url`.
    #[must_use]
    pub fn with_url(url: impl Into<String>) -> Self {
        Self { signed_url: Some(url.into()) }
    }
}

/// The `X-Twilio-Signature` value of a form body, as `RequestValidator.compute_signature`
/// makes it: the base64 HMAC of `url` followed by the sorted decoded parameters.
///
/// ```
/// # use idemgate_core::{Secret, scheme::twilio::{self, Algorithm}};
/// let key = Secret::new(b"12345".to_vec());
/// let url = "https://mycompany.com/myapp.php?foo=1&bar=2";
/// let body = b"CallSid=CA1234567890ABCDE&Caller=%2B12349013030&Digits=1234&From=%2B12349013030&To=%2B18005551212";
/// assert_eq!(twilio::sign_form(&key, url, body, Algorithm::Sha1), "0/KCTR6DLpKmkAf8muzZqo1nDgQ=");
/// ```
#[must_use]
pub fn sign_form(key: &Secret, url: &str, body: &[u8], algorithm: Algorithm) -> String {
    STANDARD.encode(mac(algorithm, key, &form_material(url, body)))
}

/// The `X-Twilio-Signature` value of a JSON body: the base64 HMAC of the URL carrying the
/// body's `bodySHA256` (see [`url_with_body_hash`]).
#[must_use]
pub fn sign_json(key: &Secret, url: &str, body: &[u8], algorithm: Algorithm) -> String {
    STANDARD.encode(mac(algorithm, key, url_with_body_hash(url, body).as_bytes()))
}

/// `url` with `bodySHA256=<lowercase hex SHA-256 of body>` appended as a query parameter:
/// the URL Twilio requests for a JSON body.
#[must_use]
pub fn url_with_body_hash(url: &str, body: &[u8]) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{BODY_HASH_PARAMETER}={}", hex::encode(Sha256::digest(body)))
}

fn mac(algorithm: Algorithm, key: &Secret, material: &[u8]) -> Vec<u8> {
    // HMAC accepts keys of any length, so `new_from_slice` cannot fail here.
    match algorithm {
        Algorithm::Sha1 => {
            let mut mac = Hmac::<Sha1>::new_from_slice(key.expose()).unwrap_or_else(|_| unreachable!());
            mac.update(material);
            mac.finalize().into_bytes().to_vec()
        }
        Algorithm::Sha256 => {
            let mut mac = Hmac::<Sha256>::new_from_slice(key.expose()).unwrap_or_else(|_| unreachable!());
            mac.update(material);
            mac.finalize().into_bytes().to_vec()
        }
    }
}

/// The URL followed by every parameter's name and value, sorted by name then value, an
/// exact repeat of a pair counted once (the library sorts a set of names and, per name, a
/// set of values). Names and values are compared as decoded bytes, which orders UTF-8 text
/// as Python orders its code points.
fn form_material(url: &str, body: &[u8]) -> Vec<u8> {
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = body
        .split(|&b| b == b'&')
        .filter(|segment| !segment.is_empty())
        .map(|segment| match segment.iter().position(|&b| b == b'=') {
            Some(at) => (decode(&segment[..at]), decode(&segment[at + 1..])),
            None => (decode(segment), Vec::new()),
        })
        .collect();
    pairs.sort();
    pairs.dedup();
    let mut material = url.as_bytes().to_vec();
    for (name, value) in pairs {
        material.extend_from_slice(&name);
        material.extend_from_slice(&value);
    }
    material
}

/// A form name or value as bytes: `+` a space, `%XX` a byte, and a `%` without two hex
/// digits kept as it is (as Python's `parse_qs` keeps it; the strict form reader refuses
/// such a body afterwards anyway).
fn decode(encoded: &[u8]) -> Vec<u8> {
    let hex = |b: u8| char::from(b).to_digit(16);
    let mut out = Vec::with_capacity(encoded.len());
    let mut at = 0;
    while at < encoded.len() {
        match encoded[at] {
            b'+' => out.push(b' '),
            b'%' => match (encoded.get(at + 1).and_then(|&b| hex(b)), encoded.get(at + 2).and_then(|&b| hex(b))) {
                // Two hex digits are at most 0xFF, so the cast cannot truncate.
                (Some(high), Some(low)) => {
                    out.push((high * 16 + low) as u8);
                    at += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        at += 1;
    }
    out
}

/// The URL as configured, and the same URL with its port toggled: without the port if it
/// has one, with the scheme's default port (443 for https, else 80) if not. This is the
/// library's `remove_port` / `add_port` pair.
fn url_variants(url: &str) -> [String; 2] {
    let Some((scheme, rest)) = url.split_once("://") else {
        return [url.to_owned(), url.to_owned()];
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let host_start = authority.rfind('@').map_or(0, |at| at + 1);
    let (userinfo, host_port) = authority.split_at(host_start);
    let port_at = match host_port.rfind(':') {
        Some(at) if !host_port[at..].contains(']') && host_port[at + 1..].bytes().all(|b| b.is_ascii_digit()) => {
            Some(at)
        }
        _ => None,
    };
    let toggled = match port_at {
        Some(at) if at + 1 < host_port.len() => format!("{scheme}://{userinfo}{}{path}", &host_port[..at]),
        Some(_) => url.to_owned(),
        None => {
            let port = if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 };
            format!("{scheme}://{userinfo}{host_port}:{port}{path}")
        }
    };
    [url.to_owned(), toggled]
}

/// The algorithm named by the settings header, SHA-1 when it is absent or names none.
fn algorithm(headers: &HeaderMap) -> Result<Algorithm, AuthError> {
    if !headers.contains_key(SETTINGS_HEADER) {
        return Ok(Algorithm::Sha1);
    }
    let settings = single_header(headers, SETTINGS_HEADER)?;
    let named = settings.split(',').find_map(|part| {
        let (name, value) = part.split_once('=')?;
        (name.trim() == "algorithm" && !value.trim().is_empty()).then(|| value.trim())
    });
    match named.map(str::to_ascii_uppercase).as_deref() {
        None | Some("HMAC_SHA1") => Ok(Algorithm::Sha1),
        Some("HMAC_SHA256") => Ok(Algorithm::Sha256),
        Some(_) => Err(AuthError::MalformedHeader(SETTINGS_HEADER)),
    }
}

/// Whether the body is JSON (signed through `bodySHA256`) rather than a form.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let media = value.split(';').next().unwrap_or("").trim();
    media.eq_ignore_ascii_case("application/json")
}

fn parse_signature(value: &str) -> Result<Vec<u8>, AuthError> {
    let malformed = AuthError::MalformedHeader(SIGNATURE_HEADER);
    if value.len() > MAX_SIGNATURE_LEN {
        return Err(malformed);
    }
    STANDARD.decode(value).map_err(|_| malformed)
}

/// The idempotency token, when the request carries one that can be an identity.
fn token(headers: &HeaderMap) -> Option<String> {
    let value = single_header(headers, IDEMPOTENCY_HEADER).ok()?;
    let valid = (1..=MAX_TOKEN_LEN).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_graphic());
    valid.then(|| value.to_owned())
}

impl Scheme for Twilio {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Header(IDEMPOTENCY_HEADER.into())
    }

    /// The Auth Token (or shared key secret) exactly as Twilio shows it; its UTF-8 bytes
    /// are the key.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        plain_secret(text)
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        _now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let given = parse_signature(single_header(delivery.headers, SIGNATURE_HEADER)?)?;
        let algorithm = algorithm(delivery.headers)?;
        let Some(url) = self.signed_url.as_deref() else {
            return Err(AuthError::SignatureMismatch);
        };
        let json = is_json(delivery.headers);
        let materials = url_variants(url).map(|url| {
            if json { url_with_body_hash(&url, delivery.body).into_bytes() } else { form_material(&url, delivery.body) }
        });
        // Every secret meets every URL form, in constant time.
        let matched = secrets.iter().fold(Choice::from(0), |acc, secret| {
            materials.iter().fold(acc, |acc, material| acc | mac(algorithm, secret, material).ct_eq(&given))
        });
        if !bool::from(matched) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(VerifiedDelivery { delivery_id: token(delivery.headers), event_identity: None, timestamp: None })
    }

    fn configured(&self, _tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        Arc::new(self.clone())
    }

    fn signs_url(&self) -> bool {
        true
    }

    fn with_signed_url(&self, url: &str) -> Option<Arc<dyn Scheme>> {
        Some(Arc::new(Self::with_url(url)))
    }

    fn envelope(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        vec![(IDEMPOTENCY_HEADER, message.id.to_owned())]
    }

    /// Signs the body as a form under the configured URL (the empty URL when none is
    /// configured, which no configured source verifies).
    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        let url = self.signed_url.as_deref().unwrap_or("");
        Some((SIGNATURE_HEADER, sign_form(key, url, message.body, Algorithm::Sha1)))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        SIGNING_HEADERS
    }
}

#[cfg(test)]
mod tests;
