#![allow(clippy::unwrap_used)]

use http::{HeaderMap, HeaderValue};

use super::*;

// Signatures made by Plivo's official SDK (`plivo==4.63.0` on PyPI,
// `plivo.utils.signature_v3`: `get_signature_v3(token, construct_post_url(url, params), nonce)`,
// each also accepted by its `validate_v3_signature`) for these URLs, bodies and nonces.
const TOKEN: &str = "MAXXXXXXXXXXXXXXXXXX-test-token";
const URL: &str = "https://example.com/hooks/plivo";
const HANGUP: &[u8] =
    b"CallUUID=c8d3c2e6-3e3a-11ee-be56-0242ac120002&From=14155550100&To=14155550111&Event=Hangup&Duration=12";
const SDK: &[(&str, &[u8], &str, &str)] = &[
    (URL, HANGUP, "05429567804466091622", "cxFue+2To6nr4QjRwv144eJUWIcfdJ6dnXDH70hIFus="),
    (
        "https://example.com/hooks/plivo?b=2&a=1&a=0",
        b"To=14155550111&From=14155550100",
        "123",
        "GCsdI9zNqfMs0uJJHdVEeIFROg1MF7PckiRInBCwges=",
    ),
    ("https://example.com/hooks/plivo?b=2&a=1", b"", "77", "MmRZ/4oOV7DmeTJaNC/BEwYA40U+Zibtvk8ayEktTWc="),
    (URL, b"", "77", "Yxls+Tk8jyb/SGy6o2NjmCAwe9TXl6Y6F8g5svvQxSc="),
    (URL, b"Text=hello+w%C3%B6rld&Units=1", "9", "ta1jYIE8zBXjuUXG6rGoHPAX8yNnsBU8doaRAS7UAxg="),
];
const NOW: UnixTime = UnixTime(1_700_000_000);

fn secret(text: &str) -> Secret {
    Plivo::DEFAULT.decode_secret(text).unwrap()
}

fn headers(nonce: &str, signature: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(NONCE_HEADER, HeaderValue::from_str(nonce).unwrap());
    headers.insert(SIGNATURE_HEADER, HeaderValue::from_str(signature).unwrap());
    headers
}

fn verify(url: &str, secrets: &[Secret], headers: &HeaderMap, body: &[u8]) -> Result<VerifiedDelivery, AuthError> {
    let scheme = Plivo::DEFAULT.with_signed_url(url).unwrap();
    scheme.verify(&SecretSet::new(secrets.to_vec()).unwrap(), RawDelivery { headers, body }, NOW)
}

#[test]
fn the_sdks_signatures_are_made_and_accepted() {
    for (url, body, nonce, signature) in SDK {
        assert_eq!(sign(&secret(TOKEN), url, body, nonce).as_deref(), Some(*signature), "{url}");
        let verified = verify(url, &[secret(TOKEN)], &headers(nonce, signature), body);
        assert_eq!(verified, Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: None }));
    }
}

#[test]
fn a_changed_byte_url_nonce_or_token_is_refused() {
    let (url, body, nonce, signature) = SDK[0];
    let mut changed = body.to_vec();
    *changed.last_mut().unwrap() = b'3';
    let refused = Err(AuthError::SignatureMismatch);
    assert_eq!(verify(url, &[secret(TOKEN)], &headers(nonce, signature), &changed), refused);
    assert_eq!(verify("https://example.com/hooks/other", &[secret(TOKEN)], &headers(nonce, signature), body), refused);
    assert_eq!(verify(url, &[secret(TOKEN)], &headers("05429567804466091623", signature), body), refused);
    assert_eq!(verify(url, &[secret("another-token")], &headers(nonce, signature), body), refused);
}

#[test]
fn any_of_several_signatures_accepts_and_any_token_of_the_set() {
    let (url, body, nonce, signature) = SDK[0];
    let other = STANDARD.encode([9u8; 32]);
    let both = format!("{other},{signature}");
    assert!(verify(url, &[secret(TOKEN)], &headers(nonce, &both), body).is_ok());
    assert!(verify(url, &[secret("old-token"), secret(TOKEN)], &headers(nonce, signature), body).is_ok());
}

#[test]
fn malformed_headers_and_bodies_are_named() {
    let (url, body, nonce, signature) = SDK[0];
    let mut missing = headers(nonce, signature);
    missing.remove(NONCE_HEADER);
    assert_eq!(verify(url, &[secret(TOKEN)], &missing, body), Err(AuthError::MissingHeader(NONCE_HEADER)));
    for bad in ["not base64!", "AAAA", &[signature; MAX_SIGNATURES + 1].join(",")] {
        let result = verify(url, &[secret(TOKEN)], &headers(nonce, bad), body);
        assert_eq!(result, Err(AuthError::MalformedHeader(SIGNATURE_HEADER)), "{bad}");
    }
    // A key given twice is not a form Plivo sends, nor one this parser reads one way.
    let twice = b"To=1&To=2";
    let signature = sign(&secret(TOKEN), url, b"To=1", nonce).unwrap();
    assert_eq!(verify(url, &[secret(TOKEN)], &headers(nonce, &signature), twice), Err(AuthError::SignatureMismatch));
}

#[test]
fn a_query_is_read_as_the_sdk_reads_it() {
    assert_eq!(sorted_query("b=2&a=1&a=0&&c&d=%41+%zz"), "a=0&a=1&b=2&c=&d=A %zz");
    assert_eq!(signed_url("https://h/p?b=1#frag", true), "https://h/p?b=1.");
    assert_eq!(signed_url("https://h/p", true), "https://h/p?");
    assert_eq!(signed_url("https://h/p", false), "https://h/p");
    assert_eq!(signed_url("https://h/p?x=%", false), "https://h/p?x=%");
}

#[test]
fn what_a_sender_signs_verifies() {
    let scheme = Plivo::DEFAULT.with_signed_url(URL).unwrap();
    let scheme: &'static dyn Scheme = &**Box::leak(Box::new(scheme));
    let signer = super::super::Signer::new(scheme, secret(TOKEN)).unwrap();
    let message = Outgoing { id: "msg", attempt: 2, timestamp: NOW, body: HANGUP };
    let sent: HeaderMap = signer
        .headers(&message)
        .into_iter()
        .map(|(name, value)| (http::HeaderName::from_static(name), HeaderValue::from_str(&value).unwrap()))
        .collect();
    assert_eq!(sent.get(NONCE_HEADER).unwrap().len(), 20);
    assert!(verify(URL, &[secret(TOKEN)], &sent, HANGUP).is_ok());
}

#[test]
fn the_main_accounts_signature_is_accepted_beside_the_subaccounts() {
    // The same hangup, signed by the SDK with a main account's token.
    const MAIN: &str = "MAIN-ACCOUNT-token-000000000";
    const MAIN_SIGNATURE: &str = "kCZrUW91O3OmPFUafQQT+kzSMxGRjhThPE6Qm/s5h8g=";
    let (url, body, nonce, signature) = SDK[0];
    let mut both = headers(nonce, signature);
    both.insert(MAIN_ACCOUNT_HEADER, HeaderValue::from_static(MAIN_SIGNATURE));
    assert!(verify(url, &[secret(MAIN)], &both, body).is_ok());
    assert!(verify(url, &[secret(TOKEN)], &both, body).is_ok());
    assert_eq!(verify(url, &[secret(MAIN)], &headers(nonce, signature), body), Err(AuthError::SignatureMismatch));
    both.insert(MAIN_ACCOUNT_HEADER, HeaderValue::from_static("AAAA"));
    assert_eq!(verify(url, &[secret(TOKEN)], &both, body), Err(AuthError::MalformedHeader(MAIN_ACCOUNT_HEADER)));
}
