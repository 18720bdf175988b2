//! Messages on SQLite: accepted through the writer's receipt path (a delivery on its own
//! savepoint of a group commit, answered once the commit is durable), read back by id or
//! `eventId`, listed newest first.

use idemgate_core::{Outcome, UnixTime};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{
    endpoint::{self, of_app},
    live_app_id,
};
use crate::{
    HandlerError, ReceiveRequest, SqliteStore,
    model::{
        audit::{Action, Actor, target},
        outbound::{
            Lookup, OutboundError, Page, Resource, json_text,
            message::{
                Accepted, Addressed, COLUMNS, CONTENT_EXPUNGED, CONTENT_TYPE, ENDPOINT_DISABLED, ENDPOINT_GONE,
                Message, MessageIn, MessageQuery, PAYLOAD_EXPIRED, destinations, failed, fingerprint, message_of,
                receipt_key, receipt_result, refused,
            },
            new_message_id,
        },
        second_of,
    },
    sqlite::{
        audit,
        handover::Leased,
        inbox::{NewEvent, accept_event},
        receive::{Effect, Produced},
    },
};

/// Why a message's effect refuses: its application was deleted since it was looked up.
const APPLICATION_GONE: &str = "application not found";

/// A message's effect, run by the writer inside its receipt's savepoint.
pub(in crate::sqlite) struct MessageEffect {
    app_id: String,
    message: Message,
    expires_at_ms: Option<i64>,
    /// The one endpoint it goes to ([`Addressed::Endpoint`]), by id.
    to_id: Option<String>,
}

/// The message's event, its jobs (one per enabled, live endpoint it goes to) and its
/// row, in the receipt's savepoint. The receipt's result names the message.
pub(in crate::sqlite) fn store_message(
    conn: &Connection,
    request: &ReceiveRequest,
    effect: MessageEffect,
) -> Result<Produced, HandlerError> {
    let MessageEffect { app_id, message, expires_at_ms, to_id } = effect;
    let live: i64 = conn
        .prepare_cached("SELECT count(*) FROM applications WHERE id = ?1 AND deleted_at IS NULL")?
        .query_row(params![app_id], |row| row.get(0))?;
    if live == 0 {
        return Err(HandlerError::Refused(APPLICATION_GONE));
    }
    let endpoints =
        of_app(conn, &app_id).map_err(|_| HandlerError::new("the application's endpoints cannot be read"))?;
    let destinations = destinations(&endpoints, to_id.as_deref(), &message.event_type, message.channels.as_deref());
    if let Some(id) = to_id.as_deref()
        && destinations.is_empty()
    {
        let found = endpoint::find(conn, &app_id, &Lookup::Id(id.to_owned()))
            .map_err(|_| HandlerError::new("the endpoint cannot be read"))?;
        return Err(HandlerError::Refused(if found.is_some() { ENDPOINT_DISABLED } else { ENDPOINT_GONE }));
    }
    let payload = message.payload.as_deref().unwrap_or_default();
    let event = NewEvent {
        key: &request.key,
        outgoing_id: Some(&message.id),
        event_type: Some(&message.event_type),
        content_type: Some(CONTENT_TYPE),
        headers: &[],
        body: payload,
        ordering: None,
        received_at: request.received_at,
    };
    let accepted = accept_event(conn, &event, &destinations)?;
    conn.prepare_cached(
        "INSERT INTO messages (id, app_id, event_row, event_id, event_type, channels, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        message.id,
        app_id,
        accepted.event_id,
        message.event_id,
        message.event_type,
        message.channels.as_ref().map(json_text),
        message.created_at_ms,
        expires_at_ms
    ])?;
    Ok(Produced { result: receipt_result(&message.id), leased: Leased::new() })
}

/// A message row read with [`COLUMNS`], its channels still JSON text ([`finish`] reads them).
pub(super) fn message(row: &Row<'_>) -> rusqlite::Result<(Message, Option<String>)> {
    let purged: bool = row.get(7)?;
    Ok((
        Message {
            id: row.get(0)?,
            app_id: row.get(1)?,
            event_id: row.get(2)?,
            event_type: row.get(3)?,
            channels: None,
            payload: if purged { None } else { Some(row.get(5)?) },
            created_at_ms: row.get(6)?,
        },
        row.get(4)?,
    ))
}

/// The message of a row [`message`] read.
pub(super) fn finish((message, channels): (Message, Option<String>)) -> Result<Message, OutboundError> {
    Ok(Message { channels: crate::model::outbound::from_json_opt(channels, "message channels")?, ..message })
}

/// The message `msg` names (its id or `eventId`) in the application `app_id`.
pub(super) fn find(conn: &Connection, app_id: &str, msg: &Lookup) -> Result<Option<Message>, OutboundError> {
    let (column, value) = msg.column("event_id");
    let row = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM messages m JOIN events e ON e.id = m.event_row WHERE m.app_id = ?1 AND m.{column} = ?2"
        ))?
        .query_row(params![app_id, value], message)
        .optional()?;
    row.map(finish).transpose()
}

/// Drops the payload of the message whose event is row `event_row` for good and ends its
/// waiting deliveries `dead` with `reason` at `now_s`; its receipt, row and attempts stay.
fn drop_payload(conn: &Connection, event_row: i64, reason: &str, now_s: i64) -> Result<(), rusqlite::Error> {
    conn.prepare_cached(
        "UPDATE jobs SET state = 'dead', last_error = ?3, lease_until = NULL, updated_at = ?2
         WHERE event_id = ?1 AND state IN ('pending', 'retrying')",
    )?
    .execute(params![event_row, now_s, reason])?;
    conn.prepare_cached("UPDATE events SET body = X'', payload_purged = 1 WHERE id = ?1")?
        .execute(params![event_row])?;
    conn.prepare_cached("UPDATE messages SET expires_at = NULL WHERE event_row = ?1")?.execute(params![event_row])?;
    Ok(())
}

/// The events of the messages whose payload's retention ended at or before `?1` (unix
/// milliseconds) and that still hold it (a purged one's `expires_at` is cleared).
const EXPIRED: &str = "SELECT event_row FROM messages WHERE expires_at <= ?1";

/// The retention sweep's share for messages, on the caller's transaction: every message
/// whose `expires_at` is at or before `now_ms` loses its payload and its attempts' stored
/// responses; its waiting deliveries end `dead` ("payload expired"). Its receipt, row, jobs
/// and attempts stay, so a repeat of its `eventId` is still judged against its fingerprint.
/// Returns how many payloads it dropped.
pub(in crate::sqlite) fn purge_expired(conn: &Connection, now_ms: i64) -> Result<usize, rusqlite::Error> {
    conn.execute(
        &format!(
            "UPDATE jobs SET state = 'dead', last_error = ?2, lease_until = NULL, updated_at = ?3
             WHERE state IN ('pending', 'retrying') AND event_id IN ({EXPIRED})"
        ),
        params![now_ms, PAYLOAD_EXPIRED, second_of(now_ms)],
    )?;
    conn.execute(
        &format!(
            "UPDATE attempts SET response_prefix = NULL
             WHERE response_prefix IS NOT NULL AND job_id IN (SELECT id FROM jobs WHERE event_id IN ({EXPIRED}))"
        ),
        params![now_ms],
    )?;
    let dropped = conn.execute(
        &format!("UPDATE events SET body = X'', payload_purged = 1 WHERE payload_purged = 0 AND id IN ({EXPIRED})"),
        params![now_ms],
    )?;
    conn.execute("UPDATE messages SET expires_at = NULL WHERE expires_at <= ?1", params![now_ms])?;
    Ok(dropped)
}

impl SqliteStore {
    pub(crate) async fn expunge_message_content(
        &self,
        app: Lookup,
        msg: Lookup,
        by: Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        self.change(move |conn| {
            let app_id = live_app_id(conn, &app)?;
            let (column, value) = msg.column("event_id");
            let (event_row, msg_id): (i64, String) = conn
                .prepare_cached(&format!("SELECT event_row, id FROM messages WHERE app_id = ?1 AND {column} = ?2"))?
                .query_row(params![app_id, value], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?
                .ok_or(OutboundError::NotFound(Resource::Message))?;
            drop_payload(conn, event_row, CONTENT_EXPUNGED, second_of(now_ms))?;
            let record = by.did(Action::MessageContentExpunge, target::message(&app_id, &msg_id));
            audit::insert(conn, &record, UnixTime(second_of(now_ms)), 1)?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn accept_message(
        &self,
        app: Lookup,
        input: MessageIn,
        to: Addressed,
        now_ms: i64,
    ) -> Result<Accepted, OutboundError> {
        let (app_id, to_id) = self
            .look(move |conn| {
                let app_id = live_app_id(conn, &app)?;
                let to_id = match to {
                    Addressed::Subscribers => None,
                    Addressed::Endpoint(ep) => {
                        let found =
                            endpoint::find(conn, &app_id, &ep)?.ok_or(OutboundError::NotFound(Resource::Endpoint))?;
                        if found.disabled {
                            return Err(OutboundError::EndpointDisabled);
                        }
                        Some(found.id)
                    }
                };
                Ok((app_id, to_id))
            })
            .await?;
        let msg_id = new_message_id(now_ms)?;
        let request = ReceiveRequest {
            key: receipt_key(&app_id, &input, &msg_id)?,
            body_hash: fingerprint(&input.event_type, input.channels.as_deref(), &input.payload),
            received_at: UnixTime(second_of(now_ms)),
            dedupe_body: false,
        };
        let MessageIn { event_id, event_type, channels, payload, expires_at_ms, .. } = input;
        let created = Message {
            id: msg_id,
            app_id: app_id.clone(),
            event_id,
            event_type,
            channels,
            payload: Some(payload.to_vec()),
            created_at_ms: now_ms,
        };
        let effect = MessageEffect { app_id: app_id.clone(), message: created.clone(), expires_at_ms, to_id };
        match self.submit(request, Effect::Message(Box::new(effect))).await.outcome {
            Outcome::Applied { .. } => Ok(Accepted::Created(created)),
            Outcome::Duplicate { result } => {
                let original = Lookup::Id(message_of(&result)?);
                let found = self.look(move |conn| find(conn, &app_id, &original)).await?;
                found.map(Accepted::Duplicate).ok_or(OutboundError::NotFound(Resource::Message))
            }
            Outcome::Conflict => Ok(Accepted::Conflict),
            Outcome::Refused { reason } => Err(refused(reason)),
            Outcome::Failed { cause } => Err(failed(cause).into()),
        }
    }

    pub(crate) async fn message(&self, app: Lookup, msg: Lookup) -> Result<Option<Message>, OutboundError> {
        self.look(move |conn| {
            let app_id = live_app_id(conn, &app)?;
            find(conn, &app_id, &msg)
        })
        .await
    }

    pub(crate) async fn list_messages(&self, app: Lookup, query: MessageQuery) -> Result<Page<Message>, OutboundError> {
        self.look(move |conn| {
            let app_id = live_app_id(conn, &app)?;
            let cursor = query.cursor();
            let (compare, order) = cursor.sql();
            let (above, below) = query.window();
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM messages m JOIN events e ON e.id = m.event_row
                 WHERE m.app_id = ?1 AND (?2 IS NULL OR m.id {compare} ?2)
                   AND (?3 IS NULL OR m.id > ?3) AND (?4 IS NULL OR m.id < ?4)
                   AND (?5 IS NULL OR m.event_type IN (SELECT value FROM json_each(?5)))
                   AND (?6 IS NULL OR EXISTS (SELECT 1 FROM json_each(m.channels) WHERE value = ?6))
                 ORDER BY m.id {order} LIMIT ?7"
            ))?;
            let types = query.event_types.as_ref().map(json_text);
            let rows = statement.query_map(
                params![app_id, cursor.after, above, below, types, query.channel, query.limit as i64 + 1],
                message,
            )?;
            let mut messages = Vec::new();
            for row in rows {
                messages.push(finish(row?)?);
            }
            Ok(Page::of(messages, query.limit, &cursor, |m| m.id.clone()))
        })
        .await
    }
}
