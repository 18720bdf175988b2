//! Proxy mode's own answers, given instead of the upstream's.

use axum::{
    Json,
    response::{IntoResponse, Response},
};
use http::StatusCode;
use serde_json::json;

use super::problem;
use crate::{body::BodyError, idempotency::Refusal};

/// Why proxy mode answered itself instead of the upstream.
///
/// | what | status | body |
/// |---|---|---|
/// | a `.` or `..` path segment, plain or percent-encoded | 400 | problem+json |
/// | request body over `max_body`, too slow, broken | 413 / 408 / 400 | problem+json, as the layer's |
/// | upstream did not answer in time | 504 | `{"error":"upstream_unavailable"}` |
/// | upstream unreachable or broke off | 502 | `{"error":"upstream_unavailable"}` |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyAnswer {
    /// The path has a dot segment, which could climb above the upstream's base path.
    DotSegment,
    /// The request body could not be read.
    Body(BodyError),
    /// The upstream request failed.
    Upstream {
        /// Whether it failed by running out of time.
        timed_out: bool,
    },
}

impl IntoResponse for ProxyAnswer {
    fn into_response(self) -> Response {
        match self {
            Self::DotSegment => problem(
                StatusCode::BAD_REQUEST,
                "the path has a dot segment (\".\" or \"..\", also percent-encoded)",
                None,
            ),
            Self::Body(err) => Refusal::from(err).into_response(),
            Self::Upstream { timed_out } => {
                let status = if timed_out { StatusCode::GATEWAY_TIMEOUT } else { StatusCode::BAD_GATEWAY };
                (status, Json(json!({ "error": "upstream_unavailable" }))).into_response()
            }
        }
    }
}
