//! `shopify`: Shopify's `X-Shopify-Hmac-Sha256` webhook signature.
//!
//! Shopify sends the base64 (standard alphabet, padded) HMAC-SHA256 of the raw body, keyed
//! with the app's client secret, in `X-Shopify-Hmac-Sha256`
//! (<https://shopify.dev/docs/apps/build/webhooks/verify-deliveries>). Only the 44-character
//! canonical encoding of a 32-byte digest is accepted, which is what Shopify's own library
//! compares against (`Shopify/shopify-api-js`, `packages/shopify-api/lib/webhooks/validate.ts`).
//!
//! Shopify signs no timestamp, so replay protection rests on the receipt alone. The event
//! identity is `X-Shopify-Event-Id`, which Shopify documents as the same across duplicate
//! deliveries of one event (<https://shopify.dev/docs/apps/build/webhooks/ignore-duplicates>);
//! `X-Shopify-Webhook-Id` is reported as the delivery id when present. Neither header is
//! covered by the signature: they are trusted only because the body they arrive with is.

use std::sync::Arc;

use base64::{Engine, engine::general_purpose::STANDARD};

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, any_tag_matches, hmac_sha256,
    plain_secret, single_header,
};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// The scheme's configuration name.
pub const NAME: &str = "shopify";
/// Header carrying the base64 HMAC-SHA256 of the body.
pub const SIGNATURE_HEADER: &str = "x-shopify-hmac-sha256";
/// Header carrying the event's id, the same on every duplicate delivery of the event.
pub const EVENT_ID_HEADER: &str = "x-shopify-event-id";
/// Header carrying the webhook delivery's id; optional here.
pub const WEBHOOK_ID_HEADER: &str = "x-shopify-webhook-id";
/// The headers a sender sets.
const SIGNING_HEADERS: &[&str] = &[EVENT_ID_HEADER, SIGNATURE_HEADER];
/// The length of a padded base64 encoding of 32 bytes.
const SIGNATURE_LEN: usize = 44;
/// The longest id accepted in either id header, in bytes.
const MAX_ID_LEN: usize = 128;

/// Shopify's webhook scheme. It has no settings: Shopify signs no timestamp.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shopify;

/// Signs a body the way Shopify does; returns the `X-Shopify-Hmac-Sha256` value.
///
/// ```
/// # use idemgate_core::{Secret, scheme::shopify};
/// let sig = shopify::sign(&Secret::new(b"client-secret".to_vec()), b"{}");
/// assert_eq!(sig.len(), 44);
/// ```
#[must_use]
pub fn sign(secret: &Secret, body: &[u8]) -> String {
    STANDARD.encode(tag(secret, body))
}

fn tag(secret: &Secret, body: &[u8]) -> [u8; 32] {
    hmac_sha256(secret, &[body])
}

fn parse_signature(value: &str) -> Result<[u8; 32], AuthError> {
    let malformed = || AuthError::MalformedHeader(SIGNATURE_HEADER);
    // The length check bounds the decoding work; the engine refuses non-canonical input.
    if value.len() != SIGNATURE_LEN {
        return Err(malformed());
    }
    let bytes = STANDARD.decode(value).map_err(|_| malformed())?;
    bytes.try_into().map_err(|_| malformed())
}

fn parse_id<'v>(value: &'v str, header: &'static str) -> Result<&'v str, AuthError> {
    let bounded = (1..=MAX_ID_LEN).contains(&value.len());
    if bounded && value.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(value)
    } else {
        Err(AuthError::MalformedHeader(header))
    }
}

fn optional_id<'h>(headers: &'h http::HeaderMap, header: &'static str) -> Result<Option<&'h str>, AuthError> {
    match single_header(headers, header) {
        Ok(value) => parse_id(value, header).map(Some),
        Err(AuthError::MissingHeader(_)) => Ok(None),
        Err(other) => Err(other),
    }
}

impl Scheme for Shopify {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Header(EVENT_ID_HEADER.into())
    }

    /// The app's client secret exactly as Shopify shows it; its UTF-8 bytes are the key.
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
        let event_id = parse_id(single_header(delivery.headers, EVENT_ID_HEADER)?, EVENT_ID_HEADER)?;
        let webhook_id = optional_id(delivery.headers, WEBHOOK_ID_HEADER)?;
        if !any_tag_matches(secrets, &[given], |secret| tag(secret, delivery.body)) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(VerifiedDelivery {
            delivery_id: webhook_id.map(str::to_owned),
            event_identity: Some(event_id.to_owned()),
            timestamp: None,
        })
    }

    fn configured(&self, _tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        Arc::new(*self)
    }

    fn envelope(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        vec![(EVENT_ID_HEADER, message.id.to_owned())]
    }

    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        Some((SIGNATURE_HEADER, sign(key, message.body)))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        SIGNING_HEADERS
    }
}

#[cfg(test)]
mod tests {
    use http::{HeaderMap, HeaderValue};

    use super::*;

    const NOW: UnixTime = UnixTime(1_700_000_000);
    // Shopify's official Node library, Shopify/shopify-api-js:
    // packages/shopify-api/lib/webhooks/__tests__/validate.test.ts ("returns true for valid
    // request": body and expected hmac), with the secret `apiSecretKey` from
    // packages/shopify-api/lib/__tests__/test-config.ts and the webhook id from
    // packages/shopify-api/lib/webhooks/__tests__/utils.ts. Re-checked with Python:
    // base64.b64encode(hmac.new(b"test_secret_key", b'{"foo": "bar"}', sha256).digest()).
    const LIB_SECRET: &str = "test_secret_key";
    const LIB_BODY: &[u8] = br#"{"foo": "bar"}"#;
    const LIB_HMAC: &str = "B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g=";
    const LIB_WEBHOOK_ID: &str = "123456789";
    // Not from Shopify's library (its test sends no event id): an arbitrary value.
    const EVENT_ID: &str = "98880550-7158-44d4-b7cd-2c97c8a091b5";

    fn secret(text: &str) -> Secret {
        Shopify.decode_secret(text).unwrap_or_else(|_| unreachable!())
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).unwrap_or_else(|_| unreachable!()));
        }
        headers
    }

    fn signed(signature: &str) -> HeaderMap {
        headers(&[(SIGNATURE_HEADER, signature), (EVENT_ID_HEADER, EVENT_ID), (WEBHOOK_ID_HEADER, LIB_WEBHOOK_ID)])
    }

    fn verify(secrets: &[Secret], headers: &HeaderMap, body: &[u8]) -> Result<VerifiedDelivery, AuthError> {
        let set = SecretSet::new(secrets.to_vec()).unwrap_or_else(|_| unreachable!());
        Shopify.verify(&set, RawDelivery { headers, body }, NOW)
    }

    #[test]
    fn shopifys_library_example_signs_and_verifies() {
        assert_eq!(sign(&secret(LIB_SECRET), LIB_BODY), LIB_HMAC);
        assert_eq!(
            verify(&[secret(LIB_SECRET)], &signed(LIB_HMAC), LIB_BODY),
            Ok(VerifiedDelivery {
                delivery_id: Some(LIB_WEBHOOK_ID.into()),
                event_identity: Some(EVENT_ID.into()),
                timestamp: None,
            })
        );
    }

    #[test]
    fn a_changed_body_or_a_wrong_secret_fails() {
        assert_eq!(
            verify(&[secret(LIB_SECRET)], &signed(LIB_HMAC), br#"{"foo":"bar"}"#),
            Err(AuthError::SignatureMismatch)
        );
        assert_eq!(
            verify(&[secret("test_secret_kez")], &signed(LIB_HMAC), LIB_BODY),
            Err(AuthError::SignatureMismatch)
        );
    }

    #[test]
    fn any_active_secret_verifies_during_rotation() {
        let (old, new) = (secret("old-client-secret"), secret("new-client-secret"));
        for key in [&old, &new] {
            let headers = signed(&sign(key, b"{}"));
            assert!(verify(&[new.clone(), old.clone()], &headers, b"{}").is_ok());
        }
    }

    #[test]
    fn the_webhook_id_is_optional_but_the_event_id_is_not() {
        let without_webhook_id = headers(&[(SIGNATURE_HEADER, LIB_HMAC), (EVENT_ID_HEADER, EVENT_ID)]);
        let ok = verify(&[secret(LIB_SECRET)], &without_webhook_id, LIB_BODY);
        assert_eq!(ok.map(|v| v.delivery_id), Ok(None));
        let without_event_id = headers(&[(SIGNATURE_HEADER, LIB_HMAC)]);
        assert_eq!(
            verify(&[secret(LIB_SECRET)], &without_event_id, LIB_BODY),
            Err(AuthError::MissingHeader(EVENT_ID_HEADER))
        );
        assert_eq!(
            verify(&[secret(LIB_SECRET)], &HeaderMap::new(), LIB_BODY),
            Err(AuthError::MissingHeader(SIGNATURE_HEADER))
        );
    }

    #[test]
    fn malformed_signatures_are_refused_before_any_mac() {
        let hex_digest = hex::encode(tag(&secret(LIB_SECRET), LIB_BODY));
        let cases = [
            hex_digest,
            LIB_HMAC.trim_end_matches('=').to_owned(),
            LIB_HMAC.replace("a7g=", "a7h="), // the last digit's unused bits are not zero
            format!("-{}", &LIB_HMAC[1..]),   // the URL-safe alphabet
            format!("{LIB_HMAC}="),
            "A".repeat(5000),
        ];
        for signature in cases {
            assert_eq!(
                verify(&[secret(LIB_SECRET)], &signed(&signature), LIB_BODY),
                Err(AuthError::MalformedHeader(SIGNATURE_HEADER)),
                "{signature:.80}"
            );
        }
    }

    #[test]
    fn malformed_or_repeated_id_headers_are_refused() {
        let spaced = headers(&[(SIGNATURE_HEADER, LIB_HMAC), (EVENT_ID_HEADER, "a b")]);
        assert_eq!(verify(&[secret(LIB_SECRET)], &spaced, LIB_BODY), Err(AuthError::MalformedHeader(EVENT_ID_HEADER)));
        let mut repeated = signed(LIB_HMAC);
        repeated.append(WEBHOOK_ID_HEADER, HeaderValue::from_static("2"));
        assert_eq!(
            verify(&[secret(LIB_SECRET)], &repeated, LIB_BODY),
            Err(AuthError::MalformedHeader(WEBHOOK_ID_HEADER))
        );
        let long = "w".repeat(MAX_ID_LEN + 1);
        let mut too_long = headers(&[(SIGNATURE_HEADER, LIB_HMAC), (EVENT_ID_HEADER, EVENT_ID)]);
        too_long.append(WEBHOOK_ID_HEADER, HeaderValue::from_str(&long).unwrap_or_else(|_| unreachable!()));
        assert_eq!(
            verify(&[secret(LIB_SECRET)], &too_long, LIB_BODY),
            Err(AuthError::MalformedHeader(WEBHOOK_ID_HEADER))
        );
    }

    #[test]
    fn unusable_secrets_are_refused_without_echoing_them() {
        assert_eq!(secret(LIB_SECRET).expose(), LIB_SECRET.as_bytes());
        for text in ["", " shpss_abc", "shpss_abc\n"] {
            let err = Shopify.decode_secret(text).err();
            assert!(matches!(err, Some(SecretError::Invalid { .. })), "{text:?}");
            let message = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(text.trim().is_empty() || !message.contains(text.trim()));
        }
    }

    #[test]
    fn the_scheme_names_itself_and_its_identity_header() {
        assert_eq!(Shopify.name(), "shopify");
        assert_eq!(Shopify.default_identity(), IdentityLocation::Header("x-shopify-event-id".into()));
    }
}
