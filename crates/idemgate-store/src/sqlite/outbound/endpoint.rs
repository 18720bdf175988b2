//! Endpoints, their headers and sealed secrets on SQLite.

use idemgate_core::{
    UnixTime,
    outbound::sealing::{KeyId, SealedSecret},
};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{bump_version, live_app_id, record};
use crate::{
    SqliteStore, StoreError,
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
    sqlite::jobs::{disable_destination, enable_destination},
};

/// An endpoint's row with its JSON columns still text.
pub(super) struct Raw {
    endpoint: Endpoint,
    event_types: Option<String>,
    channels: Option<String>,
    metadata: String,
    headers: String,
}

pub(super) fn raw(row: &Row<'_>) -> rusqlite::Result<Raw> {
    Ok(Raw {
        endpoint: Endpoint {
            id: row.get(0)?,
            app_id: row.get(1)?,
            uid: row.get(2)?,
            url: row.get(3)?,
            description: row.get(4)?,
            disabled: row.get(5)?,
            event_types: None,
            channels: None,
            metadata: Default::default(),
            throttle_rate: row.get(9)?,
            headers: Headers::new(),
            version: row.get(11)?,
            created_at_ms: row.get(12)?,
            updated_at_ms: row.get(13)?,
        },
        event_types: row.get(6)?,
        channels: row.get(7)?,
        metadata: row.get(8)?,
        headers: row.get(10)?,
    })
}

impl Raw {
    pub(super) fn finish(self) -> Result<Endpoint, StoreError> {
        Ok(Endpoint {
            event_types: from_json_opt(self.event_types, "endpoint event types")?,
            channels: from_json_opt(self.channels, "endpoint channels")?,
            metadata: from_json(&self.metadata, "endpoint metadata")?,
            headers: from_json(&self.headers, "endpoint headers")?,
            ..self.endpoint
        })
    }
}

fn collect(rows: impl Iterator<Item = rusqlite::Result<Raw>>) -> Result<Vec<Endpoint>, OutboundError> {
    let mut endpoints = Vec::new();
    for row in rows {
        endpoints.push(row?.finish()?);
    }
    Ok(endpoints)
}

/// The live endpoint `ep` names in the application `app_id`.
pub(super) fn find(conn: &Connection, app_id: &str, ep: &Lookup) -> Result<Option<Endpoint>, OutboundError> {
    let (column, value) = ep.column("uid");
    let raw = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM endpoints WHERE app_id = ?1 AND {column} = ?2 AND deleted_at IS NULL"
        ))?
        .query_row(params![app_id, value], raw)
        .optional()?;
    Ok(raw.map(Raw::finish).transpose()?)
}

/// The application's id and its live endpoint `ep` names, or which of them is missing.
fn found(conn: &Connection, app: &Lookup, ep: &Lookup) -> Result<Endpoint, OutboundError> {
    let app_id = live_app_id(conn, app)?;
    find(conn, &app_id, ep)?.ok_or(OutboundError::NotFound(Resource::Endpoint))
}

/// The live endpoints of the application `app_id`, for a message's jobs.
pub(super) fn of_app(conn: &Connection, app_id: &str) -> Result<Vec<Endpoint>, OutboundError> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM endpoints WHERE app_id = ?1 AND deleted_at IS NULL AND NOT disabled"
    ))?;
    collect(statement.query_map(params![app_id], raw)?)
}

/// Writes `after` (inserted when there is no `before`), and the destination row the claim
/// reads when its `disabled` changed.
fn save(conn: &Connection, before: Option<&Endpoint>, after: &Endpoint, now_ms: i64) -> Result<(), OutboundError> {
    let statement = if before.is_some() {
        "UPDATE endpoints SET app_id = ?2, uid = ?3, url = ?4, description = ?5, disabled = ?6, event_types = ?7,
                channels = ?8, metadata = ?9, throttle_rate = ?10, headers = ?11, version = ?12, created_at = ?13,
                updated_at = ?14
         WHERE id = ?1"
    } else {
        "INSERT INTO endpoints (id, app_id, uid, url, description, disabled, event_types, channels, metadata,
                                throttle_rate, headers, version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
    };
    conn.prepare_cached(statement)?
        .execute(params![
            after.id,
            after.app_id,
            after.uid,
            after.url,
            after.description,
            after.disabled,
            after.event_types.as_ref().map(json_text),
            after.channels.as_ref().map(json_text),
            json_text(&after.metadata),
            after.throttle_rate,
            json_text(&after.headers),
            after.version,
            after.created_at_ms,
            after.updated_at_ms,
        ])
        .map_err(|err| OutboundError::unique(err, Resource::Endpoint))?;
    let now = UnixTime(second_of(now_ms));
    match (before.map(|b| b.disabled), after.disabled) {
        (Some(false) | None, true) => disable_destination(conn, &after.id, ENDPOINT_DISABLED, now)?,
        (Some(true), false) => {
            enable_destination(conn, &after.id, now)?;
        }
        _ => {}
    }
    Ok(())
}

fn insert_secret(
    conn: &Connection,
    endpoint: &str,
    seq: i64,
    sealed: &SealedSecret,
    now_ms: i64,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "INSERT INTO endpoint_secrets (endpoint_id, seq, sealed, key_id, expires_at, created_at)
         VALUES (?1, ?2, ?3, ?4, NULL, ?5)",
    )?
    .execute(params![endpoint, seq, sealed.sealed, &sealed.key_id.bytes()[..], now_ms])
}

fn create(conn: &Connection, app: &Lookup, new: NewEndpoint, now_ms: i64) -> Result<Endpoint, OutboundError> {
    let app_id = live_app_id(conn, app)?;
    let version = bump_version(conn)?;
    let NewEndpoint { id, endpoint, headers, secret } = new;
    let created = Endpoint::new(id.to_string(), app_id, endpoint, headers, version, now_ms);
    save(conn, None, &created, now_ms)?;
    insert_secret(conn, &created.id, FIRST_SECRET_SEQ, &secret, now_ms)?;
    Ok(created)
}

/// Stores `changed` (a change of `stored`) at a new version.
fn change(
    conn: &Connection,
    stored: Endpoint,
    changed: impl FnOnce(Endpoint, i64) -> Endpoint,
    now_ms: i64,
) -> Result<Endpoint, OutboundError> {
    let version = bump_version(conn)?;
    let after = changed(stored.clone(), version);
    save(conn, Some(&stored), &after, now_ms)?;
    Ok(after)
}

/// Records that `by` did `action` to `endpoint`, in the change's savepoint.
fn record_on(
    conn: &Connection,
    by: &Actor,
    action: Action,
    endpoint: &Endpoint,
    now_ms: i64,
) -> Result<(), OutboundError> {
    record(conn, by, action, target::endpoint(&endpoint.app_id, &endpoint.id), now_ms)
}

/// The endpoint's current and unexpired secrets at `now_ms`, newest first.
fn secrets(conn: &Connection, endpoint: &str, now_ms: i64) -> Result<Vec<StoredSecret>, OutboundError> {
    let mut statement = conn.prepare_cached(
        "SELECT seq, sealed, key_id, expires_at, created_at FROM endpoint_secrets
         WHERE endpoint_id = ?1 AND (expires_at IS NULL OR expires_at > ?2) ORDER BY seq DESC",
    )?;
    let rows = statement.query_map(params![endpoint, now_ms], |row| {
        Ok((row.get::<_, i64>(0)?, row.get::<_, Vec<u8>>(1)?, row.get::<_, Vec<u8>>(2)?, row.get(3)?, row.get(4)?))
    })?;
    let mut secrets = Vec::new();
    for row in rows {
        let (seq, sealed, key_id, expires_at_ms, created_at_ms) = row?;
        let key_id: [u8; 8] = key_id.try_into().map_err(|_| StoreError::Malformed("secret key id"))?;
        secrets.push(StoredSecret {
            seq,
            sealed: SealedSecret { key_id: KeyId::from_bytes(key_id), sealed },
            expires_at_ms,
            created_at_ms,
        });
    }
    Ok(secrets)
}

impl SqliteStore {
    pub(crate) async fn create_endpoint(
        &self,
        app: Lookup,
        new: NewEndpoint,
        by: Actor,
        now_ms: i64,
    ) -> Result<Endpoint, OutboundError> {
        self.change(move |conn| {
            let created = create(conn, &app, new, now_ms)?;
            record_on(conn, &by, Action::EndpointCreate, &created, now_ms)?;
            Ok(created)
        })
        .await
    }

    pub(crate) async fn endpoint(&self, app: Lookup, ep: Lookup) -> Result<Option<Endpoint>, OutboundError> {
        self.look(move |conn| {
            let app_id = live_app_id(conn, &app)?;
            find(conn, &app_id, &ep)
        })
        .await
    }

    pub(crate) async fn list_endpoints(&self, app: Lookup, query: ListQuery) -> Result<Page<Endpoint>, OutboundError> {
        self.look(move |conn| {
            let app_id = live_app_id(conn, &app)?;
            let cursor = query.cursor();
            let (compare, order) = cursor.sql();
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM endpoints WHERE app_id = ?1 AND deleted_at IS NULL AND (?2 IS NULL OR id {compare} ?2)
                 ORDER BY id {order} LIMIT ?3"
            ))?;
            let rows = collect(statement.query_map(params![app_id, cursor.after, query.limit as i64 + 1], raw)?)?;
            Ok(Page::of(rows, query.limit, &cursor, |ep| ep.id.clone()))
        })
        .await
    }

    pub(crate) async fn upsert_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        mut new: NewEndpoint,
        by: Actor,
        now_ms: i64,
    ) -> Result<Upserted<Endpoint>, OutboundError> {
        self.change(move |conn| {
            let app_id = live_app_id(conn, &app)?;
            let upserted = match find(conn, &app_id, &ep)? {
                Some(stored) => {
                    let input = new.endpoint;
                    let value = change(conn, stored, |e, version| e.with(input, version, now_ms), now_ms)?;
                    Upserted { value, created: false }
                }
                None => {
                    if new.endpoint.uid.is_none() {
                        new.endpoint.uid = ep.uid().map(str::to_owned);
                    }
                    Upserted { value: create(conn, &Lookup::Id(app_id), new, now_ms)?, created: true }
                }
            };
            let action = if upserted.created { Action::EndpointCreate } else { Action::EndpointUpdate };
            record_on(conn, &by, action, &upserted.value, now_ms)?;
            Ok(upserted)
        })
        .await
    }

    pub(crate) async fn patch_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        patch: EndpointPatch,
        by: Actor,
        now_ms: i64,
    ) -> Result<Endpoint, OutboundError> {
        self.change(move |conn| {
            let stored = found(conn, &app, &ep)?;
            let input = patch.apply(&stored);
            let patched = change(conn, stored, |e, version| e.with(input, version, now_ms), now_ms)?;
            record_on(conn, &by, Action::EndpointUpdate, &patched, now_ms)?;
            Ok(patched)
        })
        .await
    }

    pub(crate) async fn set_endpoint_headers(
        &self,
        app: Lookup,
        ep: Lookup,
        headers: Headers,
        by: Actor,
        now_ms: i64,
    ) -> Result<Endpoint, OutboundError> {
        self.change(move |conn| {
            let stored = found(conn, &app, &ep)?;
            let set =
                change(conn, stored, |e, version| Endpoint { headers, version, updated_at_ms: now_ms, ..e }, now_ms)?;
            record_on(conn, &by, Action::EndpointHeaders, &set, now_ms)?;
            Ok(set)
        })
        .await
    }

    pub(crate) async fn patch_endpoint_headers(
        &self,
        app: Lookup,
        ep: Lookup,
        patch: HeadersPatch,
        by: Actor,
        now_ms: i64,
    ) -> Result<Endpoint, OutboundError> {
        self.change(move |conn| {
            let stored = found(conn, &app, &ep)?;
            let headers = patch_headers(stored.headers.clone(), patch);
            let set =
                change(conn, stored, |e, version| Endpoint { headers, version, updated_at_ms: now_ms, ..e }, now_ms)?;
            record_on(conn, &by, Action::EndpointHeaders, &set, now_ms)?;
            Ok(set)
        })
        .await
    }

    pub(crate) async fn delete_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        by: Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        self.change(move |conn| {
            let stored = found(conn, &app, &ep)?;
            record_on(conn, &by, Action::EndpointDelete, &stored, now_ms)?;
            let version = bump_version(conn)?;
            conn.execute(
                "UPDATE endpoints SET deleted_at = ?2, version = ?3, updated_at = ?2 WHERE id = ?1",
                params![stored.id, now_ms, version],
            )?;
            conn.execute(
                "UPDATE jobs SET state = 'dead', last_error = ?3, lease_until = NULL, updated_at = ?2
                 WHERE destination = ?1 AND state IN ('pending', 'retrying')",
                params![stored.id, second_of(now_ms), ENDPOINT_DELETED],
            )?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn endpoint_secrets(
        &self,
        app: Lookup,
        ep: Lookup,
        now_ms: i64,
    ) -> Result<Vec<StoredSecret>, OutboundError> {
        self.look(move |conn| {
            let stored = found(conn, &app, &ep)?;
            secrets(conn, &stored.id, now_ms)
        })
        .await
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
        self.change(move |conn| {
            let stored = found(conn, &app, &ep)?;
            record_on(conn, &by, Action::EndpointSecretRotate, &stored, now_ms)?;
            let last: i64 = conn
                .prepare_cached("SELECT coalesce(max(seq), 0) FROM endpoint_secrets WHERE endpoint_id = ?1")?
                .query_row(params![stored.id], |row| row.get(0))?;
            if secret.seq != last + 1 {
                return Err(OutboundError::StaleSecret);
            }
            conn.execute(
                "UPDATE endpoint_secrets SET expires_at = ?2 WHERE endpoint_id = ?1 AND expires_at IS NULL",
                params![stored.id, now_ms.saturating_add(grace_ms)],
            )?;
            insert_secret(conn, &stored.id, secret.seq, &secret.sealed, now_ms)?;
            conn.execute(
                "DELETE FROM endpoint_secrets WHERE endpoint_id = ?1 AND expires_at IS NOT NULL
                   AND (expires_at <= ?2 OR seq NOT IN (
                       SELECT seq FROM endpoint_secrets WHERE endpoint_id = ?1 AND expires_at > ?2
                       ORDER BY seq DESC LIMIT ?3))",
                params![stored.id, now_ms, MAX_OLD_SECRETS as i64],
            )?;
            change(conn, stored, |e, version| Endpoint { version, updated_at_ms: now_ms, ..e }, now_ms)?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn outbound_version(&self) -> Result<i64, OutboundError> {
        self.look(|conn| Ok(conn.query_row("SELECT version FROM outbound_version", [], |row| row.get(0))?)).await
    }

    pub(crate) async fn endpoints_changed_since(
        &self,
        version: i64,
        now_ms: i64,
    ) -> Result<ChangedEndpoints, OutboundError> {
        self.look(move |conn| {
            let current: i64 = conn.query_row("SELECT version FROM outbound_version", [], |row| row.get(0))?;
            let mut statement = conn.prepare_cached(&format!(
                "SELECT {E_COLUMNS}, e.deleted_at IS NULL AND a.deleted_at IS NULL
                 FROM endpoints e JOIN applications a ON a.id = e.app_id
                 WHERE e.version > ?1 ORDER BY e.version"
            ))?;
            let rows = statement.query_map(params![version], |row| Ok((raw(row)?, row.get::<_, bool>(14)?)))?;
            let mut endpoints = Vec::new();
            for row in rows {
                let (raw, live) = row?;
                let endpoint = raw.finish()?;
                let secrets = secrets(conn, &endpoint.id, now_ms)?;
                endpoints.push(EndpointState { endpoint, live, secrets });
            }
            Ok(ChangedEndpoints { version: current, endpoints })
        })
        .await
    }
}
