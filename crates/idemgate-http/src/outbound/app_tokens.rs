//! `POST /auth/app-portal-access/{app_id}` and `POST /auth/logout`: an application's token
//! (`docs/design/outbound-api.md` §3.9). Access issues an opaque random token that sees one
//! application, kept in the store as its SHA-256 (never the token) with its expiry, so
//! every instance on one store knows it; logout deletes the one the call presents.
//!
//! The answer's `url` opens idemgate's own portal (`crate::portal`) when it is served
//! (`[api] public_url` set): `{public_url}/portal/enter#{login}`, a single-use login kept
//! beside the token, valid ten minutes; else it is the one Svix's open-source server gives
//! (its fixed page about the app portal). The token and the link are shown once: the
//! `Idempotency-Key` record of the answer keeps its status, not its body.

use std::sync::Arc;

use axum::{
    Extension, Router,
    body::Bytes,
    extract::Path,
    response::{IntoResponse, Response},
    routing::post,
};
use idemgate_store::{
    outbound::{
        Lookup,
        app_token::{DEFAULT_LIFETIME_MS, NewAppToken},
    },
    session::{LOGIN_LIFETIME_MS, NewPortalLogin},
};

use super::{
    ApiState, By, Caller, Shared,
    auth::new_app_token,
    body, messages,
    wire::{AppPortalAccessIn, AppPortalAccessOut},
};
use crate::{
    access,
    answer::{Done, OutboundAnswer, api_not_found},
    idempotency::BodyNotStored,
};

/// The `url` Svix's open-source server answers (`v1/endpoints/auth.rs`), given when
/// idemgate's portal is not served.
pub(crate) const PORTAL_URL: &str = "https://docs.svix.com/app-portal/oss";

/// The shortest and longest `expiry` a caller may ask for, in seconds (the SDK's range).
const EXPIRY_SECONDS: std::ops::RangeInclusive<u64> = 3_600..=604_800;

pub(super) fn routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route("/auth/app-portal-access/{app_id}", post(portal_access).fallback(api_not_found))
        .route("/auth/logout", post(logout).fallback(api_not_found))
}

/// Issues a token for the application the path names (created first from the body's
/// `application` when the path's uid names none): 200 `AppPortalAccessOut`.
async fn portal_access(
    state: Shared,
    By(by): By,
    Path(app): Path<String>,
    bytes: Bytes,
) -> Result<Response, OutboundAnswer> {
    let input: AppPortalAccessIn = if bytes.is_empty() { AppPortalAccessIn::default() } else { body::json(&bytes)? };
    let lifetime_ms = lifetime_ms(input.expiry)?;
    let lookup = Lookup::application(&app);
    if input.application.is_some() && state.store.application(lookup.clone()).await?.is_none() {
        messages::create_application(&state, &lookup, input.application, &by).await?;
    }
    let mut random = [0; 32];
    getrandom::fill(&mut random).map_err(|_| OutboundAnswer::Unavailable)?;
    let token = new_app_token(random);
    let now = state.now_ms();
    let (login, url) = match &state.portal_url {
        Some(base) => {
            getrandom::fill(&mut random).map_err(|_| OutboundAnswer::Unavailable)?;
            let login = hex::encode(random);
            let expires_at_ms = now.saturating_add(LOGIN_LIFETIME_MS);
            let url = format!("{base}{}/enter#{login}", crate::portal::PREFIX);
            (Some(NewPortalLogin { digest: access::digest(login.as_bytes()), expires_at_ms }), url)
        }
        None => (None, PORTAL_URL.to_owned()),
    };
    let new =
        NewAppToken { digest: access::digest(token.expose()), expires_at_ms: now.saturating_add(lifetime_ms), login };
    state.store.issue_app_token(lookup, new, &by, now).await?;
    let token = String::from_utf8_lossy(token.expose()).into_owned();
    let mut answer = Done::Ok.with(AppPortalAccessOut { token, url });
    answer.extensions_mut().insert(BodyNotStored);
    Ok(answer)
}

/// Revokes the application token the call presents: 204. Any other token is 400 (Svix's
/// open-source server answers 501 to every logout).
async fn logout(state: Shared, Extension(caller): Extension<Caller>) -> Result<Response, OutboundAnswer> {
    if caller.app.is_none() {
        return Err(OutboundAnswer::BadRequest {
            code: "not_an_app_token",
            detail: "Only an application's token can be logged out.",
        });
    }
    state.store.revoke_app_token(caller.digest, &caller.actor(), state.now_ms()).await?;
    Ok(OutboundAnswer::NoContent.into_response())
}

/// A token's lifetime: `expiry` seconds when given (one hour to seven days), else seven days.
fn lifetime_ms(expiry: Option<u64>) -> Result<i64, OutboundAnswer> {
    let Some(seconds) = expiry else { return Ok(DEFAULT_LIFETIME_MS) };
    if !EXPIRY_SECONDS.contains(&seconds) {
        return Err(OutboundAnswer::invalid(
            &["body", "expiry"],
            format!("ensure this value is between {} and {}", EXPIRY_SECONDS.start(), EXPIRY_SECONDS.end()),
            "value_error.number",
        ));
    }
    Ok(i64::try_from(seconds * 1000).unwrap_or(DEFAULT_LIFETIME_MS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_lives_seven_days_or_the_expiry_asked_within_an_hour_and_a_week() {
        assert_eq!(lifetime_ms(None), Ok(604_800_000));
        assert_eq!(lifetime_ms(Some(3_600)), Ok(3_600_000));
        assert_eq!(lifetime_ms(Some(604_800)), Ok(604_800_000));
        for refused in [0, 3_599, 604_801, u64::MAX] {
            assert!(matches!(lifetime_ms(Some(refused)), Err(OutboundAnswer::Invalid(_))), "{refused}");
        }
    }
}
