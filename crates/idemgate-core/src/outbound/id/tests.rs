//! Vectors from `svix/rust-ksuid` (`src/lib.rs` doc tests) and `svix/python-ksuid`'s README
//! (the bytes of `1srOrx2ZWZBpBUvZwXKQmoEYga2`), and Segment's maximum KSUID.

use proptest::prelude::*;

use super::*;

/// `1srOrx2ZWZBpBUvZwXKQmoEYga2` as python-ksuid prints its bytes, and its time.
const SEGMENT_TEXT: &str = "1srOrx2ZWZBpBUvZwXKQmoEYga2";
const SEGMENT_BYTES: [u8; 20] = [
    0x0d, 0x35, 0xc4, 0x33, 0xe1, 0x93, 0x3e, 0x37, 0xf2, 0x75, 0x70, 0x87, 0x63, 0xad, 0xc7, 0x74, 0x5a, 0xf5, 0xe7,
    0xf2,
];
const MAX_TEXT: &str = "aWgEPTl1tmebfsQzFP4bxwgy80V";
const AT: i64 = 1_621_627_443_900;

fn ksuid(text: &str) -> Ksuid {
    Ksuid::from_base62(text).unwrap_or_else(|_| unreachable!())
}

#[test]
fn the_codec_reproduces_the_published_ksuids() {
    assert_eq!(Ksuid::from_bytes(SEGMENT_BYTES).to_base62(), SEGMENT_TEXT);
    assert_eq!(ksuid(SEGMENT_TEXT).bytes(), &SEGMENT_BYTES);
    // rust-ksuid's `to_base62` doc test: raw time 1643290698, a 128-bit payload.
    let mut bytes = [0; 20];
    bytes[..4].copy_from_slice(&1_643_290_698u32.to_be_bytes());
    bytes[4..].copy_from_slice(&45_419_194_335_837_378_647_185_401_984_346_151_808u128.to_be_bytes());
    assert_eq!(Ksuid::from_bytes(bytes).to_base62(), "DyU8bFOBPZ4LjvsfN0qywt2LjmK");
    assert_eq!(ksuid("24CtFf3hyVZHdSkQy0nMBa1OjOA").to_base62(), "24CtFf3hyVZHdSkQy0nMBa1OjOA");
    assert_eq!(Ksuid::from_bytes([0xFF; 20]).to_base62(), MAX_TEXT);
    assert_eq!(Ksuid::from_bytes([0; 20]).to_base62(), "0".repeat(27));
}

#[test]
fn the_time_is_read_in_svix_ksuid_ms_layout() {
    // python-ksuid: the Ksuid of 1621627443 s; as a KsuidMs its fifth byte 0xe1 is 225 steps of 4 ms.
    assert_eq!(ksuid(SEGMENT_TEXT).millis(), AT);
    let id = ApplicationId::parse("app_1srOrx2ZWZBpBUvZwXKQmoEYga2").unwrap_or_else(|_| unreachable!());
    assert_eq!(id.created_at_ms(), AT);
    // rust-ksuid: KsuidMs::from_millis(1_621_627_443_000) keeps the millisecond.
    assert_eq!(Ksuid::new(1_621_627_443_000, [7; PAYLOAD_LEN]).map(|k| k.millis()), Ok(1_621_627_443_000));
    // 4 ms steps: 1776798415_513 reads back as _512 (rust-ksuid's systemtime test uses _512).
    assert_eq!(Ksuid::new(1_776_798_415_513, [0; PAYLOAD_LEN]).map(|k| k.millis()), Ok(1_776_798_415_512));
}

#[test]
fn text_beyond_160_bits_or_of_another_shape_is_refused() {
    assert_eq!(Ksuid::from_base62("aWgEPTl1tmebfsQzFP4bxwgy80W"), Err(IdError::Malformed));
    assert_eq!(Ksuid::from_base62("zzzzzzzzzzzzzzzzzzzzzzzzzzz"), Err(IdError::Malformed));
    assert_eq!(Ksuid::from_base62(&SEGMENT_TEXT[1..]), Err(IdError::Malformed));
    assert_eq!(Ksuid::from_base62(&format!("{SEGMENT_TEXT}0")), Err(IdError::Malformed));
    assert_eq!(Ksuid::from_base62("1srOrx2ZWZBpBUvZwXKQmoEYga-"), Err(IdError::Malformed));
    assert!(Ksuid::from_base62(MAX_TEXT).is_ok());
}

#[test]
fn times_outside_the_ksuid_range_are_refused() {
    assert_eq!(Ksuid::new(MIN_MILLIS - 1, [0; PAYLOAD_LEN]), Err(IdError::TimeOutOfRange));
    assert_eq!(Ksuid::new(MAX_MILLIS + 1, [0; PAYLOAD_LEN]), Err(IdError::TimeOutOfRange));
    assert_eq!(Ksuid::new(MIN_MILLIS, [0; PAYLOAD_LEN]).map(|k| k.millis()), Ok(MIN_MILLIS));
    assert_eq!(Ksuid::new(MAX_MILLIS, [0; PAYLOAD_LEN]).map(|k| k.millis()), Ok(MAX_MILLIS - 3));
}

#[test]
fn each_kind_has_its_prefix_and_refuses_another_kinds_id() {
    let random = [42; PAYLOAD_LEN];
    let texts = [
        ApplicationId::generate(AT, random).map(|id| id.to_string()),
        EndpointId::generate(AT, random).map(|id| id.to_string()),
        MessageId::generate(AT, random).map(|id| id.to_string()),
        AttemptId::generate(AT, random).map(|id| id.to_string()),
        TaskId::generate(AT, random).map(|id| id.to_string()),
    ];
    let prefixes = ["app_", "ep_", "msg_", "atmpt_", "qtask_"];
    for (text, prefix) in texts.iter().zip(prefixes) {
        let text = text.as_deref().unwrap_or_default();
        assert!(text.starts_with(prefix) && text.len() == prefix.len() + 27, "{text}");
    }
    let endpoint = texts[1].clone().unwrap_or_default();
    assert_eq!(EndpointId::parse(&endpoint).map(|id| id.to_string()), Ok(endpoint.clone()));
    assert_eq!(ApplicationId::parse(&endpoint), Err(IdError::Prefix { expected: "app_" }));
    assert_eq!(MessageId::parse("msg_"), Err(IdError::Malformed));
    assert!(EndpointId::is_id_text(&endpoint) && !EndpointId::is_id_text("my-endpoint"));
}

#[test]
fn an_attempt_id_carries_its_row_and_its_time() {
    let id = AttemptId::for_row(AT, 123_456_789).unwrap_or_else(|_| unreachable!());
    let again = AttemptId::parse(&id.to_string()).unwrap_or_else(|_| unreachable!());
    assert_eq!((again.row(), again.created_at_ms()), (Some(123_456_789), AT));
    assert_eq!(AttemptId::for_row(AT, -1), Err(IdError::Malformed));
    let random = AttemptId::generate(AT, [9; PAYLOAD_LEN]).unwrap_or_else(|_| unreachable!());
    assert_eq!(random.row(), None);
}

proptest! {
    #[test]
    fn ids_round_trip_and_sort_as_text_by_time(
        a in MIN_MILLIS..MAX_MILLIS, b in MIN_MILLIS..MAX_MILLIS,
        ra in any::<[u8; PAYLOAD_LEN]>(), rb in any::<[u8; PAYLOAD_LEN]>(),
    ) {
        let (x, y) = (MessageId::generate(a, ra), MessageId::generate(b, rb));
        let (Ok(x), Ok(y)) = (x, y) else { return Err(TestCaseError::fail("in range")) };
        prop_assert_eq!(MessageId::parse(&x.to_string()), Ok(x));
        prop_assert_eq!(x.created_at_ms(), a / 1000 * 1000 + (a % 1000) / 4 * 4);
        if x.created_at_ms() < y.created_at_ms() {
            prop_assert!(x.to_string() < y.to_string());
            prop_assert!(MessageId::last_at(x.created_at_ms()).map(|l| l.to_string() < y.to_string()) == Ok(true));
        }
        prop_assert_eq!(x.to_string().cmp(&y.to_string()), x.cmp(&y));
        prop_assert!(MessageId::first_at(x.created_at_ms()).is_ok_and(|first| first <= x));
    }
}
