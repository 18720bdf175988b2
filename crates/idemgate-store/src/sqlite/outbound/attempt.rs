//! Message attempts on SQLite: the gateway's `attempts` rows of a message's jobs, read on
//! a read connection, newest first, only within the application the path names; and an
//! endpoint's deliveries counted by status.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{endpoint, live_app_id, message};
use crate::{
    SqliteStore,
    model::outbound::{
        ListQuery, Lookup, OutboundError, Page, Resource,
        attempt::{Attempt, AttemptQuery, AttemptRow, AttemptedDestination, COLUMNS, EndpointStats, FROM},
        endpoint::E_COLUMNS,
    },
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

/// One page of the application's attempts whose `scope` column is `value`.
fn page(
    conn: &Connection,
    app_id: &str,
    scope: &str,
    value: &str,
    query: AttemptQuery,
) -> Result<Page<Attempt>, OutboundError> {
    let (cursor, after) = query.walk();
    let (compare, order) = cursor.sql();
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM {FROM}
         WHERE m.app_id = ?1 AND {scope} = ?2 AND (?3 IS NULL OR a.id {compare} ?3)
         ORDER BY a.id {order} LIMIT ?4"
    ))?;
    let rows = statement.query_map(params![app_id, value, after, query.limit as i64 + 1], row)?;
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
            page(conn, &app_id, "m.id", &msg_id, query)
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
            page(conn, &app_id, "j.destination", &found.id, query)
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
}
