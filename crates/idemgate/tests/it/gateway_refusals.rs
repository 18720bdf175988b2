//! A refused delivery says why, through the real gateway: invalid JSON names the strict
//! parser's reason, a contract refusal names the configured field (its JSON pointer or
//! header), and neither ever echoes a byte of the payload. The answers are compared whole,
//! so nothing else is in them.

use serde_json::{Value, json};

use crate::{
    gateway_harness::{Gateway, Setup, Signer},
    harness::unix_now,
};

const KEY: [u8; 32] = [7; 32];

fn start() -> (Setup, Gateway) {
    let signer = Signer::Standard(KEY.to_vec());
    let setup = Setup::new(&format!(
        "[worker]\nenabled = false\n\
         [sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\nmax_depth = 4\n\
         identity = {{ pointer = \"/data/id\" }}\nevent_type = \"/type\"\nallowed_types = [\"ok.type\"]\n\
         [sources.headed]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\n\
         identity = {{ header = \"x-event-id\" }}\nevent_type_header = \"x-event-type\"\nallowed_types = [\"ok.type\"]\n",
        secret = signer.config_secret()
    ));
    let gateway = setup.start();
    (setup, gateway)
}

fn refused(gateway: &Gateway, route: &str, extra: &[(&str, &str)], body: &[u8]) -> (u16, Value) {
    let mut headers = Signer::Standard(KEY.to_vec()).headers("msg_1", body, unix_now());
    headers.extend(extra.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())));
    let reply = gateway.post(route, &headers, body);
    (reply.status(), reply.body().clone())
}

#[test]
fn invalid_json_is_answered_with_the_parsers_reason() {
    let (_setup, gateway) = start();
    let cases: [(&[u8], &str); 7] = [
        (br#"{"secret":1"#, "syntax"),
        (br#"{"secret":1,"secret":2}"#, "duplicate_key"),
        (b"[[[[[1]]]]]", "too_deep"),
        (b"{\"secret\":\"\xff\"}", "invalid_utf8"),
        (b"\xEF\xBB\xBF{}", "byte_order_mark"),
        (br#"{"secret":1} secret"#, "trailing_data"),
        (br#"{"secret":1e400}"#, "number_out_of_range"),
    ];
    for (body, reason) in cases {
        let answer = refused(&gateway, "hooks", &[], body);
        assert_eq!(
            answer,
            (400, json!({"error": "invalid_json", "reason": reason})),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn a_contract_refusal_names_the_configured_field_and_never_its_value() {
    let (_setup, gateway) = start();
    let identity = |pointer_or_header: (&str, &str)| json!({"error": "event_contract", "field": "identity", pointer_or_header.0: pointer_or_header.1});
    let event_type = |pointer_or_header: (&str, &str)| json!({"error": "event_contract", "field": "event_type", pointer_or_header.0: pointer_or_header.1});
    let cases = [
        ("hooks", vec![], r#"{"type":"ok.type"}"#, identity(("pointer", "/data/id"))),
        ("hooks", vec![], r#"{"type":"ok.type","data":{"id":{"secret":"s3cr3t"}}}"#, identity(("pointer", "/data/id"))),
        ("hooks", vec![], r#"{"type":"secret.type","data":{"id":"e1"}}"#, event_type(("pointer", "/type"))),
        ("hooks", vec![], r#"{"data":{"id":"e2"}}"#, event_type(("pointer", "/type"))),
        ("headed", vec![("x-event-type", "ok.type")], "{}", identity(("header", "x-event-id"))),
        (
            "headed",
            vec![("x-event-id", "e3"), ("x-event-type", "secret.type")],
            "{}",
            event_type(("header", "x-event-type")),
        ),
        ("headed", vec![("x-event-id", "e4")], "{}", event_type(("header", "x-event-type"))),
    ];
    for (route, extra, body, expected) in cases {
        assert_eq!(refused(&gateway, route, &extra, body.as_bytes()), (422, expected), "{route}: {body} {extra:?}");
    }
}
