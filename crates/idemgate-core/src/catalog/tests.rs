#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use base64::{Engine, engine::general_purpose::STANDARD};
use http::{HeaderMap, HeaderName, HeaderValue};

use super::*;
use crate::{
    comparison::FieldPointer,
    scheme::{SCHEMES, Signer},
};

#[test]
fn every_provider_has_a_unique_name_and_a_scheme_under_it() {
    let names: Vec<_> = providers().map(|p| p.name).collect();
    assert_eq!(names.iter().collect::<BTreeSet<_>>().len(), names.len(), "{names:?}");
    for provider in providers() {
        let scheme = crate::scheme::lookup(provider.name).unwrap();
        assert_eq!(scheme.name(), provider.name);
        assert!(provider.scheme().name() == provider.name);
        match provider.identity {
            Some(identity) => assert_eq!(scheme.default_identity(), identity.location(), "{}", provider.name),
            None => assert!(!provider.scheme().carries_identity(), "{}", provider.name),
        }
        assert!(!provider.identity_note.is_empty() && !provider.retry_note.is_empty(), "{}", provider.name);
        assert!(provider.docs.starts_with("https://"), "{}", provider.name);
    }
}

#[test]
fn a_registry_scheme_in_the_catalog_keeps_its_own_identity() {
    for scheme in SCHEMES {
        if let Some(provider) = find(scheme.name()) {
            // A provider that sends no stable identity is a scheme that carries none.
            let own = scheme.carries_identity().then(|| scheme.default_identity());
            assert_eq!(provider.identity.map(Identity::location), own, "{}", scheme.name());
        }
    }
}

#[test]
fn per_attempt_fields_are_pointers_into_json_bodies() {
    for provider in providers() {
        for pointer in provider.per_attempt {
            FieldPointer::parse(pointer).unwrap();
        }
        if provider.body == BodyFormat::Form {
            assert!(provider.per_attempt.is_empty(), "{}", provider.name);
        }
        if let Some(pointer) = provider.event_type {
            assert!(pointer.starts_with('/'), "{}", provider.name);
        }
    }
}

fn headers(pairs: Vec<(&'static str, String)>) -> HeaderMap {
    pairs
        .into_iter()
        .map(|(name, value)| (HeaderName::from_static(name), HeaderValue::from_str(&value).unwrap()))
        .collect()
}

#[test]
fn every_hmac_provider_verifies_what_it_signs_and_refuses_a_changed_byte() {
    let now = UnixTime(1_700_000_000);
    let body = br#"{"id":"evt_1","type":"thing.created"}"#;
    for provider in providers().filter(|p| p.scheme().secret_signs()) {
        let scheme = provider.scheme();
        let url = "https://hooks.example.com/hooks/x";
        let scheme: &'static dyn Scheme = match scheme.with_signed_url(url) {
            Some(with_url) => &**Box::leak(Box::new(with_url)),
            None => scheme,
        };
        // The first of these that the scheme's secret format takes.
        let candidates = [
            format!("whsec_{}", STANDARD.encode([7u8; 32])),
            "user:a-long-enough-password".to_owned(),
            STANDARD.encode([7u8; 32]),
            hex::encode([7u8; 32]),
        ];
        let secret = candidates.iter().find_map(|text| scheme.decode_secret(text).ok()).unwrap();
        let signer = Signer::new(scheme, secret.clone()).unwrap();
        let message = Outgoing { id: "evt_1", attempt: 1, timestamp: now, body };
        let sent = headers(signer.headers(&message));
        let secrets = SecretSet::new(vec![secret]).unwrap();
        let verified = scheme.verify(&secrets, RawDelivery { headers: &sent, body }, now);
        assert!(verified.is_ok(), "{}: {verified:?}", provider.name);
        let mut changed = body.to_vec();
        changed[3] ^= 1;
        let tampered = scheme.verify(&secrets, RawDelivery { headers: &sent, body: &changed }, now);
        if !matches!(provider.signing, Signing::Token(_) | Signing::Basic) {
            assert_eq!(tampered, Err(AuthError::SignatureMismatch), "{}", provider.name);
        }
    }
}
