//! Applications on PostgreSQL.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::{Hold, bump_version, lock_app, rate, record};
use crate::{
    PgStore, StoreError,
    audit::{Action, Actor, target},
    model::outbound::{
        ListQuery, Lookup, OutboundError, Page, Resource, Upserted,
        application::{APPLICATION_DELETED, Application, ApplicationIn, ApplicationPatch, COLUMNS, Deletion},
        from_json, json_text, new_application_id,
    },
};

fn application(row: &Row) -> Result<Application, StoreError> {
    Ok(Application {
        id: row.try_get(0)?,
        uid: row.try_get(1)?,
        name: row.try_get(2)?,
        metadata: from_json(row.try_get(3)?, "application metadata")?,
        throttle_rate: rate(row.try_get(4)?),
        created_at_ms: row.try_get(5)?,
        updated_at_ms: row.try_get(6)?,
    })
}

/// The live application `app` names, if any (`lock`: held for a change).
async fn find(tx: &impl GenericClient, app: &Lookup, lock: bool) -> Result<Option<Application>, OutboundError> {
    let (column, value) = app.column("uid");
    let lock = if lock { "FOR NO KEY UPDATE" } else { "" };
    let select = tx
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM applications WHERE {column} = $1 AND deleted_at IS NULL {lock}"
        ))
        .await?;
    Ok(tx.query_opt(&select, &[&value]).await?.as_ref().map(application).transpose()?)
}

async fn insert(tx: &impl GenericClient, input: ApplicationIn, now_ms: i64) -> Result<Application, OutboundError> {
    let id = new_application_id(now_ms)?;
    let statement = tx
        .prepare_cached(
            "INSERT INTO applications (id, uid, name, metadata, throttle_rate, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6)",
        )
        .await?;
    let rate = input.throttle_rate.map(i32::from);
    tx.execute(&statement, &[&id, &input.uid, &input.name, &json_text(&input.metadata), &rate, &now_ms])
        .await
        .map_err(|err| OutboundError::unique(err, Resource::Application))?;
    bump_version(tx).await?;
    let ApplicationIn { name, uid, metadata, throttle_rate } = input;
    Ok(Application { id, uid, name, metadata, throttle_rate, created_at_ms: now_ms, updated_at_ms: now_ms })
}

async fn replace(
    tx: &impl GenericClient,
    app: Application,
    input: ApplicationIn,
    now_ms: i64,
) -> Result<Application, OutboundError> {
    let statement = tx
        .prepare_cached(
            "UPDATE applications SET uid = $2, name = $3, metadata = $4, throttle_rate = $5, updated_at = $6 WHERE id = $1",
        )
        .await?;
    let rate = input.throttle_rate.map(i32::from);
    tx.execute(&statement, &[&app.id, &input.uid, &input.name, &json_text(&input.metadata), &rate, &now_ms])
        .await
        .map_err(|err| OutboundError::unique(err, Resource::Application))?;
    bump_version(tx).await?;
    let ApplicationIn { name, uid, metadata, throttle_rate } = input;
    Ok(Application { uid, name, metadata, throttle_rate, updated_at_ms: now_ms, ..app })
}

impl PgStore {
    pub(crate) async fn create_application(
        &self,
        input: ApplicationIn,
        by: Actor,
        now_ms: i64,
    ) -> Result<Application, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let app = insert(&tx, input, now_ms).await?;
        record(&tx, &by, Action::ApplicationCreate, target::application(&app.id), now_ms).await?;
        tx.commit().await?;
        Ok(app)
    }

    pub(crate) async fn application(&self, app: Lookup) -> Result<Option<Application>, OutboundError> {
        find(&self.client().await?, &app, false).await
    }

    pub(crate) async fn list_applications(&self, query: ListQuery) -> Result<Page<Application>, OutboundError> {
        let client = self.client().await?;
        let cursor = query.cursor();
        let (compare, order) = cursor.sql();
        let select = client
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM applications WHERE deleted_at IS NULL AND ($1::text IS NULL OR id {compare} $1)
                 ORDER BY id {order} LIMIT $2"
            ))
            .await?;
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX - 1) + 1;
        let rows = client.query(&select, &[&cursor.after, &limit]).await?;
        let apps = rows.iter().map(application).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::of(apps, query.limit, &cursor, |app| app.id.clone()))
    }

    pub(crate) async fn upsert_application(
        &self,
        app: Lookup,
        mut input: ApplicationIn,
        by: Actor,
        now_ms: i64,
    ) -> Result<Upserted<Application>, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let upserted = match find(&tx, &app, true).await? {
            Some(found) => Upserted { value: replace(&tx, found, input, now_ms).await?, created: false },
            None => {
                if input.uid.is_none() {
                    input.uid = app.uid().map(str::to_owned);
                }
                Upserted { value: insert(&tx, input, now_ms).await?, created: true }
            }
        };
        let action = if upserted.created { Action::ApplicationCreate } else { Action::ApplicationUpdate };
        record(&tx, &by, action, target::application(&upserted.value.id), now_ms).await?;
        tx.commit().await?;
        Ok(upserted)
    }

    pub(crate) async fn patch_application(
        &self,
        app: Lookup,
        patch: ApplicationPatch,
        by: Actor,
        now_ms: i64,
    ) -> Result<Application, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let found = find(&tx, &app, true).await?.ok_or(OutboundError::NotFound(Resource::Application))?;
        let input = patch.apply(&found);
        let app = replace(&tx, found, input, now_ms).await?;
        record(&tx, &by, Action::ApplicationUpdate, target::application(&app.id), now_ms).await?;
        tx.commit().await?;
        Ok(app)
    }

    pub(crate) async fn delete_application(
        &self,
        app: Lookup,
        deletion: Deletion,
        by: Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let id = lock_app(&tx, &app, Hold::Change).await?;
        record(&tx, &by, Action::ApplicationDelete, target::application(&id), now_ms).await?;
        let version = bump_version(&tx).await?;
        tx.execute(
            "UPDATE jobs SET state = 'dead', last_error = $3, lease_until = NULL, updated_at = $2::bigint / 1000
             WHERE state IN ('pending', 'retrying')
               AND destination IN (SELECT id FROM endpoints WHERE app_id = $1 AND deleted_at IS NULL)",
            &[&id, &now_ms, &APPLICATION_DELETED],
        )
        .await?;
        tx.execute(
            "UPDATE endpoints SET deleted_at = $2, version = $3 WHERE app_id = $1 AND deleted_at IS NULL",
            &[&id, &now_ms, &version],
        )
        .await?;
        match deletion {
            Deletion::Soft => {
                tx.execute("UPDATE applications SET deleted_at = $2 WHERE id = $1", &[&id, &now_ms]).await?;
            }
            Deletion::Hard => {
                tx.execute(
                    "DELETE FROM endpoint_secrets WHERE endpoint_id IN (SELECT id FROM endpoints WHERE app_id = $1)",
                    &[&id],
                )
                .await?;
                tx.execute("DELETE FROM endpoints WHERE app_id = $1", &[&id]).await?;
                tx.execute("DELETE FROM messages WHERE app_id = $1", &[&id]).await?;
                tx.execute("DELETE FROM applications WHERE id = $1", &[&id]).await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }
}
