//! `slack`: Slack's `v0` request signature.
//!
//! Slack sends `v0=` followed by the lowercase hex HMAC-SHA256 of
//! `"v0:" + X-Slack-Request-Timestamp + ":" + body`, keyed with the app's signing secret, in
//! `X-Slack-Signature`, and unix seconds in `X-Slack-Request-Timestamp`
//! (<https://docs.slack.dev/authentication/verifying-requests-from-slack>). The timestamp is
//! signed as the header's text, digit for digit.
//!
//! Slack asks receivers to refuse timestamps more than five minutes from now, and its
//! official SDK does so in both directions (`slackapi/python-slack-sdk`,
//! `slack_sdk/signature/__init__.py`: `abs(now - timestamp) > 60 * 5`); so does this scheme,
//! with the tolerance configurable. Only the exact form Slack sends is accepted (the SDK
//! compares whole strings): `v0=` and 64 lowercase hex digits.
//!
//! The Events API carries the event's identity in the body as `event_id`; slash commands
//! and interactivity payloads (form-encoded) carry none, so sources receiving those must
//! configure another identity.

use std::sync::Arc;

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, any_tag_matches, check_tolerance,
    hmac_sha256, plain_secret, single_header,
};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// The scheme's configuration name.
pub const NAME: &str = "slack";
/// Header carrying `v0=` and the lowercase hex HMAC-SHA256.
pub const SIGNATURE_HEADER: &str = "x-slack-signature";
/// Header carrying the signed unix timestamp, in seconds.
pub const TIMESTAMP_HEADER: &str = "x-slack-request-timestamp";
/// The headers a sender sets.
const SIGNING_HEADERS: &[&str] = &[TIMESTAMP_HEADER, SIGNATURE_HEADER];
/// The signature version, both the header prefix and the start of the signed material.
const VERSION: &str = "v0";
/// The most digits accepted in a timestamp (`i64::MAX` has 19).
const MAX_TIMESTAMP_DIGITS: usize = 19;

/// Slack's request-signing scheme with its timestamp tolerance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slack {
    /// How far the signed timestamp may be from now, in seconds, either way (Slack: 300).
    pub tolerance_secs: u64,
}

impl Slack {
    /// Slack's five minutes.
    pub const DEFAULT: Self = Self { tolerance_secs: 300 };
}

impl Default for Slack {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Signs a request the way Slack does; returns the `X-Slack-Signature` value.
///
/// `timestamp` is the `X-Slack-Request-Timestamp` text sent with it.
///
/// ```
/// # use idemgate_core::{Secret, scheme::slack};
/// let sig = slack::sign(&Secret::new(b"signing-secret".to_vec()), "1700000000", b"{}");
/// assert!(sig.starts_with("v0=") && sig.len() == 67);
/// ```
#[must_use]
pub fn sign(secret: &Secret, timestamp: &str, body: &[u8]) -> String {
    format!("{VERSION}={}", hex::encode(tag(secret, timestamp, body)))
}

fn tag(secret: &Secret, timestamp: &str, body: &[u8]) -> [u8; 32] {
    hmac_sha256(secret, &[VERSION.as_bytes(), b":", timestamp.as_bytes(), b":", body])
}

fn parse_timestamp(value: &str) -> Result<UnixTime, AuthError> {
    let malformed = || AuthError::MalformedHeader(TIMESTAMP_HEADER);
    let bounded = (1..=MAX_TIMESTAMP_DIGITS).contains(&value.len());
    if !bounded || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed());
    }
    value.parse().map(UnixTime).map_err(|_| malformed())
}

fn parse_signature(value: &str) -> Result<[u8; 32], AuthError> {
    let malformed = || AuthError::MalformedHeader(SIGNATURE_HEADER);
    let digest = value.strip_prefix(VERSION).and_then(|rest| rest.strip_prefix('=')).ok_or_else(malformed)?;
    let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if digest.len() != 64 || !digest.bytes().all(lower_hex) {
        return Err(malformed());
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(digest, &mut out).map_err(|_| malformed())?;
    Ok(out)
}

impl Scheme for Slack {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Body("/event_id".into())
    }

    /// The app's signing secret exactly as Slack shows it; its UTF-8 bytes are the key.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        plain_secret(text)
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let timestamp_text = single_header(delivery.headers, TIMESTAMP_HEADER)?;
        let timestamp = parse_timestamp(timestamp_text)?;
        let given = parse_signature(single_header(delivery.headers, SIGNATURE_HEADER)?)?;
        check_tolerance(timestamp, now, self.tolerance_secs)?;
        if !any_tag_matches(secrets, &[given], |secret| tag(secret, timestamp_text, delivery.body)) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: Some(timestamp) })
    }

    fn configured(&self, tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        Arc::new(Self { tolerance_secs: tolerance_secs.unwrap_or(self.tolerance_secs) })
    }

    fn envelope(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        vec![(TIMESTAMP_HEADER, message.timestamp.0.to_string())]
    }

    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        Some((SIGNATURE_HEADER, sign(key, &message.timestamp.0.to_string(), message.body)))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        SIGNING_HEADERS
    }
}

#[cfg(test)]
mod tests {
    use http::{HeaderMap, HeaderValue};

    use super::*;

    // Slack's worked example, from https://docs.slack.dev/authentication/verifying-requests-from-slack
    // as pinned in Slack's official SDK test, slackapi/python-slack-sdk:
    // tests/slack_sdk/signature/test_signature_verifier.py (signing_secret, body, timestamp,
    // valid_signature; its MockClock returns the same instant as the timestamp).
    const DOC_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const DOC_BODY: &[u8] = concat!(
        "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow",
        "&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner",
        "&command=%2Fwebhook-collect&text=",
        "&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN",
        "&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
    )
    .as_bytes();
    const DOC_TIMESTAMP: &str = "1531420618";
    const DOC_SIGNATURE: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
    const DOC_NOW: UnixTime = UnixTime(1_531_420_618);

    fn secret(text: &str) -> Secret {
        Slack::default().decode_secret(text).unwrap_or_else(|_| unreachable!())
    }

    fn headers(timestamp: &str, signature: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in [(TIMESTAMP_HEADER, timestamp), (SIGNATURE_HEADER, signature)] {
            headers.insert(name, HeaderValue::from_str(value).unwrap_or_else(|_| unreachable!()));
        }
        headers
    }

    fn verify_at(
        now: UnixTime,
        secrets: &[Secret],
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<VerifiedDelivery, AuthError> {
        let set = SecretSet::new(secrets.to_vec()).unwrap_or_else(|_| unreachable!());
        Slack::default().verify(&set, RawDelivery { headers, body }, now)
    }

    fn verify(secrets: &[Secret], headers: &HeaderMap, body: &[u8]) -> Result<(), AuthError> {
        verify_at(DOC_NOW, secrets, headers, body).map(|_| ())
    }

    #[test]
    fn slacks_documented_example_signs_and_verifies() {
        assert_eq!(sign(&secret(DOC_SECRET), DOC_TIMESTAMP, DOC_BODY), DOC_SIGNATURE);
        let headers = headers(DOC_TIMESTAMP, DOC_SIGNATURE);
        assert_eq!(
            verify_at(DOC_NOW, &[secret(DOC_SECRET)], &headers, DOC_BODY),
            Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: Some(DOC_NOW) })
        );
    }

    #[test]
    fn a_changed_body_or_a_wrong_secret_fails() {
        let headers = headers(DOC_TIMESTAMP, DOC_SIGNATURE);
        // The SDK's own tampering case appends "------" to the body.
        let tampered = [DOC_BODY, b"------"].concat();
        assert_eq!(verify(&[secret(DOC_SECRET)], &headers, &tampered), Err(AuthError::SignatureMismatch));
        assert_eq!(
            verify(&[secret("8f742231b10e8888abcd99yyyzzz85a6")], &headers, DOC_BODY),
            Err(AuthError::SignatureMismatch)
        );
    }

    #[test]
    fn the_signed_timestamp_text_is_part_of_the_signature() {
        let body = br#"{"event_id":"Ev1"}"#;
        let signature = sign(&secret(DOC_SECRET), DOC_TIMESTAMP, body);
        let shifted = headers("1531420619", &signature);
        assert_eq!(verify(&[secret(DOC_SECRET)], &shifted, body), Err(AuthError::SignatureMismatch));
    }

    #[test]
    fn any_active_secret_verifies_during_rotation() {
        let (old, new) = (secret("old-signing-secret"), secret("new-signing-secret"));
        for key in [&old, &new] {
            let headers = headers(DOC_TIMESTAMP, &sign(key, DOC_TIMESTAMP, b"{}"));
            assert!(verify(&[new.clone(), old.clone()], &headers, b"{}").is_ok());
        }
    }

    #[test]
    fn stale_and_future_timestamps_are_refused() {
        let headers = headers(DOC_TIMESTAMP, DOC_SIGNATURE);
        for (offset, ok) in [(300, true), (301, false), (-300, true), (-301, false)] {
            let now = UnixTime(DOC_NOW.0 + offset);
            let result = verify_at(now, &[secret(DOC_SECRET)], &headers, DOC_BODY);
            let expected =
                if ok { Ok(Some(DOC_NOW)) } else { Err(AuthError::TimestampOutOfTolerance { tolerance_secs: 300 }) };
            assert_eq!(result.map(|v| v.timestamp), expected, "now = ts + {offset}");
        }
    }

    #[test]
    fn missing_and_repeated_headers_are_refused() {
        let mut headers = headers(DOC_TIMESTAMP, DOC_SIGNATURE);
        headers.remove(SIGNATURE_HEADER);
        assert_eq!(verify(&[secret(DOC_SECRET)], &headers, DOC_BODY), Err(AuthError::MissingHeader(SIGNATURE_HEADER)));
        headers.remove(TIMESTAMP_HEADER);
        assert_eq!(verify(&[secret(DOC_SECRET)], &headers, DOC_BODY), Err(AuthError::MissingHeader(TIMESTAMP_HEADER)));
        let mut repeated = self::headers(DOC_TIMESTAMP, DOC_SIGNATURE);
        repeated.append(TIMESTAMP_HEADER, HeaderValue::from_static("1531420618"));
        assert_eq!(
            verify(&[secret(DOC_SECRET)], &repeated, DOC_BODY),
            Err(AuthError::MalformedHeader(TIMESTAMP_HEADER))
        );
    }

    #[test]
    fn malformed_signatures_are_refused_before_any_mac() {
        let digest = &DOC_SIGNATURE[3..];
        let cases = [
            format!("v0={}", digest.to_uppercase()),
            digest.to_owned(),
            format!("v1={digest}"),
            format!("V0={digest}"),
            format!("v0={}", &digest[..63]),
            format!("v0={digest},v0={digest}"),
            format!("v0={}", "a".repeat(5000)),
        ];
        for signature in cases {
            assert_eq!(
                verify(&[secret(DOC_SECRET)], &headers(DOC_TIMESTAMP, &signature), DOC_BODY),
                Err(AuthError::MalformedHeader(SIGNATURE_HEADER)),
                "{signature:.80}"
            );
        }
    }

    #[test]
    fn malformed_timestamps_are_refused() {
        for timestamp in ["", "+1531420618", "1531420618.5", " 1531420618", "99999999999999999999"] {
            assert_eq!(
                verify(&[secret(DOC_SECRET)], &headers(timestamp, DOC_SIGNATURE), DOC_BODY),
                Err(AuthError::MalformedHeader(TIMESTAMP_HEADER)),
                "{timestamp:?}"
            );
        }
    }

    #[test]
    fn unusable_secrets_are_refused_without_echoing_them() {
        assert_eq!(secret(DOC_SECRET).expose(), DOC_SECRET.as_bytes());
        for text in ["", "8f742231b10e8888abcd99yyyzzz85a5\n", " 8f742231"] {
            let err = Slack::default().decode_secret(text).err();
            assert!(matches!(err, Some(SecretError::Invalid { .. })), "{text:?}");
            let message = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(text.trim().is_empty() || !message.contains(text.trim()));
        }
    }

    #[test]
    fn the_scheme_names_itself_and_its_identity_pointer() {
        assert_eq!(Slack::default().name(), "slack");
        assert_eq!(Slack::default().tolerance_secs, 300);
        assert_eq!(Slack::default().default_identity(), IdentityLocation::Body("/event_id".into()));
    }
}
