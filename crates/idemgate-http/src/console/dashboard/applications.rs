//! `/admin/applications`: the sending side's applications (issue 37), a page at a time by
//! id, each with its endpoints counted: how many, how many not delivering (disabled or
//! paused), how many with retrying or with dead jobs; each links to its own page
//! ([`super::application`]). Read-only: endpoints are the customer's, changed through
//! `/api/v1`.

use std::fmt::Write as _;

use axum::{
    extract::{Query, State},
    http::HeaderMap,
    response::{IntoResponse, Response},
};
use idemgate_core::UnixTime;
use idemgate_store::StoreError;
use serde::Deserialize;

use super::{
    page::{Rendered, shown},
    session::signed_in,
};
use crate::console::ui::{esc, time_html};
use crate::console::{
    applications::{self, ApplicationSummary, ViewError},
    state::AdminState,
    ui::{Cell, Table, cell, empty_state},
};

/// Applications per page.
const PAGE: usize = 50;

/// The page's cursor, as its "next" link carries it.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Cursor {
    after: Option<String>,
}

/// The applications page.
pub(super) async fn page(
    State(state): State<AdminState>,
    headers: HeaderMap,
    Query(cursor): Query<Cursor>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer.into_response(),
    };
    shown("idemgate: applications", &[], &esc(&session.csrf), render(&state, cursor.after).await)
}

async fn render(state: &AdminState, after: Option<String>) -> Rendered {
    let now = state.clock.now();
    let first = after.is_none();
    let page = applications::applications_page(&state.store, after, PAGE, now).await.map_err(store_error)?;
    if page.applications.is_empty() && first {
        return Ok(Some(empty_state(
            "no-applications",
            "No application yet: the outbound API (<code>[api]</code>, <code>/api/v1</code>) creates them.",
            "Enable <code>[api]</code> in the configuration, then create one with \
                 <code>POST /api/v1/app</code>.",
        )));
    }
    let mut table = Table::new(
        "applications",
        &["application", "uid", "endpoints", "not delivering", "retrying", "with dead jobs", "created"],
    );
    for app in &page.applications {
        table.keyed_row(("application", &app.id), cells(app, now));
    }
    let mut html = table.html();
    match &page.next_after {
        Some(next) => {
            let _ =
                write!(html, "<p><a id=\"next\" href=\"/admin/applications?after={}\">Next page</a></p>", esc(next));
        }
        None if !first => html.push_str("<p><a href=\"/admin/applications\">First page</a></p>"),
        None => {}
    }
    Ok(Some(html))
}

/// An application's cells in the listing.
fn cells(app: &ApplicationSummary, now: UnixTime) -> [Cell; 7] {
    let flagged = |n: u64| if n > 0 { format!("<span class=\"bad\">{n}</span>") } else { "0".to_owned() };
    let id = esc(&app.id);
    [
        cell(format!("<a href=\"/admin/applications/{id}\">{}</a><br><code>{id}</code>", esc(&app.name))),
        cell(esc(app.uid.as_deref().unwrap_or(""))),
        cell(app.endpoints.to_string()).class("endpoints"),
        cell(flagged(app.endpoints_not_delivering)).class("not-delivering"),
        cell(flagged(app.endpoints_retrying)).class("retrying"),
        cell(flagged(app.endpoints_with_dead_jobs)).class("dead"),
        cell(time_html(UnixTime(app.created_at), now)),
    ]
}

/// A view's failure as a page's: the store's failure (a listing has no subject to miss,
/// and the dashboard's pages follow no attempt cursor).
fn store_error(err: ViewError) -> StoreError {
    match err {
        ViewError::Store(err) => err,
        ViewError::NotFound | ViewError::BadCursor => StoreError::Malformed("an outbound view was refused"),
    }
}

/// A view of one subject as a page takes it: `None` when the subject is missing.
pub(super) fn subject<T>(view: Result<T, ViewError>) -> Result<Option<T>, StoreError> {
    applications::found(view).map_err(store_error)
}
