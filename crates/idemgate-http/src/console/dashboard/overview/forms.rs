//! The overview's buttons and what they post to: a dead job's replay, and a destination's
//! buttons (replay its dead jobs, make its waiting jobs due now, enable it), which the
//! destinations page shows too. Each answers with a redirect back to the overview.

use axum::{
    Form,
    extract::State,
    http::HeaderMap,
    response::{IntoResponse, Redirect, Response},
};
use idemgate_core::job::JobState;
use idemgate_store::{
    audit::{Action, Audit, target},
    jobs::ReplayFilter,
};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;

use crate::{
    answer::DashboardAnswer,
    console::{dashboard::session::operate_session, state::AdminState, ui::esc, views::DestinationView},
};

/// How many jobs one click of "Replay dead jobs" replays at most, per write transaction.
const REPLAY_BATCH: usize = 500;

/// A dead job's replay button; `src` and `id` are escaped already, as is `csrf`.
pub(super) fn replay_button(src: &str, id: &str, csrf: &str) -> String {
    format!(
        "<form method=\"post\" action=\"/admin/replay\"><input type=\"hidden\" name=\"source\" value=\"{src}\">\
         <input type=\"hidden\" name=\"identity\" value=\"{id}\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <button class=\"replay\" type=\"submit\">Replay</button></form>"
    )
}

/// How many of a destination's jobs are in any of `states`.
fn jobs_in(d: &DestinationView, states: &[JobState]) -> u64 {
    states.iter().filter_map(|s| d.jobs.get(s.as_str())).sum()
}

/// A destination's buttons, each only when it has something to act on: replay its dead
/// jobs, make its waiting jobs due now, enable it when disabled or paused.
pub(in crate::console::dashboard) fn destination_forms(d: &DestinationView, csrf: &str) -> String {
    let name = esc(&d.name);
    let form = |action: &str, class: &str, label: String| {
        format!(
            "<form method=\"post\" action=\"/admin/{action}\"><input type=\"hidden\" name=\"destination\" \
             value=\"{name}\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <button class=\"{class}\" type=\"submit\">{label}</button></form>"
        )
    };
    let mut html = String::new();
    let dead = jobs_in(d, &[JobState::Dead]);
    if dead > 0 {
        html.push_str(&form("replay-dead", "replay-dead", format!("Replay all {dead} dead job(s) of {name}")));
    }
    if jobs_in(d, &[JobState::Pending, JobState::Retrying]) > 0 {
        html.push_str(&form("retry", "retry", "Retry waiting jobs now".to_owned()));
    }
    if d.disabled_at.is_some() || d.breaker.paused {
        html.push_str(&form("enable", "enable", "Enable".to_owned()));
    }
    html
}

#[derive(Deserialize)]
pub(in crate::console::dashboard) struct ReplayForm {
    source: String,
    identity: String,
    #[serde(default)]
    csrf: String,
}

/// Replays one event's finished jobs (a dead job's button).
pub(in crate::console::dashboard) async fn replay(
    State(state): State<AdminState>,
    headers: HeaderMap,
    Form(form): Form<ReplayForm>,
) -> Response {
    let session = match operate_session(&state, &headers, &form.csrf).await {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    let filter = ReplayFilter { source: Some(form.source), identity: Some(form.identity), ..ReplayFilter::default() };
    let audit = Audit::new(session.principal.name, Action::Replay, target::filter(&filter));
    match state.store.audited(audit).replay_jobs(filter, state.clock.now(), 1000).await {
        Ok(_) => Redirect::to("/admin/").into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "dashboard replay failed");
            DashboardAnswer::ReplayFailed.into_response()
        }
    }
}

#[derive(Deserialize)]
pub(in crate::console::dashboard) struct DestinationForm {
    destination: String,
    #[serde(default)]
    csrf: String,
}

/// Makes the destination's pending and retrying jobs due now, as `idemgate events retry
/// --destination` does.
pub(in crate::console::dashboard) async fn retry(
    State(state): State<AdminState>,
    headers: HeaderMap,
    Form(form): Form<DestinationForm>,
) -> Response {
    let session = match operate_session(&state, &headers, &form.csrf).await {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    let filter = ReplayFilter { destination: Some(form.destination), ..ReplayFilter::default() };
    let audit = Audit::new(session.principal.name, Action::Retry, target::filter(&filter));
    match state.store.audited(audit).retry_now(filter, state.clock.now_ms()).await {
        Ok(_) => Redirect::to("/admin/").into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "dashboard retry failed");
            DashboardAnswer::RetryFailed.into_response()
        }
    }
}

/// Resumes a disabled or paused destination, as `idemgate destination enable` does.
pub(in crate::console::dashboard) async fn enable(
    State(state): State<AdminState>,
    headers: HeaderMap,
    Form(form): Form<DestinationForm>,
) -> Response {
    let session = match operate_session(&state, &headers, &form.csrf).await {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    let audit = Audit::new(session.principal.name, Action::Enable, target::destination(&form.destination));
    match state.store.audited(audit).enable_destination(form.destination, state.clock.now()).await {
        Ok(_) => Redirect::to("/admin/").into_response(),
        Err(err) => {
            tracing::warn!(error = %err, "dashboard enable failed");
            DashboardAnswer::EnableFailed.into_response()
        }
    }
}

/// Replays every dead job of one destination, as the admin API's `POST /admin/v1/replay`
/// with `destination` and `state: dead` does, and says how many on the overview.
pub(in crate::console::dashboard) async fn replay_dead(
    State(state): State<AdminState>,
    headers: HeaderMap,
    Form(form): Form<DestinationForm>,
) -> Response {
    let session = match operate_session(&state, &headers, &form.csrf).await {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    let filter = ReplayFilter {
        destination: Some(form.destination.clone()),
        state: Some(JobState::Dead),
        ..ReplayFilter::default()
    };
    let audit = Audit::new(session.principal.name, Action::Replay, target::filter(&filter));
    let now = state.clock.now();
    match state.store.audited(audit).replay_all(filter, now, REPLAY_BATCH, |_, _| std::future::ready(())).await {
        Ok(n) => {
            let name = utf8_percent_encode(&form.destination, NON_ALPHANUMERIC);
            Redirect::to(&format!("/admin/?replayed={n}&destination={name}")).into_response()
        }
        Err(err) => {
            tracing::warn!(error = %err, "dashboard replay of a destination's dead jobs failed");
            DashboardAnswer::ReplayFailed.into_response()
        }
    }
}
