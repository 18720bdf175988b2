//! `/admin/login` and `/admin/logout`: signing in with an admin token starts a session in
//! the store and sets its cookie; signing out ends it in the store, so on every instance.

use axum::{
    Form,
    extract::State,
    http::{HeaderMap, HeaderValue, header},
    response::{Html, IntoResponse, Redirect, Response},
};
use serde::Deserialize;

use super::{
    layout::sign_in_page,
    session::{COOKIE, form_session, from_own_origin, over_https},
};
use crate::{answer::DashboardAnswer, console::state::AdminState};

fn session_cookie(id: &str, max_age: u64, https: bool) -> Option<HeaderValue> {
    let secure = if https { "; Secure" } else { "" };
    HeaderValue::from_str(&format!("{COOKIE}={id}; Path=/admin; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}"))
        .ok()
}

fn with_cookie(mut response: Response, cookie: Option<HeaderValue>) -> Response {
    if let Some(cookie) = cookie {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

pub(super) async fn login_form() -> Html<String> {
    sign_in_page(None)
}

#[derive(Deserialize)]
pub(super) struct Login {
    token: String,
}

pub(super) async fn login(State(state): State<AdminState>, headers: HeaderMap, Form(form): Form<Login>) -> Response {
    if !from_own_origin(&headers, state.tls) {
        return DashboardAnswer::Refused.into_response();
    }
    let Some(principal) = state.tokens.identify(form.token.as_bytes()) else {
        return DashboardAnswer::WrongToken.into_response();
    };
    match state.sessions.start(&principal, state.clock.now_ms()).await {
        Ok(session) => {
            let cookie =
                session_cookie(&session.id, state.sessions.lifetime().as_secs(), over_https(&headers, state.tls));
            with_cookie(Redirect::to("/admin/").into_response(), cookie)
        }
        Err(err) => {
            tracing::error!(error = %err, "cannot start a dashboard session");
            DashboardAnswer::NoSession.into_response()
        }
    }
}

#[derive(Deserialize)]
pub(super) struct SignOut {
    #[serde(default)]
    csrf: String,
}

pub(super) async fn logout(State(state): State<AdminState>, headers: HeaderMap, Form(form): Form<SignOut>) -> Response {
    let session = match form_session(&state, &headers, &form.csrf).await {
        Ok(session) => session,
        Err(refusal) => return refusal.into_response(),
    };
    if let Err(err) = state.sessions.end(&session.id).await {
        tracing::error!(error = %err, "cannot end a dashboard session");
        return DashboardAnswer::SignOutFailed.into_response();
    }
    with_cookie(Redirect::to("/admin/login").into_response(), session_cookie("", 0, over_https(&headers, state.tls)))
}
