//! Every rejection from the seed's list: the right status and body, and no change at all.

use serde_json::{Value, json};

use crate::harness::{Counter, Delivery, State, event, exchange, sign, state, temp_db, unix_now};

fn authentication() -> Value {
    json!({"error": "authentication"})
}

fn invalid_json() -> Value {
    json!({"error": "invalid_json"})
}

fn event_contract() -> Value {
    json!({"error": "event_contract"})
}

/// Starts a counter holding one applied event, for checking that rejections change nothing.
fn counter_with_one_event() -> (tempfile::TempDir, Counter, State) {
    let (dir, db) = temp_db();
    let counter = Counter::start(&db);
    assert_eq!(counter.deliver(&event("evt-a", 3)).status(), 200);
    let before = state(&db);
    (dir, counter, before)
}

fn assert_refused(counter: &Counter, before: &State, delivery: &Delivery, status: u16, body: Value, case: &str) {
    let reply = counter.post(delivery);
    assert!(reply.is(status, body.clone()), "{case}: expected {status} {body}, got {reply:?}");
    assert_eq!(&state(&counter.db), before, "{case}: state changed");
}

#[test]
fn authentication_failures_are_401_and_change_nothing() {
    let (_dir, counter, before) = counter_with_one_event();
    let body = event("evt-x", 1);
    let mut wrong = Delivery::signed(body.as_bytes());
    wrong.signature = sign(&wrong.delivery_id, &wrong.timestamp, b"other bytes");
    let mut upper = Delivery::signed(body.as_bytes());
    upper.signature = upper.signature.to_uppercase();
    let mut bad_id = Delivery::signed(body.as_bytes());
    bad_id.delivery_id = "Not_Valid".into();
    bad_id.signature = sign(&bad_id.delivery_id, &bad_id.timestamp, body.as_bytes());
    let cases = [
        ("wrong signature", wrong),
        ("uppercase signature", upper),
        ("malformed delivery id", bad_id),
        // Well outside the 300 s either way: the exact boundary is tested in the scheme's
        // unit tests on a fixed clock, and a slow run must not drift a case across it.
        ("stale timestamp", Delivery::signed_at(body.as_bytes(), unix_now() - 400)),
        ("future timestamp", Delivery::signed_at(body.as_bytes(), unix_now() + 400)),
    ];
    for (case, delivery) in cases {
        assert_refused(&counter, &before, &delivery, 401, authentication(), case);
    }
    let unsigned = crate::harness::post(counter.addr, "/webhook", &[], body.as_bytes());
    assert!(unsigned.is(401, authentication()), "missing headers: {unsigned:?}");
    assert_eq!(state(&counter.db), before);
}

/// The signature is checked on the raw bytes before anything parses them: a body that is
/// not JSON at all, or JSON that breaks the event contract, is refused for its signature
/// (401) when the signature is wrong, and only for its content (400, 422) when it holds.
#[test]
fn a_bad_signature_is_refused_before_the_body_is_parsed() {
    let (_dir, counter, before) = counter_with_one_event();
    for (case, body, status, when_signed) in [
        ("not JSON", &b"{not json"[..], 400, invalid_json()),
        (
            "a duplicate key",
            &br#"{"event_id":"e","event_id":"f","kind":"increment","value":1}"#[..],
            400,
            invalid_json(),
        ),
        ("outside the contract", &br#"{"event_id":"e","kind":"increment","value":0}"#[..], 422, event_contract()),
    ] {
        let mut forged = Delivery::signed(body);
        forged.signature = sign(&forged.delivery_id, &forged.timestamp, b"other bytes");
        assert_refused(&counter, &before, &forged, 401, authentication(), case);
        assert_refused(&counter, &before, &Delivery::signed(body), status, when_signed, case);
    }
}

#[test]
fn a_timestamp_just_inside_the_tolerance_is_accepted() {
    let (_dir, counter, _) = counter_with_one_event();
    let delivery = Delivery::signed_at(event("evt-edge", 1).as_bytes(), unix_now() - 290);
    assert_eq!(counter.post(&delivery).status(), 200);
}

#[test]
fn bodies_that_are_not_strict_json_are_400_and_change_nothing() {
    let (_dir, counter, before) = counter_with_one_event();
    let cases: [(&str, &[u8]); 10] = [
        ("broken json", br#"{"event_id":"evt-x","kind":"increment","value":1"#),
        ("duplicate key", br#"{"event_id":"evt-x","kind":"increment","value":1,"value":2}"#),
        ("invalid utf-8", b"{\"event_id\":\"evt-x\xff\",\"kind\":\"increment\",\"value\":1}"),
        ("NaN", br#"{"event_id":"evt-x","kind":"increment","value":NaN}"#),
        ("Infinity", br#"{"event_id":"evt-x","kind":"increment","value":Infinity}"#),
        ("-Infinity", br#"{"event_id":"evt-x","kind":"increment","value":-Infinity}"#),
        ("overflowing number", br#"{"event_id":"evt-x","kind":"increment","value":1e400}"#),
        ("byte order mark", b"\xef\xbb\xbf{\"event_id\":\"evt-x\",\"kind\":\"increment\",\"value\":1}"),
        ("trailing data", br#"{"event_id":"evt-x","kind":"increment","value":1} {}"#),
        ("empty body", b""),
    ];
    for (case, body) in cases {
        assert_refused(&counter, &before, &Delivery::signed(body), 400, invalid_json(), case);
    }
}

#[test]
fn bodies_that_break_the_event_contract_are_422_and_change_nothing() {
    let (_dir, counter, before) = counter_with_one_event();
    let cases = [
        ("boolean value", r#"{"event_id":"evt-x","kind":"increment","value":true}"#),
        ("string value", r#"{"event_id":"evt-x","kind":"increment","value":"5"}"#),
        ("float value", r#"{"event_id":"evt-x","kind":"increment","value":3.0}"#),
        ("exponent value", r#"{"event_id":"evt-x","kind":"increment","value":1e1}"#),
        ("value zero", r#"{"event_id":"evt-x","kind":"increment","value":0}"#),
        ("value 101", r#"{"event_id":"evt-x","kind":"increment","value":101}"#),
        ("unknown kind", r#"{"event_id":"evt-x","kind":"decrement","value":1}"#),
        ("extra field", r#"{"event_id":"evt-x","kind":"increment","value":1,"tenant":"t"}"#),
        ("missing field", r#"{"event_id":"evt-x","kind":"increment"}"#),
        ("malformed event_id", r#"{"event_id":"EVT-x","kind":"increment","value":1}"#),
        ("long event_id", &format!(r#"{{"event_id":"evt-{}","kind":"increment","value":1}}"#, "a".repeat(41))),
        ("not an object", r#"[{"event_id":"evt-x","kind":"increment","value":1}]"#),
    ];
    for (case, body) in cases {
        assert_refused(&counter, &before, &Delivery::signed(body.as_bytes()), 422, event_contract(), case);
    }
}

#[test]
fn an_8193_byte_body_is_413_by_length_and_by_bytes_read() {
    let (_dir, counter, before) = counter_with_one_event();
    let mut body = event("evt-x", 1);
    body.push_str(&" ".repeat(8193 - body.len()));
    // Declared by Content-Length: refused before it is read, even though it is signed.
    let delivery = Delivery::signed(body.as_bytes());
    assert_refused(&counter, &before, &delivery, 413, json!({"error": "body_size"}), "content-length");
    // Chunked, no length up front: refused once the bytes read pass the limit.
    let mut request =
        String::from("POST /webhook HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n");
    for (name, value) in delivery.headers() {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    for chunk in body.as_bytes().chunks(1000) {
        request.push_str(&format!("{:x}\r\n{}\r\n", chunk.len(), std::str::from_utf8(chunk).unwrap()));
    }
    request.push_str("0\r\n\r\n");
    let reply = exchange(counter.addr, request.as_bytes());
    assert!(reply.is(413, json!({"error": "body_size"})), "chunked: {reply:?}");
    assert_eq!(state(&counter.db), before);
}
