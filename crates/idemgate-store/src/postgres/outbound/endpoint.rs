//! Endpoints, their headers and sealed secrets on PostgreSQL. Every change locks the
//! application's row `FOR NO KEY UPDATE` first (see the module above).

use deadpool_postgres::GenericClient;
use idemgate_core::outbound::sealing::{KeyId, SealedSecret};
use tokio_postgres::Row;

use super::{Hold, app_id, bump_version, lock_app, rate, record};
use crate::{
    PgStore, StoreError,
    audit::{Action, Actor, target},
    model::{
        outbound::{
            ListQuery, Lookup, OutboundError, Page, Resource, Upserted,
            endpoint::{
                COLUMNS, ChangedEndpoints, E_COLUMNS, ENDPOINT_DELETED, ENDPOINT_DISABLED, Endpoint, EndpointPatch,
                EndpointState, FIRST_SECRET_SEQ, Headers, HeadersPatch, MAX_OLD_SECRETS, NewEndpoint, NewSecret,
                StoredSecret, patch_headers,
            },
            from_json, from_json_opt, json_text,
        },
        second_of,
    },
};

pub(super) fn endpoint(row: &Row) -> Result<Endpoint, StoreError> {
    Ok(Endpoint {
        id: row.try_get(0)?,
        app_id: row.try_get(1)?,
        uid: row.try_get(2)?,
        url: row.try_get(3)?,
        description: row.try_get(4)?,
        disabled: row.try_get(5)?,
        event_types: from_json_opt(row.try_get(6)?, "endpoint event types")?,
        channels: from_json_opt(row.try_get(7)?, "endpoint channels")?,
        metadata: from_json(row.try_get(8)?, "endpoint metadata")?,
        throttle_rate: rate(row.try_get(9)?),
        headers: from_json(row.try_get(10)?, "endpoint headers")?,
        version: row.try_get(11)?,
        created_at_ms: row.try_get(12)?,
        updated_at_ms: row.try_get(13)?,
    })
}

/// The live endpoint `ep` names in the application `app_id` (`lock`: for a change).
pub(super) async fn find(
    tx: &impl GenericClient,
    app_id: &str,
    ep: &Lookup,
    lock: bool,
) -> Result<Option<Endpoint>, OutboundError> {
    let (column, value) = ep.column("uid");
    let lock = if lock { "FOR UPDATE" } else { "" };
    let select = tx
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM endpoints WHERE app_id = $1 AND {column} = $2 AND deleted_at IS NULL {lock}"
        ))
        .await?;
    Ok(tx.query_opt(&select, &[&app_id, &value]).await?.as_ref().map(endpoint).transpose()?)
}

/// The live endpoint `ep` names, its application locked for a change.
async fn found(tx: &impl GenericClient, app: &Lookup, ep: &Lookup) -> Result<Endpoint, OutboundError> {
    let app_id = lock_app(tx, app, Hold::Change).await?;
    find(tx, &app_id, ep, true).await?.ok_or(OutboundError::NotFound(Resource::Endpoint))
}

/// The enabled, live endpoints of the application `app_id`, for a message's jobs.
pub(super) async fn of_app(tx: &impl GenericClient, app_id: &str) -> Result<Vec<Endpoint>, OutboundError> {
    let select = tx
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM endpoints WHERE app_id = $1 AND deleted_at IS NULL AND NOT disabled"
        ))
        .await?;
    let rows = tx.query(&select, &[&app_id]).await?;
    Ok(rows.iter().map(endpoint).collect::<Result<_, _>>()?)
}

/// Writes `after` (inserted when there is no `before`), and the destination row the claim
/// reads when its `disabled` changed.
async fn save(
    tx: &impl GenericClient,
    before: Option<&Endpoint>,
    after: &Endpoint,
    now_ms: i64,
) -> Result<(), OutboundError> {
    let statement = if before.is_some() {
        "UPDATE endpoints SET app_id = $2, uid = $3, url = $4, description = $5, disabled = $6, event_types = $7,
                channels = $8, metadata = $9, throttle_rate = $10, headers = $11, version = $12, created_at = $13,
                updated_at = $14
         WHERE id = $1"
    } else {
        "INSERT INTO endpoints (id, app_id, uid, url, description, disabled, event_types, channels, metadata,
                                throttle_rate, headers, version, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
    };
    let statement = tx.prepare_cached(statement).await?;
    let rate = after.throttle_rate.map(i32::from);
    tx.execute(
        &statement,
        &[
            &after.id,
            &after.app_id,
            &after.uid,
            &after.url,
            &after.description,
            &after.disabled,
            &after.event_types.as_ref().map(json_text),
            &after.channels.as_ref().map(json_text),
            &json_text(&after.metadata),
            &rate,
            &json_text(&after.headers),
            &after.version,
            &after.created_at_ms,
            &after.updated_at_ms,
        ],
    )
    .await
    .map_err(|err| OutboundError::unique(err, Resource::Endpoint))?;
    let now = second_of(now_ms);
    match (before.map(|b| b.disabled), after.disabled) {
        (Some(false) | None, true) => {
            tx.execute(
                "INSERT INTO destinations (name, disabled_at, disabled_reason) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO UPDATE
                 SET disabled_at = excluded.disabled_at, disabled_reason = excluded.disabled_reason",
                &[&after.id, &now, &ENDPOINT_DISABLED],
            )
            .await?;
        }
        (Some(true), false) => {
            tx.execute(
                "UPDATE destinations SET disabled_at = NULL, disabled_reason = NULL, failures = 0,
                        failing_since_ms = NULL, paused_at_ms = NULL, next_probe_at_ms = NULL, probe_interval_ms = NULL
                 WHERE name = $1",
                &[&after.id],
            )
            .await?;
            tx.execute(
                "UPDATE jobs SET next_attempt_at_ms = $2::bigint * 1000, updated_at = $2
                 WHERE destination = $1 AND state = 'retrying'",
                &[&after.id, &now],
            )
            .await?;
        }
        _ => {}
    }
    Ok(())
}

async fn insert_secret(
    tx: &impl GenericClient,
    endpoint: &str,
    seq: i64,
    sealed: &SealedSecret,
    now_ms: i64,
) -> Result<(), OutboundError> {
    let insert = tx
        .prepare_cached(
            "INSERT INTO endpoint_secrets (endpoint_id, seq, sealed, key_id, expires_at, created_at)
             VALUES ($1, $2, $3, $4, NULL, $5)",
        )
        .await?;
    tx.execute(&insert, &[&endpoint, &seq, &sealed.sealed, &&sealed.key_id.bytes()[..], &now_ms]).await?;
    Ok(())
}

async fn create(
    tx: &impl GenericClient,
    app_id: String,
    new: NewEndpoint,
    now_ms: i64,
) -> Result<Endpoint, OutboundError> {
    let version = bump_version(tx).await?;
    let NewEndpoint { id, endpoint, headers, secret } = new;
    let created = Endpoint::new(id.to_string(), app_id, endpoint, headers, version, now_ms);
    save(tx, None, &created, now_ms).await?;
    insert_secret(tx, &created.id, FIRST_SECRET_SEQ, &secret, now_ms).await?;
    Ok(created)
}

/// Stores `changed` (a change of `stored`) at a new version.
async fn change(
    tx: &impl GenericClient,
    stored: Endpoint,
    changed: impl FnOnce(Endpoint, i64) -> Endpoint,
    now_ms: i64,
) -> Result<Endpoint, OutboundError> {
    let version = bump_version(tx).await?;
    let after = changed(stored.clone(), version);
    save(tx, Some(&stored), &after, now_ms).await?;
    Ok(after)
}

/// The endpoint's current and unexpired secrets at `now_ms`, newest first.
async fn secrets(tx: &impl GenericClient, endpoint: &str, now_ms: i64) -> Result<Vec<StoredSecret>, OutboundError> {
    let select = tx
        .prepare_cached(
            "SELECT seq, sealed, key_id, expires_at, created_at FROM endpoint_secrets
             WHERE endpoint_id = $1 AND (expires_at IS NULL OR expires_at > $2) ORDER BY seq DESC",
        )
        .await?;
    let mut secrets = Vec::new();
    for row in tx.query(&select, &[&endpoint, &now_ms]).await? {
        let key_id: Vec<u8> = row.try_get(2)?;
        let key_id: [u8; 8] = key_id.try_into().map_err(|_| StoreError::Malformed("secret key id"))?;
        secrets.push(StoredSecret {
            seq: row.try_get(0)?,
            sealed: SealedSecret { key_id: KeyId::from_bytes(key_id), sealed: row.try_get(1)? },
            expires_at_ms: row.try_get(3)?,
            created_at_ms: row.try_get(4)?,
        });
    }
    Ok(secrets)
}

/// Records that `by` did `action` to `endpoint`, in the change's transaction.
async fn record_on(
    tx: &impl GenericClient,
    by: &Actor,
    action: Action,
    endpoint: &Endpoint,
    now_ms: i64,
) -> Result<(), OutboundError> {
    record(tx, by, action, target::endpoint(&endpoint.app_id, &endpoint.id), now_ms).await
}

impl PgStore {
    pub(crate) async fn create_endpoint(
        &self,
        app: Lookup,
        new: NewEndpoint,
        by: Actor,
        now_ms: i64,
    ) -> Result<Endpoint, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let app_id = lock_app(&tx, &app, Hold::Change).await?;
        let created = create(&tx, app_id, new, now_ms).await?;
        record_on(&tx, &by, Action::EndpointCreate, &created, now_ms).await?;
        tx.commit().await?;
        Ok(created)
    }

    pub(crate) async fn endpoint(&self, app: Lookup, ep: Lookup) -> Result<Option<Endpoint>, OutboundError> {
        let client = self.client().await?;
        let app_id = app_id(&client, &app).await?;
        find(&client, &app_id, &ep, false).await
    }

    pub(crate) async fn list_endpoints(&self, app: Lookup, query: ListQuery) -> Result<Page<Endpoint>, OutboundError> {
        let client = self.client().await?;
        let app_id = app_id(&client, &app).await?;
        let cursor = query.cursor();
        let (compare, order) = cursor.sql();
        let select = client
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM endpoints
                 WHERE app_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR id {compare} $2)
                 ORDER BY id {order} LIMIT $3"
            ))
            .await?;
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX - 1) + 1;
        let rows = client.query(&select, &[&app_id, &cursor.after, &limit]).await?;
        let endpoints = rows.iter().map(endpoint).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::of(endpoints, query.limit, &cursor, |ep| ep.id.clone()))
    }

    pub(crate) async fn upsert_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        mut new: NewEndpoint,
        by: Actor,
        now_ms: i64,
    ) -> Result<Upserted<Endpoint>, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let app_id = lock_app(&tx, &app, Hold::Change).await?;
        let upserted = match find(&tx, &app_id, &ep, true).await? {
            Some(stored) => {
                let input = new.endpoint;
                let value = change(&tx, stored, |e, version| e.with(input, version, now_ms), now_ms).await?;
                Upserted { value, created: false }
            }
            None => {
                if new.endpoint.uid.is_none() {
                    new.endpoint.uid = ep.uid().map(str::to_owned);
                }
                Upserted { value: create(&tx, app_id, new, now_ms).await?, created: true }
            }
        };
        let action = if upserted.created { Action::EndpointCreate } else { Action::EndpointUpdate };
        record_on(&tx, &by, action, &upserted.value, now_ms).await?;
        tx.commit().await?;
        Ok(upserted)
    }

    pub(crate) async fn patch_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        patch: EndpointPatch,
        by: Actor,
        now_ms: i64,
    ) -> Result<Endpoint, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let stored = found(&tx, &app, &ep).await?;
        let input = patch.apply(&stored);
        let changed = change(&tx, stored, |e, version| e.with(input, version, now_ms), now_ms).await?;
        record_on(&tx, &by, Action::EndpointUpdate, &changed, now_ms).await?;
        tx.commit().await?;
        Ok(changed)
    }

    pub(crate) async fn set_endpoint_headers(
        &self,
        app: Lookup,
        ep: Lookup,
        headers: Headers,
        by: Actor,
        now_ms: i64,
    ) -> Result<Endpoint, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let stored = found(&tx, &app, &ep).await?;
        let changed =
            change(&tx, stored, |e, version| Endpoint { headers, version, updated_at_ms: now_ms, ..e }, now_ms).await?;
        record_on(&tx, &by, Action::EndpointHeaders, &changed, now_ms).await?;
        tx.commit().await?;
        Ok(changed)
    }

    pub(crate) async fn patch_endpoint_headers(
        &self,
        app: Lookup,
        ep: Lookup,
        patch: HeadersPatch,
        by: Actor,
        now_ms: i64,
    ) -> Result<Endpoint, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let stored = found(&tx, &app, &ep).await?;
        let headers = patch_headers(stored.headers.clone(), patch);
        let changed =
            change(&tx, stored, |e, version| Endpoint { headers, version, updated_at_ms: now_ms, ..e }, now_ms).await?;
        record_on(&tx, &by, Action::EndpointHeaders, &changed, now_ms).await?;
        tx.commit().await?;
        Ok(changed)
    }

    pub(crate) async fn delete_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        by: Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let stored = found(&tx, &app, &ep).await?;
        record_on(&tx, &by, Action::EndpointDelete, &stored, now_ms).await?;
        let version = bump_version(&tx).await?;
        tx.execute(
            "UPDATE endpoints SET deleted_at = $2, version = $3, updated_at = $2 WHERE id = $1",
            &[&stored.id, &now_ms, &version],
        )
        .await?;
        tx.execute(
            "UPDATE jobs SET state = 'dead', last_error = $3, lease_until = NULL, updated_at = $2
             WHERE destination = $1 AND state IN ('pending', 'retrying')",
            &[&stored.id, &second_of(now_ms), &ENDPOINT_DELETED],
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn endpoint_secrets(
        &self,
        app: Lookup,
        ep: Lookup,
        now_ms: i64,
    ) -> Result<Vec<StoredSecret>, OutboundError> {
        let client = self.client().await?;
        let app_id = app_id(&client, &app).await?;
        let stored = find(&client, &app_id, &ep, false).await?.ok_or(OutboundError::NotFound(Resource::Endpoint))?;
        secrets(&client, &stored.id, now_ms).await
    }

    pub(crate) async fn rotate_endpoint_secret(
        &self,
        app: Lookup,
        ep: Lookup,
        secret: NewSecret,
        grace_ms: i64,
        by: Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let stored = found(&tx, &app, &ep).await?;
        record_on(&tx, &by, Action::EndpointSecretRotate, &stored, now_ms).await?;
        let last: i64 = tx
            .query_one("SELECT coalesce(max(seq), 0) FROM endpoint_secrets WHERE endpoint_id = $1", &[&stored.id])
            .await?
            .try_get(0)?;
        if secret.seq != last + 1 {
            return Err(OutboundError::StaleSecret);
        }
        tx.execute(
            "UPDATE endpoint_secrets SET expires_at = $2 WHERE endpoint_id = $1 AND expires_at IS NULL",
            &[&stored.id, &now_ms.saturating_add(grace_ms)],
        )
        .await?;
        insert_secret(&tx, &stored.id, secret.seq, &secret.sealed, now_ms).await?;
        tx.execute(
            "DELETE FROM endpoint_secrets WHERE endpoint_id = $1 AND expires_at IS NOT NULL
               AND (expires_at <= $2 OR seq NOT IN (
                   SELECT seq FROM endpoint_secrets WHERE endpoint_id = $1 AND expires_at > $2
                   ORDER BY seq DESC LIMIT $3))",
            &[&stored.id, &now_ms, &(MAX_OLD_SECRETS as i64)],
        )
        .await?;
        change(&tx, stored, |e, version| Endpoint { version, updated_at_ms: now_ms, ..e }, now_ms).await?;
        tx.commit().await?;
        Ok(())
    }

    pub(crate) async fn outbound_version(&self) -> Result<i64, OutboundError> {
        let client = self.client().await?;
        Ok(client.query_one("SELECT version FROM outbound_version", &[]).await?.try_get(0)?)
    }

    pub(crate) async fn endpoints_changed_since(
        &self,
        version: i64,
        now_ms: i64,
    ) -> Result<ChangedEndpoints, OutboundError> {
        let client = self.client().await?;
        let current: i64 = client.query_one("SELECT version FROM outbound_version", &[]).await?.try_get(0)?;
        let select = client
            .prepare_cached(&format!(
                "SELECT {E_COLUMNS}, e.deleted_at IS NULL AND a.deleted_at IS NULL
                 FROM endpoints e JOIN applications a ON a.id = e.app_id
                 WHERE e.version > $1 ORDER BY e.version"
            ))
            .await?;
        let mut endpoints = Vec::new();
        for row in client.query(&select, &[&version]).await? {
            let live: bool = row.try_get(14)?;
            let endpoint = endpoint(&row)?;
            let secrets = secrets(&client, &endpoint.id, now_ms).await?;
            endpoints.push(EndpointState { endpoint, live, secrets });
        }
        Ok(ChangedEndpoints { version: current, endpoints })
    }
}
