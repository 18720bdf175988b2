//! The admin API's own answers when it does not answer with a view: every refusal and
//! failure of `/admin/v1`, each with one status, as `{"error": code}`.
//!
//! | what | status | body |
//! |---|---|---|
//! | missing or wrong bearer token | 401 + `WWW-Authenticate: Bearer` | `{"error":"unauthorized"}` |
//! | a `read` token asking to change state | 403 | `{"error":"forbidden"}` |
//! | no such event | 404 | `{"error":"not_found"}` |
//! | a filter the API does not know | 400 | `{"error": why}` (`unknown_state`, `state_not_replayable`, `state_not_waiting`) |
//! | the store cannot be read or written | 503 | `{"error":"store_unavailable"}` |
//!
//! An admin request body over its limit, too slow or broken is answered as a delivery's
//! ([`super::DeliveryAnswer::Unreadable`]); an unknown path as every router's
//! [`super::not_found`].

use axum::{
    Json,
    response::{IntoResponse, Response},
};
use http::{HeaderValue, StatusCode, header};
use idemgate_store::StoreError;
use serde_json::json;

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
    /// A query or body names what the API does not know, with a stable code for it.
    BadRequest(&'static str),
    /// The store failed; logged, never shown.
    Store(StoreError),
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

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        let challenge = matches!(self, Self::Unauthorized);
        let (status, error) = match self {
            Self::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            Self::Forbidden => (StatusCode::FORBIDDEN, "forbidden"),
            Self::NotFound => (StatusCode::NOT_FOUND, "not_found"),
            Self::BadRequest(why) => (StatusCode::BAD_REQUEST, why),
            Self::Store(err) => {
                tracing::warn!(error = %err, "admin request failed");
                (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable")
            }
        };
        let mut response = (status, Json(json!({ "error": error }))).into_response();
        if challenge {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_admin_error_has_its_one_status() {
        let cases = [
            (AdminError::Unauthorized, 401),
            (AdminError::Forbidden, 403),
            (AdminError::NotFound, 404),
            (AdminError::BadRequest("unknown_state"), 400),
            (AdminError::Store(StoreError::NotOpen), 503),
        ];
        for (error, status) in cases {
            let response = error.into_response();
            assert_eq!(response.status().as_u16(), status);
            assert_eq!(response.headers().contains_key(header::WWW_AUTHENTICATE), status == 401);
        }
    }
}
