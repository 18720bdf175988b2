//! Resends and recoveries on SQLite (`model::outbound::redelivery`): each one write on
//! the writer, on a savepoint a refusal rolls back. A finished job is replayed with the
//! operator's replay (`sqlite::jobs::replay_selected`) and marked manual in the same write.

use idemgate_core::{UnixTime, job::JobState};
use rusqlite::{Connection, OptionalExtension, params};

use super::{endpoint, live_app_id, message};
use crate::{
    SqliteStore, StoreError,
    audit::{Action, Actor, target},
    jobs::ReplayFilter,
    model::{
        outbound::{
            Lookup, OutboundError, Resource,
            redelivery::{Recovery, Redo, Resent},
        },
        second_of,
    },
    sqlite::{audit, jobs::replay_selected},
};

/// The id of the live endpoint `ep` of `app_id`, refused when it is disabled.
fn enabled_endpoint(conn: &Connection, app_id: &str, ep: &Lookup) -> Result<String, OutboundError> {
    let found = endpoint::find(conn, app_id, ep)?.ok_or(OutboundError::NotFound(Resource::Endpoint))?;
    if found.disabled {
        return Err(OutboundError::EndpointDisabled);
    }
    Ok(found.id)
}

/// Replays the finished jobs `ids` of `destination`, all in `state`, as the operator's
/// replay does, and marks them manual; returns how many were replayed.
fn replay(
    conn: &Connection,
    destination: &str,
    state: JobState,
    ids: &[i64],
    now_ms: i64,
) -> Result<usize, OutboundError> {
    let filter =
        ReplayFilter { destination: Some(destination.to_owned()), state: Some(state), ..ReplayFilter::default() };
    let replayed = replay_selected(conn, &filter, ids, UnixTime(second_of(now_ms)))?;
    conn.execute(
        "UPDATE jobs SET manual = 1 WHERE id IN (SELECT value FROM json_each(?1))",
        params![serde_json::json!(ids).to_string()],
    )?;
    Ok(replayed)
}

impl SqliteStore {
    pub(crate) async fn resend_message(
        &self,
        app: Lookup,
        msg: Lookup,
        ep: Lookup,
        by: Actor,
        now_ms: i64,
    ) -> Result<Resent, OutboundError> {
        self.change(move |conn| {
            let app_id = live_app_id(conn, &app)?;
            let found = message::find(conn, &app_id, &msg)?.ok_or(OutboundError::NotFound(Resource::Message))?;
            if found.payload.is_none() {
                return Err(OutboundError::PayloadGone);
            }
            let endpoint_id = enabled_endpoint(conn, &app_id, &ep)?;
            let job: Option<(i64, String)> = conn
                .prepare_cached(
                    "SELECT j.id, j.state FROM messages m JOIN jobs j ON j.event_id = m.event_row
                     WHERE m.id = ?1 AND j.destination = ?2",
                )?
                .query_row(params![found.id, endpoint_id], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            // Never sent to that endpoint (created before it, or not for it): nothing to resend.
            let (job_id, state) = job.ok_or(OutboundError::NotFound(Resource::Message))?;
            let state: JobState = state.parse().map_err(|_| StoreError::Malformed("a job's state is unknown"))?;
            let redo = Redo::of(state);
            let changed = match redo {
                Redo::Replay => replay(conn, &endpoint_id, state, &[job_id], now_ms)?,
                Redo::BringForward => conn.execute(
                    "UPDATE jobs SET next_attempt_at_ms = min(next_attempt_at_ms, ?2), manual = 1, updated_at = ?3
                     WHERE id = ?1",
                    params![job_id, now_ms, second_of(now_ms)],
                )?,
                Redo::Leave => 0,
            };
            let record = by.did(Action::MessageResend, target::message_to(&app_id, &found.id, &endpoint_id));
            audit::insert_if(conn, Some(&record), UnixTime(second_of(now_ms)), changed)?;
            Ok(redo.resent())
        })
        .await
    }

    pub(crate) async fn recover_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        range: Recovery,
        by: Actor,
        now_ms: i64,
    ) -> Result<usize, OutboundError> {
        self.change(move |conn| {
            let app_id = live_app_id(conn, &app)?;
            let endpoint_id = enabled_endpoint(conn, &app_id, &ep)?;
            let ids: Vec<i64> = conn
                .prepare_cached(
                    "SELECT j.id FROM messages m JOIN jobs j ON j.event_id = m.event_row JOIN events e ON e.id = m.event_row
                     WHERE m.app_id = ?1 AND j.destination = ?2 AND j.state = 'dead' AND e.payload_purged = 0
                       AND m.created_at >= ?3 AND m.created_at < ?4
                     ORDER BY j.id",
                )?
                .query_map(params![app_id, endpoint_id, range.since_ms, range.until_ms], |row| row.get(0))?
                .collect::<Result<_, _>>()?;
            let replayed = replay(conn, &endpoint_id, JobState::Dead, &ids, now_ms)?;
            let record = by.did(Action::EndpointRecover, target::endpoint(&app_id, &endpoint_id));
        audit::insert_if(conn, Some(&record), UnixTime(second_of(now_ms)), replayed)?;
            Ok(replayed)
        })
        .await
    }
}
