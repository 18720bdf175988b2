//! `plivo`: Plivo's V3 request signature (`X-Plivo-Signature-V3`).
//!
//! "All requests Plivo makes to your server URLs include X-Plivo-Signature-V3 and
//! X-Plivo-Signature-V3-Nonce HTTP headers" (<https://docs.plivo.com/docs/voice/xml/request/validation>):
//! base64 HMAC-SHA256, keyed with the account's (or subaccount's) auth token, of the URL it
//! posts to, the POST parameters and the nonce. The older V2 header (`X-Plivo-Signature-V2`,
//! still the one the messaging docs describe) signs only the URL and the nonce, never the
//! body, so it cannot vouch for a delivery's bytes and is not accepted here.
//! The exact construction is the official SDK's (`plivo` on PyPI,
//! `plivo/utils/signature_v3.py`: `construct_post_url` and `get_signature_v3`), which is
//! what this module follows:
//!
//! - `{url}` is the URL without its query or fragment; then, when the POST has parameters,
//!   `?`, the URL's query parameters sorted by name as `name=value` joined by `&` and, if
//!   there were any, `.`; when it has none, `?` and the sorted query only if there is one;
//! - `{params}` is every POST parameter sorted by name, each as its name followed directly
//!   by its value, decoded (`+` a space, `%XX` a byte);
//! - the header may carry several signatures separated by `,`; any one that matches
//!   accepts. `X-Plivo-Signature-Ma-V3`, when sent, carries the same signature made with the
//!   main account's token (\"always generated using the Auth Token of the main account\"),
//!   so a source may hold either token.
//!
//! The body is an `application/x-www-form-urlencoded` form, read by the strict parser of
//! [`crate::form`] (a key given twice, bad percent-encoding or non-UTF-8 is refused). The
//! URL is the one registered with Plivo, the source's `signed_url`: behind a proxy it is not
//! the URL idemgate sees. Plivo signs no timestamp, so nothing bounds a replay but the
//! receipt; and it sends no event identity, so a source names one.

use std::{collections::BTreeMap, sync::Arc};

use base64::{Engine, engine::general_purpose::STANDARD};
use sha2::{Digest, Sha256};

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, any_tag_matches, hmac_sha256,
    plain_secret, single_header,
};
use crate::{Secret, SecretSet, UnixTime, json::Json, secret::SecretError};

/// The scheme's configuration name.
pub const NAME: &str = "plivo";
/// Header carrying the base64 signatures, separated by `,`.
pub const SIGNATURE_HEADER: &str = "x-plivo-signature-v3";
/// Header carrying the signatures made with the main account's auth token.
pub const MAIN_ACCOUNT_HEADER: &str = "x-plivo-signature-ma-v3";
/// Header carrying the request's nonce.
pub const NONCE_HEADER: &str = "x-plivo-signature-v3-nonce";
/// The headers a sender sets.
const SIGNING_HEADERS: &[&str] = &[NONCE_HEADER, SIGNATURE_HEADER];
/// More signatures than this in the header is malformed (bounded work).
const MAX_SIGNATURES: usize = 8;
/// The longest nonce accepted, in bytes.
const MAX_NONCE_LEN: usize = 256;

/// Plivo's V3 signature, for the URL registered with Plivo.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plivo {
    url: Option<String>,
}

impl Plivo {
    /// The scheme before a source gives it the URL it signs.
    pub const DEFAULT: Self = Self { url: None };
}

/// The material Plivo signs for a POST of `body` to `url` with `nonce`, or `None` for a
/// body that is not a strict form.
fn material(url: &str, body: &[u8], nonce: &str) -> Option<Vec<u8>> {
    let Ok(Json::Object(form)) = crate::form::parse(body) else { return None };
    let mut out = signed_url(url, !form.is_empty());
    for (name, value) in form.iter() {
        out.push_str(name);
        out.push_str(value.as_str()?);
    }
    out.push('.');
    out.push_str(nonce);
    Some(out.into_bytes())
}

/// The URL as the SDK's `construct_get_url(uri, {}, empty_post_params)` writes it.
fn signed_url(url: &str, has_params: bool) -> String {
    let url = url.split_once('#').map_or(url, |(before, _)| before);
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let query = sorted_query(query);
    let mut out = base.to_owned();
    if !query.is_empty() || has_params {
        out.push('?');
        out.push_str(&query);
    }
    if !query.is_empty() && has_params {
        out.push('.');
    }
    out
}

/// A query as `parse_qs(keep_blank_values=True)` reads it and the SDK writes it back:
/// sorted by name, a repeated name's values sorted, `name=value` joined by `&`, decoded.
fn sorted_query(query: &str) -> String {
    let mut fields: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for segment in query.split('&').filter(|segment| !segment.is_empty()) {
        let (name, value) = segment.split_once('=').unwrap_or((segment, ""));
        fields.entry(unquote_plus(name)).or_default().push(unquote_plus(value));
    }
    let mut pairs = Vec::new();
    for (name, mut values) in fields {
        values.sort();
        pairs.extend(values.into_iter().map(|value| format!("{name}={value}")));
    }
    pairs.join("&")
}

/// Python's `unquote_plus`: `+` a space, `%XX` a byte, anything else (a stray `%`) kept,
/// bytes that are not UTF-8 replaced. The URL is configuration, not a delivery's bytes.
fn unquote_plus(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push(u8::try_from(high * 16 + low).unwrap_or_else(|_| unreachable!()));
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn tag(secret: &Secret, material: &[u8]) -> [u8; 32] {
    hmac_sha256(secret, &[material])
}

/// Signs a POST of `body` to `url` as Plivo does; `None` for a body that is not a form.
///
/// ```
/// # use idemgate_core::{Secret, scheme::plivo};
/// let key = Secret::new(b"auth-token".to_vec());
/// let sig = plivo::sign(&key, "https://example.com/hooks/plivo", b"CallUUID=1", "123").unwrap();
/// assert_eq!(sig.len(), 44);
/// ```
#[must_use]
pub fn sign(secret: &Secret, url: &str, body: &[u8], nonce: &str) -> Option<String> {
    material(url, body, nonce).map(|material| STANDARD.encode(tag(secret, &material)))
}

fn parse_signatures(header: &'static str, value: &str) -> Result<Vec<[u8; 32]>, AuthError> {
    let malformed = || AuthError::MalformedHeader(header);
    let entries: Vec<&str> = value.split(',').collect();
    if entries.len() > MAX_SIGNATURES {
        return Err(malformed());
    }
    entries
        .into_iter()
        .map(|entry| {
            let bytes = STANDARD.decode(entry).map_err(|_| malformed())?;
            <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| malformed())
        })
        .collect()
}

/// A nonce for one attempt, derived from the message so that the envelope and the
/// signature agree: twenty decimal digits, as Plivo sends.
fn nonce(message: &Outgoing<'_>) -> String {
    let digest = Sha256::new()
        .chain_update(message.id.as_bytes())
        .chain_update(message.attempt.to_be_bytes())
        .chain_update(message.timestamp.0.to_be_bytes())
        .finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    format!("{:020}", u64::from_be_bytes(first))
}

impl Scheme for Plivo {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Plivo sends no event identity; a source names one.
    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Body("/id".into())
    }

    fn carries_identity(&self) -> bool {
        false
    }

    /// The auth token exactly as Plivo shows it; its UTF-8 bytes are the key.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        plain_secret(text)
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        _now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let nonce = single_header(delivery.headers, NONCE_HEADER)?;
        if nonce.is_empty() || nonce.len() > MAX_NONCE_LEN {
            return Err(AuthError::MalformedHeader(NONCE_HEADER));
        }
        let mut given = parse_signatures(SIGNATURE_HEADER, single_header(delivery.headers, SIGNATURE_HEADER)?)?;
        if delivery.headers.contains_key(MAIN_ACCOUNT_HEADER) {
            given.extend(parse_signatures(MAIN_ACCOUNT_HEADER, single_header(delivery.headers, MAIN_ACCOUNT_HEADER)?)?);
        }
        let url = self.url.as_deref().unwrap_or_default();
        let material = material(url, delivery.body, nonce).ok_or(AuthError::SignatureMismatch)?;
        if !any_tag_matches(secrets, &given, |secret| tag(secret, &material)) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: None })
    }

    /// Plivo signs no timestamp: a tolerance changes nothing.
    fn configured(&self, _tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        Arc::new(self.clone())
    }

    fn signs_url(&self) -> bool {
        true
    }

    fn with_signed_url(&self, url: &str) -> Option<Arc<dyn Scheme>> {
        Some(Arc::new(Self { url: Some(url.to_owned()) }))
    }

    fn envelope(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        vec![(NONCE_HEADER, nonce(message))]
    }

    /// `None` for a body that is not a form: Plivo posts forms.
    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        let url = self.url.as_deref().unwrap_or_default();
        sign(key, url, message.body, &nonce(message)).map(|signature| (SIGNATURE_HEADER, signature))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        SIGNING_HEADERS
    }
}

#[cfg(test)]
mod tests;
