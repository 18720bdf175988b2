#![allow(clippy::unwrap_used)]

use http::{HeaderMap, HeaderName, HeaderValue};

use super::*;
use crate::scheme::{GitHub, Signer, github};

const NOW: UnixTime = UnixTime(1_700_000_000);
const BODY: &[u8] = br#"{"id":"evt_1"}"#;

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    pairs
        .iter()
        .map(|(name, value)| (HeaderName::try_from(*name).unwrap(), HeaderValue::from_str(value).unwrap()))
        .collect()
}

fn secrets(texts: &[&str]) -> SecretSet {
    SecretSet::new(texts.iter().map(|text| Secret::new(text.as_bytes().to_vec())).collect()).unwrap()
}

fn settings(algorithm: Algorithm, encoding: Encoding, prefix: &str, signed: &str, ts: Option<&str>) -> HmacSettings {
    HmacSettings {
        algorithm,
        encoding,
        header: "X-Acme-Signature".into(),
        prefix: prefix.into(),
        signed: signed.into(),
        timestamp_header: ts.map(str::to_owned),
        ..HmacSettings::new(algorithm, encoding, "", "", "")
    }
}

/// `v0:{timestamp}:{body}`, SHA-256, hex, `v0=` (Slack's shape, under another name).
fn acme() -> GenericHmac {
    let s = settings(Algorithm::Sha256, Encoding::Hex, "v0=", "v0:{timestamp}:{body}", Some("X-Acme-Timestamp"));
    GenericHmac::new(&s).unwrap()
}

#[test]
fn the_hmacs_match_rfc_2202_and_rfc_4231() {
    // RFC 2202 test case 2 (HMAC-SHA1), RFC 4231 test case 2 (HMAC-SHA256, HMAC-SHA512).
    let (key, data) = (b"Jefe", &b"what do ya want for nothing?"[..]);
    assert_eq!(hex::encode(Algorithm::Sha1.mac(key, &[data])), "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
    assert_eq!(
        hex::encode(Algorithm::Sha256.mac(key, &[&data[..4], &data[4..]])),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
    assert_eq!(
        hex::encode(Algorithm::Sha512.mac(key, &[data])),
        "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
    );
}

#[test]
fn a_template_with_a_timestamp_verifies_an_independently_computed_signature() {
    // python3 -c 'import hmac,hashlib; print(hmac.new(b"acme-secret",
    //   b"v0:1700000000:" + b"{\"id\":\"evt_1\"}", hashlib.sha256).hexdigest())'
    let sig = "v0=8d37986a76164842b16c555afb95510c5d35edc9c8724d0530930c503f4dc5bc";
    let sent = headers(&[("x-acme-signature", sig), ("x-acme-timestamp", "1700000000")]);
    let verified = acme().verify(&secrets(&["acme-secret"]), RawDelivery { headers: &sent, body: BODY }, NOW);
    assert_eq!(verified, Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: Some(NOW) }));
    let mut changed = BODY.to_vec();
    changed[8] ^= 1;
    let tampered = acme().verify(&secrets(&["acme-secret"]), RawDelivery { headers: &sent, body: &changed }, NOW);
    assert_eq!(tampered, Err(AuthError::SignatureMismatch));
    let wrong = acme().verify(&secrets(&["other"]), RawDelivery { headers: &sent, body: BODY }, NOW);
    assert_eq!(wrong, Err(AuthError::SignatureMismatch));
}

#[test]
fn a_base64_sha512_template_with_a_signed_header_verifies_a_python_vector() {
    // python3 -c 'import hmac,hashlib,base64; print(base64.b64encode(hmac.new(b"acme-secret",
    //   b"1700000000.d-42." + b"{\"id\":\"evt_1\"}", hashlib.sha512).digest()).decode())'
    let sig = "7UmqvjvEUXCJiq/f/Tmr/AEPEdMYXYjJZ3XpV1dfczvnxRJnjkbAvbvZBls7Yc0sOIQYf7MPcWQ+EnKtT2WPHg==";
    let s = settings(
        Algorithm::Sha512,
        Encoding::Base64,
        "",
        "{timestamp}.{header:X-Delivery}.{body}",
        Some("X-Acme-Timestamp"),
    );
    let scheme = GenericHmac::new(&s).unwrap();
    let sent = headers(&[("x-acme-signature", sig), ("x-acme-timestamp", "1700000000"), ("x-delivery", "d-42")]);
    let keys = secrets(&["acme-secret"]);
    assert!(scheme.verify(&keys, RawDelivery { headers: &sent, body: BODY }, NOW).is_ok());
    let mut other = sent;
    other.insert("x-delivery", HeaderValue::from_static("d-43"));
    assert_eq!(
        scheme.verify(&keys, RawDelivery { headers: &other, body: BODY }, NOW),
        Err(AuthError::SignatureMismatch)
    );
    other.remove("x-delivery");
    assert_eq!(
        scheme.verify(&keys, RawDelivery { headers: &other, body: BODY }, NOW),
        Err(AuthError::MissingHeader("x-delivery"))
    );
}

#[test]
fn a_stale_or_future_timestamp_is_refused_within_the_configured_tolerance() {
    let scheme = acme().configured(Some(60));
    let signer = Signer::new(Box::leak(Box::new(acme())), Secret::new(b"acme-secret".to_vec())).unwrap();
    let keys = secrets(&["acme-secret"]);
    for (at, ok) in [(NOW.0 - 60, true), (NOW.0 + 60, true), (NOW.0 - 61, false), (NOW.0 + 61, false)] {
        let message = Outgoing { id: "evt_1", attempt: 1, timestamp: UnixTime(at), body: BODY };
        let sent: HeaderMap = signer
            .headers(&message)
            .into_iter()
            .map(|(name, value)| (HeaderName::from_static(name), HeaderValue::from_str(&value).unwrap()))
            .collect();
        let verified = scheme.verify(&keys, RawDelivery { headers: &sent, body: BODY }, NOW);
        if ok {
            assert!(verified.is_ok(), "{at}: {verified:?}");
        } else {
            assert_eq!(verified, Err(AuthError::TimestampOutOfTolerance { tolerance_secs: 60 }), "{at}");
        }
    }
    assert_eq!(acme().tolerance_secs(), DEFAULT_TOLERANCE_SECS);
}

#[test]
fn malformed_signatures_and_timestamps_are_refused_before_any_mac() {
    let keys = secrets(&["acme-secret"]);
    let digest = "8d37986a76164842b16c555afb95510c5d35edc9c8724d0530930c503f4dc5bc";
    let cases = [
        (digest.to_owned(), "1700000000", "x-acme-signature"),
        (format!("v0={}", digest.to_uppercase()), "1700000000", "x-acme-signature"),
        (format!("v0={}", &digest[..62]), "1700000000", "x-acme-signature"),
        (format!("v0={digest}00"), "1700000000", "x-acme-signature"),
        (format!("v0={}", "a".repeat(2000)), "1700000000", "x-acme-signature"),
        (format!("v0={digest}"), "-1700000000", "x-acme-timestamp"),
        (format!("v0={digest}"), "1700000000.5", "x-acme-timestamp"),
        (format!("v0={digest}"), "", "x-acme-timestamp"),
    ];
    for (sig, ts, named) in cases {
        let sent = headers(&[("x-acme-signature", &sig), ("x-acme-timestamp", ts)]);
        let verified = acme().verify(&keys, RawDelivery { headers: &sent, body: BODY }, NOW);
        assert_eq!(verified.map(|_| ()), Err(AuthError::MalformedHeader(intern(named))), "{sig:.80} {ts}");
    }
    let missing = headers(&[("x-acme-signature", &format!("v0={digest}"))]);
    let verified = acme().verify(&keys, RawDelivery { headers: &missing, body: BODY }, NOW);
    assert_eq!(verified, Err(AuthError::MissingHeader("x-acme-timestamp")));
}

#[test]
fn every_configured_scheme_signs_what_it_verifies_and_only_its_headers() {
    let hmac = acme();
    let signed_header =
        GenericHmac::new(&settings(Algorithm::Sha1, Encoding::Base64, "sha1=", "{header:X-Acme-Delivery}{body}", None))
            .unwrap();
    let token = SharedToken::new("X-Token").unwrap();
    let schemes: [(&'static dyn Scheme, &str); 4] = [
        (Box::leak(Box::new(hmac)), "acme-secret"),
        (Box::leak(Box::new(signed_header)), "acme-secret"),
        (Box::leak(Box::new(token)), "a-shared-token"),
        (&BasicAuth, "user:pa:ss"),
    ];
    for (scheme, secret) in schemes {
        let key = scheme.decode_secret(secret).unwrap();
        let signer = Signer::new(scheme, key.clone()).unwrap();
        let message = Outgoing { id: "evt_1", attempt: 2, timestamp: NOW, body: BODY };
        let sent: HeaderMap = signer
            .headers(&message)
            .into_iter()
            .map(|(name, value)| (HeaderName::from_static(name), HeaderValue::from_str(&value).unwrap()))
            .collect();
        assert_eq!(sent.len(), scheme.signing_headers().len(), "{}", scheme.name());
        assert!(sent.keys().all(|name| scheme.signing_headers().contains(&name.as_str())), "{}", scheme.name());
        let keys = SecretSet::new(vec![Scheme::decode_secret(scheme, "other:one").unwrap(), key]).unwrap();
        assert!(scheme.verify(&keys, RawDelivery { headers: &sent, body: BODY }, NOW).is_ok(), "{}", scheme.name());
        let tampered = scheme.verify(&keys, RawDelivery { headers: &sent, body: b"{}" }, NOW);
        let body_covered = scheme.name() == HMAC;
        assert_eq!(tampered.is_err(), body_covered, "{}: only the HMAC covers the body", scheme.name());
    }
}

#[test]
fn a_shared_token_is_compared_against_each_active_secret() {
    let token = SharedToken::new("X-Token").unwrap();
    assert_eq!(token.header(), "x-token");
    let keys = secrets(&["old-token", "new-token"]);
    let verify = |sent: &HeaderMap| token.verify(&keys, RawDelivery { headers: sent, body: BODY }, NOW);
    assert!(verify(&headers(&[("x-token", "old-token")])).is_ok());
    assert!(verify(&headers(&[("x-token", "new-token")])).is_ok());
    for wrong in ["new-toke", "new-tokenn", "NEW-TOKEN", ""] {
        assert_eq!(verify(&headers(&[("x-token", wrong)])), Err(AuthError::SignatureMismatch), "{wrong:?}");
    }
    assert_eq!(verify(&HeaderMap::new()), Err(AuthError::MissingHeader("x-token")));
    let mut twice = headers(&[("x-token", "old-token")]);
    twice.append("x-token", HeaderValue::from_static("old-token"));
    assert_eq!(verify(&twice), Err(AuthError::MalformedHeader("x-token")));
}

#[test]
fn basic_auth_checks_user_and_password_together() {
    let keys = SecretSet::new(vec![BasicAuth.decode_secret("hooks:s3cret").unwrap()]).unwrap();
    let verify = |value: &str| {
        let sent = headers(&[("authorization", value)]);
        BasicAuth.verify(&keys, RawDelivery { headers: &sent, body: BODY }, NOW)
    };
    assert!(verify(&format!("Basic {}", STANDARD.encode("hooks:s3cret"))).is_ok());
    assert!(verify(&format!("basic {}", STANDARD.encode("hooks:s3cret"))).is_ok(), "the scheme is case-insensitive");
    for wrong in ["hooks:s3cre", "hook:s3cret", "hooks:s3cret:", "s3cret"] {
        assert_eq!(verify(&format!("Basic {}", STANDARD.encode(wrong))), Err(AuthError::SignatureMismatch), "{wrong}");
    }
    for malformed in ["Bearer abc", "Basic", "Basic !!!", &STANDARD.encode("hooks:s3cret")] {
        assert_eq!(verify(malformed), Err(AuthError::MalformedHeader("authorization")), "{malformed}");
    }
    for secret in ["hooks", "hooks:", ":s3cret"] {
        assert!(BasicAuth.decode_secret(secret).is_err(), "{secret}");
    }
}

#[test]
fn settings_that_cannot_be_used_are_refused_by_name() {
    let base = settings(Algorithm::Sha256, Encoding::Hex, "", "{body}", None);
    let refused = |change: &dyn Fn(&mut HmacSettings)| {
        let mut s = base.clone();
        change(&mut s);
        GenericHmac::new(&s).unwrap_err().setting
    };
    assert_eq!(refused(&|s| s.header = "bad header".into()), "header");
    assert_eq!(refused(&|s| s.signed = "{timestamp}".into()), "signed");
    assert_eq!(refused(&|s| s.signed = "{body}{body}".into()), "signed");
    assert_eq!(refused(&|s| s.signed = "{body}{nonce}".into()), "signed");
    assert_eq!(refused(&|s| s.signed = "{body".into()), "signed");
    assert_eq!(refused(&|s| s.signed = "}{body}".into()), "signed");
    assert_eq!(refused(&|s| s.signed = "{timestamp}.{body}".into()), "timestamp_header");
    assert_eq!(refused(&|s| s.timestamp_header = Some("X-Ts".into())), "timestamp_header");
    assert_eq!(refused(&|s| s.signed = "{header:X-Acme-Signature}{body}".into()), "header");
    assert_eq!(refused(&|s| s.prefix = "sha 256=".into()), "prefix");
    assert_eq!(Algorithm::from_name("md5").unwrap_err().setting, "algorithm");
    assert_eq!(Encoding::from_name("HEX").unwrap_err().setting, "encoding");
    let braces = Template::parse("{{{body}}}").unwrap();
    assert_eq!(braces.parts(), [Part::Literal("{".into()), Part::Body, Part::Literal("}".into())]);
    assert_eq!(GenericHmac::new(&base).unwrap().settings(), HmacSettings { header: "x-acme-signature".into(), ..base });
}

#[test]
fn configured_header_names_are_interned_once() {
    let (a, b) = (SharedToken::new("X-Same").unwrap(), SharedToken::new("x-same").unwrap());
    assert!(std::ptr::eq(a.header(), b.header()));
    assert!(std::ptr::eq(a.signing_headers(), b.signing_headers()));
}

/// GitHub's scheme as a generic configuration.
fn github_as_hmac() -> GenericHmac {
    let s = HmacSettings {
        algorithm: Algorithm::Sha256,
        encoding: Encoding::Hex,
        header: "X-Hub-Signature-256".into(),
        prefix: "sha256=".into(),
        signed: "{body}".into(),
        ..HmacSettings::new(Algorithm::Sha256, Encoding::Hex, "", "", "")
    };
    GenericHmac::new(&s).unwrap()
}

#[test]
fn githubs_scheme_equals_its_generic_configuration() {
    let generic = github_as_hmac();
    let (keys, secret) =
        (secrets(&["It's a Secret to Everybody"]), Secret::new(b"It's a Secret to Everybody".to_vec()));
    let body: &[u8] = b"Hello, World!";
    let good = github::sign(&secret, body);
    let digest = &good["sha256=".len()..];
    let signatures = [
        good.clone(),
        github::sign(&Secret::new(b"another".to_vec()), body),
        format!("sha256={}", digest.to_uppercase()),
        digest.to_owned(),
        format!("sha1={digest}"),
        format!("sha256={}", &digest[..63]),
        format!("sha256={digest}0"),
        format!("sha256= {digest}"),
        format!("sha256={}", STANDARD.encode(hex::decode(digest).unwrap())),
    ];
    let bodies: [&[u8]; 3] = [body, b"Hello, World?", b""];
    // The delivery header is GitHub's identity, not its signature: present in every case.
    for signature in &signatures {
        for sent_body in bodies {
            let sent = headers(&[("x-hub-signature-256", signature), ("x-github-delivery", "d-1")]);
            let delivery = RawDelivery { headers: &sent, body: sent_body };
            let (coded, configured) = (GitHub.verify(&keys, delivery, NOW), generic.verify(&keys, delivery, NOW));
            assert_eq!(coded.is_ok(), configured.is_ok(), "{signature} {sent_body:?}: {coded:?} {configured:?}");
            assert_eq!(coded.err().map(|e| e.reason()), configured.err().map(|e| e.reason()), "{signature}");
        }
    }
    let unsigned = headers(&[("x-github-delivery", "d-1")]);
    let delivery = RawDelivery { headers: &unsigned, body };
    assert_eq!(GitHub.verify(&keys, delivery, NOW).err(), generic.verify(&keys, delivery, NOW).err());
    let message = Outgoing { id: "d-1", attempt: 1, timestamp: NOW, body };
    assert_eq!(GitHub.signature(&secret, &message), generic.signature(&secret, &message), "they sign alike too");
}

/// Stripe's header as pairs: `t=…,v1=…` over `{timestamp}.{body}`.
fn stripe_as_pairs() -> GenericHmac {
    let s = HmacSettings {
        pairs: Some(PairsSettings { separator: ',', timestamp: Some("t".into()), signature: "v1".into() }),
        timestamp_header: None,
        ..HmacSettings::new(Algorithm::Sha256, Encoding::Hex, "Stripe-Signature", "", "{timestamp}.{body}")
    };
    GenericHmac::new(&s).unwrap()
}

#[test]
fn pairs_read_the_timestamp_and_any_of_several_signatures_as_stripe_signs_them() {
    let stripe = crate::scheme::lookup("stripe").unwrap();
    let key = Secret::new(b"whsec_pairs".to_vec());
    let signer = Signer::new(stripe, key.clone()).unwrap();
    let message = Outgoing { id: "evt_1", attempt: 1, timestamp: NOW, body: BODY };
    let (_, value) = signer.headers(&message).pop().unwrap();
    let secrets = SecretSet::new(vec![key.clone()]).unwrap();
    let pairs = stripe_as_pairs();
    let sent = headers(&[("stripe-signature", &value)]);
    assert!(pairs.verify(&secrets, RawDelivery { headers: &sent, body: BODY }, NOW).is_ok());
    assert_eq!(pairs.signature(&key, &message).unwrap().1, value, "signs as Stripe does");
    let rotated = format!("v1={},{value}, v0=ignored,x=y", "ab".repeat(32));
    let sent = headers(&[("stripe-signature", &rotated)]);
    assert!(pairs.verify(&secrets, RawDelivery { headers: &sent, body: BODY }, NOW).is_ok(), "any v1 matches");
    for bad in ["v1=00", "t=1,t=2,v1=00", "garbage", &format!("t=1700000000,v1={}", "ab".repeat(32))] {
        let sent = headers(&[("stripe-signature", bad)]);
        assert!(pairs.verify(&secrets, RawDelivery { headers: &sent, body: BODY }, NOW).is_err(), "{bad}");
    }
    let stale = headers(&[("stripe-signature", &value)]);
    let later = UnixTime(NOW.0 + 301);
    assert_eq!(
        pairs.verify(&secrets, RawDelivery { headers: &stale, body: BODY }, later),
        Err(AuthError::TimestampOutOfTolerance { tolerance_secs: 300 })
    );
}

#[test]
fn millisecond_timestamps_and_base64_keys() {
    let s = HmacSettings {
        timestamp_header: Some("X-Ts".into()),
        timestamp_unit: TimestampUnit::Milliseconds,
        key: KeyEncoding::Base64,
        ..HmacSettings::new(Algorithm::Sha256, Encoding::Base64, "X-Sig", "", "{body}{timestamp}")
    };
    let scheme = GenericHmac::new(&s).unwrap();
    let key = scheme.decode_secret("a2V5LWJ5dGVz").unwrap();
    assert_eq!(key.expose(), b"key-bytes");
    assert!(scheme.decode_secret("not base64!").is_err());
    let message = Outgoing { id: "evt_1", attempt: 1, timestamp: NOW, body: BODY };
    let signer = Signer::new(Box::leak(Box::new(scheme.clone())), key.clone()).unwrap();
    let sent: Vec<(String, String)> = signer.headers(&message).into_iter().map(|(n, v)| (n.to_owned(), v)).collect();
    assert!(sent.contains(&("x-ts".to_owned(), "1700000000000".to_owned())), "{sent:?}");
    // python3 -c 'import hmac,hashlib,base64; print(base64.b64encode(hmac.new(b"key-bytes",
    //   b"{\"id\":\"evt_1\"}1700000000000", hashlib.sha256).digest()).decode())'
    let expected = Algorithm::Sha256.mac(b"key-bytes", &[BODY, b"1700000000000"]);
    assert!(sent.contains(&("x-sig".to_owned(), STANDARD.encode(expected))), "{sent:?}");
    let pairs: Vec<(&str, &str)> = sent.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let secrets = SecretSet::new(vec![key]).unwrap();
    let delivery = headers(&pairs);
    assert!(scheme.verify(&secrets, RawDelivery { headers: &delivery, body: BODY }, UnixTime(NOW.0 + 299)).is_ok());
    assert!(scheme.verify(&secrets, RawDelivery { headers: &delivery, body: BODY }, UnixTime(NOW.0 + 301)).is_err());
}

#[test]
fn a_base64url_tag_among_pairs_with_a_millisecond_timestamp_verifies_a_python_vector() {
    // python3 -c 'import hmac,hashlib,base64; print(base64.urlsafe_b64encode(hmac.new(b"acme-secret",
    //   b"1700000000000." + b"{\"id\":\"evt_1\"}", hashlib.sha256).digest()).decode().rstrip("="))'
    // (Sanity's shape: its webhook toolkit writes the tag URL-safe and unpadded.)
    let s = HmacSettings {
        pairs: Some(PairsSettings { separator: ',', timestamp: Some("t".into()), signature: "v1".into() }),
        timestamp_unit: TimestampUnit::Milliseconds,
        ..HmacSettings::new(Algorithm::Sha256, Encoding::Base64Url, "X-Acme-Signature", "", "{timestamp}.{body}")
    };
    let scheme: &'static GenericHmac = Box::leak(Box::new(GenericHmac::new(&s).unwrap()));
    assert_eq!(Encoding::from_name("base64url").unwrap(), Encoding::Base64Url);
    let verify = |value: &str| {
        let sent = headers(&[("x-acme-signature", value)]);
        scheme.verify(&secrets(&["acme-secret"]), RawDelivery { headers: &sent, body: BODY }, NOW)
    };
    let verified = verify("t=1700000000000,v1=J7K6Az6zch4Gu0_vwVsENTzQEU6NLx1LBrMyP3jtp1g");
    assert_eq!(verified, Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: Some(NOW) }));
    // Padded, or in the standard alphabet, it is not the tag as written.
    let malformed = Err(AuthError::MalformedHeader("x-acme-signature"));
    assert_eq!(verify("t=1700000000000,v1=J7K6Az6zch4Gu0_vwVsENTzQEU6NLx1LBrMyP3jtp1g="), malformed);
    assert_eq!(verify("t=1700000000000,v1=J7K6Az6zch4Gu0/vwVsENTzQEU6NLx1LBrMyP3jtp1g"), malformed);
    // What the scheme signs is what Sanity's toolkit writes.
    let signer = Signer::new(scheme, Secret::new(b"acme-secret".to_vec())).unwrap();
    let sent = signer.headers(&Outgoing { id: "evt_1", attempt: 1, timestamp: NOW, body: BODY });
    let tag = "t=1700000000000,v1=J7K6Az6zch4Gu0_vwVsENTzQEU6NLx1LBrMyP3jtp1g";
    assert!(sent.iter().any(|(name, value)| *name == "x-acme-signature" && value == tag), "{sent:?}");
}
