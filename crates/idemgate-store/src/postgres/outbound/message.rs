//! Messages on PostgreSQL: one transaction that holds the application's row `FOR SHARE`
//! (so an endpoint change, which holds it `FOR NO KEY UPDATE`, is wholly before or after
//! it), then the receipt path of a lone delivery: the receipt insert decides, a repeat is
//! judged by `receipt::repeat`, and a first message stores its event and jobs with the
//! gateway's own statements, then the message row.

use std::sync::Arc;

use deadpool_postgres::GenericClient;
use idemgate_core::{Outcome, UnixTime};
use tokio_postgres::Row;

use super::{
    Hold, app_id,
    endpoint::{self, of_app},
    lock_app,
};
use crate::postgres::{
    first_column,
    partitions::{delete_payloads, payload_of},
};
use crate::{
    PgStore, ReceiveRequest, StoreError,
    inbox::IncomingEvent,
    model::{
        audit::{Action, Actor, target},
        outbound::{
            Lookup, OutboundError, Page, Resource, from_json_opt, json_text,
            message::{
                Accepted, Addressed, CONTENT_EXPUNGED, CONTENT_TYPE, Message, MessageIn, MessageQuery, PAYLOAD_EXPIRED,
                destinations, fingerprint, message_of, receipt_key, receipt_result,
            },
            new_message_id,
        },
        second_of,
    },
    postgres::{
        audit,
        receipt::repeat,
        receive::{insert_event, insert_jobs, insert_receipt},
    },
};

/// The columns of a [`Message`] on PostgreSQL (messages `m` joined with their events `e`
/// and, left, their payloads `p`): its fields in order, then whether the payload was
/// purged (no payload row). Both backends' `COLUMNS` read the same.
pub(super) const COLUMNS: &str =
    "m.id, m.app_id, m.event_id, m.event_type, m.channels, p.body, m.created_at, p.event_id IS NULL";

/// A message's rows as [`COLUMNS`] reads them.
pub(super) const FROM: &str = concat!("messages m JOIN events e ON e.id = m.event_row ", payload_of!("m.event_row"));

/// A message row read with [`COLUMNS`].
pub(super) fn message(row: &Row) -> Result<Message, StoreError> {
    let purged: bool = row.try_get(7)?;
    Ok(Message {
        id: row.try_get(0)?,
        app_id: row.try_get(1)?,
        event_id: row.try_get(2)?,
        event_type: row.try_get(3)?,
        channels: from_json_opt(row.try_get(4)?, "message channels")?,
        payload: if purged { None } else { Some(row.try_get(5)?) },
        created_at_ms: row.try_get(6)?,
    })
}

/// The message `msg` names (its id or `eventId`) in the application `app_id`.
pub(super) async fn find(
    client: &impl GenericClient,
    app_id: &str,
    msg: &Lookup,
) -> Result<Option<Message>, OutboundError> {
    let (column, value) = msg.column("event_id");
    let select =
        client.prepare_cached(&format!("SELECT {COLUMNS} FROM {FROM} WHERE m.app_id = $1 AND m.{column} = $2")).await?;
    Ok(client.query_opt(&select, &[&app_id, &value]).await?.as_ref().map(message).transpose()?)
}

/// The retention sweep's share for messages, on the caller's transaction: every message
/// whose `expires_at` is at or before `now_ms` (a purged one's is cleared) loses its
/// payload and its attempts' stored responses; its waiting deliveries end `dead` ("payload
/// expired"). Its receipt, row, jobs and attempts stay, so a repeat of its `eventId` is
/// still judged against its fingerprint. Returns how many payloads it dropped.
pub(in crate::postgres) async fn purge_expired(tx: &impl GenericClient, now_ms: i64) -> Result<u64, StoreError> {
    let events: Vec<i64> = first_column(
        &tx.query("UPDATE messages SET expires_at = NULL WHERE expires_at <= $1 RETURNING event_row", &[&now_ms])
            .await?,
    )?;
    if events.is_empty() {
        // Nothing expired: the statements below would still be planned over every day of
        // `attempts`.
        return Ok(0);
    }
    tx.execute(
        "UPDATE jobs SET state = 'dead', last_error = $2, lease_until = NULL, updated_at = $3
         WHERE state IN ('pending', 'retrying') AND event_id = ANY($1)",
        &[&events, &PAYLOAD_EXPIRED, &second_of(now_ms)],
    )
    .await?;
    tx.execute(
        "UPDATE attempts SET response_prefix = NULL
         WHERE response_prefix IS NOT NULL AND job_id IN (SELECT id FROM jobs WHERE event_id = ANY($1))",
        &[&events],
    )
    .await?;
    delete_payloads(tx, &events).await
}

impl PgStore {
    pub(crate) async fn accept_message(
        &self,
        app: Lookup,
        input: MessageIn,
        to: Addressed,
        now_ms: i64,
    ) -> Result<Accepted, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let app_id = lock_app(&tx, &app, Hold::Share).await?;
        // The application's row held `FOR SHARE` keeps its endpoints as they are until the commit.
        let to_id = match to {
            Addressed::Subscribers => None,
            Addressed::Endpoint(ep) => {
                let found = endpoint::find(&tx, &app_id, &ep, false)
                    .await?
                    .ok_or(OutboundError::NotFound(Resource::Endpoint))?;
                if found.disabled {
                    return Err(OutboundError::EndpointDisabled);
                }
                Some(found.id)
            }
        };
        let msg_id = new_message_id(now_ms)?;
        let request = ReceiveRequest {
            key: receipt_key(&app_id, &input, &msg_id)?,
            body_hash: fingerprint(&input.event_type, input.channels.as_deref(), &input.payload),
            received_at: UnixTime(second_of(now_ms)),
            dedupe_body: false,
        };
        if !insert_receipt(&tx, &request, &receipt_result(&msg_id)).await? {
            tx.rollback().await?;
            return match repeat(&client, &request).await? {
                Outcome::Duplicate { result } => {
                    let original = Lookup::Id(message_of(&result)?);
                    let found = find(&client, &app_id, &original).await?;
                    found.map(Accepted::Duplicate).ok_or(OutboundError::NotFound(Resource::Message))
                }
                _ => Ok(Accepted::Conflict),
            };
        }
        let endpoints = of_app(&tx, &app_id).await?;
        let names = destinations(&endpoints, to_id.as_deref(), &input.event_type, input.channels.as_deref());
        let event = IncomingEvent {
            result: serde_json::Value::Null,
            outgoing_id: Some(msg_id.clone()),
            event_type: Some(input.event_type.clone()),
            content_type: Some(CONTENT_TYPE.to_owned()),
            headers: Vec::new(),
            body: input.payload.clone(),
            ordering: None,
            destinations: Arc::from(Vec::new()),
            dead: Vec::new(),
            refusal: None,
        };
        let event_id = insert_event(&tx, &request, &event).await?;
        insert_jobs(&tx, event_id, "pending", request.received_at.0, &names).await?;
        let MessageIn { event_id: uid, event_type, channels, payload, expires_at_ms, .. } = input;
        let insert = tx
            .prepare_cached(
                "INSERT INTO messages (id, app_id, event_row, event_id, event_type, channels, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .await?;
        tx.execute(
            &insert,
            &[
                &msg_id,
                &app_id,
                &event_id,
                &uid,
                &event_type,
                &channels.as_ref().map(json_text),
                &now_ms,
                &expires_at_ms,
            ],
        )
        .await?;
        tx.commit().await?;
        Ok(Accepted::Created(Message {
            id: msg_id,
            app_id,
            event_id: uid,
            event_type,
            channels,
            payload: Some(payload.to_vec()),
            created_at_ms: now_ms,
        }))
    }

    pub(crate) async fn message(&self, app: Lookup, msg: Lookup) -> Result<Option<Message>, OutboundError> {
        let client = self.client().await?;
        let app_id = app_id(&client, &app).await?;
        find(&client, &app_id, &msg).await
    }

    pub(crate) async fn list_messages(&self, app: Lookup, query: MessageQuery) -> Result<Page<Message>, OutboundError> {
        let client = self.client().await?;
        let app_id = app_id(&client, &app).await?;
        let cursor = query.cursor();
        let (compare, order) = cursor.sql();
        let (above, below) = query.window();
        let select = client
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM {FROM}
                 WHERE m.app_id = $1 AND ($2::text IS NULL OR m.id {compare} $2)
                   AND ($3::text IS NULL OR m.id > $3) AND ($4::text IS NULL OR m.id < $4)
                   AND ($5::text[] IS NULL OR m.event_type = ANY($5))
                   AND ($6::text IS NULL OR coalesce(m.channels::jsonb ? $6, false))
                 ORDER BY m.id {order} LIMIT $7"
            ))
            .await?;
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX - 1) + 1;
        let rows = client
            .query(&select, &[&app_id, &cursor.after, &above, &below, &query.event_types, &query.channel, &limit])
            .await?;
        let messages = rows.iter().map(message).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::of(messages, query.limit, &cursor, |m| m.id.clone()))
    }

    pub(crate) async fn expunge_message_content(
        &self,
        app: Lookup,
        msg: Lookup,
        by: Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let app_id = app_id(&tx, &app).await?;
        let (column, value) = msg.column("event_id");
        let select = tx
            .prepare_cached(&format!(
                "SELECT event_row, id FROM messages WHERE app_id = $1 AND {column} = $2 FOR UPDATE"
            ))
            .await?;
        let (event_row, msg_id): (i64, String) = match tx.query_opt(&select, &[&app_id, &value]).await? {
            Some(row) => (row.try_get(0)?, row.try_get(1)?),
            None => return Err(OutboundError::NotFound(Resource::Message)),
        };
        let now_s = second_of(now_ms);
        tx.execute(
            "UPDATE jobs SET state = 'dead', last_error = $3, lease_until = NULL, updated_at = $2
             WHERE event_id = $1 AND state IN ('pending', 'retrying')",
            &[&event_row, &now_s, &CONTENT_EXPUNGED],
        )
        .await?;
        tx.execute("DELETE FROM payloads WHERE event_id = $1", &[&event_row]).await?;
        tx.execute("UPDATE messages SET expires_at = NULL WHERE event_row = $1", &[&event_row]).await?;
        let record = by.did(Action::MessageContentExpunge, target::message(&app_id, &msg_id));
        audit::insert_if(&tx, Some(&record), UnixTime(now_s), 1).await?;
        tx.commit().await?;
        Ok(())
    }
}
