//! The admin API's own answers when it does not answer with a view: every refusal and
//! failure of `/admin/v1`, each with one status, as `{"error": code, "detail": text}`
//! (`code` from a fixed set, for tools; `detail` one sentence, for people).
//!
//! | what | status | `error` |
//! |---|---|---|
//! | missing or wrong bearer token | 401 + `WWW-Authenticate: Bearer` | `unauthorized` |
//! | a `read` token asking to change state | 403 | `forbidden` |
//! | no such event, destination, application (or its endpoint or message) or path | 404 | `not_found` |
//! | a method the path does not take | 405 | `method_not_allowed` |
//! | a filter the API does not know | 400 | `unknown_state`, `unknown_destination`, `unknown_action`, `state_not_replayable`, `state_not_waiting`, `state_not_for_replay_to`, `destination_with_to`, `bad_cursor` |
//! | a query, path or JSON body that does not parse | 400 | `invalid_query`, `invalid_path`, `invalid_body` |
//! | a body without `Content-Type: application/json` | 415 | `unsupported_media_type` |
//! | a body over its limit, too slow or broken | 413, 408, 400 | `body_size`, `body_timeout`, `body_unreadable` |
//! | the store cannot be read or written | 503 | `store_unavailable` |
//!
//! A `detail` never holds a secret or a payload: the parsers' messages name a parameter,
//! a position or an expected form, and the admin token is never among them.

use axum::{
    Json,
    response::{IntoResponse, Response},
};
use http::{HeaderValue, StatusCode, header};
use idemgate_store::StoreError;
use serde_json::json;

use crate::body::BodyError;

/// Why an admin API request was not answered with what it asked for.
#[derive(Debug)]
#[non_exhaustive]
pub enum AdminError {
    /// The bearer token is missing or wrong; the answer says nothing about which.
    Unauthorized,
    /// The token is right but its role does not allow the request (a `read` token asking
    /// to change state); nothing was changed.
    Forbidden,
    /// The event does not exist (or its source or identity is not even well-formed).
    NotFound,
    /// No destination of that name is configured or known to the store; nothing was changed.
    UnknownDestination,
    /// No such application, or no such endpoint or message of it.
    UnknownApplication,
    /// No route has this path.
    NoRoute,
    /// The path has a route, but not for this method.
    MethodNotAllowed,
    /// A query or body names what the API does not know, with a stable code for it.
    BadRequest(&'static str),
    /// A query string, path or JSON body that does not parse, and the parser's reason.
    Invalid {
        /// What did not parse.
        part: Part,
        /// The parser's reason.
        detail: String,
    },
    /// A body sent without `Content-Type: application/json`.
    UnsupportedMediaType,
    /// The request body is over its limit, too slow or broken.
    Body(BodyError),
    /// The store failed; logged, never shown.
    Store(StoreError),
}

/// The part of a request that did not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The query string.
    Query,
    /// A path parameter.
    Path,
    /// The JSON body.
    Body,
}

impl From<crate::access::Forbidden> for AdminError {
    fn from(_: crate::access::Forbidden) -> Self {
        Self::Forbidden
    }
}

impl From<StoreError> for AdminError {
    fn from(err: StoreError) -> Self {
        Self::Store(err)
    }
}

impl AdminError {
    /// The status and the stable code.
    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            Self::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            Self::Forbidden => (StatusCode::FORBIDDEN, "forbidden"),
            Self::NotFound | Self::UnknownDestination | Self::UnknownApplication | Self::NoRoute => {
                (StatusCode::NOT_FOUND, "not_found")
            }
            Self::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            Self::BadRequest(code) => (StatusCode::BAD_REQUEST, code),
            Self::Invalid { part: Part::Query, .. } => (StatusCode::BAD_REQUEST, "invalid_query"),
            Self::Invalid { part: Part::Path, .. } => (StatusCode::BAD_REQUEST, "invalid_path"),
            Self::Invalid { part: Part::Body, .. } => (StatusCode::BAD_REQUEST, "invalid_body"),
            Self::UnsupportedMediaType => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
            Self::Body(BodyError::TooLarge { .. }) => (StatusCode::PAYLOAD_TOO_LARGE, "body_size"),
            Self::Body(BodyError::Timeout) => (StatusCode::REQUEST_TIMEOUT, "body_timeout"),
            Self::Body(_) => (StatusCode::BAD_REQUEST, "body_unreadable"),
            Self::Store(_) => (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable"),
        }
    }

    /// One sentence for a person reading the answer.
    fn detail(&self) -> String {
        match self {
            Self::Unauthorized => "send one of the admin tokens as Authorization: Bearer <token>".to_owned(),
            Self::Forbidden => "this token may only read; changes need an operate token".to_owned(),
            Self::NotFound => "no such event".to_owned(),
            Self::UnknownDestination => "no destination of that name".to_owned(),
            Self::UnknownApplication => "no such application, or no such endpoint or message of it".to_owned(),
            Self::NoRoute => "no such path in the admin API (see /admin/v1/openapi.json)".to_owned(),
            Self::MethodNotAllowed => "this path does not take this method (see /admin/v1/openapi.json)".to_owned(),
            Self::BadRequest(code) => explain(code).to_owned(),
            Self::Invalid { detail, .. } => detail.clone(),
            Self::UnsupportedMediaType => "send the body as Content-Type: application/json".to_owned(),
            Self::Body(err) => err.to_string(),
            Self::Store(_) => "the store cannot be read or written now; try again".to_owned(),
        }
    }
}

/// The sentence for each stable code of a refused filter.
fn explain(code: &str) -> &'static str {
    match code {
        "unknown_state" => {
            "state must be a job state (pending, running, succeeded, retrying, dead, superseded) or unmatched"
        }
        "unknown_destination" => "to must name a configured destination",
        "unknown_action" => "action must be replay, replay_to, retry or enable",
        "state_not_replayable" => "a replay takes state dead, superseded or succeeded",
        "state_not_waiting" => "a retry takes state pending or retrying",
        "state_not_for_replay_to" => "with to, state is absent or unmatched",
        "destination_with_to" => "destination and to cannot be given together",
        "bad_cursor" => "the cursor must be one a previous page gave",
        _ => "the request names something the admin API does not know",
    }
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        let (status, error) = self.status_and_code();
        if let Self::Store(err) = &self {
            tracing::warn!(error = %err, "admin request failed");
        }
        let mut response = (status, Json(json!({ "error": error, "detail": self.detail() }))).into_response();
        let headers = response.headers_mut();
        match self {
            Self::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            // The rest of an oversized or broken body may still be in flight.
            Self::Body(_) => {
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            _ => {}
        }
        response
    }
}

/// `404 {"error":"not_found",…}`, the admin router's fallback.
pub(crate) async fn no_route() -> AdminError {
    AdminError::NoRoute
}

/// `405 {"error":"method_not_allowed",…}`, the admin router's method fallback.
pub(crate) async fn wrong_method() -> AdminError {
    AdminError::MethodNotAllowed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_admin_error_has_its_one_status_and_a_detail() {
        let cases = [
            (AdminError::Unauthorized, 401),
            (AdminError::Forbidden, 403),
            (AdminError::NotFound, 404),
            (AdminError::UnknownDestination, 404),
            (AdminError::UnknownApplication, 404),
            (AdminError::BadRequest("bad_cursor"), 400),
            (AdminError::MethodNotAllowed, 405),
            (AdminError::BadRequest("unknown_state"), 400),
            (AdminError::Invalid { part: Part::Query, detail: "x".to_owned() }, 400),
            (AdminError::UnsupportedMediaType, 415),
            (AdminError::Body(BodyError::TooLarge { limit: 1 }), 413),
            (AdminError::Store(StoreError::NotOpen), 503),
        ];
        for (error, status) in cases {
            assert!(!error.detail().is_empty(), "{error:?}");
            let response = error.into_response();
            assert_eq!(response.status().as_u16(), status);
            assert_eq!(response.headers().contains_key(header::WWW_AUTHENTICATE), status == 401);
        }
    }
}
