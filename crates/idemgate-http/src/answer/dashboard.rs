//! The dashboard's own answers when it does not show what was asked: each refusal and
//! failure of `/admin/` as one status and a page saying so (HTML, like the rest of it).
//!
//! | what | status | page |
//! |---|---|---|
//! | a form from another origin, or without the session's CSRF token | 403 | "Refused: …" |
//! | a change asked for by a session of a `read` token | 403 | "Refused: this token may only read." |
//! | no live session | 303 to `/admin/login` | |
//! | no such event | 404 | "No such event." |
//! | a form value the dashboard never offers | 400 | "Not a value this form offers." |
//! | sign-in with a wrong token | 401 | the sign-in page again: its form under "Wrong token." |
//! | a session cannot be started (no randomness, or the store cannot keep it) | 503 | the sign-in page again: its form under "Try again." |
//! | the store cannot be read for the page (its session included) | 503 | "The store cannot be read." |
//! | a session cannot be ended in the store | 503 | "Sign-out failed; try again." |
//! | a replay cannot be recorded | 503 | "Replay failed; try again." |
//! | a retry-now cannot be recorded | 503 | "Retry failed; try again." |
//! | a destination cannot be enabled | 503 | "Enable failed; try again." |

use axum::response::{IntoResponse, Redirect, Response};
use http::StatusCode;

use crate::console::dashboard::layout::{layout, sign_in_page};

/// Why the dashboard answered with a page of its own. The cause is logged where it happened;
/// the page names none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DashboardAnswer {
    /// Another origin, or a missing or wrong CSRF token: nothing was changed.
    Refused,
    /// The session's token may only read: nothing was changed.
    ReadOnly,
    /// No live session: back to the sign-in page.
    SignedOut,
    /// The token given to sign in is wrong.
    WrongToken,
    /// A session could not be started.
    NoSession,
    /// The page's subject (an event) is not there.
    NotFound,
    /// A form value the dashboard's own forms never send: nothing was changed.
    BadForm,
    /// The store could not be read for the page, or for the request's session.
    StoreUnreadable,
    /// The session could not be ended in the store: it is still signed in.
    SignOutFailed,
    /// A replay could not be recorded.
    ReplayFailed,
    /// A retry-now could not be recorded.
    RetryFailed,
    /// A destination could not be enabled.
    EnableFailed,
}

const PAGE: &str = "idemgate";

impl From<crate::access::Forbidden> for DashboardAnswer {
    fn from(_: crate::access::Forbidden) -> Self {
        Self::ReadOnly
    }
}

impl IntoResponse for DashboardAnswer {
    fn into_response(self) -> Response {
        let (status, title, message) = match self {
            Self::SignedOut => return Redirect::to("/admin/login").into_response(),
            Self::WrongToken => return (StatusCode::UNAUTHORIZED, sign_in_page(Some("Wrong token."))).into_response(),
            Self::NoSession => {
                return (StatusCode::SERVICE_UNAVAILABLE, sign_in_page(Some("Try again."))).into_response();
            }
            Self::Refused => (StatusCode::FORBIDDEN, PAGE, "Refused: this request did not come from the dashboard."),
            Self::ReadOnly => (StatusCode::FORBIDDEN, PAGE, "Refused: this token may only read."),
            Self::NotFound => (StatusCode::NOT_FOUND, PAGE, "No such event."),
            Self::BadForm => (StatusCode::BAD_REQUEST, PAGE, "Not a value this form offers."),
            Self::StoreUnreadable => (StatusCode::SERVICE_UNAVAILABLE, PAGE, "The store cannot be read."),
            Self::ReplayFailed => (StatusCode::SERVICE_UNAVAILABLE, PAGE, "Replay failed; try again."),
            Self::RetryFailed => (StatusCode::SERVICE_UNAVAILABLE, PAGE, "Retry failed; try again."),
            Self::SignOutFailed => (StatusCode::SERVICE_UNAVAILABLE, PAGE, "Sign-out failed; try again."),
            Self::EnableFailed => (StatusCode::SERVICE_UNAVAILABLE, PAGE, "Enable failed; try again."),
        };
        (status, layout(title, &format!("<p class=\"bad\">{message}</p>"))).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_dashboard_answer_has_its_one_status() {
        let cases = [
            (DashboardAnswer::Refused, 403),
            (DashboardAnswer::ReadOnly, 403),
            (DashboardAnswer::SignedOut, 303),
            (DashboardAnswer::WrongToken, 401),
            (DashboardAnswer::NoSession, 503),
            (DashboardAnswer::NotFound, 404),
            (DashboardAnswer::BadForm, 400),
            (DashboardAnswer::StoreUnreadable, 503),
            (DashboardAnswer::ReplayFailed, 503),
            (DashboardAnswer::RetryFailed, 503),
            (DashboardAnswer::EnableFailed, 503),
            (DashboardAnswer::SignOutFailed, 503),
        ];
        for (answer, status) in cases {
            assert_eq!(answer.into_response().status().as_u16(), status, "{answer:?}");
        }
    }
}
