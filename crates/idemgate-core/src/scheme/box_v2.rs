//! `box`: Box's V2 webhook signatures.
//!
//! Box signs the body bytes followed by the bytes of `BOX-DELIVERY-TIMESTAMP` (an RFC 3339
//! date-time, `2016-07-11T10:10:33-07:00`) with HMAC-SHA256 twice, once under the app's
//! primary signature key and once under its secondary key, and sends the standard base64 of
//! each in `BOX-SIGNATURE-PRIMARY` and `BOX-SIGNATURE-SECONDARY`, with
//! `BOX-SIGNATURE-VERSION: 1` and `BOX-SIGNATURE-ALGORITHM: HmacSHA256`
//! (<https://developer.box.com/guides/webhooks/v2/signatures-v2/>). The two keys exist so
//! that one can be changed while the other still holds: any active secret matching either
//! signature accepts, so a source lists the key or keys it has configured at Box.
//!
//! A plain `scheme = "hmac"` cannot say this: the timestamp is RFC 3339, not Unix seconds,
//! and there are two signature headers. Box asks receivers to refuse a timestamp older than
//! ten minutes, and its official SDK (`box-node-sdk`, `WebhooksManager.validateMessage`)
//! also refuses one from the future; this scheme refuses both beyond its tolerance, ten
//! minutes unless configured. Version and algorithm must be the documented values, as the
//! SDK requires. `BOX-DELIVERY-ID` names one attempt ("When Box retries a webhook this ID
//! will change") and is reported as the delivery id; the event's identity is the body's `id`.

use std::sync::Arc;

use base64::{Engine, engine::general_purpose::STANDARD};
use http::HeaderMap;

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, any_tag_matches, check_tolerance,
    hmac_sha256, plain_secret, single_header,
};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// The scheme's configuration name.
pub const NAME: &str = "box";
/// The signature under the primary key.
pub const PRIMARY_HEADER: &str = "box-signature-primary";
/// The signature under the secondary key.
pub const SECONDARY_HEADER: &str = "box-signature-secondary";
/// The signed RFC 3339 delivery time.
pub const TIMESTAMP_HEADER: &str = "box-delivery-timestamp";
/// Always `1`.
pub const VERSION_HEADER: &str = "box-signature-version";
/// Always `HmacSHA256`.
pub const ALGORITHM_HEADER: &str = "box-signature-algorithm";
/// One attempt's id, new on every retry.
pub const DELIVERY_ID_HEADER: &str = "box-delivery-id";
/// The headers a sender sets.
const SIGNING_HEADERS: &[&str] = &[VERSION_HEADER, ALGORITHM_HEADER, TIMESTAMP_HEADER, PRIMARY_HEADER];
/// The longest delivery id reported (Box sends a UUID).
const MAX_DELIVERY_ID: usize = 128;

/// Box's V2 webhook signatures with their timestamp tolerance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoxV2 {
    /// How far the signed timestamp may be from now, in seconds, either way (Box: 600).
    pub tolerance_secs: u64,
}

impl BoxV2 {
    /// Box's ten minutes.
    pub const DEFAULT: Self = Self { tolerance_secs: 600 };
}

impl Default for BoxV2 {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Signs a delivery the way Box does under one key: the base64 HMAC-SHA256 of the body
/// then the `BOX-DELIVERY-TIMESTAMP` text sent with it.
///
/// ```
/// # use idemgate_core::{Secret, scheme::box_v2};
/// let sig = box_v2::sign(&Secret::new(b"key".to_vec()), "2016-07-11T10:10:33-07:00", b"{}");
/// assert_eq!(sig.len(), 44);
/// ```
#[must_use]
pub fn sign(key: &Secret, timestamp: &str, body: &[u8]) -> String {
    STANDARD.encode(tag(key, timestamp, body))
}

fn tag(key: &Secret, timestamp: &str, body: &[u8]) -> [u8; 32] {
    hmac_sha256(key, &[body, timestamp.as_bytes()])
}

/// The signature in `name`, if sent: exactly the base64 of 32 bytes.
fn signature(headers: &HeaderMap, name: &'static str) -> Result<Option<[u8; 32]>, AuthError> {
    if !headers.contains_key(name) {
        return Ok(None);
    }
    let malformed = || AuthError::MalformedHeader(name);
    let text = single_header(headers, name)?;
    let bytes = STANDARD.decode(text).map_err(|_| malformed())?;
    bytes.try_into().map(Some).map_err(|_| malformed())
}

fn expect(headers: &HeaderMap, name: &'static str, value: &str) -> Result<(), AuthError> {
    if single_header(headers, name)? != value {
        return Err(AuthError::MalformedHeader(name));
    }
    Ok(())
}

impl Scheme for BoxV2 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Body("/id".into())
    }

    /// A signature key exactly as the developer console shows it; its UTF-8 bytes are the key.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        plain_secret(text)
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let headers = delivery.headers;
        expect(headers, VERSION_HEADER, "1")?;
        expect(headers, ALGORITHM_HEADER, "HmacSHA256")?;
        let timestamp_text = single_header(headers, TIMESTAMP_HEADER)?;
        let timestamp = UnixTime::parse_rfc3339(timestamp_text).ok_or(AuthError::MalformedHeader(TIMESTAMP_HEADER))?;
        let given: Vec<[u8; 32]> = [signature(headers, PRIMARY_HEADER)?, signature(headers, SECONDARY_HEADER)?]
            .into_iter()
            .flatten()
            .collect();
        if given.is_empty() {
            return Err(AuthError::MissingHeader(PRIMARY_HEADER));
        }
        check_tolerance(timestamp, now, self.tolerance_secs)?;
        if !any_tag_matches(secrets, &given, |key| tag(key, timestamp_text, delivery.body)) {
            return Err(AuthError::SignatureMismatch);
        }
        let delivery_id = single_header(headers, DELIVERY_ID_HEADER)
            .ok()
            .filter(|id| !id.is_empty() && id.len() <= MAX_DELIVERY_ID)
            .map(str::to_owned);
        Ok(VerifiedDelivery { delivery_id, event_identity: None, timestamp: Some(timestamp) })
    }

    fn configured(&self, tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        Arc::new(Self { tolerance_secs: tolerance_secs.unwrap_or(self.tolerance_secs) })
    }

    fn envelope(&self, message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        vec![
            (VERSION_HEADER, "1".to_owned()),
            (ALGORITHM_HEADER, "HmacSHA256".to_owned()),
            (TIMESTAMP_HEADER, message.timestamp.rfc3339().to_string()),
        ]
    }

    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        Some((PRIMARY_HEADER, sign(key, &message.timestamp.rfc3339().to_string(), message.body)))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        SIGNING_HEADERS
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    const TIMESTAMP: &str = "2016-07-11T10:10:33-07:00";
    const AT: UnixTime = UnixTime(1_468_257_033);
    const BODY: &[u8] =
        br#"{"type":"webhook_event","id":"eb0c4e06-751f-442c-86f8-fd5bb404dbec","trigger":"FILE.UPLOADED"}"#;

    fn key(text: &str) -> Secret {
        BoxV2::DEFAULT.decode_secret(text).unwrap_or_else(|_| unreachable!())
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).unwrap_or_else(|_| unreachable!()));
        }
        headers
    }

    fn signed(primary: &Secret, secondary: &Secret, body: &[u8]) -> HeaderMap {
        headers(&[
            (DELIVERY_ID_HEADER, "673a081b-bb4b-4d45-b4f1-4131a29c1d07"),
            (TIMESTAMP_HEADER, TIMESTAMP),
            (VERSION_HEADER, "1"),
            (ALGORITHM_HEADER, "HmacSHA256"),
            (PRIMARY_HEADER, &sign(primary, TIMESTAMP, body)),
            (SECONDARY_HEADER, &sign(secondary, TIMESTAMP, body)),
        ])
    }

    fn verify(
        secrets: &[Secret],
        headers: &HeaderMap,
        body: &[u8],
        now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let set = SecretSet::new(secrets.to_vec()).unwrap_or_else(|_| unreachable!());
        BoxV2::DEFAULT.verify(&set, RawDelivery { headers, body }, now)
    }

    #[test]
    fn the_body_then_the_timestamp_text_is_signed() {
        // The documented steps: hmac.update(payload); hmac.update(timestamp); base64.
        let expected = STANDARD.encode(hmac_sha256(&key("primary"), &[BODY, TIMESTAMP.as_bytes()]));
        assert_eq!(sign(&key("primary"), TIMESTAMP, BODY), expected);
        let headers = signed(&key("primary"), &key("secondary"), BODY);
        assert_eq!(
            verify(&[key("primary")], &headers, BODY, AT),
            Ok(VerifiedDelivery {
                delivery_id: Some("673a081b-bb4b-4d45-b4f1-4131a29c1d07".into()),
                event_identity: None,
                timestamp: Some(AT),
            })
        );
    }

    #[test]
    fn either_key_accepts_and_a_changed_byte_or_key_does_not() {
        let headers = signed(&key("primary"), &key("secondary"), BODY);
        assert!(verify(&[key("secondary")], &headers, BODY, AT).is_ok());
        assert!(verify(&[key("other"), key("primary")], &headers, BODY, AT).is_ok());
        assert_eq!(verify(&[key("other")], &headers, BODY, AT), Err(AuthError::SignatureMismatch));
        let mut changed = BODY.to_vec();
        changed[10] ^= 1;
        assert_eq!(
            verify(&[key("primary"), key("secondary")], &headers, &changed, AT),
            Err(AuthError::SignatureMismatch)
        );
    }

    #[test]
    fn one_signature_header_is_enough_and_none_is_refused() {
        let mut headers = signed(&key("primary"), &key("secondary"), BODY);
        headers.remove(SECONDARY_HEADER);
        assert!(verify(&[key("primary")], &headers, BODY, AT).is_ok());
        headers.remove(PRIMARY_HEADER);
        assert_eq!(verify(&[key("primary")], &headers, BODY, AT), Err(AuthError::MissingHeader(PRIMARY_HEADER)));
    }

    #[test]
    fn the_timestamp_is_signed_and_held_to_ten_minutes_either_way() {
        let mut shifted = signed(&key("primary"), &key("secondary"), BODY);
        shifted.insert(TIMESTAMP_HEADER, HeaderValue::from_static("2016-07-11T17:10:33Z"));
        // The same instant written otherwise is other signed text.
        assert_eq!(verify(&[key("primary")], &shifted, BODY, AT), Err(AuthError::SignatureMismatch));
        let headers = signed(&key("primary"), &key("secondary"), BODY);
        for (offset, ok) in [(600, true), (601, false), (-600, true), (-601, false)] {
            let result = verify(&[key("primary")], &headers, BODY, UnixTime(AT.0 + offset));
            let expected =
                if ok { Ok(Some(AT)) } else { Err(AuthError::TimestampOutOfTolerance { tolerance_secs: 600 }) };
            assert_eq!(result.map(|v| v.timestamp), expected, "now = ts + {offset}");
        }
    }

    #[test]
    fn malformed_headers_are_refused() {
        let good = signed(&key("primary"), &key("secondary"), BODY);
        let sig = sign(&key("primary"), TIMESTAMP, BODY);
        let cases: [(&'static str, String); 7] = [
            (VERSION_HEADER, "2".into()),
            (ALGORITHM_HEADER, "HmacSHA1".into()),
            (TIMESTAMP_HEADER, "1468257033".into()),
            (TIMESTAMP_HEADER, "2016-07-11".into()),
            (PRIMARY_HEADER, sig.trim_end_matches('=').to_owned()),
            (PRIMARY_HEADER, hex::encode(hmac_sha256(&key("primary"), &[BODY, TIMESTAMP.as_bytes()]))),
            (SECONDARY_HEADER, STANDARD.encode([0u8; 16])),
        ];
        for (name, value) in cases {
            let mut headers = good.clone();
            headers.insert(name, HeaderValue::from_str(&value).unwrap_or_else(|_| unreachable!()));
            assert_eq!(
                verify(&[key("primary")], &headers, BODY, AT),
                Err(AuthError::MalformedHeader(name)),
                "{name}: {value}"
            );
        }
        let mut repeated = good;
        repeated.append(PRIMARY_HEADER, HeaderValue::from_str(&sig).unwrap_or_else(|_| unreachable!()));
        assert_eq!(verify(&[key("primary")], &repeated, BODY, AT), Err(AuthError::MalformedHeader(PRIMARY_HEADER)));
    }

    #[test]
    fn a_sender_signs_what_the_receiver_accepts() {
        let message = Outgoing { id: "eb0c4e06", attempt: 1, timestamp: AT, body: BODY };
        let mut headers = HeaderMap::new();
        let scheme = BoxV2::DEFAULT;
        for (name, value) in scheme.envelope(&message).into_iter().chain(scheme.signature(&key("primary"), &message)) {
            headers.insert(name, HeaderValue::from_str(&value).unwrap_or_else(|_| unreachable!()));
        }
        assert_eq!(headers.get(TIMESTAMP_HEADER).map(HeaderValue::as_bytes), Some(&b"2016-07-11T17:10:33Z"[..]));
        assert!(verify(&[key("primary")], &headers, BODY, AT).is_ok());
        assert!(SIGNING_HEADERS.iter().all(|name| headers.contains_key(*name)));
    }
}
