//! The outbound API's answers (`/api/v1`, `docs/design/outbound-api.md` §1.2), in Svix's
//! shapes, so that its SDKs read them: every refusal but a 422 is `HttpErrorOut`
//! `{"code","detail"}` (the SDK's `Error::Http`), every 422 is `HTTPValidationError`
//! `{"detail":[{"loc","msg","type"}]}` (its `Error::Validation`), and a failure of ours is
//! `{}`, naming nothing inside, as Svix's own 5xx.
//!
//! | what | status | body | extra headers |
//! |---|---|---|---|
//! | read, changed or updated in place | 200 | the resource's `…Out` | |
//! | created (`POST`, or a `PUT` that created) | 201 | the resource's `…Out` | |
//! | a message accepted, once its commit is durable | 202 | `MessageOut` | |
//! | a resend or a recovery made due, once its commit is durable | 202 | `{}` / `RecoverOut` | |
//! | done, nothing to say (health, a delete, headers set) | 204 | none | |
//! | a request Svix refuses as malformed | 400 | `{"code":C,"detail":D}` | |
//! | no token, or not one of ours | 401 | `{"code":"authentication_failed",…}` | |
//! | the token's role does not allow it | 403 | `{"code":"insufficient_access",…}` | |
//! | no such route or thing | 404 | `{"code":"not_found",…}` | |
//! | request body not sent in time | 408 | `{"code":"body_timeout",…}` | `Connection: close` |
//! | the `Idempotency-Key`'s request is still running | 409 | `{"code":"idempotency_conflict",…}` | `Retry-After` |
//! | another conflict (a uid taken, an endpoint disabled, …) | 409 | `{"code":C,"detail":D}` | |
//! | request body over the limit | 413 | `{"code":"payload_too_large",…}` | `Connection: close` |
//! | a field refused (its `loc` says where) | 422 | `{"detail":[…]}` | |
//! | too many requests | 429 | `{"code":"rate_limited",…}` | `Retry-After` |
//! | the store cannot be used | 503 | `{}` | `Retry-After` |
//!
//! The `Idempotency-Key` layer mounted with [`RefusalStyle::Svix`](crate::idempotency::RefusalStyle)
//! answers its refusals through [`OutboundAnswer::from`] a [`Refusal`]: the same key for
//! another request is a 422 at `["header","idempotency-key"]`.

use std::time::Duration;

use axum::{
    Json,
    response::{IntoResponse, Response},
};
use http::{HeaderValue, StatusCode, header};
use idemgate_core::outbound::field::FieldError;
use idemgate_store::outbound::{OutboundError, Resource};
use serde::Serialize;
use serde_json::json;

use super::RETRY_AFTER_SECS;
use crate::{
    idempotency::Refusal,
    outbound::wire::{HttpErrorOut, HttpValidationError, ValidationErrorItem},
};

/// One answer of the outbound API; each variant has one status.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
// `TooManyRequests` is for the rate limits to come.
#[allow(dead_code)]
pub(crate) enum OutboundAnswer {
    /// 204, no body.
    NoContent,
    /// 400 with Svix's code for it.
    BadRequest {
        /// Svix's `code`.
        code: &'static str,
        /// What is wrong, never a value the caller sent.
        detail: &'static str,
    },
    /// 401: no bearer token, or not one of ours.
    Unauthenticated,
    /// 403: the token's role does not allow the request.
    Forbidden,
    /// 404: no such route or thing.
    NotFound,
    /// 408: the request body did not arrive in time.
    BodyTimeout,
    /// 409: the `Idempotency-Key`'s first request is still running.
    InFlight {
        /// Time left on its lock.
        retry_after: Duration,
    },
    /// 409: another conflict (a uid taken, an `eventId` with another payload).
    Conflict {
        /// Svix's `code`.
        code: &'static str,
        /// What conflicts, never a value the caller sent.
        detail: &'static str,
    },
    /// 413: the request body is over the limit.
    BodyTooLarge,
    /// 422: fields refused, each with its `loc`.
    Invalid(Vec<ValidationErrorItem>),
    /// 429: too many requests.
    TooManyRequests,
    /// 503: the store cannot be used now; `{}`.
    Unavailable,
}

impl OutboundAnswer {
    /// A 422 for one refused field, by core's rule.
    #[must_use]
    pub(crate) fn field(err: &FieldError) -> Self {
        Self::Invalid(vec![ValidationErrorItem::from(err)])
    }

    /// A 422 for one refused field at `loc` (`["query","limit"]`), saying `msg`.
    pub(crate) fn invalid(loc: &[&str], msg: impl Into<String>, kind: &str) -> Self {
        let loc = loc.iter().map(|part| (*part).to_owned()).collect();
        Self::Invalid(vec![ValidationErrorItem { loc, msg: msg.into(), kind: kind.to_owned() }])
    }

    /// The status this answer is sent with.
    #[must_use]
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Self::NoContent => StatusCode::NO_CONTENT,
            Self::BadRequest { .. } => StatusCode::BAD_REQUEST,
            Self::Unauthenticated => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::InFlight { .. } | Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// `HttpErrorOut`'s code and detail, for the answers that have that shape.
    fn error_out(&self) -> Option<HttpErrorOut> {
        let (code, detail) = match self {
            Self::BadRequest { code, detail } | Self::Conflict { code, detail } => (*code, *detail),
            Self::Unauthenticated => ("authentication_failed", "Incorrect authentication credentials."),
            Self::Forbidden => ("insufficient_access", "Insufficient access for the given operation."),
            Self::NotFound => ("not_found", "Entity not found"),
            Self::BodyTimeout => ("body_timeout", "The request body did not arrive in time."),
            Self::InFlight { .. } => {
                ("idempotency_conflict", "A request with this idempotency-key is still in progress.")
            }
            Self::BodyTooLarge => ("payload_too_large", "The request body is too large."),
            Self::TooManyRequests => ("rate_limited", "Too many requests; retry later."),
            Self::NoContent | Self::Invalid(_) | Self::Unavailable => return None,
        };
        Some(HttpErrorOut { code: code.to_owned(), detail: detail.to_owned() })
    }
}

impl IntoResponse for OutboundAnswer {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut response = match (&self, self.error_out()) {
            (Self::NoContent, _) => status.into_response(),
            (Self::Invalid(items), _) => (status, Json(HttpValidationError { detail: items.clone() })).into_response(),
            (_, Some(out)) => (status, Json(out)).into_response(),
            (_, None) => (status, Json(json!({}))).into_response(),
        };
        let headers = response.headers_mut();
        match self {
            Self::InFlight { retry_after } => {
                let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
                headers.insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
            }
            Self::TooManyRequests | Self::Unavailable => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
            }
            // The rest of the body may still be in flight: read no further request here.
            Self::BodyTooLarge | Self::BodyTimeout => {
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            _ => {}
        }
        response
    }
}

/// The `Idempotency-Key` layer's refusals in Svix's shapes (`docs/design/outbound-api.md`
/// §3.4): a key used for another request is a 422 naming the header, one still running a
/// 409 with `Retry-After`.
impl From<Refusal> for OutboundAnswer {
    fn from(refusal: Refusal) -> Self {
        let key = || ["header", "idempotency-key"];
        match refusal {
            Refusal::MissingKey => Self::invalid(&key(), "field required", "value_error.missing"),
            Refusal::BadKey(_) => Self::invalid(&key(), "the idempotency-key is malformed", "value_error"),
            Refusal::Mismatch => {
                Self::invalid(&key(), "the idempotency-key was used for a different request", "value_error")
            }
            Refusal::InFlight { retry_after } => Self::InFlight { retry_after },
            Refusal::BodyTooLarge => Self::BodyTooLarge,
            Refusal::BodyTimeout => Self::BodyTimeout,
            Refusal::BodyUnreadable => {
                Self::BadRequest { code: "body_unreadable", detail: "The request body could not be read." }
            }
            Refusal::StoreUnavailable => Self::Unavailable,
        }
    }
}

/// A field refused by core's rules: a 422 at its `loc`.
impl From<FieldError> for OutboundAnswer {
    fn from(err: FieldError) -> Self {
        Self::field(&err)
    }
}

/// A store operation's refusal or failure: a row not found is 404, a uid or name taken
/// 409, a failure of the store 503 `{}` (its cause is logged, never answered).
impl From<OutboundError> for OutboundAnswer {
    fn from(err: OutboundError) -> Self {
        match err {
            OutboundError::NotFound(_) => Self::NotFound,
            OutboundError::UidTaken(resource) => Self::Conflict {
                code: "conflict",
                detail: match resource {
                    Resource::Application => "An application with this uid already exists",
                    Resource::Endpoint => "An endpoint with this uid already exists",
                    Resource::EventType => "An event type with this name already exists",
                    Resource::Message => "A message with this eventId already exists",
                    Resource::Attempt => "This message attempt already exists",
                },
            },
            OutboundError::EventTypeExists => {
                Self::Conflict { code: "conflict", detail: "An event type with this name already exists" }
            }
            OutboundError::StaleSecret => {
                Self::Conflict { code: "conflict", detail: "The endpoint's secret was rotated at the same time" }
            }
            OutboundError::EndpointDisabled => {
                Self::Conflict { code: "endpoint_disabled", detail: "The endpoint is disabled; enable it first" }
            }
            OutboundError::PayloadGone => Self::BadRequest {
                code: "missing_payload",
                detail: "Unable to resend message. Payload is missing (probably expired).",
            },
            err => {
                tracing::warn!(error = %err, "the outbound API's store operation failed");
                Self::Unavailable
            }
        }
    }
}

/// A success of the outbound API: which status its body goes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Done {
    /// 200: read, or changed in place.
    Ok,
    /// 201: created.
    Created,
    /// 202: a message accepted (its commit durable).
    Accepted,
}

impl Done {
    /// 201 when a `PUT` created its row, else 200.
    pub(crate) fn upserted(created: bool) -> Self {
        if created { Self::Created } else { Self::Ok }
    }

    /// `body` as JSON with this success's status.
    pub(crate) fn with<T: Serialize>(self, body: T) -> Response {
        let status = match self {
            Self::Ok => StatusCode::OK,
            Self::Created => StatusCode::CREATED,
            Self::Accepted => StatusCode::ACCEPTED,
        };
        (status, Json(body)).into_response()
    }
}

/// `404` in `HttpErrorOut`'s shape: every path of the API not (yet) served.
pub(crate) async fn api_not_found() -> Response {
    OutboundAnswer::NotFound.into_response()
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;
    use idemgate_core::outbound::field::{Loc, Rule};
    use serde_json::Value;

    use super::*;

    async fn answered(answer: OutboundAnswer) -> (u16, Option<Value>, http::HeaderMap) {
        let response = answer.into_response();
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await.unwrap_or_else(|_| unreachable!()).to_bytes();
        let body = (!bytes.is_empty()).then(|| serde_json::from_slice(&bytes).unwrap_or_else(|_| unreachable!()));
        (parts.status.as_u16(), body, parts.headers)
    }

    #[tokio::test]
    async fn each_answer_has_its_status_and_svix_shape() {
        let cases = [
            (OutboundAnswer::NoContent, 204, None),
            (
                OutboundAnswer::Unauthenticated,
                401,
                Some(json!({"code":"authentication_failed","detail":"Incorrect authentication credentials."})),
            ),
            (
                OutboundAnswer::Forbidden,
                403,
                Some(json!({"code":"insufficient_access","detail":"Insufficient access for the given operation."})),
            ),
            (OutboundAnswer::NotFound, 404, Some(json!({"code":"not_found","detail":"Entity not found"}))),
            (
                OutboundAnswer::Conflict { code: "conflict", detail: "taken" },
                409,
                Some(json!({"code":"conflict","detail":"taken"})),
            ),
            (OutboundAnswer::Unavailable, 503, Some(json!({}))),
        ];
        for (answer, status, body) in cases {
            let (got_status, got_body, _) = answered(answer.clone()).await;
            assert_eq!((got_status, got_body), (status, body), "{answer:?}");
        }
    }

    #[tokio::test]
    async fn a_refused_field_is_a_validation_error_at_its_loc() {
        let err = FieldError::new(Loc::body("uid"), Rule::Pattern);
        let (status, body, _) = answered(OutboundAnswer::field(&err)).await;
        assert_eq!(status, 422);
        assert_eq!(
            body,
            Some(json!({"detail":[{
                "loc":["body","uid"],
                "msg":"String must match the following pattern: [a-zA-Z0-9\\-_.].",
                "type":"value_error"
            }]}))
        );
    }

    #[tokio::test]
    async fn a_store_refusal_is_404_or_409_and_its_failure_503_naming_nothing() {
        let (status, body, _) = answered(OutboundError::NotFound(Resource::Endpoint).into()).await;
        assert_eq!((status, body), (404, Some(json!({"code":"not_found","detail":"Entity not found"}))));
        let (status, body, _) = answered(OutboundError::UidTaken(Resource::Application).into()).await;
        assert_eq!(
            (status, body),
            (409, Some(json!({"code":"conflict","detail":"An application with this uid already exists"})))
        );
        let (status, body, _) = answered(OutboundError::EventTypeExists.into()).await;
        assert_eq!((status, body.map(|b| b["code"].clone())), (409, Some(json!("conflict"))));
        let (status, body, _) = answered(OutboundError::EndpointDisabled.into()).await;
        assert_eq!((status, body.map(|b| b["code"].clone())), (409, Some(json!("endpoint_disabled"))));
        let (status, body, _) = answered(OutboundError::PayloadGone.into()).await;
        assert_eq!((status, body.map(|b| b["code"].clone())), (400, Some(json!("missing_payload"))));
        let failed = OutboundError::Store(idemgate_store::StoreError::Unavailable);
        let (status, body, headers) = answered(failed.into()).await;
        assert_eq!((status, body), (503, Some(json!({}))));
        assert!(headers.contains_key(header::RETRY_AFTER));
    }

    #[tokio::test]
    async fn the_key_layers_refusals_read_as_svix_errors() {
        let (status, body, _) = answered(Refusal::Mismatch.into()).await;
        assert_eq!(status, 422);
        let detail = body.as_ref().and_then(|b| b["detail"].as_array()).cloned().unwrap_or_default();
        assert_eq!(detail.len(), 1, "{body:?}");
        assert_eq!(detail[0]["loc"], json!(["header", "idempotency-key"]));
        let (status, body, headers) =
            answered(Refusal::InFlight { retry_after: Duration::from_millis(2_500) }.into()).await;
        assert_eq!(status, 409);
        assert_eq!(body.map(|b| b["code"].clone()), Some(json!("idempotency_conflict")));
        assert_eq!(headers.get(header::RETRY_AFTER).map(HeaderValue::as_bytes), Some(&b"3"[..]));
        let (status, body, headers) = answered(Refusal::StoreUnavailable.into()).await;
        assert_eq!((status, body), (503, Some(json!({}))));
        assert!(headers.contains_key(header::RETRY_AFTER));
    }
}
