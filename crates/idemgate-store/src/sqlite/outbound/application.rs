//! Applications on SQLite.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{bump_version, live_app_id, record};
use crate::{
    SqliteStore, StoreError,
    audit::{Action, Actor, target},
    model::outbound::{
        Cursor, ListQuery, Lookup, OutboundError, Page, Resource, Upserted,
        application::{APPLICATION_DELETED, Application, ApplicationIn, ApplicationPatch, COLUMNS, Deletion},
        from_json, json_text, new_application_id,
    },
};

fn row_to_application(row: &Row<'_>) -> rusqlite::Result<(Application, String)> {
    let metadata: String = row.get(3)?;
    Ok((
        Application {
            id: row.get(0)?,
            uid: row.get(1)?,
            name: row.get(2)?,
            metadata: Default::default(),
            throttle_rate: row.get(4)?,
            created_at_ms: row.get(5)?,
            updated_at_ms: row.get(6)?,
        },
        metadata,
    ))
}

fn finish((mut app, metadata): (Application, String)) -> Result<Application, StoreError> {
    app.metadata = from_json(&metadata, "application metadata")?;
    Ok(app)
}

/// The live application `app` names, if any.
pub(super) fn find(conn: &Connection, app: &Lookup) -> Result<Option<Application>, OutboundError> {
    let (column, value) = app.column("uid");
    let row = conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM applications WHERE {column} = ?1 AND deleted_at IS NULL"))?
        .query_row(params![value], row_to_application)
        .optional()?;
    Ok(row.map(finish).transpose()?)
}

fn insert(conn: &Connection, input: ApplicationIn, now_ms: i64) -> Result<Application, OutboundError> {
    let id = new_application_id(now_ms)?;
    conn.prepare_cached(
        "INSERT INTO applications (id, uid, name, metadata, throttle_rate, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
    )?
    .execute(params![id, input.uid, input.name, json_text(&input.metadata), input.throttle_rate, now_ms])
    .map_err(|err| OutboundError::unique(err, Resource::Application))?;
    bump_version(conn)?;
    let ApplicationIn { name, uid, metadata, throttle_rate } = input;
    Ok(Application { id, uid, name, metadata, throttle_rate, created_at_ms: now_ms, updated_at_ms: now_ms })
}

fn replace(
    conn: &Connection,
    app: Application,
    input: ApplicationIn,
    now_ms: i64,
) -> Result<Application, OutboundError> {
    conn.prepare_cached(
        "UPDATE applications SET uid = ?2, name = ?3, metadata = ?4, throttle_rate = ?5, updated_at = ?6 WHERE id = ?1",
    )?
    .execute(params![app.id, input.uid, input.name, json_text(&input.metadata), input.throttle_rate, now_ms])
    .map_err(|err| OutboundError::unique(err, Resource::Application))?;
    bump_version(conn)?;
    let ApplicationIn { name, uid, metadata, throttle_rate } = input;
    Ok(Application { uid, name, metadata, throttle_rate, updated_at_ms: now_ms, ..app })
}

impl SqliteStore {
    pub(crate) async fn create_application(
        &self,
        input: ApplicationIn,
        by: Actor,
        now_ms: i64,
    ) -> Result<Application, OutboundError> {
        self.change(move |conn| {
            let app = insert(conn, input, now_ms)?;
            record(conn, &by, Action::ApplicationCreate, target::application(&app.id), now_ms)?;
            Ok(app)
        })
        .await
    }

    pub(crate) async fn application(&self, app: Lookup) -> Result<Option<Application>, OutboundError> {
        self.look(move |conn| find(conn, &app)).await
    }

    pub(crate) async fn list_applications(&self, query: ListQuery) -> Result<Page<Application>, OutboundError> {
        self.look(move |conn| {
            let cursor = query.cursor();
            let rows = list(conn, &cursor, query.limit)?;
            Ok(Page::of(rows, query.limit, &cursor, |app| app.id.clone()))
        })
        .await
    }

    pub(crate) async fn upsert_application(
        &self,
        app: Lookup,
        mut input: ApplicationIn,
        by: Actor,
        now_ms: i64,
    ) -> Result<Upserted<Application>, OutboundError> {
        self.change(move |conn| {
            let upserted = match find(conn, &app)? {
                Some(found) => Upserted { value: replace(conn, found, input, now_ms)?, created: false },
                None => {
                    if input.uid.is_none() {
                        input.uid = app.uid().map(str::to_owned);
                    }
                    Upserted { value: insert(conn, input, now_ms)?, created: true }
                }
            };
            let action = if upserted.created { Action::ApplicationCreate } else { Action::ApplicationUpdate };
            record(conn, &by, action, target::application(&upserted.value.id), now_ms)?;
            Ok(upserted)
        })
        .await
    }

    pub(crate) async fn patch_application(
        &self,
        app: Lookup,
        patch: ApplicationPatch,
        by: Actor,
        now_ms: i64,
    ) -> Result<Application, OutboundError> {
        self.change(move |conn| {
            let found = find(conn, &app)?.ok_or(OutboundError::NotFound(Resource::Application))?;
            let input = patch.apply(&found);
            let patched = replace(conn, found, input, now_ms)?;
            record(conn, &by, Action::ApplicationUpdate, target::application(&patched.id), now_ms)?;
            Ok(patched)
        })
        .await
    }

    pub(crate) async fn delete_application(
        &self,
        app: Lookup,
        deletion: Deletion,
        by: Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        self.change(move |conn| {
            let id = live_app_id(conn, &app)?;
            record(conn, &by, Action::ApplicationDelete, target::application(&id), now_ms)?;
            let version = bump_version(conn)?;
            conn.execute(
                "UPDATE jobs SET state = 'dead', last_error = ?3, lease_until = NULL, updated_at = ?2 / 1000
                 WHERE state IN ('pending', 'retrying')
                   AND destination IN (SELECT id FROM endpoints WHERE app_id = ?1 AND deleted_at IS NULL)",
                params![id, now_ms, APPLICATION_DELETED],
            )?;
            conn.execute(
                "UPDATE endpoints SET deleted_at = ?2, version = ?3 WHERE app_id = ?1 AND deleted_at IS NULL",
                params![id, now_ms, version],
            )?;
            match deletion {
                Deletion::Soft => {
                    conn.execute("UPDATE applications SET deleted_at = ?2 WHERE id = ?1", params![id, now_ms])?;
                }
                Deletion::Hard => {
                    conn.execute(
                        "DELETE FROM endpoint_secrets WHERE endpoint_id IN (SELECT id FROM endpoints WHERE app_id = ?1)",
                        params![id],
                    )?;
                    conn.execute("DELETE FROM endpoints WHERE app_id = ?1", params![id])?;
                    conn.execute("DELETE FROM messages WHERE app_id = ?1", params![id])?;
                    conn.execute("DELETE FROM applications WHERE id = ?1", params![id])?;
                }
            }
            Ok(())
        })
        .await
    }
}

fn list(conn: &Connection, cursor: &Cursor, limit: usize) -> Result<Vec<Application>, OutboundError> {
    let (compare, order) = cursor.sql();
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM applications WHERE deleted_at IS NULL AND (?1 IS NULL OR id {compare} ?1)
         ORDER BY id {order} LIMIT ?2"
    ))?;
    let rows = statement.query_map(params![cursor.after, limit as i64 + 1], row_to_application)?;
    let mut apps = Vec::new();
    for row in rows {
        apps.push(finish(row?)?);
    }
    Ok(apps)
}
