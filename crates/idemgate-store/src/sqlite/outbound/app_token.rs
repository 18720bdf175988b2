//! Application tokens on SQLite: their digests in `api_tokens`, issued and revoked on the
//! writer with their audit record, looked up on a read connection.

use rusqlite::{Connection, OptionalExtension, params};

use super::{live_app_id, record};
use crate::{
    SqliteStore,
    audit::{Action, Actor, target},
    model::outbound::{
        Lookup, OutboundError,
        app_token::{AppToken, NewAppToken, live},
    },
};

/// Keeps `token` for the live application `app`, dropping the tokens that expired.
fn issue(
    conn: &Connection,
    app: &Lookup,
    token: &NewAppToken,
    by: &Actor,
    now_ms: i64,
) -> Result<String, OutboundError> {
    let app_id = live_app_id(conn, app)?;
    conn.prepare_cached("DELETE FROM api_tokens WHERE expires_at <= ?1")?.execute(params![now_ms])?;
    conn.prepare_cached(
        "INSERT INTO api_tokens (digest, app_id, issued_by, expires_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![&token.digest[..], app_id, by.name(), token.expires_at_ms, now_ms])?;
    if let Some(login) = &token.login {
        conn.prepare_cached("DELETE FROM portal_logins WHERE expires_at <= ?1")?.execute(params![now_ms])?;
        conn.prepare_cached(
            "INSERT INTO portal_logins (digest, app_id, via, expires_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![&login.digest[..], app_id, &token.digest[..], login.expires_at_ms, now_ms])?;
    }
    record(conn, by, Action::AppTokenIssue, target::app_token(&app_id), now_ms)?;
    Ok(app_id)
}

/// Deletes the token of `digest`; whether there was one.
fn revoke(conn: &Connection, digest: &[u8; 32], by: &Actor, now_ms: i64) -> Result<bool, OutboundError> {
    let app_id: Option<String> = conn
        .prepare_cached("DELETE FROM api_tokens WHERE digest = ?1 RETURNING app_id")?
        .query_row(params![&digest[..]], |row| row.get(0))
        .optional()?;
    let Some(app_id) = app_id else { return Ok(false) };
    conn.prepare_cached("DELETE FROM sessions WHERE via = ?1")?.execute(params![&digest[..]])?;
    conn.prepare_cached("DELETE FROM portal_logins WHERE via = ?1")?.execute(params![&digest[..]])?;
    record(conn, by, Action::AppTokenRevoke, target::app_token(&app_id), now_ms)?;
    Ok(true)
}

/// The token of `digest` if its application is live and it has not expired at `now_ms`.
fn find(conn: &Connection, digest: &[u8; 32], now_ms: i64) -> Result<Option<AppToken>, OutboundError> {
    let token = conn
        .prepare_cached(
            "SELECT t.app_id, a.uid, t.issued_by, t.created_at, t.expires_at
             FROM api_tokens t JOIN applications a ON a.id = t.app_id AND a.deleted_at IS NULL
             WHERE t.digest = ?1",
        )?
        .query_row(params![&digest[..]], |row| {
            Ok(AppToken {
                app_id: row.get(0)?,
                app_uid: row.get(1)?,
                issued_by: row.get(2)?,
                created_at_ms: row.get(3)?,
                expires_at_ms: row.get(4)?,
            })
        })
        .optional()?;
    Ok(token.filter(|token| live(token.expires_at_ms, now_ms)))
}

impl SqliteStore {
    pub(crate) async fn issue_app_token(
        &self,
        app: Lookup,
        token: NewAppToken,
        by: Actor,
        now_ms: i64,
    ) -> Result<String, OutboundError> {
        self.change(move |conn| issue(conn, &app, &token, &by, now_ms)).await
    }

    pub(crate) async fn app_token(&self, digest: [u8; 32], now_ms: i64) -> Result<Option<AppToken>, OutboundError> {
        self.look(move |conn| find(conn, &digest, now_ms)).await
    }

    pub(crate) async fn revoke_app_token(
        &self,
        digest: [u8; 32],
        by: Actor,
        now_ms: i64,
    ) -> Result<bool, OutboundError> {
        self.change(move |conn| revoke(conn, &digest, &by, now_ms)).await
    }
}
