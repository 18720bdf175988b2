//! The customer portal's answers when it does not show what was asked (`/portal`, HTML like
//! the rest of it): each refusal and failure as one status and a page saying so. A page
//! never names a value the customer sent, a secret, or the cause of a failure (that is
//! logged where it happened).
//!
//! | what | status | page |
//! |---|---|---|
//! | no live session (signed out, expired, the link used or expired) | 401 | "Your session has ended…" |
//! | a form from another origin, or without the session's CSRF token | 403 | "Refused: …" |
//! | no such endpoint, message or page (another application's ids too) | 404 | "Not found." |
//! | a change that conflicts (an endpoint disabled, a payload gone, …) | 409 | what conflicts |
//! | a form refused: the page again with each field's error | 422 | the form |
//! | the store cannot be used now | 503 | "Try again in a moment." |

use axum::response::{Html, IntoResponse, Response};
use http::StatusCode;
use idemgate_store::outbound::OutboundError;

use super::OutboundAnswer;
use crate::portal::layout::notice_page;

/// Why the portal answered with a page of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum PortalAnswer {
    /// No live portal session.
    SignedOut,
    /// Another origin, or a missing or wrong CSRF token: nothing was changed.
    Refused,
    /// Not there, or not this application's.
    NotFound,
    /// The change conflicts with the state: what conflicts, in words of our own.
    Conflict(&'static str),
    /// A form refused: the page to show again (HTML), with each field's error in it.
    Invalid(String),
    /// Fields refused where no form is shown again: what is wrong with each, in words of
    /// our own.
    Rejected(Vec<String>),
    /// The store cannot be used now.
    Unavailable,
}

impl From<OutboundError> for PortalAnswer {
    fn from(err: OutboundError) -> Self {
        match err {
            OutboundError::NotFound(_) => Self::NotFound,
            OutboundError::UidTaken(_) => Self::Conflict("Another one already has this uid."),
            OutboundError::EventTypeExists => Self::Conflict("An event type with this name exists."),
            OutboundError::StaleSecret => Self::Conflict("The secret changed meanwhile; try again."),
            OutboundError::EndpointDisabled => Self::Conflict("The endpoint is disabled: enable it first."),
            OutboundError::PayloadGone => Self::Conflict("The message's payload is gone: it cannot be sent again."),
            _ => Self::Unavailable,
        }
    }
}

impl From<OutboundAnswer> for PortalAnswer {
    fn from(answer: OutboundAnswer) -> Self {
        match answer {
            OutboundAnswer::NotFound => Self::NotFound,
            OutboundAnswer::Conflict { detail, .. } | OutboundAnswer::BadRequest { detail, .. } => {
                Self::Conflict(detail)
            }
            OutboundAnswer::Invalid(items) => Self::Rejected(items.into_iter().map(|item| item.msg).collect()),
            OutboundAnswer::Unauthenticated => Self::SignedOut,
            OutboundAnswer::Forbidden => Self::Refused,
            _ => Self::Unavailable,
        }
    }
}

impl From<idemgate_store::StoreError> for PortalAnswer {
    fn from(_: idemgate_store::StoreError) -> Self {
        Self::Unavailable
    }
}

impl IntoResponse for PortalAnswer {
    fn into_response(self) -> Response {
        let (status, title, words) = match self {
            Self::Invalid(page) => return (StatusCode::UNPROCESSABLE_ENTITY, Html(page)).into_response(),
            Self::SignedOut => (
                StatusCode::UNAUTHORIZED,
                "Signed out",
                "Your session has ended, or this link was used or has expired. Ask for a new link to the portal."
                    .to_owned(),
            ),
            Self::Refused => {
                (StatusCode::FORBIDDEN, "Refused", "Refused: this request did not come from the portal.".to_owned())
            }
            Self::NotFound => (StatusCode::NOT_FOUND, "Not found", "Not found.".to_owned()),
            Self::Conflict(what) => (StatusCode::CONFLICT, "Not done", what.to_owned()),
            Self::Rejected(reasons) => (StatusCode::UNPROCESSABLE_ENTITY, "Not done", reasons.join(" ")),
            Self::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "This cannot be done now; try again in a moment.".to_owned(),
            ),
        };
        (status, notice_page(title, &words)).into_response()
    }
}
