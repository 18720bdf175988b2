//! One attempt's Standard Webhooks headers signed with every valid secret of an endpoint
//! (`docs/design/outbound-api.md` §1.7, §3.6): during a rotation's grace period the
//! current secret and each unexpired old one sign the same `{msg_id}.{timestamp}.{body}`,
//! and their `v1,<base64>` entries are joined by one space in one `webhook-signature`
//! header, as Svix sends them. A receiver holding any one of the secrets verifies it.
//! Each entry is [`crate::scheme::standard::sign`]'s, the signer the verifier is tested
//! against.

use crate::{
    SecretSet, UnixTime,
    scheme::standard::{ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign},
};

/// The `webhook-signature` value: one `v1,<base64>` entry per secret, in the set's order
/// (the current secret first), separated by one space. A [`SecretSet`] is never empty, so
/// there is always a signature.
#[must_use]
pub fn signature_header(secrets: &SecretSet, msg_id: &str, timestamp: UnixTime, body: &[u8]) -> String {
    let entries: Vec<String> = secrets.iter().map(|secret| sign(secret, msg_id, timestamp.0, body)).collect();
    entries.join(" ")
}

/// The three headers of one attempt: `webhook-id` (the message id, the same on every
/// attempt), `webhook-timestamp` (this attempt's) and `webhook-signature`.
#[must_use]
pub fn signed_headers(
    secrets: &SecretSet,
    msg_id: &str,
    timestamp: UnixTime,
    body: &[u8],
) -> [(&'static str, String); 3] {
    [
        (ID_HEADER, msg_id.to_owned()),
        (TIMESTAMP_HEADER, timestamp.0.to_string()),
        (SIGNATURE_HEADER, signature_header(secrets, msg_id, timestamp, body)),
    ]
}

#[cfg(test)]
mod tests {
    use http::{HeaderMap, HeaderName, HeaderValue};

    use super::*;
    use crate::{
        Secret,
        scheme::{AuthError, RawDelivery, Scheme, StandardWebhooks},
    };

    /// The published Standard Webhooks vector (`standard-webhooks/standard-webhooks`,
    /// `libraries/python/tests/test_webhooks.py`, also in the JavaScript and Go tests).
    const VECTOR_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const VECTOR_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const VECTOR_TS: UnixTime = UnixTime(1_614_265_330);
    const VECTOR_BODY: &[u8] = br#"{"test": 2432232314}"#;
    const VECTOR_SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    /// Svix's Rust library's vector secret (`rust/src/webhooks.rs`), as a second key.
    const OTHER_SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

    fn key(text: &str) -> Secret {
        StandardWebhooks::DEFAULT.decode_secret(text).unwrap_or_else(|_| unreachable!())
    }

    fn set(keys: Vec<Secret>) -> SecretSet {
        SecretSet::new(keys).unwrap_or_else(|_| unreachable!())
    }

    /// Whether the attempt's headers verify for a receiver holding `secret` only.
    fn verifies(headers: &[(&'static str, String); 3], body: &[u8], secret: Secret) -> Result<(), AuthError> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let value = HeaderValue::from_str(value).unwrap_or_else(|_| unreachable!());
            map.insert(HeaderName::from_static(name), value);
        }
        let delivery = RawDelivery { headers: &map, body };
        StandardWebhooks::DEFAULT.verify(&set(vec![secret]), delivery, VECTOR_TS).map(|_| ())
    }

    #[test]
    fn one_secret_gives_the_published_vector() {
        let header = signature_header(&set(vec![key(VECTOR_SECRET)]), VECTOR_ID, VECTOR_TS, VECTOR_BODY);
        assert_eq!(header, VECTOR_SIG);
    }

    #[test]
    fn several_secrets_give_one_space_separated_header_each_verifying_alone() {
        let secrets = set(vec![key(VECTOR_SECRET), key(OTHER_SECRET)]);
        let headers = signed_headers(&secrets, VECTOR_ID, VECTOR_TS, VECTOR_BODY);
        assert_eq!(headers[0], ("webhook-id", VECTOR_ID.to_owned()));
        assert_eq!(headers[1], ("webhook-timestamp", "1614265330".to_owned()));
        let entries: Vec<&str> = headers[2].1.split(' ').collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0], VECTOR_SIG);
        assert!(entries[1].starts_with("v1,") && entries[1] != VECTOR_SIG);
        assert_eq!(verifies(&headers, VECTOR_BODY, key(VECTOR_SECRET)), Ok(()));
        assert_eq!(verifies(&headers, VECTOR_BODY, key(OTHER_SECRET)), Ok(()));
        // A secret that is not among them, or another body, does not verify.
        let stranger = Secret::new(vec![9; 32]);
        assert_eq!(verifies(&headers, VECTOR_BODY, stranger), Err(AuthError::SignatureMismatch));
        assert_eq!(verifies(&headers, b"{}", key(VECTOR_SECRET)), Err(AuthError::SignatureMismatch));
    }

    #[test]
    fn a_current_and_ten_old_secrets_all_verify() {
        let keys: Vec<Secret> = (1..=11u8).map(|n| Secret::new(vec![n; 24])).collect();
        let headers = signed_headers(&set(keys.clone()), VECTOR_ID, VECTOR_TS, VECTOR_BODY);
        assert_eq!(headers[2].1.matches(' ').count(), 10);
        for secret in keys {
            assert_eq!(verifies(&headers, VECTOR_BODY, secret), Ok(()));
        }
    }
}
