//! What the client reads in the answers of a Svix-compatible API (idemgate's `/api/v1`):
//! whether a `409` is an `Idempotency-Key` layer's refusal of a repeat still in flight
//! (retried with the same key) or another conflict (final), why a request was refused, and
//! a published message's id. Pure functions of the status, `Retry-After` and body bytes.

use std::time::Duration;

use serde::Deserialize;

/// `HttpErrorOut`'s `code` for a repeat whose key's first request is still running.
pub(crate) const IN_FLIGHT_CODE: &str = "idempotency_conflict";

/// Svix's `HttpErrorOut`: every refusal but a 422.
#[derive(Debug, Deserialize)]
struct HttpErrorOut {
    code: String,
    detail: String,
}

/// Svix's `HTTPValidationError`: every 422.
#[derive(Debug, Deserialize)]
struct ValidationError {
    detail: Vec<ValidationItem>,
}

/// One refused field of a 422.
#[derive(Debug, Deserialize)]
struct ValidationItem {
    loc: Vec<serde_json::Value>,
    msg: String,
}

/// An RFC 9457 problem: the gateway's own `Idempotency-Key` layer and proxy answer in it.
#[derive(Debug, Deserialize)]
struct Problem {
    status: u16,
}

/// The part of `MessageOut` the client reads.
#[derive(Debug, Deserialize)]
struct MessageOut {
    id: String,
}

/// Whether an answer is an `Idempotency-Key` layer's refusal of a repeat whose first
/// request is still running: `409` with a `Retry-After`, and either `HttpErrorOut` with code
/// `idempotency_conflict` (`/api/v1`) or an RFC 9457 problem of status 409 (the gateway's
/// layer and proxy). A 409 without both (an `eventId` taken by another payload, a uid
/// taken) is a conflict that retrying cannot change.
#[must_use]
pub(crate) fn is_in_flight(status: u16, retry_after: Option<Duration>, body: &[u8]) -> bool {
    status == 409
        && retry_after.is_some()
        && (serde_json::from_slice::<HttpErrorOut>(body).is_ok_and(|out| out.code == IN_FLIGHT_CODE)
            || serde_json::from_slice::<Problem>(body).is_ok_and(|problem| problem.status == 409))
}

/// Why the API refused a request, from its answer's body: `code: detail` for
/// `HttpErrorOut`, `loc: msg` for each item of a 422, `None` for any other body. The API's
/// answers name no value the caller sent, so this is safe to show.
#[must_use]
pub(crate) fn refusal_reason(body: &[u8]) -> Option<String> {
    if let Ok(out) = serde_json::from_slice::<HttpErrorOut>(body) {
        return Some(format!("{}: {}", out.code, out.detail));
    }
    let invalid = serde_json::from_slice::<ValidationError>(body).ok()?;
    let items: Vec<String> = invalid
        .detail
        .iter()
        .map(|item| {
            let loc: Vec<String> =
                item.loc.iter().map(|part| part.as_str().map_or_else(|| part.to_string(), str::to_owned)).collect();
            format!("{}: {}", loc.join("."), item.msg)
        })
        .collect();
    (!items.is_empty()).then(|| items.join("; "))
}

/// The id of the message a `MessageOut` body describes.
#[must_use]
pub(crate) fn message_id(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<MessageOut>(body).ok().map(|out| out.id).filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const IN_FLIGHT: &[u8] =
        br#"{"code":"idempotency_conflict","detail":"A request with this idempotency-key is still in progress."}"#;
    const TAKEN: &[u8] = br#"{"code":"conflict","detail":"A message with this eventId already exists"}"#;
    const SECOND: Option<Duration> = Some(Duration::from_secs(1));

    #[test]
    fn only_a_409_with_retry_after_and_an_in_flight_body_is_in_flight() {
        assert!(is_in_flight(409, SECOND, IN_FLIGHT));
        assert!(!is_in_flight(409, None, IN_FLIGHT), "no Retry-After");
        assert!(!is_in_flight(409, SECOND, TAKEN), "an eventId taken is final");
        assert!(!is_in_flight(422, SECOND, IN_FLIGHT), "another status");
        let problem =
            br#"{"type":"about:blank","title":"a request with this Idempotency-Key is in progress","status":409}"#;
        assert!(is_in_flight(409, SECOND, problem), "the gateway's layer and proxy");
        assert!(!is_in_flight(409, None, problem), "no Retry-After");
        let other = br#"{"type":"about:blank","title":"t","status":400}"#;
        assert!(!is_in_flight(409, SECOND, other), "a problem of another status");
        assert!(!is_in_flight(409, SECOND, b"not json"));
    }

    #[test]
    fn a_refusal_reads_as_its_code_and_detail_or_its_fields() {
        assert_eq!(refusal_reason(TAKEN).as_deref(), Some("conflict: A message with this eventId already exists"));
        let invalid = br#"{"detail":[{"loc":["header","idempotency-key"],"msg":"the idempotency-key was used for a different request","type":"value_error"},{"loc":["body","payload",0],"msg":"m","type":"t"}]}"#;
        assert_eq!(
            refusal_reason(invalid).as_deref(),
            Some("header.idempotency-key: the idempotency-key was used for a different request; body.payload.0: m")
        );
        assert_eq!(refusal_reason(b"{}"), None);
        assert_eq!(refusal_reason(br#"{"detail":[]}"#), None);
    }

    #[test]
    fn a_message_out_gives_its_id() {
        assert_eq!(message_id(br#"{"id":"msg_1","eventType":"t","payload":{}}"#).as_deref(), Some("msg_1"));
        assert_eq!(message_id(br#"{"id":""}"#), None);
        assert_eq!(message_id(b"[]"), None);
    }
}
