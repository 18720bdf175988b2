//! Where every HTTP status idemgate chooses is chosen: one mapping per family of answers,
//! each an enum with one `IntoResponse`, so a given case has the same status everywhere
//! and internals never leak into a body. No other module names a status
//! (`tests/it/edge.rs` checks every crate's sources); a handler returns one of these.
//!
//! - [`DeliveryAnswer`] (here): a delivery's rejection or outcome, on every receiving route;
//!   with [`not_found`], [`method_not_allowed`], [`healthy`] and [`readiness`] for the routes
//!   around it;
//! - [`Refusal`](crate::idempotency::Refusal) (`idempotency.rs`): the `Idempotency-Key`
//!   layer's refusals, and its replays of stored answers;
//! - [`ProxyAnswer`]: proxy mode's own answers;
//! - [`AdminError`]: the admin API's refusals and failures;
//! - [`DashboardAnswer`]: the dashboard's;
//! - `OutboundAnswer` (`outbound.rs`): the outbound API's (`/api/v1`), in Svix's shapes;
//! - `PortalAnswer` (`portal.rs`): the customer portal's (`/portal`), as pages.
//!
//! A delivery's answers:
//!
//! | what | status | body |
//! |---|---|---|
//! | body over the limit | 413 | `{"error":"body_size"}` |
//! | authentication failed | 401 | `{"error":"authentication","reason":R}`, with the header when one is at fault |
//! | not strict JSON | 400 | `{"error":"invalid_json","reason":R}` |
//! | not a strict form (a `body = "form"` source) | 400 | `{"error":"invalid_form","reason":R}` |
//! | event contract not met, or refused by the handler | 422 | `{"error":"event_contract"}`, with the field when the contract names one |
//! | same identity, other bytes | 409 | `{"error":"event_conflict"}` |
//! | same identity, same bytes | 200 | `{"status":"duplicate","result":R}` |
//! | first delivery, effect committed | 200 | `{"status":"applied","result":R}` |
//! | first delivery, event and jobs committed | 202 | `{"status":"accepted",…R}` |
//! | failure before commit | 503 + `Retry-After` | `{"error":"temporary_processing_failure"}` |
//! | body not sent in time | 408 | `{"error":"body_timeout"}` |
//! | body stream broken | 400 | `{"error":"body_unreadable"}` |
//!
//! A queued event (the gateway's inbox) answers with the stored result's fields merged in:
//! `202 {"status":"accepted","event":ID}`, and a repeat `200 {"status":"duplicate","event":ID}`.
//!
//! A refusal says why in bounded fields, so a sender can fix its side, and never echoes
//! the payload: invalid JSON gets `"reason"`, the strict parser's code (`syntax`,
//! `duplicate_key`, `too_deep`, `invalid_utf8`, `byte_order_mark`, `number_out_of_range`,
//! `trailing_data`), invalid form its code (`duplicate_key`, `invalid_percent_encoding`,
//! `invalid_utf8`, `too_many_fields`); a failed authentication its code (`missing_header` or
//! `malformed_header` with `"header"`, the header's name; `timestamp_out_of_tolerance` with
//! `"tolerance_secs"`; `signature_mismatch`), never a header's value, a signature or a secret;
//! a contract refusal of a configured field gets `"field"` (`identity` or
//! `event_type`) and where it was looked for, `"header"` or `"pointer"` as configured.
//! [`CodeOnly`] answers without them, for an interface that was fixed before they existed
//! (the counter example's).

use axum::{
    Json,
    response::{IntoResponse, Response},
};
use http::{HeaderValue, StatusCode, header};
use idemgate_core::{AuthError, Outcome, Rejection, outcome::Location};
use idemgate_store::replication::{FAILOVER_WARNING, FailoverRisk};
use serde_json::{Map, Value, json};

use crate::body::BodyError;

mod admin;
mod dashboard;
mod idempotency;
mod outbound;
mod portal;
mod proxy;

pub use admin::{AdminError, Part};
pub(crate) use admin::{no_route, wrong_method};
pub use dashboard::DashboardAnswer;
pub(crate) use idempotency::{Replay, refused, replayed};
pub(crate) use outbound::{Done, OutboundAnswer, api_not_found};
pub(crate) use portal::PortalAnswer;
pub use proxy::ProxyAnswer;

/// Seconds a sender is asked to wait before retrying a failed delivery.
pub const RETRY_AFTER_SECS: u32 = 1;

/// What became of one delivery, ready to be answered.
#[derive(Debug, Clone, PartialEq)]
pub enum DeliveryAnswer {
    /// Refused before the store: nothing was stored.
    Rejected(Rejection),
    /// The body could not be read at all.
    Unreadable(BodyError),
    /// The store's verdict for an effect that ran inside the receipt's transaction.
    Settled(Outcome),
    /// The store's verdict for an event stored with its jobs, to be worked off later.
    Queued(Outcome),
}

impl DeliveryAnswer {
    /// The status this answer is sent with.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Rejected(Rejection::BodyTooLarge { .. }) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Rejected(Rejection::Authentication(_)) => StatusCode::UNAUTHORIZED,
            Self::Rejected(Rejection::InvalidJson(_) | Rejection::InvalidForm(_)) => StatusCode::BAD_REQUEST,
            Self::Rejected(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Unreadable(BodyError::TooLarge { .. }) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Unreadable(BodyError::Timeout) => StatusCode::REQUEST_TIMEOUT,
            Self::Unreadable(_) => StatusCode::BAD_REQUEST,
            Self::Queued(Outcome::Applied { .. }) => StatusCode::ACCEPTED,
            Self::Settled(outcome) | Self::Queued(outcome) => outcome_status(outcome),
        }
    }

    /// The JSON body this answer is sent with: [`Self::code_body`], and for a refusal the
    /// bounded fields that say why.
    #[must_use]
    pub fn body(&self) -> Value {
        let mut body = self.code_body();
        match self {
            Self::Rejected(Rejection::InvalidJson(err)) => body["reason"] = err.reason().into(),
            Self::Rejected(Rejection::InvalidForm(err)) => body["reason"] = err.reason().into(),
            Self::Rejected(Rejection::Authentication(err)) => {
                body["reason"] = err.reason().into();
                match err {
                    AuthError::MissingHeader(name) | AuthError::MalformedHeader(name) => {
                        body["header"] = name.to_ascii_lowercase().into();
                    }
                    AuthError::TimestampOutOfTolerance { tolerance_secs } => {
                        body["tolerance_secs"] = (*tolerance_secs).into();
                    }
                    _ => {}
                }
            }
            Self::Rejected(Rejection::Contract { field: Some(field), .. }) => {
                body["field"] = field.name.into();
                let (key, at) = match &field.location {
                    Location::Header(name) => ("header", name),
                    Location::Pointer(pointer) => ("pointer", pointer),
                };
                body[key] = at.as_str().into();
            }
            _ => {}
        }
        body
    }

    /// The JSON body without the fields that say why a delivery was refused.
    #[must_use]
    pub fn code_body(&self) -> Value {
        match self {
            Self::Rejected(Rejection::BodyTooLarge { .. }) => error("body_size"),
            Self::Rejected(Rejection::Authentication(_)) => error("authentication"),
            Self::Rejected(Rejection::InvalidJson(_)) => error("invalid_json"),
            Self::Rejected(Rejection::InvalidForm(_)) => error("invalid_form"),
            Self::Rejected(_) => error("event_contract"),
            Self::Unreadable(BodyError::TooLarge { .. }) => error("body_size"),
            Self::Unreadable(BodyError::Timeout) => error("body_timeout"),
            Self::Unreadable(_) => error("body_unreadable"),
            Self::Settled(Outcome::Applied { result }) => {
                json!({ "status": "applied", "result": result })
            }
            Self::Settled(Outcome::Duplicate { result }) => {
                json!({ "status": "duplicate", "result": result })
            }
            Self::Queued(Outcome::Applied { result }) => merged("accepted", result),
            Self::Queued(Outcome::Duplicate { result }) => merged("duplicate", result),
            Self::Settled(outcome) | Self::Queued(outcome) => outcome_error(outcome),
        }
    }
}

impl DeliveryAnswer {
    /// A short stable label for logs and metrics: the rejection reason or the outcome name.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::Rejected(rejection) => rejection.reason(),
            Self::Unreadable(err) => err.reason(),
            Self::Settled(outcome) | Self::Queued(outcome) => outcome.name(),
        }
    }
}

fn outcome_status(outcome: &Outcome) -> StatusCode {
    match outcome {
        Outcome::Applied { .. } | Outcome::Duplicate { .. } => StatusCode::OK,
        Outcome::Conflict => StatusCode::CONFLICT,
        Outcome::Refused { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        Outcome::Failed { .. } => StatusCode::SERVICE_UNAVAILABLE,
    }
}

fn outcome_error(outcome: &Outcome) -> Value {
    match outcome {
        Outcome::Conflict => error("event_conflict"),
        Outcome::Refused { .. } => error("event_contract"),
        _ => error("temporary_processing_failure"),
    }
}

fn error(code: &str) -> Value {
    json!({ "error": code })
}

/// `{"status": status}` followed by the fields of an object `result`.
fn merged(status: &str, result: &Value) -> Value {
    let mut body = Map::new();
    body.insert("status".into(), status.into());
    if let Value::Object(fields) = result {
        body.extend(fields.iter().filter(|(k, _)| *k != "status").map(|(k, v)| (k.clone(), v.clone())));
    }
    Value::Object(body)
}

impl From<BodyError> for DeliveryAnswer {
    fn from(err: BodyError) -> Self {
        match err {
            BodyError::TooLarge { limit } => Self::Rejected(Rejection::BodyTooLarge { limit }),
            other => Self::Unreadable(other),
        }
    }
}

/// A delivery's answer with its error code only ([`DeliveryAnswer::code_body`]): for an
/// interface fixed before refusals said why, as the counter example's.
#[derive(Debug)]
pub struct CodeOnly(pub DeliveryAnswer);

impl IntoResponse for CodeOnly {
    fn into_response(self) -> Response {
        let body = self.0.code_body();
        self.0.respond(body)
    }
}

impl IntoResponse for DeliveryAnswer {
    fn into_response(self) -> Response {
        let body = self.body();
        self.respond(body)
    }
}

impl DeliveryAnswer {
    fn respond(self, body: Value) -> Response {
        let mut response = (self.status(), Json(body)).into_response();
        let headers = response.headers_mut();
        match self {
            Self::Settled(Outcome::Failed { .. }) | Self::Queued(Outcome::Failed { .. }) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
            }
            // The rest of an oversized or broken body may still be in flight: do not
            // try to read another request from this connection.
            Self::Rejected(Rejection::BodyTooLarge { .. }) | Self::Unreadable(_) => {
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            _ => {}
        }
        response
    }
}

/// `404 {"error":"not_found"}`, for router fallbacks.
pub async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, Json(json!({ "error": "not_found" }))).into_response()
}

/// `200 {"status":"ok"}`: the process answers.
pub async fn healthy() -> Response {
    Json(json!({ "status": "ok" })).into_response()
}

/// `200 {"status":"ready"}` or `503 {"status":"unavailable"}`: whether the store can write.
/// On PostgreSQL `standby` says whether a failover could lose acknowledged events (`None`:
/// nothing to say, on SQLite or when it could not be read): a ready answer adds
/// `"synchronous_standby"`, and when false a `"warning"` with the reason. Still 200: a
/// server without a standby is a valid setup.
#[must_use]
pub fn readiness(ready: bool, standby: Option<Option<FailoverRisk>>) -> Response {
    if !ready {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "status": "unavailable" }))).into_response();
    }
    match standby {
        None => Json(json!({ "status": "ready" })).into_response(),
        Some(None) => Json(json!({ "status": "ready", "synchronous_standby": true })).into_response(),
        Some(Some(risk)) => Json(json!({
            "status": "ready",
            "synchronous_standby": false,
            "warning": format!("{FAILOVER_WARNING}: {risk}"),
        }))
        .into_response(),
    }
}

/// `405 {"error":"method_not_allowed"}`, for method fallbacks.
pub async fn method_not_allowed() -> Response {
    (StatusCode::METHOD_NOT_ALLOWED, Json(json!({ "error": "method_not_allowed" }))).into_response()
}

/// An `application/problem+json` answer (RFC 9457).
fn problem(status: StatusCode, title: &str, detail: Option<String>) -> Response {
    let mut body = json!({ "type": "about:blank", "title": title, "status": status.as_u16() });
    if let Some(detail) = detail {
        body["detail"] = detail.into();
    }
    let mut response = (status, Json(body)).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
    response
}

#[cfg(test)]
mod tests {
    use idemgate_core::{
        form::FormError,
        json::JsonError,
        outcome::{FailureCause, Field},
    };

    use super::*;

    #[test]
    fn each_answer_has_its_one_status_and_body() {
        let cases = [
            (DeliveryAnswer::Rejected(Rejection::BodyTooLarge { limit: 1 }), 413, json!({"error":"body_size"})),
            (
                DeliveryAnswer::Rejected(AuthError::SignatureMismatch.into()),
                401,
                json!({"error":"authentication","reason":"signature_mismatch"}),
            ),
            (
                DeliveryAnswer::Rejected(AuthError::MissingHeader("Stripe-Signature").into()),
                401,
                json!({"error":"authentication","reason":"missing_header","header":"stripe-signature"}),
            ),
            (
                DeliveryAnswer::Rejected(AuthError::MalformedHeader("webhook-signature").into()),
                401,
                json!({"error":"authentication","reason":"malformed_header","header":"webhook-signature"}),
            ),
            (
                DeliveryAnswer::Rejected(AuthError::TimestampOutOfTolerance { tolerance_secs: 300 }.into()),
                401,
                json!({"error":"authentication","reason":"timestamp_out_of_tolerance","tolerance_secs":300}),
            ),
            (
                DeliveryAnswer::Rejected(JsonError::InvalidUtf8.into()),
                400,
                json!({"error":"invalid_json","reason":"invalid_utf8"}),
            ),
            (
                DeliveryAnswer::Rejected(FormError::InvalidPercentEncoding { field: 2 }.into()),
                400,
                json!({"error":"invalid_form","reason":"invalid_percent_encoding"}),
            ),
            (
                DeliveryAnswer::Rejected(Rejection::Contract { reason: "x", field: None }),
                422,
                json!({"error":"event_contract"}),
            ),
            (
                DeliveryAnswer::Rejected(Rejection::Contract {
                    reason: "x",
                    field: Some(Field { name: Field::IDENTITY, location: Location::Pointer("/id".into()) }),
                }),
                422,
                json!({"error":"event_contract","field":"identity","pointer":"/id"}),
            ),
            (DeliveryAnswer::Settled(Outcome::Conflict), 409, json!({"error":"event_conflict"})),
            (
                DeliveryAnswer::Settled(Outcome::Applied { result: json!(3) }),
                200,
                json!({"status":"applied","result":3}),
            ),
            (
                DeliveryAnswer::Settled(Outcome::Duplicate { result: json!(3) }),
                200,
                json!({"status":"duplicate","result":3}),
            ),
            (
                DeliveryAnswer::Settled(Outcome::Failed { cause: FailureCause::Store }),
                503,
                json!({"error":"temporary_processing_failure"}),
            ),
            (DeliveryAnswer::Unreadable(BodyError::Timeout), 408, json!({"error":"body_timeout"})),
        ];
        for (answer, status, body) in cases {
            assert_eq!(answer.status().as_u16(), status, "{answer:?}");
            assert_eq!(answer.body(), body, "{answer:?}");
        }
    }

    #[test]
    fn code_only_answers_keep_the_code_alone() {
        let answer = DeliveryAnswer::Rejected(JsonError::DuplicateKey { line: 1, column: 9 }.into());
        assert_eq!(answer.body(), json!({"error":"invalid_json","reason":"duplicate_key"}));
        assert_eq!(answer.code_body(), json!({"error":"invalid_json"}));
        assert_eq!(CodeOnly(answer).into_response().status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn a_failure_asks_for_a_retry_later() {
        let response = DeliveryAnswer::Settled(Outcome::Failed { cause: FailureCause::Handler }).into_response();
        assert_eq!(response.headers().get(header::RETRY_AFTER).map(|v| v.as_bytes()), Some(&b"1"[..]));
    }
}
