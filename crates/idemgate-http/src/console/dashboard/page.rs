//! The answer for a page once rendered: the page in its signed-in frame, or the
//! dashboard's answer when its subject is missing or the store could not be read.

use axum::response::{IntoResponse, Response};
use idemgate_store::StoreError;

use super::layout::signed_in_layout;
use crate::answer::DashboardAnswer;

/// What a page's render gives: its body, or `None` for a thing that is not there.
pub(super) type Rendered = Result<Option<String>, StoreError>;

/// The answer for a rendered page: the page (under `crumbs`, its parents' links and
/// names, if it has any), `404` for `None`, `503` if the store failed.
pub(super) fn shown(title: &str, crumbs: &[(&str, &str)], csrf: &str, rendered: Rendered) -> Response {
    match rendered {
        Ok(Some(body)) => signed_in_layout(title, crumbs, csrf, &body).into_response(),
        Ok(None) => DashboardAnswer::NotFound.into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "dashboard could not read the store");
            DashboardAnswer::StoreUnreadable.into_response()
        }
    }
}
