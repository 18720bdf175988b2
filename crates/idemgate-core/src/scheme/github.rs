//! `github`: GitHub's `X-Hub-Signature-256` webhook signature.
//!
//! GitHub sends `sha256=` followed by the lowercase hex HMAC-SHA256 of the raw body, keyed
//! with the webhook's secret string, in `X-Hub-Signature-256`
//! (<https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries>).
//! The legacy SHA-1 `X-Hub-Signature` header is not supported.
//!
//! GitHub signs no timestamp, so a captured delivery stays valid for as long as the secret
//! does: replay protection rests on the receipt alone. The receipt is keyed on
//! `X-GitHub-Delivery`, which GitHub keeps unchanged when a delivery is redelivered
//! (<https://docs.github.com/en/webhooks/using-webhooks/best-practices-for-using-webhooks>),
//! so that header is both the delivery id and the event identity.
//!
//! Only the exact form GitHub documents is accepted: the `sha256=` prefix and 64 lowercase
//! hex digits. GitHub's own examples compare the whole header string against
//! `"sha256=" + hexdigest`, so an uppercase digest fails there too; here it is refused as
//! malformed before any MAC is computed.

use std::sync::Arc;

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, any_tag_matches, hmac_sha256,
    plain_secret, single_header,
};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// The scheme's configuration name.
pub const NAME: &str = "github";
/// Header carrying `sha256=` and the lowercase hex HMAC-SHA256 of the body.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";
/// Header carrying the delivery's GUID, kept by GitHub on redelivery.
pub const DELIVERY_HEADER: &str = "x-github-delivery";
/// The headers a sender sets.
const SIGNING_HEADERS: &[&str] = &[DELIVERY_HEADER, SIGNATURE_HEADER];
/// The prefix GitHub puts before the hex digest.
const PREFIX: &str = "sha256=";
/// The longest delivery id accepted, in bytes (GitHub sends 36-character GUIDs).
const MAX_DELIVERY_ID_LEN: usize = 128;

/// GitHub's webhook scheme. It has no settings: GitHub signs no timestamp.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GitHub;

/// Signs a body the way GitHub does; returns the `X-Hub-Signature-256` value.
///
/// ```
/// # use idemgate_core::{Secret, scheme::github};
/// let sig = github::sign(&Secret::new(b"s3cret".to_vec()), b"{}");
/// assert!(sig.starts_with("sha256=") && sig.len() == 71);
/// ```
#[must_use]
pub fn sign(secret: &Secret, body: &[u8]) -> String {
    format!("{PREFIX}{}", hex::encode(tag(secret, body)))
}

fn tag(secret: &Secret, body: &[u8]) -> [u8; 32] {
    hmac_sha256(secret, &[body])
}

fn parse_signature(value: &str) -> Result<[u8; 32], AuthError> {
    let malformed = AuthError::MalformedHeader(SIGNATURE_HEADER);
    let digest = value.strip_prefix(PREFIX).ok_or(malformed.clone())?;
    let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if digest.len() != 64 || !digest.bytes().all(lower_hex) {
        return Err(malformed);
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(digest, &mut out).map_err(|_| malformed)?;
    Ok(out)
}

fn parse_delivery_id(value: &str) -> Result<&str, AuthError> {
    let bounded = (1..=MAX_DELIVERY_ID_LEN).contains(&value.len());
    if bounded && value.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(value)
    } else {
        Err(AuthError::MalformedHeader(DELIVERY_HEADER))
    }
}

impl Scheme for GitHub {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Header(DELIVERY_HEADER.into())
    }

    /// The webhook secret exactly as typed into GitHub; its UTF-8 bytes are the key.
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
        let delivery_id = parse_delivery_id(single_header(delivery.headers, DELIVERY_HEADER)?)?;
        if !any_tag_matches(secrets, &[given], |secret| tag(secret, delivery.body)) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(VerifiedDelivery {
            delivery_id: Some(delivery_id.to_owned()),
            event_identity: Some(delivery_id.to_owned()),
            timestamp: None,
        })
    }

    fn configured(&self, _tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        Arc::new(*self)
    }

    fn envelope(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        vec![(DELIVERY_HEADER, message.id.to_owned())]
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
    const DELIVERY: &str = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
    // docs.github.com, "Validating webhook deliveries", section "Testing the webhook payload
    // validation" (source: github/docs,
    // content/webhooks/using-webhooks/validating-webhook-deliveries.md).
    const DOC_SECRET: &str = "It's a Secret to Everybody";
    const DOC_PAYLOAD: &[u8] = b"Hello, World!";
    const DOC_HEADER: &str = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    fn secret(text: &str) -> Secret {
        GitHub.decode_secret(text).unwrap_or_else(|_| unreachable!())
    }

    fn headers(signature: &str, delivery_id: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in [(SIGNATURE_HEADER, signature), (DELIVERY_HEADER, delivery_id)] {
            headers.insert(name, HeaderValue::from_str(value).unwrap_or_else(|_| unreachable!()));
        }
        headers
    }

    fn verify(secrets: &[Secret], headers: &HeaderMap, body: &[u8]) -> Result<VerifiedDelivery, AuthError> {
        let set = SecretSet::new(secrets.to_vec()).unwrap_or_else(|_| unreachable!());
        GitHub.verify(&set, RawDelivery { headers, body }, NOW)
    }

    #[test]
    fn githubs_documented_example_signs_and_verifies() {
        assert_eq!(sign(&secret(DOC_SECRET), DOC_PAYLOAD), DOC_HEADER);
        let ok = verify(&[secret(DOC_SECRET)], &headers(DOC_HEADER, DELIVERY), DOC_PAYLOAD);
        assert_eq!(
            ok,
            Ok(VerifiedDelivery {
                delivery_id: Some(DELIVERY.into()),
                event_identity: Some(DELIVERY.into()),
                timestamp: None,
            })
        );
    }

    #[test]
    fn a_changed_body_or_a_wrong_secret_fails() {
        let signed = headers(DOC_HEADER, DELIVERY);
        assert_eq!(verify(&[secret(DOC_SECRET)], &signed, b"Hello, World?"), Err(AuthError::SignatureMismatch));
        assert_eq!(
            verify(&[secret("It's a secret to everybody")], &signed, DOC_PAYLOAD),
            Err(AuthError::SignatureMismatch)
        );
    }

    #[test]
    fn any_active_secret_verifies_during_rotation() {
        let (old, new) = (secret("old secret"), secret("new secret"));
        for key in [&old, &new] {
            let signed = headers(&sign(key, b"{}"), DELIVERY);
            assert!(verify(&[new.clone(), old.clone()], &signed, b"{}").is_ok());
        }
    }

    #[test]
    fn missing_and_repeated_headers_are_refused() {
        let mut headers = headers(DOC_HEADER, DELIVERY);
        headers.remove(DELIVERY_HEADER);
        assert_eq!(
            verify(&[secret(DOC_SECRET)], &headers, DOC_PAYLOAD),
            Err(AuthError::MissingHeader(DELIVERY_HEADER))
        );
        headers.remove(SIGNATURE_HEADER);
        assert_eq!(
            verify(&[secret(DOC_SECRET)], &headers, DOC_PAYLOAD),
            Err(AuthError::MissingHeader(SIGNATURE_HEADER))
        );
        let mut repeated = self::headers(DOC_HEADER, DELIVERY);
        repeated.append(SIGNATURE_HEADER, HeaderValue::from_static(DOC_HEADER));
        assert_eq!(
            verify(&[secret(DOC_SECRET)], &repeated, DOC_PAYLOAD),
            Err(AuthError::MalformedHeader(SIGNATURE_HEADER))
        );
    }

    #[test]
    fn malformed_signatures_are_refused_before_any_mac() {
        let digest = &DOC_HEADER[PREFIX.len()..];
        let cases = [
            format!("sha256={}", digest.to_uppercase()),
            digest.to_owned(),
            format!("sha1={digest}"),
            format!("SHA256={digest}"),
            format!("sha256={}", &digest[..63]),
            format!("sha256={digest}0"),
            format!("sha256={}", "a".repeat(5000)),
        ];
        for signature in cases {
            assert_eq!(
                verify(&[secret(DOC_SECRET)], &headers(&signature, DELIVERY), DOC_PAYLOAD),
                Err(AuthError::MalformedHeader(SIGNATURE_HEADER)),
                "{signature:.80}"
            );
        }
    }

    #[test]
    fn malformed_delivery_ids_are_refused() {
        for id in ["a b", &"d".repeat(MAX_DELIVERY_ID_LEN + 1), ""] {
            assert_eq!(
                verify(&[secret(DOC_SECRET)], &headers(DOC_HEADER, id), DOC_PAYLOAD),
                Err(AuthError::MalformedHeader(DELIVERY_HEADER))
            );
        }
    }

    #[test]
    fn secrets_are_the_bytes_as_typed_and_never_echoed() {
        assert_eq!(secret(DOC_SECRET).expose(), DOC_SECRET.as_bytes());
        assert_eq!(GitHub.decode_secret("").err(), Some(SecretError::Invalid { reason: "the secret is empty" }));
        let err = verify(&[secret("hunter2")], &headers(DOC_HEADER, DELIVERY), b"x");
        let text = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(!text.contains("hunter2") && !text.contains(&DOC_HEADER[PREFIX.len()..]));
    }

    #[test]
    fn the_scheme_names_itself_and_its_identity_header() {
        assert_eq!(GitHub.name(), "github");
        assert_eq!(GitHub.default_identity(), IdentityLocation::Header("x-github-delivery".into()));
    }
}
