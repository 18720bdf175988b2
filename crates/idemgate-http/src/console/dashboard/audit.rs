//! The dashboard's audit page at `/admin/audit`: the newest actions that changed the
//! queue's state (who, when, what, on what, how many), filtered by token and action as
//! `GET /admin/v1/audit` is. Any signed-in session may read it.

use axum::{
    extract::{Query, State},
    http::HeaderMap,
    response::{IntoResponse, Response},
};
use idemgate_store::audit::{Action, AuditFilter};
use serde::Deserialize;

use super::{page::shown, session::signed_in};
use crate::console::ui::{Control, Field, Table, cell, esc, time_html};
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
    let actions: Vec<(&str, &str)> =
        [("", "any")].into_iter().chain(Action::ALL.iter().map(|a| (a.as_str(), a.as_str()))).collect();
    let mut html = format!(
        "<form method=\"get\" class=\"fields\" action=\"/admin/audit\">{}{}<button type=\"submit\">Filter</button></form>",
        Field::new("audit-token", "token", "Token", Control::Text).value(&query.token).html(),
        Field::new("audit-action", "action", "Action", Control::Select(&actions)).value(&query.action).html(),
    );
    let mut table = Table::new("audit", &["when", "token", "action", "target", "affected"]);
    for e in entries {
        table.row([
            cell(time_html(idemgate_core::UnixTime(e.at), now)),
            cell(esc(&e.token)).class("token"),
            cell(esc(&e.action)).class("action"),
            cell(esc(&e.target)).class("target"),
            cell(e.affected.to_string()).class("affected"),
        ]);
    }
    html.push_str(&table.html());
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
        assert!(html.contains("<td class=\"target\" data-label=\"target\">event gh/&lt;b&gt;</td>"), "{html}");
        assert!(html.contains("<label for=\"audit-token\">Token</label>"), "{html}");
        assert!(html.contains("value=\"o&quot;ps\""), "{html}");
        assert!(html.contains("<option value=\"retry\" selected>retry</option>"), "{html}");
        assert!(
            html.contains("<td class=\"affected\" data-label=\"affected\">2</td>")
                && !html.contains("No action recorded"),
            "{html}"
        );
        assert!(render(&AuditQuery::default(), &[], UnixTime(0)).contains("No action recorded."));
    }
}
