//! Sessions and portal logins on SQLite (`sessions`, `portal_logins`): started and ended on
//! the writer, each change on a savepoint of its own; looked up on a read connection, and
//! renewed on the writer only once half a session's lifetime is used.

use rusqlite::{Connection, OptionalExtension, params};

use super::{SqliteStore, savepoint::Savepoint};
use crate::{
    StoreError,
    model::session::{NewSession, Session, SessionKind, live, renewal},
};

/// Consumes the unexpired login `login` and starts a portal session for its application
/// (if it is live), in one savepoint; `None` when the login was unknown, used or expired.
fn enter(conn: &Connection, login: &[u8; 32], new: &NewSession, now_ms: i64) -> Result<Option<Session>, StoreError> {
    let found: Option<(String, Vec<u8>)> = conn
        .prepare_cached("DELETE FROM portal_logins WHERE digest = ?1 AND expires_at > ?2 RETURNING app_id, via")?
        .query_row(params![&login[..], now_ms], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let Some((app_id, via)) = found else { return Ok(None) };
    let app_live: bool = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM applications a JOIN api_tokens t ON t.app_id = a.id
             WHERE a.id = ?1 AND a.deleted_at IS NULL AND t.digest = ?2 AND t.expires_at > ?3)",
        )?
        .query_row(params![app_id, via, now_ms], |row| row.get(0))?;
    if !app_live {
        return Ok(None);
    }
    purge(conn, now_ms)?;
    let name = format!("app:{app_id}");
    let expires_at = now_ms.saturating_add(new.lifetime_ms);
    conn.prepare_cached(
        "INSERT INTO sessions (digest, kind, app_id, via, name, role, csrf, lifetime_ms, expires_at, created_at)
         VALUES (?1, 'portal', ?2, ?3, ?4, '', ?5, ?6, ?7, ?8)",
    )?
    .execute(params![&new.digest[..], app_id, via, name, new.csrf, new.lifetime_ms, expires_at, now_ms])?;
    Ok(Some(Session {
        kind: SessionKind::Portal,
        app_id: Some(app_id),
        name,
        role: String::new(),
        csrf: new.csrf.clone(),
        expires_at_ms: expires_at,
    }))
}

/// Starts a dashboard session.
fn start(conn: &Connection, new: &NewSession, now_ms: i64) -> Result<(), StoreError> {
    purge(conn, now_ms)?;
    conn.prepare_cached(
        "INSERT INTO sessions (digest, kind, app_id, via, name, role, csrf, lifetime_ms, expires_at, created_at)
         VALUES (?1, 'dashboard', NULL, NULL, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        &new.digest[..],
        new.name,
        new.role,
        new.csrf,
        new.lifetime_ms,
        now_ms.saturating_add(new.lifetime_ms),
        now_ms
    ])?;
    Ok(())
}

/// Drops the sessions and logins that expired.
fn purge(conn: &Connection, now_ms: i64) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM sessions WHERE expires_at <= ?1")?.execute(params![now_ms])?;
    conn.prepare_cached("DELETE FROM portal_logins WHERE expires_at <= ?1")?.execute(params![now_ms])?;
    Ok(())
}

/// The session of `digest` if it is live at `now_ms` (and, for a portal session, its
/// application and the token it was entered with are), with its lifetime.
fn find(conn: &Connection, digest: &[u8; 32], now_ms: i64) -> Result<Option<(Session, i64)>, StoreError> {
    let row = conn
        .prepare_cached(
            "SELECT s.kind, s.app_id, s.name, s.role, s.csrf, s.expires_at, s.lifetime_ms
             FROM sessions s
             WHERE s.digest = ?1 AND (s.kind = 'dashboard' OR EXISTS (
                 SELECT 1 FROM applications a JOIN api_tokens t ON t.app_id = a.id
                 WHERE a.id = s.app_id AND a.deleted_at IS NULL AND t.digest = s.via AND t.expires_at > ?2))",
        )?
        .query_row(params![&digest[..], now_ms], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, Option<String>>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, i64>(5)?,
                row.get::<_, i64>(6)?,
            ))
        })
        .optional()?;
    let Some((kind, app_id, name, role, csrf, expires_at_ms, lifetime_ms)) = row else { return Ok(None) };
    let Some(kind) = SessionKind::parse(&kind) else { return Ok(None) };
    let session = Session { kind, app_id, name, role, csrf, expires_at_ms };
    Ok(live(expires_at_ms, now_ms).then_some((session, lifetime_ms)))
}

impl SqliteStore {
    pub(crate) async fn enter_portal(
        &self,
        login: [u8; 32],
        new: NewSession,
        now_ms: i64,
    ) -> Result<Option<Session>, StoreError> {
        self.write(move |conn| {
            let savepoint = Savepoint::open(conn)?;
            let entered = enter(&savepoint, &login, &new, now_ms)?;
            savepoint.release()?;
            Ok::<_, StoreError>(entered)
        })
        .await
    }

    pub(crate) async fn start_session(&self, new: NewSession, now_ms: i64) -> Result<(), StoreError> {
        self.write(move |conn| {
            let savepoint = Savepoint::open(conn)?;
            start(&savepoint, &new, now_ms)?;
            savepoint.release()?;
            Ok::<_, StoreError>(())
        })
        .await
    }

    pub(crate) async fn session(&self, digest: [u8; 32], now_ms: i64) -> Result<Option<Session>, StoreError> {
        let found = self.read(move |reader| find(reader.connection(), &digest, now_ms)).await?;
        let Some((mut session, lifetime_ms)) = found else { return Ok(None) };
        if let Some(expires_at) = renewal(session.expires_at_ms, lifetime_ms, now_ms) {
            self.write(move |conn| {
                conn.prepare_cached("UPDATE sessions SET expires_at = ?2 WHERE digest = ?1 AND expires_at > ?3")?
                    .execute(params![&digest[..], expires_at, now_ms])
            })
            .await?;
            session.expires_at_ms = expires_at;
        }
        Ok(Some(session))
    }

    pub(crate) async fn end_session(&self, digest: [u8; 32]) -> Result<bool, StoreError> {
        self.write(move |conn| {
            conn.prepare_cached("DELETE FROM sessions WHERE digest = ?1")?.execute(params![&digest[..]]).map(|n| n > 0)
        })
        .await
    }

    pub(crate) async fn end_sessions(&self, kind: SessionKind) -> Result<u64, StoreError> {
        self.write(move |conn| {
            conn.prepare_cached("DELETE FROM sessions WHERE kind = ?1")?
                .execute(params![kind.as_str()])
                .map(|n| n as u64)
        })
        .await
    }
}
