//! `/admin/rejections`: deliveries refused before the store, by source and bounded reason
//! (counted in memory since the process started: nothing of a rejected delivery is
//! stored), and the conflicting repeats the store recorded (same identity, other bytes).

use std::fmt::Write as _;

use axum::{
    extract::State,
    http::HeaderMap,
    response::{IntoResponse, Response},
};

use super::{Rendered, esc, shown, signed_in, time_html};
use crate::{admin::AdminState, answer::DashboardAnswer};

/// The rejections page.
pub(super) async fn page(State(state): State<AdminState>, headers: HeaderMap) -> Response {
    let Some(session) = signed_in(&state, &headers) else {
        return DashboardAnswer::SignedOut.into_response();
    };
    let csrf = esc(&session.csrf);
    shown("idemgate: rejections and conflicts", &csrf, render(&state).await)
}

async fn render(state: &AdminState) -> Rendered {
    let now = state.clock.now();
    let mut html = String::from(
        "<h2>Rejections since start</h2><table id=\"rejections\"><tr><th>source</th><th>reason</th><th>count</th></tr>",
    );
    let rejections = state.rejections.snapshot();
    for (source, reason, count) in &rejections {
        let _ = write!(html, "<tr><td>{}</td><td>{reason}</td><td class=\"count\">{count}</td></tr>", esc(source));
    }
    html.push_str("</table>");
    if rejections.is_empty() {
        html.push_str("<p id=\"no-rejections\">None since the process started.</p>");
    }
    html.push_str(
        "<h2>Conflicts</h2><table id=\"conflicts\"><tr><th>source</th><th>identity</th><th>times seen</th>\
         <th>last seen</th></tr>",
    );
    for c in state.store.recent_conflicts(100).await? {
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&c.source),
            esc(&c.identity),
            c.seen_count,
            time_html(c.last_seen_at, now)
        );
    }
    html.push_str("</table>");
    Ok(Some(html))
}
