//! Sessions and portal logins on PostgreSQL (`sessions`, `portal_logins`): a login is
//! consumed and its session started in one transaction (`DELETE … RETURNING`, so two
//! instances cannot both use one login); a lookup is one statement, and a renewal one more
//! only once half a session's lifetime is used. Expired rows are purged after a start.

use crate::{
    PgStore, StoreError,
    model::session::{NewSession, Session, SessionKind, live, renewal},
};

impl PgStore {
    pub(crate) async fn enter_portal(
        &self,
        login: [u8; 32],
        new: NewSession,
        now_ms: i64,
    ) -> Result<Option<Session>, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let found = tx
            .query_opt(
                "DELETE FROM portal_logins l WHERE l.digest = $1 AND l.expires_at > $2
                 RETURNING l.app_id, l.via, EXISTS (
                     SELECT 1 FROM applications a JOIN api_tokens t ON t.app_id = a.id
                     WHERE a.id = l.app_id AND a.deleted_at IS NULL AND t.digest = l.via AND t.expires_at > $2)",
                &[&&login[..], &now_ms],
            )
            .await?;
        let Some(row) = found else { return Ok(None) };
        let (app_id, via, app_live): (String, Vec<u8>, bool) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
        if !app_live {
            tx.commit().await?;
            return Ok(None);
        }
        let name = format!("app:{app_id}");
        let expires_at = now_ms.saturating_add(new.lifetime_ms);
        tx.execute(
            "INSERT INTO sessions (digest, kind, app_id, via, name, role, csrf, lifetime_ms, expires_at, created_at)
             VALUES ($1, 'portal', $2, $3, $4, '', $5, $6, $7, $8)",
            &[&&new.digest[..], &app_id, &via, &name, &new.csrf, &new.lifetime_ms, &expires_at, &now_ms],
        )
        .await?;
        tx.commit().await?;
        purge(&client, now_ms).await;
        Ok(Some(Session {
            kind: SessionKind::Portal,
            app_id: Some(app_id),
            name,
            role: String::new(),
            csrf: new.csrf,
            expires_at_ms: expires_at,
        }))
    }

    pub(crate) async fn start_session(&self, new: NewSession, now_ms: i64) -> Result<(), StoreError> {
        let client = self.client().await?;
        client.execute(
            "INSERT INTO sessions (digest, kind, app_id, via, name, role, csrf, lifetime_ms, expires_at, created_at)
             VALUES ($1, 'dashboard', NULL, NULL, $2, $3, $4, $5, $6, $7)",
            &[
                &&new.digest[..],
                &new.name,
                &new.role,
                &new.csrf,
                &new.lifetime_ms,
                &now_ms.saturating_add(new.lifetime_ms),
                &now_ms,
            ],
        )
        .await?;
        purge(&client, now_ms).await;
        Ok(())
    }

    pub(crate) async fn session(&self, digest: [u8; 32], now_ms: i64) -> Result<Option<Session>, StoreError> {
        let client = self.client().await?;
        let select = client
            .prepare_cached(
                "SELECT s.kind, s.app_id, s.name, s.role, s.csrf, s.expires_at, s.lifetime_ms
                 FROM sessions s
                 WHERE s.digest = $1 AND (s.kind = 'dashboard' OR EXISTS (
                     SELECT 1 FROM applications a JOIN api_tokens t ON t.app_id = a.id
                     WHERE a.id = s.app_id AND a.deleted_at IS NULL AND t.digest = s.via AND t.expires_at > $2))",
            )
            .await?;
        let Some(row) = client.query_opt(&select, &[&&digest[..], &now_ms]).await? else { return Ok(None) };
        let Some(kind) = SessionKind::parse(row.try_get(0)?) else { return Ok(None) };
        let (expires_at_ms, lifetime_ms): (i64, i64) = (row.try_get(5)?, row.try_get(6)?);
        if !live(expires_at_ms, now_ms) {
            return Ok(None);
        }
        let mut session = Session {
            kind,
            app_id: row.try_get(1)?,
            name: row.try_get(2)?,
            role: row.try_get(3)?,
            csrf: row.try_get(4)?,
            expires_at_ms,
        };
        if let Some(expires_at) = renewal(expires_at_ms, lifetime_ms, now_ms) {
            client
                .execute(
                    "UPDATE sessions SET expires_at = $2 WHERE digest = $1 AND expires_at > $3",
                    &[&&digest[..], &expires_at, &now_ms],
                )
                .await?;
            session.expires_at_ms = expires_at;
        }
        Ok(Some(session))
    }

    pub(crate) async fn end_session(&self, digest: [u8; 32]) -> Result<bool, StoreError> {
        let client = self.client().await?;
        Ok(client.execute("DELETE FROM sessions WHERE digest = $1", &[&&digest[..]]).await? > 0)
    }

    pub(crate) async fn end_sessions(&self, kind: SessionKind) -> Result<u64, StoreError> {
        let client = self.client().await?;
        Ok(client.execute("DELETE FROM sessions WHERE kind = $1", &[&kind.as_str()]).await?)
    }
}

/// Drops the sessions and logins that expired, after the entry's own commit and each in a
/// statement of its own, so two entries at once never wait on each other's purge. A purge
/// that fails is left to the next entry: the expired rows are never read as live.
async fn purge(client: &impl deadpool_postgres::GenericClient, now_ms: i64) {
    for table in ["sessions", "portal_logins"] {
        let statement = format!("DELETE FROM {table} WHERE expires_at <= $1");
        if client.execute(&statement, &[&now_ms]).await.is_err() {
            return;
        }
    }
}
