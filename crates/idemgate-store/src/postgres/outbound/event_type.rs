//! Event types on PostgreSQL.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::record;
use crate::{
    PgStore, StoreError,
    audit::{Action, Actor, target},
    model::outbound::{
        ListQuery, OutboundError, Page, Resource, Upserted,
        event_type::{COLUMNS, EventType, EventTypeDeletion, EventTypeIn, EventTypePatch},
    },
};

fn event_type(row: &Row) -> Result<EventType, StoreError> {
    Ok(EventType {
        name: row.try_get(0)?,
        description: row.try_get(1)?,
        archived: row.try_get(2)?,
        deprecated: row.try_get(3)?,
        feature_flag: row.try_get(4)?,
        schemas: row.try_get(5)?,
        created_at_ms: row.try_get(6)?,
        updated_at_ms: row.try_get(7)?,
    })
}

async fn find(tx: &impl GenericClient, name: &str, lock: bool) -> Result<Option<EventType>, OutboundError> {
    let lock = if lock { "FOR UPDATE" } else { "" };
    let select = tx.prepare_cached(&format!("SELECT {COLUMNS} FROM event_types WHERE name = $1 {lock}")).await?;
    Ok(tx.query_opt(&select, &[&name]).await?.as_ref().map(event_type).transpose()?)
}

async fn insert(
    tx: &impl GenericClient,
    name: String,
    input: EventTypeIn,
    now_ms: i64,
) -> Result<EventType, OutboundError> {
    let statement = tx
        .prepare_cached(
            "INSERT INTO event_types (name, description, archived, deprecated, feature_flag, schemas, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT DO NOTHING",
        )
        .await?;
    let inserted = tx
        .execute(
            &statement,
            &[
                &name,
                &input.description,
                &input.archived,
                &input.deprecated,
                &input.feature_flag,
                &input.schemas,
                &now_ms,
            ],
        )
        .await?;
    if inserted == 0 {
        return Err(OutboundError::EventTypeExists);
    }
    Ok(EventType::of(name, input, now_ms, now_ms))
}

async fn replace(
    tx: &impl GenericClient,
    stored: EventType,
    input: EventTypeIn,
    now_ms: i64,
) -> Result<EventType, OutboundError> {
    let statement = tx
        .prepare_cached(
            "UPDATE event_types SET description = $2, archived = $3, deprecated = $4, feature_flag = $5, schemas = $6,
                    updated_at = $7
             WHERE name = $1",
        )
        .await?;
    tx.execute(
        &statement,
        &[
            &stored.name,
            &input.description,
            &input.archived,
            &input.deprecated,
            &input.feature_flag,
            &input.schemas,
            &now_ms,
        ],
    )
    .await?;
    Ok(EventType::of(stored.name, input, stored.created_at_ms, now_ms))
}

impl PgStore {
    pub(crate) async fn create_event_type(
        &self,
        name: String,
        input: EventTypeIn,
        by: Actor,
        now_ms: i64,
    ) -> Result<EventType, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let created = insert(&tx, name, input, now_ms).await?;
        record(&tx, &by, Action::EventTypeCreate, target::event_type(&created.name), now_ms).await?;
        tx.commit().await?;
        Ok(created)
    }

    pub(crate) async fn event_type(&self, name: String) -> Result<Option<EventType>, OutboundError> {
        find(&self.client().await?, &name, false).await
    }

    pub(crate) async fn list_event_types(
        &self,
        query: ListQuery,
        include_archived: bool,
    ) -> Result<Page<EventType>, OutboundError> {
        let client = self.client().await?;
        let cursor = query.cursor();
        let (compare, order) = cursor.sql();
        let select = client
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM event_types WHERE ($1 OR NOT archived) AND ($2::text IS NULL OR name {compare} $2)
                 ORDER BY name {order} LIMIT $3"
            ))
            .await?;
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX - 1) + 1;
        let rows = client.query(&select, &[&include_archived, &cursor.after, &limit]).await?;
        let types = rows.iter().map(event_type).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::of(types, query.limit, &cursor, |t| t.name.clone()))
    }

    pub(crate) async fn upsert_event_type(
        &self,
        name: String,
        input: EventTypeIn,
        by: Actor,
        now_ms: i64,
    ) -> Result<Upserted<EventType>, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let upserted = match find(&tx, &name, true).await? {
            Some(stored) => Upserted { value: replace(&tx, stored, input, now_ms).await?, created: false },
            // A racing create of the same name makes this insert find it: told as exists.
            None => Upserted { value: insert(&tx, name, input, now_ms).await?, created: true },
        };
        let action = if upserted.created { Action::EventTypeCreate } else { Action::EventTypeUpdate };
        record(&tx, &by, action, target::event_type(&upserted.value.name), now_ms).await?;
        tx.commit().await?;
        Ok(upserted)
    }

    pub(crate) async fn patch_event_type(
        &self,
        name: String,
        patch: EventTypePatch,
        by: Actor,
        now_ms: i64,
    ) -> Result<EventType, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let stored = find(&tx, &name, true).await?.ok_or(OutboundError::NotFound(Resource::EventType))?;
        let input = patch.apply(&stored);
        let changed = replace(&tx, stored, input, now_ms).await?;
        record(&tx, &by, Action::EventTypeUpdate, target::event_type(&changed.name), now_ms).await?;
        tx.commit().await?;
        Ok(changed)
    }

    pub(crate) async fn delete_event_type(
        &self,
        name: String,
        deletion: EventTypeDeletion,
        by: Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let (changed, action) = match deletion {
            EventTypeDeletion::Archive => (
                tx.execute(
                    "UPDATE event_types SET archived = true, updated_at = $2 WHERE name = $1",
                    &[&name, &now_ms],
                )
                .await?,
                Action::EventTypeArchive,
            ),
            EventTypeDeletion::Expunge => {
                (tx.execute("DELETE FROM event_types WHERE name = $1", &[&name]).await?, Action::EventTypeDelete)
            }
        };
        if changed == 0 {
            return Err(OutboundError::NotFound(Resource::EventType));
        }
        record(&tx, &by, action, target::event_type(&name), now_ms).await?;
        tx.commit().await?;
        Ok(())
    }
}
