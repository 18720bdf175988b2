//! Event types on SQLite.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::record;
use crate::{
    SqliteStore,
    audit::{Action, Actor, target},
    model::outbound::{
        ListQuery, OutboundError, Page, Resource, Upserted,
        event_type::{COLUMNS, EventType, EventTypeDeletion, EventTypeIn, EventTypePatch},
    },
};

fn event_type(row: &Row<'_>) -> rusqlite::Result<EventType> {
    Ok(EventType {
        name: row.get(0)?,
        description: row.get(1)?,
        archived: row.get(2)?,
        deprecated: row.get(3)?,
        feature_flag: row.get(4)?,
        schemas: row.get(5)?,
        created_at_ms: row.get(6)?,
        updated_at_ms: row.get(7)?,
    })
}

fn find(conn: &Connection, name: &str) -> Result<Option<EventType>, OutboundError> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM event_types WHERE name = ?1"))?
        .query_row(params![name], event_type)
        .optional()?)
}

fn insert(conn: &Connection, name: String, input: EventTypeIn, now_ms: i64) -> Result<EventType, OutboundError> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO event_types (name, description, archived, deprecated, feature_flag, schemas, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7) ON CONFLICT DO NOTHING",
        )?
        .execute(params![
            name,
            input.description,
            input.archived,
            input.deprecated,
            input.feature_flag,
            input.schemas,
            now_ms
        ])?;
    if inserted == 0 {
        return Err(OutboundError::EventTypeExists);
    }
    Ok(EventType::of(name, input, now_ms, now_ms))
}

fn replace(conn: &Connection, stored: EventType, input: EventTypeIn, now_ms: i64) -> Result<EventType, OutboundError> {
    conn.prepare_cached(
        "UPDATE event_types SET description = ?2, archived = ?3, deprecated = ?4, feature_flag = ?5, schemas = ?6,
                updated_at = ?7
         WHERE name = ?1",
    )?
    .execute(params![
        stored.name,
        input.description,
        input.archived,
        input.deprecated,
        input.feature_flag,
        input.schemas,
        now_ms
    ])?;
    Ok(EventType::of(stored.name, input, stored.created_at_ms, now_ms))
}

impl SqliteStore {
    pub(crate) async fn create_event_type(
        &self,
        name: String,
        input: EventTypeIn,
        by: Actor,
        now_ms: i64,
    ) -> Result<EventType, OutboundError> {
        self.change(move |conn| {
            let created = insert(conn, name, input, now_ms)?;
            record(conn, &by, Action::EventTypeCreate, target::event_type(&created.name), now_ms)?;
            Ok(created)
        })
        .await
    }

    pub(crate) async fn event_type(&self, name: String) -> Result<Option<EventType>, OutboundError> {
        self.look(move |conn| find(conn, &name)).await
    }

    pub(crate) async fn list_event_types(
        &self,
        query: ListQuery,
        include_archived: bool,
    ) -> Result<Page<EventType>, OutboundError> {
        self.look(move |conn| {
            let cursor = query.cursor();
            let (compare, order) = cursor.sql();
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM event_types WHERE (?1 OR NOT archived) AND (?2 IS NULL OR name {compare} ?2)
                 ORDER BY name {order} LIMIT ?3"
            ))?;
            let rows = statement
                .query_map(params![include_archived, cursor.after, query.limit as i64 + 1], event_type)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Page::of(rows, query.limit, &cursor, |t| t.name.clone()))
        })
        .await
    }

    pub(crate) async fn upsert_event_type(
        &self,
        name: String,
        input: EventTypeIn,
        by: Actor,
        now_ms: i64,
    ) -> Result<Upserted<EventType>, OutboundError> {
        self.change(move |conn| {
            let upserted = match find(conn, &name)? {
                Some(stored) => Upserted { value: replace(conn, stored, input, now_ms)?, created: false },
                None => Upserted { value: insert(conn, name, input, now_ms)?, created: true },
            };
            let action = if upserted.created { Action::EventTypeCreate } else { Action::EventTypeUpdate };
            record(conn, &by, action, target::event_type(&upserted.value.name), now_ms)?;
            Ok(upserted)
        })
        .await
    }

    pub(crate) async fn patch_event_type(
        &self,
        name: String,
        patch: EventTypePatch,
        by: Actor,
        now_ms: i64,
    ) -> Result<EventType, OutboundError> {
        self.change(move |conn| {
            let stored = find(conn, &name)?.ok_or(OutboundError::NotFound(Resource::EventType))?;
            let input = patch.apply(&stored);
            let patched = replace(conn, stored, input, now_ms)?;
            record(conn, &by, Action::EventTypeUpdate, target::event_type(&patched.name), now_ms)?;
            Ok(patched)
        })
        .await
    }

    pub(crate) async fn delete_event_type(
        &self,
        name: String,
        deletion: EventTypeDeletion,
        by: Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        self.change(move |conn| {
            let action = match deletion {
                EventTypeDeletion::Archive => Action::EventTypeArchive,
                EventTypeDeletion::Expunge => Action::EventTypeDelete,
            };
            record(conn, &by, action, target::event_type(&name), now_ms)?;
            let changed = match deletion {
                EventTypeDeletion::Archive => conn.execute(
                    "UPDATE event_types SET archived = 1, updated_at = ?2 WHERE name = ?1",
                    params![name, now_ms],
                )?,
                EventTypeDeletion::Expunge => conn.execute("DELETE FROM event_types WHERE name = ?1", params![name])?,
            };
            if changed == 0 { Err(OutboundError::NotFound(Resource::EventType)) } else { Ok(()) }
        })
        .await
    }
}
