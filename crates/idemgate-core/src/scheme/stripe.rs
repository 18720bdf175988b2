//! `stripe`: Stripe's `Stripe-Signature` webhook signature.
//!
//! Stripe sends `t=<unix seconds>,v1=<hex>[,v1=<hex>...][,v0=<hex>]` in `Stripe-Signature`,
//! where each `v1` is the lowercase hex HMAC-SHA256 of `"{t}.{body}"` keyed with the
//! endpoint's signing secret (<https://docs.stripe.com/webhooks/signature>, the page
//! stripe-node's errors link to). Several `v1` entries appear while a secret is being
//! rolled; any one of them, under any active secret, verifies. `v0` entries (test mode,
//! legacy) and unknown keys are ignored.
//!
//! This follows Stripe's official libraries (`stripe/stripe-python` `stripe/_webhook.py`,
//! `stripe/stripe-node` `src/Webhooks.ts`, `stripe/stripe-go` `webhook/client.go`):
//!
//! - The key is the whole `whsec_...` string's bytes, prefix included, as the libraries do
//!   (`secret.encode("utf-8")`). A secret without that prefix is refused as a likely paste
//!   of some other key.
//! - `t` is signed as the decimal integer it parses to (`"%d.%s"` in Python,
//!   `${timestamp}.` in Node), so leading zeros in the header do not change the material.
//! - A `v1` entry that is not 64 lowercase hex digits cannot match and is skipped, as in the
//!   libraries' tests (`v1=bad_signature` beside a valid one still verifies); a header with
//!   no `v1` entry at all, a missing or repeated `t`, or an entry without `=` is malformed.
//! - Only timestamps older than the tolerance are refused (`timestamp < now - tolerance`);
//!   every official library accepts a timestamp in the future, so this scheme does too
//!   rather than refuse deliveries Stripe's own code accepts. Unlike the libraries, a
//!   tolerance of 0 does not disable the check: it means "not older than now".
//!
//! For bounded work the header may be at most 4096 bytes and 16 entries. The event's
//! identity lives in the body (`id`, `evt_...`), so this scheme reports none.

use std::sync::Arc;

use super::{
    AuthError, IdentityLocation, Outgoing, RawDelivery, Scheme, VerifiedDelivery, any_tag_matches, hmac_sha256,
    single_header,
};
use crate::{Secret, SecretSet, UnixTime, secret::SecretError};

/// The scheme's configuration name.
pub const NAME: &str = "stripe";
/// Header carrying the timestamp and the signatures.
pub const SIGNATURE_HEADER: &str = "stripe-signature";
/// The prefix of every Stripe webhook signing secret; it is part of the key.
pub const SECRET_PREFIX: &str = "whsec_";
/// The headers a sender sets: the signature alone, which carries the timestamp.
const SIGNING_HEADERS: &[&str] = &[SIGNATURE_HEADER];
/// The longest header accepted, in bytes.
const MAX_HEADER_LEN: usize = 4096;
/// The most comma-separated entries accepted in the header.
const MAX_ENTRIES: usize = 16;
/// The most digits accepted in `t` (`i64::MAX` has 19).
const MAX_TIMESTAMP_DIGITS: usize = 19;

/// Stripe's webhook scheme with its timestamp tolerance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stripe {
    /// How old the signed timestamp may be, in seconds (Stripe's libraries: 300).
    pub tolerance_secs: u64,
}

impl Stripe {
    /// The official libraries' five minutes.
    pub const DEFAULT: Self = Self { tolerance_secs: 300 };
}

impl Default for Stripe {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Signs a body the way Stripe does; returns a `Stripe-Signature` value with one `v1`.
///
/// ```
/// # use idemgate_core::{Secret, UnixTime, scheme::stripe};
/// let secret = Secret::new(b"whsec_test_secret".to_vec());
/// let sig = stripe::sign(&secret, UnixTime(1_700_000_000), b"{}");
/// assert!(sig.starts_with("t=1700000000,v1="));
/// ```
#[must_use]
pub fn sign(secret: &Secret, timestamp: UnixTime, body: &[u8]) -> String {
    let digest = hex::encode(tag(secret, timestamp, body));
    format!("t={},v1={digest}", timestamp.0)
}

fn tag(secret: &Secret, timestamp: UnixTime, body: &[u8]) -> [u8; 32] {
    hmac_sha256(secret, &[timestamp.0.to_string().as_bytes(), b".", body])
}

fn malformed() -> AuthError {
    AuthError::MalformedHeader(SIGNATURE_HEADER)
}

fn parse_timestamp(value: &str) -> Result<UnixTime, AuthError> {
    let bounded = (1..=MAX_TIMESTAMP_DIGITS).contains(&value.len());
    if !bounded || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed());
    }
    value.parse().map(UnixTime).map_err(|_| malformed())
}

/// A `v1` value as a digest, or `None` when it cannot be one (it then matches nothing).
fn decode_v1(value: &str) -> Option<[u8; 32]> {
    let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if value.len() != 64 || !value.bytes().all(lower_hex) {
        return None;
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(value, &mut out).ok()?;
    Some(out)
}

/// The header's entries, gathered one at a time.
#[derive(Default)]
struct Entries {
    timestamp: Option<UnixTime>,
    v1_entries: usize,
    signatures: Vec<[u8; 32]>,
}

impl Entries {
    fn add(&mut self, entry: &str) -> Result<(), AuthError> {
        let (key, value) = entry.split_once('=').ok_or_else(malformed)?;
        match key {
            "t" if self.timestamp.is_none() => self.timestamp = Some(parse_timestamp(value)?),
            "t" => return Err(malformed()),
            "v1" => {
                self.v1_entries += 1;
                self.signatures.extend(decode_v1(value));
            }
            _ => {}
        }
        Ok(())
    }
}

fn parse_header(value: &str) -> Result<(UnixTime, Vec<[u8; 32]>), AuthError> {
    if value.len() > MAX_HEADER_LEN || value.split(',').count() > MAX_ENTRIES {
        return Err(malformed());
    }
    let mut entries = Entries::default();
    for entry in value.split(',') {
        entries.add(entry)?;
    }
    match entries.timestamp {
        Some(timestamp) if entries.v1_entries > 0 => Ok((timestamp, entries.signatures)),
        _ => Err(malformed()),
    }
}

/// Refuses a timestamp older than the tolerance; a future one passes, as in Stripe's libraries.
fn check_age(signed: UnixTime, now: UnixTime, tolerance_secs: u64) -> Result<(), AuthError> {
    if signed < now && signed.abs_diff(now) > tolerance_secs {
        return Err(AuthError::TimestampOutOfTolerance { tolerance_secs });
    }
    Ok(())
}

fn secret_error(reason: &'static str) -> SecretError {
    SecretError::Invalid { reason }
}

impl Scheme for Stripe {
    fn name(&self) -> &'static str {
        NAME
    }

    fn default_identity(&self) -> IdentityLocation {
        IdentityLocation::Body("/id".into())
    }

    /// The endpoint's signing secret as Stripe shows it, `whsec_` included; its bytes are the key.
    fn decode_secret(&self, text: &str) -> Result<Secret, SecretError> {
        let rest = text
            .strip_prefix(SECRET_PREFIX)
            .ok_or_else(|| secret_error("a Stripe signing secret starts with whsec_"))?;
        if rest.is_empty() {
            return Err(secret_error("the secret is empty after whsec_"));
        }
        if text.bytes().any(|b| b.is_ascii_whitespace()) {
            return Err(secret_error("the secret contains whitespace"));
        }
        Ok(Secret::new(text.as_bytes().to_vec()))
    }

    fn verify(
        &self,
        secrets: &SecretSet,
        delivery: RawDelivery<'_>,
        now: UnixTime,
    ) -> Result<VerifiedDelivery, AuthError> {
        let (timestamp, given) = parse_header(single_header(delivery.headers, SIGNATURE_HEADER)?)?;
        check_age(timestamp, now, self.tolerance_secs)?;
        // Every secret and every signature is tried, so the time taken does not tell which
        // one matched.
        if !any_tag_matches(secrets, &given, |secret| tag(secret, timestamp, delivery.body)) {
            return Err(AuthError::SignatureMismatch);
        }
        Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: Some(timestamp) })
    }

    fn configured(&self, tolerance_secs: Option<u64>) -> Arc<dyn Scheme> {
        Arc::new(Self { tolerance_secs: tolerance_secs.unwrap_or(self.tolerance_secs) })
    }

    /// Stripe sends no header but the signature; the identity is the body's `id`.
    fn envelope(&self, _message: &Outgoing<'_>) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    fn signature(&self, key: &Secret, message: &Outgoing<'_>) -> Option<(&'static str, String)> {
        Some((SIGNATURE_HEADER, sign(key, message.timestamp, message.body)))
    }

    fn signing_headers(&self) -> &'static [&'static str] {
        SIGNING_HEADERS
    }
}

#[cfg(test)]
mod tests {
    use http::{HeaderMap, HeaderValue};

    use super::*;

    // Stripe's official .NET library, stripe/stripe-dotnet:
    // src/StripeTests/Services/Events/EventUtilityTest.cs (secret, timestamp, header; its
    // ConstructEvent test verifies at timestamp + 100 with tolerance 300) over the fixture
    // src/StripeTests/Resources/event_test_signature.json (LF line endings, final newline).
    // Re-checked with Python:
    // hmac.new(b"webhook_secret", b"1533204620." + fixture, sha256).hexdigest().
    const DOTNET_SECRET: &[u8] = b"webhook_secret";
    const DOTNET_TIMESTAMP: UnixTime = UnixTime(1_533_204_620);
    const DOTNET_V1: &str = "2220f87ef101a04665f11cdf770523143f875572008577fa0f20882ddb9cc3c7";
    const DOTNET_HEADER: &str = concat!(
        "t=1533204620,",
        "v1=2220f87ef101a04665f11cdf770523143f875572008577fa0f20882ddb9cc3c7,",
        "v0=63f3a72374a733066c4be69ed7f8e5ac85c22c9f0a6a612ab9a025a9e4ee7eef",
    );
    const DOTNET_FIXTURE: &str = concat!(
        "{\n",
        "  \"id\": \"evt_123\",\n",
        "  \"object\": \"event\",\n",
        "  \"account\": \"acct_123\",\n",
        "  \"api_version\": \"2017-05-25\",\n",
        "  \"created\": 1533204620,\n",
        "  \"data\": {\n",
        "    \"object\": {\n",
        "      \"id\": \"cus_123\",\n",
        "      \"object\": \"customer\",\n",
        "      \"created\": 123456789,\n",
        "      \"email\": \"test@stripe.com\",\n",
        "      \"livemode\": false,\n",
        "      \"metadata\": {}\n",
        "    }\n",
        "  },\n",
        "  \"livemode\": false,\n",
        "  \"pending_webhooks\": 1,\n",
        "  \"request\": {\n",
        "    \"id\": \"req_123\",\n",
        "    \"idempotency_key\": \"idempotency-key-123\"\n",
        "  },\n",
        "  \"type\": \"customer.created\"\n",
        "}\n",
    );
    // stripe/stripe-python tests/test_webhook.py and stripe/stripe-node
    // test/Webhook.spec.ts use this secret; their signatures are computed at test time.
    const LIB_SECRET: &str = "whsec_test_secret";
    const NOW: UnixTime = UnixTime(1_533_204_720);

    fn dotnet_secret() -> Secret {
        // Not `decode_secret`: the .NET fixture's secret lacks the `whsec_` prefix.
        Secret::new(DOTNET_SECRET.to_vec())
    }

    fn secret(text: &str) -> Secret {
        Stripe::default().decode_secret(text).unwrap_or_else(|_| unreachable!())
    }

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(SIGNATURE_HEADER, HeaderValue::from_str(value).unwrap_or_else(|_| unreachable!()));
        headers
    }

    fn verify_with(
        scheme: Stripe,
        now: UnixTime,
        secrets: &[Secret],
        header: &str,
        body: &[u8],
    ) -> Result<VerifiedDelivery, AuthError> {
        let set = SecretSet::new(secrets.to_vec()).unwrap_or_else(|_| unreachable!());
        let headers = headers(header);
        scheme.verify(&set, RawDelivery { headers: &headers, body }, now)
    }

    fn verify(secrets: &[Secret], header: &str, body: &[u8]) -> Result<(), AuthError> {
        verify_with(Stripe::default(), NOW, secrets, header, body).map(|_| ())
    }

    fn verify_at(now: UnixTime, header: &str) -> Result<(), AuthError> {
        let body = DOTNET_FIXTURE.as_bytes();
        verify_with(Stripe::default(), now, &[dotnet_secret()], header, body).map(|_| ())
    }

    #[test]
    fn stripes_library_fixture_signs_and_verifies() {
        let body = DOTNET_FIXTURE.as_bytes();
        let expected = format!("t=1533204620,v1={DOTNET_V1}");
        assert_eq!(sign(&dotnet_secret(), DOTNET_TIMESTAMP, body), expected);
        let ok = verify_with(Stripe::default(), NOW, &[dotnet_secret()], DOTNET_HEADER, body);
        assert_eq!(
            ok,
            Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: Some(DOTNET_TIMESTAMP) })
        );
    }

    #[test]
    fn a_changed_body_or_a_wrong_secret_fails() {
        // The .NET library's own tampering case appends "this_changes_the_json".
        let tampered = format!("{DOTNET_FIXTURE}this_changes_the_json");
        assert_eq!(verify(&[dotnet_secret()], DOTNET_HEADER, tampered.as_bytes()), Err(AuthError::SignatureMismatch));
        assert_eq!(
            verify(&[secret(LIB_SECRET)], DOTNET_HEADER, DOTNET_FIXTURE.as_bytes()),
            Err(AuthError::SignatureMismatch)
        );
    }

    #[test]
    fn only_timestamps_older_than_the_tolerance_are_refused() {
        let t = DOTNET_TIMESTAMP.0;
        let stale = Err(AuthError::TimestampOutOfTolerance { tolerance_secs: 300 });
        assert_eq!(verify_at(UnixTime(t + 300), DOTNET_HEADER), Ok(()));
        assert_eq!(verify_at(UnixTime(t + 301), DOTNET_HEADER), stale);
        // The .NET library's RejectOutdatedTimestamp: now = t + tolerance + 100.
        assert_eq!(verify_at(UnixTime(t + 400), DOTNET_HEADER), stale);
        // Stripe's libraries check the age only: a future timestamp passes.
        assert_eq!(verify_at(UnixTime(t - 3600), DOTNET_HEADER), Ok(()));
    }

    #[test]
    fn a_zero_tolerance_does_not_disable_the_check() {
        let strict = Stripe { tolerance_secs: 0 };
        let body = DOTNET_FIXTURE.as_bytes();
        let at = |now| verify_with(strict, now, &[dotnet_secret()], DOTNET_HEADER, body);
        assert!(at(DOTNET_TIMESTAMP).is_ok());
        assert_eq!(at(UnixTime(DOTNET_TIMESTAMP.0 + 1)), Err(AuthError::TimestampOutOfTolerance { tolerance_secs: 0 }));
    }

    #[test]
    fn any_v1_under_any_active_secret_verifies_during_rotation() {
        let (old, new) = (secret("whsec_old"), secret("whsec_new"));
        let by_old = sign(&old, NOW, b"{}");
        let by_new = sign(&new, NOW, b"{}");
        let both = format!("{by_old},v1={}", hex::encode(tag(&new, NOW, b"{}")));
        for header in [&by_old, &by_new, &both] {
            assert!(verify(&[new.clone(), old.clone()], header, b"{}").is_ok());
        }
        assert!(verify(std::slice::from_ref(&old), &both, b"{}").is_ok());
        assert!(verify(std::slice::from_ref(&new), &both, b"{}").is_ok());
        assert_eq!(verify(&[secret("whsec_other")], &both, b"{}"), Err(AuthError::SignatureMismatch));
    }

    #[test]
    fn undecodable_v1_entries_are_skipped_not_fatal() {
        // stripe-python's test_header_contains_valid_signature appends ",v1=bad_signature";
        // stripe-node's equivalent appends ",v1=potato".
        let key = secret(LIB_SECRET);
        let good = sign(&key, NOW, b"{}");
        for extra in [",v1=bad_signature", ",v1=potato", ",v1="] {
            assert!(verify(std::slice::from_ref(&key), &format!("{good}{extra}"), b"{}").is_ok());
        }
        let only_bad = format!("t={},v1=bad_signature", NOW.0);
        assert_eq!(verify(&[key], &only_bad, b"{}"), Err(AuthError::SignatureMismatch));
    }

    #[test]
    fn malformed_headers_are_refused_before_any_mac() {
        let v0_only = format!("t={},v0={DOTNET_V1}", NOW.0);
        let cases = [
            // stripe-python / stripe-node tests.
            "bad_header".to_owned(),
            "i'm not even a real signature header".to_owned(),
            v0_only,
            // stripe-dotnet ValidateSignatureHandlesIncorrectHeaderValues.
            format!("t=,v1={DOTNET_V1}"),
            "t,v1=,v0=".to_owned(),
            "t,v1=,v0".to_owned(),
            "t,v1=,".to_owned(),
            "t,,".to_owned(),
            ",,".to_owned(),
            "t".to_owned(),
            // This scheme's own rules.
            String::new(),
            format!("t=1533204620,t=1533204621,v1={DOTNET_V1}"),
            format!("t=+1533204620,v1={DOTNET_V1}"),
            format!("t=-1,v1={DOTNET_V1}"),
            format!("t=99999999999999999999,v1={DOTNET_V1}"),
            format!("{DOTNET_HEADER}{}", ",x=1".repeat(MAX_ENTRIES - 2)),
            format!("t=1533204620,v1={DOTNET_V1},x={}", "a".repeat(MAX_HEADER_LEN)),
        ];
        for header in cases {
            assert_eq!(
                verify(&[dotnet_secret()], &header, DOTNET_FIXTURE.as_bytes()),
                Err(AuthError::MalformedHeader(SIGNATURE_HEADER)),
                "{header:.80}"
            );
        }
    }

    #[test]
    fn sixteen_entries_are_accepted() {
        let header = format!("{DOTNET_HEADER}{}", ",x=1".repeat(MAX_ENTRIES - 3));
        assert_eq!(header.split(',').count(), MAX_ENTRIES);
        assert_eq!(verify_at(NOW, &header), Ok(()));
    }

    #[test]
    fn missing_and_repeated_headers_are_refused() {
        let set = SecretSet::new(vec![dotnet_secret()]).unwrap_or_else(|_| unreachable!());
        let mut headers = headers(DOTNET_HEADER);
        headers.append(SIGNATURE_HEADER, HeaderValue::from_static(DOTNET_HEADER));
        let body = DOTNET_FIXTURE.as_bytes();
        let result = Stripe::default().verify(&set, RawDelivery { headers: &headers, body }, NOW);
        assert_eq!(result, Err(AuthError::MalformedHeader(SIGNATURE_HEADER)));
        headers.remove(SIGNATURE_HEADER);
        let result = Stripe::default().verify(&set, RawDelivery { headers: &headers, body }, NOW);
        assert_eq!(result, Err(AuthError::MissingHeader(SIGNATURE_HEADER)));
    }

    #[test]
    fn secrets_keep_their_prefix_and_bad_ones_are_not_echoed() {
        assert_eq!(secret(LIB_SECRET).expose(), LIB_SECRET.as_bytes());
        for text in ["", "whsec_", "sk_test_4eC39HqLyjWDarjtT1zdp7dc", "whsec_abc\n", "whsec_a b"] {
            let err = Stripe::default().decode_secret(text).err();
            assert!(matches!(err, Some(SecretError::Invalid { .. })), "{text:?}");
            let message = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(text.len() <= SECRET_PREFIX.len() || !message.contains(text.trim()));
        }
    }

    #[test]
    fn the_scheme_names_itself_and_its_identity_pointer() {
        assert_eq!(Stripe::default().name(), "stripe");
        assert_eq!(Stripe::default().tolerance_secs, 300);
        assert_eq!(Stripe::default().default_identity(), IdentityLocation::Body("/id".into()));
    }
}
