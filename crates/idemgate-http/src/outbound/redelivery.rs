//! Sending messages again by hand: `v1.message-attempt.resend` (one message to one
//! endpoint, 202 `{}`) and `v1.endpoint.recover` (an endpoint's failed messages created
//! in `[since, until)`, 202 `RecoverOut`). Both make the existing job of (message,
//! endpoint) due again in one transaction, marked manual (`triggerType` 1); the message
//! keeps its id, so the `webhook-id` is the same and the `webhook-timestamp` new
//! (`docs/design/outbound-api.md` §3.3). A resend of a message never sent to that
//! endpoint is 404, as Svix's; a disabled endpoint is 409 `endpoint_disabled`.

use std::sync::Arc;

use axum::{Router, body::Bytes, extract::Path, response::Response, routing::post};
use idemgate_core::outbound::id::{PAYLOAD_LEN, TaskId};
use idemgate_store::{
    audit::Actor,
    outbound::{
        Lookup, OutboundError,
        redelivery::{Recovery, Resent},
    },
};
use serde_json::json;

use super::{
    ApiState, Shared,
    auth::By,
    body,
    wire::{RecoverIn, RecoverOut, WireTime},
};
use crate::answer::{Done, OutboundAnswer, api_not_found};

/// How far back a recovery may reach: 14 days, and 5 minutes for the caller's clock
/// (Svix's `recover_failed_webhooks`).
const RECOVER_MAX_AGE_MS: i64 = 14 * 86_400_000 + 5 * 60_000;

pub(super) fn routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route("/app/{app_id}/msg/{msg_id}/endpoint/{endpoint_id}/resend", post(resend).fallback(api_not_found))
        .route("/app/{app_id}/endpoint/{endpoint_id}/recover", post(recover).fallback(api_not_found))
}

/// `POST …/msg/{msg_id}/endpoint/{endpoint_id}/resend`: 202 `{}` once the job is due
/// (or already being attempted) and the commit durable.
async fn resend(
    state: Shared,
    By(by): By,
    Path((app, msg, ep)): Path<(String, String, String)>,
) -> Result<Response, OutboundAnswer> {
    resend_to(&state, Lookup::application(&app), Lookup::message(&msg), Lookup::endpoint(&ep), &by).await?;
    Ok(Done::Accepted.with(json!({})))
}

/// Sends the message `msg` of the application `app` again to its endpoint `ep`, by `by`:
/// what `resend` and the portal's "Resend" do.
pub(crate) async fn resend_to(
    state: &ApiState,
    app: Lookup,
    msg: Lookup,
    ep: Lookup,
    by: &Actor,
) -> Result<Resent, OutboundError> {
    state.store.resend_message(app, msg, ep, by, state.now_ms()).await
}

/// Makes the failed messages of the endpoint `ep` of the application `app` in the range
/// `input` asks at `now_ms` due again, by `by` ([`recovery`] checks the range): what
/// `recover` and the portal's recovery do. Answers how many.
pub(crate) async fn recover_failed(
    state: &ApiState,
    app: Lookup,
    ep: Lookup,
    input: &RecoverIn,
    by: &Actor,
    now_ms: i64,
) -> Result<usize, OutboundAnswer> {
    let range = recovery(input, now_ms)?;
    Ok(state.store.recover_endpoint(app, ep, range, by, now_ms).await?)
}

/// `POST …/endpoint/{endpoint_id}/recover`: 202 `RecoverOut`, `finished`: the recovery
/// is done in the request's transaction.
async fn recover(
    state: Shared,
    By(by): By,
    Path((app, ep)): Path<(String, String)>,
    bytes: Bytes,
) -> Result<Response, OutboundAnswer> {
    let input: RecoverIn = body::json(&bytes)?;
    let now = state.now_ms();
    recover_failed(&state, Lookup::application(&app), Lookup::endpoint(&ep), &input, &by, now).await?;
    let mut random = [0; PAYLOAD_LEN];
    getrandom::fill(&mut random).map_err(|_| OutboundAnswer::Unavailable)?;
    let task = TaskId::generate(now, random).map_err(|_| OutboundAnswer::Unavailable)?;
    Ok(Done::Accepted.with(RecoverOut::finished(task.to_string(), WireTime(now))))
}

/// The range a recovery asked at `now_ms` covers: `until` defaults to now; a `since` more
/// than 14 days and 5 minutes back is refused at `["body","since"]`, as Svix does.
fn recovery(input: &RecoverIn, now_ms: i64) -> Result<Recovery, OutboundAnswer> {
    if input.since.0 < now_ms.saturating_sub(RECOVER_MAX_AGE_MS) {
        return Err(OutboundAnswer::invalid(
            &["body", "since"],
            "Cannot recover messages more than 14 days old.",
            "value_error",
        ));
    }
    let until_ms = input.until.map_or(now_ms, |until| until.0);
    Ok(Recovery { since_ms: input.since.0, until_ms })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000_000;

    #[test]
    fn a_recovery_reaches_back_14_days_and_5_minutes_and_ends_now_unless_told() {
        let oldest = NOW - RECOVER_MAX_AGE_MS;
        let asked = RecoverIn { since: WireTime(oldest), until: None };
        assert_eq!(recovery(&asked, NOW), Ok(Recovery { since_ms: oldest, until_ms: NOW }));
        let bounded = RecoverIn { since: WireTime(oldest), until: Some(WireTime(NOW - 1)) };
        assert_eq!(recovery(&bounded, NOW).map(|r| r.until_ms), Ok(NOW - 1));
        let Err(OutboundAnswer::Invalid(items)) =
            recovery(&RecoverIn { since: WireTime(oldest - 1), until: None }, NOW)
        else {
            panic!("a since one millisecond too old is refused");
        };
        assert_eq!(items[0].loc, ["body", "since"]);
    }
}
