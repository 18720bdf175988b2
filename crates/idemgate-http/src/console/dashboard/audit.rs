//! The dashboard's audit page at `/admin/audit`: the newest actions that changed the
//! queue's state (who, when, what, on what, how many), filtered by token and action as
//! `GET /admin/v1/audit` is. Any signed-in session may read it.

use std::fmt::Write as _;

use axum::{
    extract::{Query, State},
    http::HeaderMap,
    response::{IntoResponse, Response},
};
use idemgate_store::audit::{Action, AuditFilter};
use serde::Deserialize;

use super::{
    layout::{esc, time_html},
    page::shown,
    session::signed_in,
};
use crate::console::{
    state::AdminState,
    views::{self, AuditEntry},
};

/// How many entries the page shows.
const SHOWN: usize = 200;

/// The page's filters, from its own form.
#[derive(Debug, Default, Deserialize)]
pub(super) struct AuditQuery {
    #[serde(default)]
    token: String,
    #[serde(default)]
    action: String,
}

pub(super) async fn page(
    State(state): State<AdminState>,
    headers: HeaderMap,
    Query(query): Query<AuditQuery>,
) -> Response {
    let session = match signed_in(&state, &headers).await {
        Ok(session) => session,
        Err(answer) => return answer.into_response(),
    };
    let filter = AuditFilter {
        token: Some(query.token.clone()).filter(|t| !t.is_empty()),
        action: Action::parse(&query.action),
        limit: SHOWN,
        ..AuditFilter::default()
    };
    let rendered =
        views::audit(&state.store, filter).await.map(|entries| Some(render(&query, &entries, state.clock.now())));
    shown("idemgate: audit log", &[], &esc(&session.csrf), rendered)
}

/// The filter form and the table, newest first.
fn render(query: &AuditQuery, entries: &[AuditEntry], now: idemgate_core::UnixTime) -> String {
    let mut options = String::from("<option value=\"\">any</option>");
    for action in Action::ALL {
        let selected = if query.action == action.as_str() { " selected" } else { "" };
        let _ = write!(options, "<option value=\"{action}\"{selected}>{action}</option>");
    }
    let mut html = format!(
        "<form method=\"get\" class=\"fields\" action=\"/admin/audit\"><label>Token <input id=\"audit-token\" name=\"token\" \
         value=\"{}\"></label> <label>Action <select id=\"audit-action\" name=\"action\">{options}</select></label> \
         <button type=\"submit\">Filter</button></form>\
         <table id=\"audit\"><tr><th>when</th><th>token</th><th>action</th><th>target</th><th>affected</th></tr>",
        esc(&query.token)
    );
    for e in entries {
        let _ = write!(
            html,
            "<tr><td>{}</td><td class=\"token\">{}</td><td class=\"action\">{}</td><td class=\"target\">{}</td>\
             <td class=\"affected\">{}</td></tr>",
            time_html(idemgate_core::UnixTime(e.at), now),
            esc(&e.token),
            esc(&e.action),
            esc(&e.target),
            e.affected
        );
    }
    html.push_str("</table>");
    if entries.is_empty() {
        html.push_str("<p>No action recorded.</p>");
    }
    html
}

#[cfg(test)]
mod tests {
    use idemgate_core::UnixTime;

    use super::*;

    #[test]
    fn entries_are_escaped_and_the_chosen_action_stays_selected() {
        let entry = AuditEntry {
            id: 1,
            at: 1_796_147_038,
            token: "ops".into(),
            action: "replay".into(),
            target: "event gh/<b>".into(),
            affected: 2,
        };
        let query = AuditQuery { token: "o\"ps".into(), action: "retry".into() };
        let html = render(&query, &[entry], UnixTime(1_796_147_038 + 60));
        assert!(html.contains("<td class=\"target\">event gh/&lt;b&gt;</td>"), "{html}");
        assert!(html.contains("value=\"o&quot;ps\""), "{html}");
        assert!(html.contains("<option value=\"retry\" selected>retry</option>"), "{html}");
        assert!(html.contains("<td class=\"affected\">2</td>") && !html.contains("No action recorded"), "{html}");
        assert!(render(&AuditQuery::default(), &[], UnixTime(0)).contains("No action recorded."));
    }
}
