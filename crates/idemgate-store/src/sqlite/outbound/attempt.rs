//! Message attempts on SQLite: the gateway's `attempts` rows of a message's jobs, read on
//! a read connection, newest first, only within the application the path names; and an
//! endpoint's deliveries counted by status.

use rusqlite::{Connection, OptionalExtension, Row, params};

use idemgate_core::UnixTime;

use super::{endpoint, live_app_id, message};
use crate::{
    SqliteStore,
    model::outbound::{
        ListQuery, Lookup, OutboundError, Page, Resource,
        attempt::{
            Attempt, AttemptQuery, AttemptRow, AttemptedDestination, AttemptedMessage, AttemptedMessageQuery, COLUMNS,
            EndpointStats, FROM, attempt_id, filter_sql,
        },
        endpoint::E_COLUMNS,
        json_text,
        message::{COLUMNS as MESSAGE_COLUMNS, RESPONSE_EXPUNGED},
    },
    model::{
        audit::{Action, Actor, target},
        second_of,
    },
    sqlite::audit,
};

fn row(row: &Row<'_>) -> rusqlite::Result<AttemptRow> {
    Ok(AttemptRow {
        row: row.get(0)?,
        started_at_s: row.get(1)?,
        msg_id: row.get(2)?,
        endpoint_id: row.get(3)?,
        url: row.get(4)?,
        response: row.get(5)?,
        status: row.get(6)?,
        duration_ms: row.get(7)?,
        manual: row.get(8)?,
    })
}

/// One page of the application's attempts whose `scope` column is `value`, as the
/// query's filter admits them (at the endpoint `endpoint_id` when given).
fn page(
    conn: &Connection,
    app_id: &str,
    scope: &str,
    value: &str,
    query: &AttemptQuery,
    endpoint_id: Option<&str>,
) -> Result<Page<Attempt>, OutboundError> {
    let (cursor, after) = query.walk();
    let (compare, order) = cursor.sql();
    let filter = filter_sql(5, '?', "");
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM {FROM}
         WHERE m.app_id = ?1 AND {scope} = ?2 AND (?3 IS NULL OR a.id {compare} ?3) AND {filter}
           AND (?10 IS NULL OR j.destination = ?10)
           AND (?11 IS NULL OR m.event_type IN (SELECT value FROM json_each(?11)))
           AND (?12 IS NULL OR EXISTS (SELECT 1 FROM json_each(m.channels) WHERE value = ?12))
         ORDER BY a.id {order} LIMIT ?4"
    ))?;
    let f = &query.filter;
    let ((low, high), (started_after, started_before)) = (f.codes(), f.started());
    let types = f.event_types.as_ref().map(json_text);
    let rows = statement.query_map(
        params![
            app_id,
            value,
            after,
            query.limit as i64 + 1,
            f.outcome(),
            low,
            high,
            started_after,
            started_before,
            endpoint_id,
            types,
            f.channel
        ],
        row,
    )?;
    let mut attempts = Vec::new();
    for found in rows {
        attempts.push(found?.attempt()?);
    }
    Ok(Page::of(attempts, query.limit, &cursor, |attempt| attempt.id.clone()))
}

/// The message `msg` names in the application `app`: its id and the application's.
fn message_of(conn: &Connection, app: &Lookup, msg: &Lookup) -> Result<(String, String), OutboundError> {
    let app_id = live_app_id(conn, app)?;
    let found = message::find(conn, &app_id, msg)?.ok_or(OutboundError::NotFound(Resource::Message))?;
    Ok((app_id, found.id))
}

impl SqliteStore {
    pub(crate) async fn attempts_by_message(
        &self,
        app: Lookup,
        msg: Lookup,
        query: AttemptQuery,
    ) -> Result<Page<Attempt>, OutboundError> {
        self.look(move |conn| {
            let (app_id, msg_id) = message_of(conn, &app, &msg)?;
            let endpoint_id = match &query.filter.endpoint {
                Some(ep) => {
                    Some(endpoint::find(conn, &app_id, ep)?.ok_or(OutboundError::NotFound(Resource::Endpoint))?.id)
                }
                None => None,
            };
            page(conn, &app_id, "m.id", &msg_id, &query, endpoint_id.as_deref())
        })
        .await
    }

    pub(crate) async fn attempts_by_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        query: AttemptQuery,
    ) -> Result<Page<Attempt>, OutboundError> {
        self.look(move |conn| {
            let app_id = live_app_id(conn, &app)?;
            let found = endpoint::find(conn, &app_id, &ep)?.ok_or(OutboundError::NotFound(Resource::Endpoint))?;
            page(conn, &app_id, "j.destination", &found.id, &query, None)
        })
        .await
    }

    pub(crate) async fn attempt(
        &self,
        app: Lookup,
        msg: Lookup,
        row_id: i64,
    ) -> Result<Option<Attempt>, OutboundError> {
        self.look(move |conn| {
            let (app_id, msg_id) = message_of(conn, &app, &msg)?;
            let found = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM {FROM} WHERE m.app_id = ?1 AND m.id = ?2 AND a.id = ?3"
                ))?
                .query_row(params![app_id, msg_id, row_id], row)
                .optional()?;
            Ok(found.map(AttemptRow::attempt).transpose()?)
        })
        .await
    }

    pub(crate) async fn endpoint_stats(
        &self,
        app: Lookup,
        ep: Lookup,
        since_ms: i64,
        until_ms: i64,
    ) -> Result<EndpointStats, OutboundError> {
        self.look(move |conn| {
            let app_id = live_app_id(conn, &app)?;
            let found = endpoint::find(conn, &app_id, &ep)?.ok_or(OutboundError::NotFound(Resource::Endpoint))?;
            let mut statement = conn.prepare_cached(
                "SELECT j.state, count(*) FROM jobs j JOIN messages m ON m.event_row = j.event_id
                 WHERE m.app_id = ?1 AND j.destination = ?2 AND m.created_at >= ?3 AND m.created_at < ?4
                 GROUP BY j.state",
            )?;
            let rows = statement.query_map(params![app_id, found.id, since_ms, until_ms], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
            })?;
            let mut stats = EndpointStats::default();
            for counted in rows {
                let (state, count) = counted?;
                stats.add(&state, count)?;
            }
            Ok(stats)
        })
        .await
    }

    pub(crate) async fn attempted_destinations(
        &self,
        app: Lookup,
        msg: Lookup,
        query: ListQuery,
    ) -> Result<Page<AttemptedDestination>, OutboundError> {
        self.look(move |conn| {
            let (app_id, msg_id) = message_of(conn, &app, &msg)?;
            let cursor = query.cursor();
            let (compare, order) = cursor.sql();
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {E_COLUMNS}, j.state, j.next_attempt_at_ms
                 FROM messages m JOIN jobs j ON j.event_id = m.event_row JOIN endpoints e ON e.id = j.destination
                 WHERE m.app_id = ?1 AND m.id = ?2 AND (?3 IS NULL OR e.id {compare} ?3)
                 ORDER BY e.id {order} LIMIT ?4"
            ))?;
            let rows = statement.query_map(params![app_id, msg_id, cursor.after, query.limit as i64 + 1], |row| {
                Ok((endpoint::raw(row)?, row.get::<_, String>(14)?, row.get::<_, i64>(15)?))
            })?;
            let mut found = Vec::new();
            for read in rows {
                let (raw, state, due_ms) = read?;
                found.push(AttemptedDestination::of(raw.finish()?, &state, due_ms)?);
            }
            Ok(Page::of(found, query.limit, &cursor, |d| d.endpoint.id.clone()))
        })
        .await
    }

    pub(crate) async fn attempted_messages(
        &self,
        app: Lookup,
        ep: Lookup,
        query: AttemptedMessageQuery,
    ) -> Result<Page<AttemptedMessage>, OutboundError> {
        self.look(move |conn| {
            let app_id = live_app_id(conn, &app)?;
            let found = endpoint::find(conn, &app_id, &ep)?.ok_or(OutboundError::NotFound(Resource::Endpoint))?;
            let messages = &query.messages;
            let cursor = messages.cursor();
            let (compare, order) = cursor.sql();
            let (above, below) = messages.window();
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {MESSAGE_COLUMNS}, j.state, j.next_attempt_at_ms
                 FROM messages m JOIN events e ON e.id = m.event_row JOIN jobs j ON j.event_id = m.event_row
                 WHERE m.app_id = ?1 AND j.destination = ?2 AND (?3 IS NULL OR m.id {compare} ?3)
                   AND (?4 IS NULL OR m.id > ?4) AND (?5 IS NULL OR m.id < ?5)
                   AND (?6 IS NULL OR m.event_type IN (SELECT value FROM json_each(?6)))
                   AND (?7 IS NULL OR EXISTS (SELECT 1 FROM json_each(m.channels) WHERE value = ?7))
                   AND (?8 IS NULL OR j.state IN (SELECT value FROM json_each(?8)))
                 ORDER BY m.id {order} LIMIT ?9"
            ))?;
            let types = messages.event_types.as_ref().map(json_text);
            let states = query.states().as_ref().map(json_text);
            let rows = statement.query_map(
                params![
                    app_id,
                    found.id,
                    cursor.after,
                    above,
                    below,
                    types,
                    messages.channel,
                    states,
                    messages.limit as i64 + 1
                ],
                |row| Ok((message::message(row)?, row.get::<_, String>(8)?, row.get::<_, i64>(9)?)),
            )?;
            let mut found = Vec::new();
            for read in rows {
                let (raw, state, due_ms) = read?;
                found.push(AttemptedMessage::of(message::finish(raw)?, &state, due_ms)?);
            }
            Ok(Page::of(found, messages.limit, &cursor, |m| m.message.id.clone()))
        })
        .await
    }

    pub(crate) async fn expunge_attempt_content(
        &self,
        app: Lookup,
        msg: Lookup,
        row_id: i64,
        by: Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        self.change(move |conn| {
            let (app_id, msg_id) = message_of(conn, &app, &msg)?;
            let started_at_s: i64 = conn
                .prepare_cached(
                    "UPDATE attempts SET response_prefix = ?3 WHERE id = ?1 AND job_id IN
                       (SELECT j.id FROM jobs j JOIN messages m ON m.event_row = j.event_id WHERE m.id = ?2)
                     RETURNING started_at",
                )?
                .query_row(params![row_id, msg_id, RESPONSE_EXPUNGED], |row| row.get(0))
                .optional()?
                .ok_or(OutboundError::NotFound(Resource::Attempt))?;
            let record = by.did(
                Action::AttemptContentExpunge,
                target::attempt(&app_id, &msg_id, &attempt_id(started_at_s, row_id)?),
            );
            audit::insert(conn, &record, UnixTime(second_of(now_ms)), 1)?;
            Ok(())
        })
        .await
    }
}
