use super::*;

const AT: i64 = 1_700_000_000_000;

fn endpoint(n: u8) -> EndpointId {
    EndpointId::generate(AT, [n; 15]).unwrap_or_else(|_| unreachable!())
}

fn sealed(key: &SecretsKey, secret: &EndpointSecret, seq: i64) -> SealedSecret {
    key.seal(secret, &endpoint(1), seq, [5; NONCE_LEN]).unwrap_or_else(|_| unreachable!())
}

#[test]
fn a_generated_secret_is_whsec_and_base64_of_its_24_bytes() {
    let secret = EndpointSecret::generate([0xAB; GENERATED_SECRET_LEN]);
    let text = secret.reveal();
    assert_eq!(text, format!("whsec_{}", STANDARD.encode([0xAB; 24])));
    // It reads back through the API's rule and the standard-webhooks scheme alike.
    let again = EndpointSecret::parse(&text, Loc::body("secret")).unwrap_or_else(|_| unreachable!());
    assert_eq!(again.secret().expose(), [0xAB; 24]);
}

#[test]
fn a_callers_secret_must_match_svix_pattern_and_decode() {
    let loc = || Loc::body("secret");
    // Svix's spec example, with and without the prefix.
    for text in ["whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD", "C2FVsBQIhrscChlQIMV+b5sSYspob7oD"] {
        assert!(EndpointSecret::parse(text, loc()).is_ok(), "{text}");
    }
    let too_short = STANDARD.encode([1; 23]);
    let too_long = STANDARD.encode([1; 65]);
    for text in ["", "whsec_", "whsec_not-base64-but-long-enough-for-the-pattern", &too_short, &too_long] {
        let err = EndpointSecret::parse(text, loc()).err();
        assert_eq!(err.map(|e| (e.rule, e.loc)), Some((Rule::Secret, loc())), "{text}");
    }
}

#[test]
fn sealing_round_trips_and_never_shows_the_secret() {
    let key = SecretsKey::new([7; KEY_LEN]);
    let secret = EndpointSecret::generate([0x5A; GENERATED_SECRET_LEN]);
    let row = sealed(&key, &secret, 3);
    assert_eq!(row.key_id, key.id());
    assert_eq!(row.sealed.len(), NONCE_LEN + GENERATED_SECRET_LEN + TAG_LEN);
    assert_eq!(&row.sealed[..NONCE_LEN], &[5; NONCE_LEN]);
    assert!(!row.sealed.windows(GENERATED_SECRET_LEN).any(|w| w == [0x5A; GENERATED_SECRET_LEN]));
    let opened = key.open(&row, &endpoint(1), 3).map(|s| s.reveal());
    assert_eq!(opened, Ok(secret.reveal()));
    for shown in [format!("{secret:?}"), format!("{key:?}"), format!("{row:?}")] {
        assert!(!shown.contains(&secret.reveal()[6..]) && !shown.contains("5a5a"), "{shown}");
    }
    assert_eq!(format!("{secret:?}"), "EndpointSecret(Secret(<redacted>))");
}

#[test]
fn a_wrong_key_is_named_and_told_apart_from_a_damaged_row() {
    let key = SecretsKey::new([7; KEY_LEN]);
    let other = SecretsKey::new([8; KEY_LEN]);
    assert_ne!(key.id(), other.id());
    let row = sealed(&key, &EndpointSecret::generate([1; 24]), 1);
    let wrong = other.open(&row, &endpoint(1), 1).err();
    assert_eq!(wrong, Some(SealingError::WrongKey { sealed_with: key.id(), configured: other.id() }));
    assert!(wrong.is_some_and(|e| e.to_string().contains(&key.id().to_string())));
    // The id is the first 8 bytes of SHA-256 of the key.
    assert_eq!(key.id().bytes()[..], Sha256::digest([7; KEY_LEN])[..8]);
}

#[test]
fn a_tampered_or_moved_row_does_not_open() {
    let key = SecretsKey::new([7; KEY_LEN]);
    let row = sealed(&key, &EndpointSecret::generate([1; 24]), 1);
    for index in [0, NONCE_LEN, row.sealed.len() - 1] {
        let mut damaged = row.clone();
        damaged.sealed[index] ^= 1;
        assert_eq!(key.open(&damaged, &endpoint(1), 1).err(), Some(SealingError::Unreadable), "byte {index}");
    }
    let mut short = row.clone();
    short.sealed.truncate(NONCE_LEN + TAG_LEN - 1);
    assert_eq!(key.open(&short, &endpoint(1), 1).err(), Some(SealingError::Unreadable));
    // Copied to another endpoint or another seq: the associated data differs.
    assert_eq!(key.open(&row, &endpoint(2), 1).err(), Some(SealingError::Unreadable));
    assert_eq!(key.open(&row, &endpoint(1), 2).err(), Some(SealingError::Unreadable));
}

#[test]
fn the_key_is_read_from_hex_or_base64_of_32_bytes_only() {
    let id = SecretsKey::new([0xAB; KEY_LEN]).id();
    assert_eq!(SecretsKey::parse(&"ab".repeat(32)).map(|k| k.id()), Ok(id));
    assert_eq!(SecretsKey::parse(&STANDARD.encode([0xAB; 32])).map(|k| k.id()), Ok(id));
    for bad in ["", &"ab".repeat(31), &STANDARD.encode([0xAB; 31]), "not a key"] {
        let err = SecretsKey::parse(bad).err();
        assert!(err.is_some_and(|e| !e.to_string().contains("abab")), "{bad}");
    }
}
