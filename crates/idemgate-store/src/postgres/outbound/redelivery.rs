//! Resends and recoveries on PostgreSQL (`model::outbound::redelivery`): each one
//! transaction holding the application's row `FOR SHARE` (so an endpoint disabled or
//! deleted at the same time is wholly before or after it). A finished job is replayed with
//! the operator's replay (`postgres::jobs::replay_selected`) and marked manual in the same
//! transaction.

use deadpool_postgres::GenericClient;
use idemgate_core::{UnixTime, job::JobState};

use super::{Hold, endpoint, lock_app, message};
use crate::postgres::{first_column, partitions::has_payload};
use crate::{
    PgStore, StoreError,
    audit::{Action, Actor, target},
    jobs::ReplayFilter,
    model::{
        outbound::{
            Lookup, OutboundError, Resource,
            redelivery::{Recovery, Redo, Resent},
        },
        second_of,
    },
    postgres::{audit, jobs::replay_selected},
};

/// The id of the live endpoint `ep` of `app_id`, refused when it is disabled.
async fn enabled_endpoint(tx: &impl GenericClient, app_id: &str, ep: &Lookup) -> Result<String, OutboundError> {
    let found = endpoint::find(tx, app_id, ep, false).await?.ok_or(OutboundError::NotFound(Resource::Endpoint))?;
    if found.disabled {
        return Err(OutboundError::EndpointDisabled);
    }
    Ok(found.id)
}

/// Replays the finished jobs `ids` of `destination`, all in `state`, as the operator's
/// replay does, and marks them manual; returns how many were replayed.
async fn replay(
    tx: &impl GenericClient,
    destination: &str,
    state: JobState,
    ids: &[i64],
    now_ms: i64,
) -> Result<usize, OutboundError> {
    let filter =
        ReplayFilter { destination: Some(destination.to_owned()), state: Some(state), ..ReplayFilter::default() };
    let replayed = replay_selected(tx, &filter, ids, UnixTime(second_of(now_ms))).await?;
    tx.execute("UPDATE jobs SET manual = true WHERE id = ANY($1::bigint[])", &[&ids]).await?;
    Ok(replayed)
}

impl PgStore {
    pub(crate) async fn resend_message(
        &self,
        app: Lookup,
        msg: Lookup,
        ep: Lookup,
        by: Actor,
        now_ms: i64,
    ) -> Result<Resent, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let app_id = lock_app(&tx, &app, Hold::Share).await?;
        let found = message::find(&tx, &app_id, &msg).await?.ok_or(OutboundError::NotFound(Resource::Message))?;
        if found.payload.is_none() {
            return Err(OutboundError::PayloadGone);
        }
        let endpoint_id = enabled_endpoint(&tx, &app_id, &ep).await?;
        let job = tx
            .query_opt(
                "SELECT j.id, j.state FROM messages m JOIN jobs j ON j.event_id = m.event_row
                 WHERE m.id = $1 AND j.destination = $2 FOR UPDATE OF j",
                &[&found.id, &endpoint_id],
            )
            .await?;
        // Never sent to that endpoint (created before it, or not for it): nothing to resend.
        let job = job.ok_or(OutboundError::NotFound(Resource::Message))?;
        let (job_id, state): (i64, String) = (job.try_get(0)?, job.try_get(1)?);
        let state: JobState = state.parse().map_err(|_| StoreError::Malformed("a job's state is unknown"))?;
        let redo = Redo::of(state);
        let changed = match redo {
            Redo::Replay => replay(&tx, &endpoint_id, state, &[job_id], now_ms).await?,
            Redo::BringForward => {
                let changed = tx
                    .execute(
                        "UPDATE jobs SET next_attempt_at_ms = least(next_attempt_at_ms, $2), manual = true, updated_at = $3
                         WHERE id = $1",
                        &[&job_id, &now_ms, &second_of(now_ms)],
                    )
                    .await?;
                usize::try_from(changed).unwrap_or(usize::MAX)
            }
            Redo::Leave => 0,
        };
        let record = by.did(Action::MessageResend, target::message_to(&app_id, &found.id, &endpoint_id));
        audit::insert_if(&tx, Some(&record), UnixTime(second_of(now_ms)), changed).await?;
        tx.commit().await?;
        Ok(redo.resent())
    }

    pub(crate) async fn recover_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        range: Recovery,
        by: Actor,
        now_ms: i64,
    ) -> Result<usize, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let app_id = lock_app(&tx, &app, Hold::Share).await?;
        let endpoint_id = enabled_endpoint(&tx, &app_id, &ep).await?;
        let rows = tx
            .query(
                concat!(
                    "SELECT j.id FROM messages m JOIN jobs j ON j.event_id = m.event_row JOIN events e ON e.id = m.event_row
                 WHERE m.app_id = $1 AND j.destination = $2 AND j.state = 'dead' AND ",
                    has_payload!("m.event_row"),
                    " AND m.created_at >= $3 AND m.created_at < $4
                 ORDER BY j.id FOR UPDATE OF j"
                ),
                &[&app_id, &endpoint_id, &range.since_ms, &range.until_ms],
            )
            .await?;
        let ids: Vec<i64> = first_column(&rows)?;
        let replayed = replay(&tx, &endpoint_id, JobState::Dead, &ids, now_ms).await?;
        let record = by.did(Action::EndpointRecover, target::endpoint(&app_id, &endpoint_id));
        audit::insert_if(&tx, Some(&record), UnixTime(second_of(now_ms)), replayed).await?;
        tx.commit().await?;
        Ok(replayed)
    }
}
