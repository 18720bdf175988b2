#![allow(clippy::unwrap_used)]

use http::{HeaderMap, HeaderName, HeaderValue};

use super::*;

/// Twilio's documented example (webhooks-security): Auth Token `12345`, this URL and these
/// parameters sign to this value.
const DOC_URL: &str = "https://mycompany.com/myapp.php?foo=1&bar=2";
const DOC_BODY: &[u8] =
    b"CallSid=CA1234567890ABCDE&Caller=%2B12349013030&Digits=1234&From=%2B12349013030&To=%2B18005551212";
const DOC_SIGNATURE: &str = "0/KCTR6DLpKmkAf8muzZqo1nDgQ=";
const NOW: UnixTime = UnixTime(1_700_000_000);

fn key() -> Secret {
    Secret::new(b"12345".to_vec())
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    pairs.iter().map(|(name, value)| (HeaderName::from_static(name), HeaderValue::from_str(value).unwrap())).collect()
}

fn verify(scheme: &Twilio, headers: &HeaderMap, body: &[u8]) -> Result<VerifiedDelivery, AuthError> {
    scheme.verify(&SecretSet::new(vec![key()]).unwrap(), RawDelivery { headers, body }, NOW)
}

#[test]
fn the_documented_example_verifies_and_a_changed_byte_does_not() {
    let scheme = Twilio::with_url(DOC_URL);
    let sent = headers(&[(SIGNATURE_HEADER, DOC_SIGNATURE), (IDEMPOTENCY_HEADER, "idem-1")]);
    let verified = verify(&scheme, &sent, DOC_BODY).unwrap();
    assert_eq!(
        verified,
        VerifiedDelivery { delivery_id: Some("idem-1".into()), event_identity: None, timestamp: None }
    );
    let changed = DOC_BODY.to_vec().into_iter().map(|b| if b == b'4' { b'5' } else { b }).collect::<Vec<_>>();
    assert_eq!(verify(&scheme, &sent, &changed), Err(AuthError::SignatureMismatch));
    assert_eq!(
        verify(&Twilio::with_url("https://mycompany.com/other.php"), &sent, DOC_BODY),
        Err(AuthError::SignatureMismatch)
    );
}

#[test]
fn parameters_are_sorted_by_name_whatever_their_order_on_the_wire() {
    let scheme = Twilio::with_url(DOC_URL);
    let sent = headers(&[(SIGNATURE_HEADER, DOC_SIGNATURE)]);
    let reordered =
        b"To=%2B18005551212&Digits=1234&From=%2B12349013030&CallSid=CA1234567890ABCDE&Caller=%2B12349013030";
    assert!(verify(&scheme, &sent, reordered).is_ok());
    // Moving a value to another name keeps the concatenation's multiset but not its order.
    let swapped = b"CallSid=CA1234567890ABCDE&Caller=%2B12349013030&Digits=1234&From=%2B18005551212&To=%2B12349013030";
    assert_eq!(verify(&scheme, &sent, swapped), Err(AuthError::SignatureMismatch));
}

#[test]
fn the_shared_key_header_selects_hmac_sha256() {
    let scheme = Twilio::with_url(DOC_URL);
    // From the `twilio` library's compute_signature(..., "HMAC_SHA256") on the example.
    let sha256 = "Rmm4Vzj+Ky7JGoWXMCsZDZuHDszLr9xvdbvitrDr4/M=";
    assert_eq!(sign_form(&key(), DOC_URL, DOC_BODY, Algorithm::Sha256), sha256);
    let settings = "key=webhooks_sharedkey_1,algorithm=HMAC_SHA256";
    assert!(verify(&scheme, &headers(&[(SIGNATURE_HEADER, sha256), (SETTINGS_HEADER, settings)]), DOC_BODY).is_ok());
    assert_eq!(
        verify(&scheme, &headers(&[(SIGNATURE_HEADER, sha256)]), DOC_BODY),
        Err(AuthError::SignatureMismatch),
        "without the header it is SHA-1"
    );
    let sha1_settings = headers(&[(SIGNATURE_HEADER, DOC_SIGNATURE), (SETTINGS_HEADER, "key=k")]);
    assert!(verify(&scheme, &sha1_settings, DOC_BODY).is_ok(), "no algorithm named is SHA-1");
    let unknown = headers(&[(SIGNATURE_HEADER, DOC_SIGNATURE), (SETTINGS_HEADER, "key=k,algorithm=HMAC_MD5")]);
    assert_eq!(verify(&scheme, &unknown, DOC_BODY), Err(AuthError::MalformedHeader(SETTINGS_HEADER)));
}

#[test]
fn the_url_is_tried_with_and_without_its_port() {
    let body = b"MessageSid=SM1&MessageStatus=delivered";
    let with_port = sign_form(&key(), "https://example.com:443/hooks/twilio", body, Algorithm::Sha1);
    let without = sign_form(&key(), "https://example.com/hooks/twilio", body, Algorithm::Sha1);
    for url in ["https://example.com/hooks/twilio", "https://example.com:443/hooks/twilio"] {
        let scheme = Twilio::with_url(url);
        for signature in [&with_port, &without] {
            assert!(verify(&scheme, &headers(&[(SIGNATURE_HEADER, signature)]), body).is_ok(), "{url}");
        }
    }
    assert_eq!(url_variants("http://127.0.0.1:8080/a?b=1")[1], "http://127.0.0.1/a?b=1");
    assert_eq!(url_variants("http://u@h/a")[1], "http://u@h:80/a");
    assert_eq!(url_variants("https://[::1]/a")[1], "https://[::1]:443/a");
    assert_eq!(url_variants("https://[::1]:8443")[1], "https://[::1]");
}

#[test]
fn a_json_body_is_signed_through_body_sha256_on_the_url() {
    let url = "https://example.com/hooks/twilio";
    let body = br#"{"MessageSid":"SM1"}"#;
    let signed = url_with_body_hash(url, body);
    assert!(signed.starts_with("https://example.com/hooks/twilio?bodySHA256="), "{signed}");
    assert_eq!(url_with_body_hash("https://h/a?x=1", b"")[..20], *"https://h/a?x=1&body");
    let signature = sign_json(&key(), url, body, Algorithm::Sha1);
    let sent = headers(&[(SIGNATURE_HEADER, &signature), ("content-type", "application/json; charset=utf-8")]);
    assert!(verify(&Twilio::with_url(url), &sent, body).is_ok());
    assert_eq!(verify(&Twilio::with_url(url), &sent, br#"{"MessageSid":"SM2"}"#), Err(AuthError::SignatureMismatch));
}

#[test]
fn decoding_keeps_stray_percents_and_counts_a_repeated_pair_once() {
    assert_eq!(decode(b"a+b%2B%zz%4"), b"a b+%zz%4");
    assert_eq!(form_material("u", b"b=2&a=1&&a=1&c"), b"ua1b2c");
}

#[test]
fn refusals_name_the_header() {
    let scheme = Twilio::with_url(DOC_URL);
    assert_eq!(verify(&scheme, &HeaderMap::new(), DOC_BODY), Err(AuthError::MissingHeader(SIGNATURE_HEADER)));
    let garbage = headers(&[(SIGNATURE_HEADER, "not base64!")]);
    assert_eq!(verify(&scheme, &garbage, DOC_BODY), Err(AuthError::MalformedHeader(SIGNATURE_HEADER)));
    let unconfigured = headers(&[(SIGNATURE_HEADER, &sign_form(&key(), "", DOC_BODY, Algorithm::Sha1))]);
    assert_eq!(verify(&Twilio::DEFAULT, &unconfigured, DOC_BODY), Err(AuthError::SignatureMismatch));
}

#[test]
fn the_signer_sends_the_token_and_a_signature_the_verifier_accepts() {
    let scheme = Twilio::with_url("https://example.com/hooks/twilio");
    let message = Outgoing { id: "idem-9", attempt: 2, timestamp: NOW, body: b"MessageSid=SM1&MessageStatus=sent" };
    let mut sent = scheme.envelope(&message);
    sent.extend(scheme.signature(&key(), &message));
    let names: Vec<_> = sent.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, SIGNING_HEADERS);
    let map: HeaderMap =
        sent.into_iter().map(|(n, v)| (HeaderName::from_static(n), HeaderValue::from_str(&v).unwrap())).collect();
    assert_eq!(verify(&scheme, &map, message.body).unwrap().delivery_id.as_deref(), Some("idem-9"));
}
