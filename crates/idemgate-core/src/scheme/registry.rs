//! The registry: every scheme idemgate verifies and signs, each listed once under the name
//! a source configures it by. The configuration, `idemgate send`, the bench and the tests
//! find a scheme here by its name, and the worker signs its outgoing deliveries with
//! [`OUTGOING`], so a scheme added here is known to all of them and no other place keeps
//! a list of names.

use super::{
    DemoV1, Discord, GitHub, Scheme, SendGrid, Shopify, Slack, StandardWebhooks, StandardWebhooksEd25519, Stripe,
    Telnyx, Twilio,
};

/// Every scheme, with its default settings, in the order error messages list them.
pub static SCHEMES: [&dyn Scheme; 11] = [
    &StandardWebhooks::DEFAULT,
    &StandardWebhooksEd25519::DEFAULT,
    &GitHub,
    &Stripe::DEFAULT,
    &Shopify,
    &Slack::DEFAULT,
    &DemoV1::DEFAULT,
    &Twilio::DEFAULT,
    &SendGrid::DEFAULT,
    &Discord::DEFAULT,
    &Telnyx::DEFAULT,
];

/// The scheme the worker signs deliveries to destinations with: Standard Webhooks `v1`,
/// under each destination's own secret.
pub const OUTGOING: &dyn Scheme = &StandardWebhooks::DEFAULT;

/// A scheme name the registry does not know; the message lists the names it knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scheme {name:?} (known: {})", names().collect::<Vec<_>>().join(", "))]
pub struct UnknownScheme {
    /// The name asked for (a configuration value, never a secret).
    pub name: String,
}

/// The scheme configured as `name`, with its default settings (see [`Scheme::configured`]):
/// one of the registry's, or a provider of the catalog ([`crate::catalog`]).
pub fn lookup(name: &str) -> Result<&'static dyn Scheme, UnknownScheme> {
    SCHEMES
        .iter()
        .copied()
        .find(|scheme| scheme.name() == name)
        .or_else(|| crate::catalog::scheme(name))
        .ok_or_else(|| UnknownScheme { name: name.to_owned() })
}

/// The configuration names of every scheme, the registry's first, then the catalog's
/// providers that are not also a registry scheme.
pub fn names() -> impl Iterator<Item = &'static str> {
    let coded = SCHEMES.iter().map(|scheme| scheme.name());
    let provided = crate::catalog::providers()
        .map(|provider| provider.name)
        .filter(|name| SCHEMES.iter().all(|scheme| scheme.name() != *name));
    coded.chain(provided)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use http::{HeaderMap, HeaderName, HeaderValue};

    use super::*;
    use crate::{
        Secret, SecretSet, UnixTime,
        scheme::{Outgoing, RawDelivery, Signer},
    };

    #[test]
    fn every_name_is_unique_and_finds_its_own_scheme() {
        let names: Vec<_> = names().collect();
        let distinct: std::collections::BTreeSet<_> = names.iter().collect();
        assert_eq!(distinct.len(), names.len(), "{names:?}");
        for name in names {
            assert_eq!(lookup(name).unwrap().name(), name);
        }
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_known_ones() {
        let err = lookup("acme").unwrap_err();
        assert!(
            err.to_string().starts_with(
                "unknown scheme \"acme\" (known: standard-webhooks, standard-webhooks-ed25519, github, stripe, \
                 shopify, slack, demo-webhook-v1, twilio, sendgrid, discord, telnyx, svix"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_configured_tolerance_replaces_the_default_only_where_a_timestamp_is_signed() {
        let stripe = lookup("stripe").unwrap().configured(Some(10));
        let signed = |secs: i64| {
            let message = Outgoing { id: "evt_1", attempt: 1, timestamp: UnixTime(secs), body: b"{}" };
            headers(&Signer::new(lookup("stripe").unwrap(), Secret::new(b"whsec_x".to_vec())).unwrap(), &message)
        };
        let secrets = SecretSet::new(vec![Secret::new(b"whsec_x".to_vec())]).unwrap();
        let now = UnixTime(1_700_000_100);
        let fresh = signed(1_700_000_095);
        let stale = signed(1_700_000_080);
        assert!(stripe.verify(&secrets, RawDelivery { headers: &fresh, body: b"{}" }, now).is_ok());
        assert!(stripe.verify(&secrets, RawDelivery { headers: &stale, body: b"{}" }, now).is_err());
        assert!(lookup("stripe").unwrap().verify(&secrets, RawDelivery { headers: &stale, body: b"{}" }, now).is_ok());
        assert_eq!(lookup("github").unwrap().configured(Some(10)).name(), "github");
    }

    fn headers(signer: &Signer, message: &Outgoing<'_>) -> HeaderMap {
        signer
            .headers(message)
            .into_iter()
            .map(|(name, value)| (HeaderName::from_static(name), HeaderValue::from_str(&value).unwrap()))
            .collect()
    }

    /// A signing key for `scheme`, and the secret its verifier holds: the same bytes for
    /// HMAC, a private scalar and the public key SendGrid shows for ECDSA P-256, a seed and
    /// its public key for ed25519.
    fn keys(scheme: &dyn Scheme) -> (Secret, Secret) {
        if scheme.secret_signs() {
            let key = Secret::new(b"whsec_a-signing-key-of-enough-length".to_vec());
            return (key.clone(), key);
        }
        if scheme.name() == crate::scheme::sendgrid::NAME {
            let key = Secret::new(vec![9; 32]);
            let public = crate::scheme::sendgrid::public_key_for(&key).unwrap();
            return (key, scheme.decode_secret(&public).unwrap());
        }
        let seed = [9u8; 32];
        let public = ed25519_dalek::SigningKey::from_bytes(&seed).verifying_key();
        (Secret::new(seed.to_vec()), Secret::new(public.as_bytes().to_vec()))
    }

    #[test]
    fn every_scheme_verifies_what_it_signs_and_sets_only_its_signing_headers() {
        let now = UnixTime(1_700_000_000);
        let body = br#"{"id":"evt_1","event_id":"evt_1"}"#;
        for scheme in SCHEMES {
            // A scheme that signs the URL (Twilio) signs and verifies with one configured.
            let scheme: &'static dyn Scheme = match scheme.with_signed_url("https://hooks.example.com/hooks/x") {
                Some(with_url) => &**Box::leak(Box::new(with_url)),
                None => scheme,
            };
            let (key, verifying) = keys(scheme);
            let signer = Signer::new(scheme, key).unwrap();
            let message = Outgoing { id: "evt-1", attempt: 3, timestamp: now, body };
            let sent = headers(&signer, &message);
            for name in sent.keys() {
                assert!(scheme.signing_headers().contains(&name.as_str()), "{}: {name}", scheme.name());
            }
            assert_eq!(sent.len(), scheme.signing_headers().len(), "{}", scheme.name());
            let secrets = SecretSet::new(vec![verifying]).unwrap();
            let verified = scheme.verify(&secrets, RawDelivery { headers: &sent, body }, now);
            assert!(verified.is_ok(), "{}: {verified:?}", scheme.name());
            let tampered = scheme.verify(&secrets, RawDelivery { headers: &sent, body: b"{}" }, now);
            assert!(tampered.is_err(), "{}", scheme.name());
        }
    }

    #[test]
    fn the_envelope_is_sent_without_a_key_and_the_signature_needs_one() {
        let message = Outgoing { id: "evt_1", attempt: 1, timestamp: UnixTime(1_700_000_000), body: b"{}" };
        let envelope: Vec<_> = OUTGOING.envelope(&message).into_iter().map(|(name, _)| name).collect();
        assert_eq!(envelope, ["webhook-id", "webhook-timestamp"]);
        let (name, _) = OUTGOING.signature(&Secret::new(vec![1; 32]), &message).unwrap();
        assert_eq!(name, "webhook-signature");
    }

    #[test]
    fn an_ed25519_signer_needs_a_32_byte_seed() {
        let ed25519 = lookup("standard-webhooks-ed25519").unwrap();
        assert!(!ed25519.secret_signs());
        let err = Signer::new(ed25519, Secret::new(vec![1; 31])).unwrap_err();
        assert!(!err.to_string().contains("[1"), "{err}");
        assert!(Signer::new(ed25519, Secret::new(vec![1; 32])).is_ok());
    }
}
