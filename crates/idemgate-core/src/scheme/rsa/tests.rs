#![allow(clippy::unwrap_used)]

use base64::{Engine, engine::general_purpose::STANDARD};
use http::{HeaderMap, HeaderName, HeaderValue};

use super::*;
use crate::scheme::Signer;

// A 2048-bit key made, and the signatures below computed, with Python's `cryptography`:
//   key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
//   key.sign(BODY, padding.PKCS1v15(), hashes.SHA512())                      -> SIG512 (base64)
//   key.sign(b"1700000000." + BODY, padding.PKCS1v15(), hashes.SHA256())     -> SIG256 (hex)
const PUBLIC: &str = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAqeyzAGRlDrHuRokZlx6G\nerOuo0CXlWAScbPgW9Hk4DuiYG3d022NFmq4BtOXff0Hyhr1SbaushilXDjh88L8\n7ymBoqR/EFxv1UZsFctUT0jEzT2HdKo9U1KeEsEFDj5IQ9u3LWbrJ2jhQcWwyneJ\nbLVssb5QfCZseGA1kpXgLC3356pCMx4on6q4a3QYQrL7d+BdAbw84naW+WZaO0vH\nIWxAcacvqWjZG4Z3C6Fjhn68SKGJ/sa5GMfGhEkzoc6RYb9niIXKlui2bxurgowK\nLXbWMTe+o/8NQrxoqTDRxMbofaHbusb3lABFoMQOhjcF2JP5mSLlO8hxTRYM8DFn\nSwIDAQAB\n-----END PUBLIC KEY-----\n";
const PRIVATE_DER_B64: &str = "MIIEvwIBADANBgkqhkiG9w0BAQEFAASCBKkwggSlAgEAAoIBAQCp7LMAZGUOse5GiRmXHoZ6s66jQJeVYBJxs+Bb0eTgO6Jgbd3TbY0WargG05d9/QfKGvVJtq6yGKVcOOHzwvzvKYGipH8QXG/VRmwVy1RPSMTNPYd0qj1TUp4SwQUOPkhD27ctZusnaOFBxbDKd4lstWyxvlB8Jmx4YDWSleAsLffnqkIzHiifqrhrdBhCsvt34F0BvDzidpb5Zlo7S8chbEBxpy+paNkbhncLoWOGfrxIoYn+xrkYx8aESTOhzpFhv2eIhcqW6LZvG6uCjAotdtYxN76j/w1CvGipMNHExuh9odu6xveUAEWgxA6GNwXYk/mZIuU7yHFNFgzwMWdLAgMBAAECggEAPqO57NgVhNBEtQ3POC0Rh+P66cVi27bZtb6IY3DBfYOePQvjLRCCZRQcGLAhdVk0aOV9LJpCVfbN5mw1pyVnFkbnuewHxyE8PJPEPliBEOUTX1FiQLiM+M1I5kLvOSvuec1h/kOlRhbciuF0ZX6hU0ih8/fjNZD4hXt55DqJs9733hmGNl0NZ+sU0zyarG/9nUpxL4Rx93WmTL7Z6B6FDK/BG22y3KP1iej62kYUO77FU6KIKaGmfV1XpeZiTG2ndtziUwePEeWDDt0xyYvp89mML9XsXOPn6JCwpfTJv9HIEfE/EJnUSJZqOfN+JEWlPKKtvM4J9wU63nzGazq/uQKBgQDjacb6iOZr80NFptQstBSHzJW4bd+8LwWRi0TzuQ6ldaayrFdcRz/QFAU/rg4Fa3K2hGuyamQPFbP0EjVcY3kgyTWEEpRsYxwk+ewSRq4Z/Sv72xx9kOMPbqTMPwhZDVLQCpYAR4Gk/a9C1GeHesSnEkqY5yeJKPZsJchfANfUbQKBgQC/SOwqxQC2RgQRGNn38aV/eHhnakuZ/ucp65SWco0vn9Tg4zInDK41sd6FSgwOU6SD907XYGawges8ygcfeJKKSWv2TVlZm/d+tWiO6meMmwZ5NzdzBIwE/Jie5eNtmDA0gwMHwXaWOFGCzLmFZ534Ilw22vM+xg66e7VCyJCnlwKBgQDRRohcChux/91KfaoHsXirN7QYUtRwAv2m4HkFqKk3zrsm9b43J0IsJCBoZ65zglvAZsANIicOUrSVySPd75SKfV+IOOjpjZNa27tJXk3dkMQnM45WZzzs+K8jXmY6PS6WUQeVHjjKMsJUR882N948uXJ4n1AcwttyzppEAyybSQKBgQC2jVCeLK7WRZHCA1aZ8ys/sOgvwdju2b8hWavPvPkTF1VhXlJRxB9KLTsxN46z6Y1bSB0dHOpDz2mB9UjA9x/bC+EWCZGZHGkhqt1jbz9th9Gww0qO4SsD41GAa+MVh6WRp+qvbynOiWb5DoqLT20KDzi0PVbhdME/papCVwj+dwKBgQCtrNGaZ1H/NYc8f5iqw5uhu73zEjqszoyl6k6nM3tih4BhXIcR4u62RGN8tpofR9QisC+ucJeWxu/y9Lq2rKNuvbmjiPIrU//7Ir7+YaIkixQ9eysFkBKUrCa6wuGrobAgjS0YUkrmW7doShZWXGlCVadl5QnfngqQIQPiFGngFw==";
const SIG512: &str = "JAuLT3gOhFFouTEkIJftoBG8c/CJW1Ok+nW9ARIDzmB6PHx6EQ6ns1gjxT90tIzCCU1Ol3SGYAo4WXF0K17y/5Vy8AvNLxAS2VVXaGo8hZoUF5YU8FquHyRv6IkO5T1kvJ7qqRJFnpUd0rw/5Wrg5jMH+ZJYFsrRPeTv3gWpg4QLz8na7NTQ5eYiiQi0ZV/o1BlzFzKiP5UjqD1EPZmXUbiRZF9/kK8ShCiuSg//NPZG3mxGRXqIfYal8YnBPy2k75BNkpdtLE4arWTBZjU54pKBJfVmzcoY0qnkShqoMzdi1DutdIrkZW6/OfT/zZ8AxVIYSaRiDH/FedXS5VUlww==";
const SIG256: &str = "4741f26a5448ffc44ddc418204af7a3c510ebfefed5ce810fcd63a8f81302551b54ad991e92dfad3b9ce2a143504c665937e040eaaeff005abb408aae5b31de127e03ad5ddbfa6f9a6ea1d61288ee537d137c94e410e27fe06243f608251ea6e107b1e8d99661523273c2bac31f8b2f0730a1c53c0c3df3dddf7ac2aef065d9b9b528fc33410b2b5e69312043e8c53da12716aa701a0ec521b08437b747398728e32b11a94cbfe8dd5625ba3939d068d0c412b9a52a3c3c66ce44302cc8fd1fe084e391ea34ea1fd799ae42b923189e815e7fcd6736a337ca496d90c4848bddc06757ac7b5ec6924e5888340399c9b7333885ab1807113234002ba3570853c69";
const SMALL: &str = "-----BEGIN PUBLIC KEY-----\nMIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCwFM4T6+s3iSynxApgNb6hQfkB\nYGzBg3J3ttIMJJPXaLy/uu6wdFHcf+r5oBndODy+TRN0BYH0YuNVK/bJyulxJmeS\nTLIEZx5ZxU+GsZqpVr5uh8d64x6jFkZ2of6PCmecDIeTJx4417zsWNfWSVjkeJII\nZhIw3GlrHUwuUm0HOQIDAQAB\n-----END PUBLIC KEY-----\n";
const BODY: &[u8] = br#"{"id":"evt_1","type":"transaction.created"}"#;
const NOW: UnixTime = UnixTime(1_700_000_000);

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    pairs.iter().map(|(n, v)| (HeaderName::try_from(*n).unwrap(), HeaderValue::from_str(v).unwrap())).collect()
}

fn scheme(algorithm: RsaHash, encoding: Encoding, signed: &str, timestamp: Option<&str>) -> ConfiguredRsa {
    ConfiguredRsa::new(&RsaSettings {
        algorithm,
        encoding,
        header: "X-Provider-Signature".into(),
        prefix: String::new(),
        signed: signed.into(),
        timestamp_header: timestamp.map(str::to_owned),
    })
    .unwrap()
}

#[test]
fn a_signature_made_by_another_implementation_verifies_and_a_changed_byte_does_not() {
    let rsa = scheme(RsaHash::Sha512, Encoding::Base64, "{body}", None);
    let secrets = SecretSet::new(vec![rsa.decode_secret(PUBLIC).unwrap()]).unwrap();
    let sent = headers(&[("x-provider-signature", SIG512)]);
    let verified = rsa.verify(&secrets, RawDelivery { headers: &sent, body: BODY }, NOW);
    assert_eq!(verified, Ok(VerifiedDelivery { delivery_id: None, event_identity: None, timestamp: None }));
    let mut changed = BODY.to_vec();
    changed[8] ^= 1;
    let tampered = rsa.verify(&secrets, RawDelivery { headers: &sent, body: &changed }, NOW);
    assert_eq!(tampered, Err(AuthError::SignatureMismatch));
    let sha256 = scheme(RsaHash::Sha256, Encoding::Base64, "{body}", None);
    let other = sha256.verify(&secrets, RawDelivery { headers: &sent, body: BODY }, NOW);
    assert_eq!(other, Err(AuthError::SignatureMismatch), "the digest is part of the signature");
}

#[test]
fn a_timestamped_template_in_hex_verifies_within_its_tolerance() {
    let rsa = scheme(RsaHash::Sha256, Encoding::Hex, "{timestamp}.{body}", Some("X-Provider-Timestamp"));
    let secrets = SecretSet::new(vec![rsa.decode_secret(PUBLIC).unwrap()]).unwrap();
    let sent = headers(&[("x-provider-signature", SIG256), ("x-provider-timestamp", "1700000000")]);
    assert!(rsa.verify(&secrets, RawDelivery { headers: &sent, body: BODY }, NOW).is_ok());
    let late = rsa.verify(&secrets, RawDelivery { headers: &sent, body: BODY }, UnixTime(NOW.0 + 301));
    assert_eq!(late, Err(AuthError::TimestampOutOfTolerance { tolerance_secs: 300 }));
    let moved = headers(&[("x-provider-signature", SIG256), ("x-provider-timestamp", "1700000001")]);
    let moved = rsa.verify(&secrets, RawDelivery { headers: &moved, body: BODY }, NOW);
    assert_eq!(moved, Err(AuthError::SignatureMismatch));
}

#[test]
fn it_signs_with_the_private_key_what_it_verifies_with_the_public_one() {
    let rsa: &'static ConfiguredRsa = Box::leak(Box::new(scheme(RsaHash::Sha512, Encoding::Base64, "{body}", None)));
    let private = Secret::new(STANDARD.decode(PRIVATE_DER_B64).unwrap());
    let signer = Signer::new(rsa, private).unwrap();
    let message = Outgoing { id: "evt_1", attempt: 1, timestamp: NOW, body: BODY };
    let sent = signer.headers(&message);
    assert_eq!(sent, [("x-provider-signature", SIG512.to_owned())], "PKCS #1 v1.5 is deterministic");
    assert!(!rsa.secret_signs());
    assert!(Signer::new(rsa, rsa.decode_secret(PUBLIC).unwrap()).is_err(), "a public key cannot sign");
}

#[test]
fn keys_and_signatures_that_are_not_what_they_should_be_are_refused_without_echoing_them() {
    let rsa = scheme(RsaHash::Sha512, Encoding::Base64, "{body}", None);
    for text in ["", "not a key", SMALL, &PUBLIC.replace("MII", "MIJ")] {
        let err = rsa.decode_secret(text).unwrap_err().to_string();
        assert!(!err.contains("MII") && !err.contains("not a key"), "{err}");
    }
    assert!(rsa.decode_secret(SMALL).unwrap_err().to_string().contains("2048"));
    let secrets = SecretSet::new(vec![rsa.decode_secret(PUBLIC).unwrap()]).unwrap();
    for bad in ["!!", "AAAA", &"A".repeat(4000)] {
        let sent = headers(&[("x-provider-signature", bad)]);
        let refused = rsa.verify(&secrets, RawDelivery { headers: &sent, body: BODY }, NOW);
        assert!(matches!(refused, Err(AuthError::MalformedHeader(_) | AuthError::SignatureMismatch)), "{bad}");
    }
    let missing = rsa.verify(&secrets, RawDelivery { headers: &HeaderMap::new(), body: BODY }, NOW);
    assert_eq!(missing, Err(AuthError::MissingHeader("x-provider-signature")));
}
