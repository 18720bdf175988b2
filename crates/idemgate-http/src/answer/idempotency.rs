//! The `Idempotency-Key` layer's answers: the ones it gives itself, as
//! `application/problem+json` (RFC 9457), and a completed request's stored answer replayed.
//!
//! | what | status | extra headers |
//! |---|---|---|
//! | the route requires a key and there is none | 400 | |
//! | the key is malformed | 400 | |
//! | request body over `max_request_body` | 413 | `Connection: close` |
//! | request body not sent in time | 408 | `Connection: close` |
//! | request body stream broken | 400 | `Connection: close` |
//! | the key was used for a different request | 422 | |
//! | a request with the key is in progress | 409 | `Retry-After` (its lock's remaining time) |
//! | the store cannot be used (`when_unavailable = "refuse"`) | 503 | `Retry-After` |
//! | a completed request repeated | the stored status | the stored headers, `Idempotency-Replay: true` |

use axum::{
    body::Body,
    response::{IntoResponse, Response},
};
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use idemgate_store::idempotency::StoredResponse;

use super::{RETRY_AFTER_SECS, problem};
use crate::{
    body::BodyError,
    idempotency::{IDEMPOTENCY_REPLAY, Refusal, RefusalStyle},
};

/// The `Idempotency-Key` layer's own answers, as `application/problem+json` (RFC 9457).
impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (status, title) = match &self {
            Refusal::MissingKey => (StatusCode::BAD_REQUEST, "this route requires an Idempotency-Key"),
            Refusal::BadKey(_) => (StatusCode::BAD_REQUEST, "the Idempotency-Key is malformed"),
            Refusal::BodyTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "the request body is too large"),
            Refusal::BodyTimeout => (StatusCode::REQUEST_TIMEOUT, "the request body did not arrive in time"),
            Refusal::BodyUnreadable => (StatusCode::BAD_REQUEST, "the request body could not be read"),
            Refusal::Mismatch => {
                (StatusCode::UNPROCESSABLE_ENTITY, "the Idempotency-Key was used for a different request")
            }
            Refusal::InFlight { .. } => (StatusCode::CONFLICT, "a request with this Idempotency-Key is in progress"),
            Refusal::StoreUnavailable => (StatusCode::SERVICE_UNAVAILABLE, "idempotency is unavailable; retry later"),
        };
        let detail = match &self {
            Refusal::BadKey(err) => Some(err.to_string()),
            _ => None,
        };
        let mut response = problem(status, title, detail);
        let headers = response.headers_mut();
        match self {
            Refusal::InFlight { retry_after } => {
                let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
                headers.insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
            }
            Refusal::StoreUnavailable => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
            }
            // The rest of the body may still be in flight: read no further request here.
            Refusal::BodyTooLarge | Refusal::BodyTimeout | Refusal::BodyUnreadable => {
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            _ => {}
        }
        response
    }
}

/// The layer's refusal in the answer style of its mount: problem+json, or Svix's shapes
/// on the outbound API.
pub(crate) fn refused(refusal: Refusal, style: RefusalStyle) -> Response {
    match style {
        RefusalStyle::Problem => refusal.into_response(),
        RefusalStyle::Svix => super::OutboundAnswer::from(refusal).into_response(),
    }
}

impl From<BodyError> for Refusal {
    fn from(err: BodyError) -> Self {
        match err {
            BodyError::TooLarge { .. } => Self::BodyTooLarge,
            BodyError::Timeout => Self::BodyTimeout,
            BodyError::Broken => Self::BodyUnreadable,
        }
    }
}

/// The stored answer of a completed request, sent again: its status (`200` should a stored
/// one not be a status), headers and body, marked as a replay, and as one without its body
/// when that was over `max_stored_body`.
pub(crate) fn replayed(stored: StoredResponse) -> Response {
    Replay::of(stored).response()
}

/// A replay made once and sent as often as asked: the replay cache keeps this form, so a
/// repeat answered from memory copies no strings and parses no header again.
#[derive(Debug, Clone)]
pub(crate) struct Replay {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Replay {
    pub(crate) fn of(stored: StoredResponse) -> Self {
        let mut headers = HeaderMap::with_capacity(stored.headers.len() + 2);
        for (name, value) in &stored.headers {
            if let (Ok(name), Ok(value)) = (HeaderName::try_from(name.as_str()), HeaderValue::from_str(value)) {
                headers.append(name, value);
            }
        }
        headers.insert(IDEMPOTENCY_REPLAY, HeaderValue::from_static("true"));
        if stored.body_omitted {
            headers.insert(HeaderName::from_static("idempotency-replay-body"), HeaderValue::from_static("omitted"));
        }
        let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
        Self { status, headers, body: Bytes::from(stored.body) }
    }

    /// The response; its body shares the kept bytes.
    pub(crate) fn response(&self) -> Response {
        let mut response = Response::new(Body::from(self.body.clone()));
        *response.status_mut() = self.status;
        *response.headers_mut() = self.headers.clone();
        response
    }

    /// Roughly the bytes it holds, to weigh it in the cache.
    pub(crate) fn weight(&self) -> usize {
        let headers: usize = self.headers.iter().map(|(name, value)| name.as_str().len() + value.len() + 16).sum();
        headers + self.body.len()
    }
}
