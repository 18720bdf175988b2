//! Application tokens on PostgreSQL: their digests in `api_tokens`, issued and revoked in
//! one transaction with their audit record, looked up once per request.

use deadpool_postgres::GenericClient;

use super::{Hold, lock_app, record};
use crate::{
    PgStore,
    audit::{Action, Actor, target},
    model::outbound::{
        Lookup, OutboundError,
        app_token::{AppToken, NewAppToken, live},
    },
};

impl PgStore {
    pub(crate) async fn issue_app_token(
        &self,
        app: Lookup,
        token: NewAppToken,
        by: Actor,
        now_ms: i64,
    ) -> Result<String, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let app_id = lock_app(&tx, &app, Hold::Change).await?;
        tx.execute("DELETE FROM api_tokens WHERE expires_at <= $1", &[&now_ms]).await?;
        let insert = tx
            .prepare_cached(
                "INSERT INTO api_tokens (digest, app_id, issued_by, expires_at, created_at) VALUES ($1, $2, $3, $4, $5)",
            )
            .await?;
        let digest = &token.digest[..];
        tx.execute(&insert, &[&digest, &app_id, &by.name(), &token.expires_at_ms, &now_ms]).await?;
        if let Some(login) = &token.login {
            tx.execute("DELETE FROM portal_logins WHERE expires_at <= $1", &[&now_ms]).await?;
            tx.execute(
                "INSERT INTO portal_logins (digest, app_id, via, expires_at, created_at) VALUES ($1, $2, $3, $4, $5)",
                &[&&login.digest[..], &app_id, &digest, &login.expires_at_ms, &now_ms],
            )
            .await?;
        }
        record(&tx, &by, Action::AppTokenIssue, target::app_token(&app_id), now_ms).await?;
        tx.commit().await?;
        Ok(app_id)
    }

    pub(crate) async fn app_token(&self, digest: [u8; 32], now_ms: i64) -> Result<Option<AppToken>, OutboundError> {
        let client = self.client().await?;
        let select = client
            .prepare_cached(
                "SELECT t.app_id, a.uid, t.issued_by, t.created_at, t.expires_at
                 FROM api_tokens t JOIN applications a ON a.id = t.app_id AND a.deleted_at IS NULL
                 WHERE t.digest = $1",
            )
            .await?;
        let Some(row) = client.query_opt(&select, &[&&digest[..]]).await? else { return Ok(None) };
        let token = AppToken {
            app_id: row.try_get(0)?,
            app_uid: row.try_get(1)?,
            issued_by: row.try_get(2)?,
            created_at_ms: row.try_get(3)?,
            expires_at_ms: row.try_get(4)?,
        };
        Ok(live(token.expires_at_ms, now_ms).then_some(token))
    }

    pub(crate) async fn revoke_app_token(
        &self,
        digest: [u8; 32],
        by: Actor,
        now_ms: i64,
    ) -> Result<bool, OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let row = tx.query_opt("DELETE FROM api_tokens WHERE digest = $1 RETURNING app_id", &[&&digest[..]]).await?;
        let Some(row) = row else { return Ok(false) };
        let app_id: String = row.try_get(0)?;
        tx.execute("DELETE FROM sessions WHERE via = $1", &[&&digest[..]]).await?;
        tx.execute("DELETE FROM portal_logins WHERE via = $1", &[&&digest[..]]).await?;
        record(&tx, &by, Action::AppTokenRevoke, target::app_token(&app_id), now_ms).await?;
        tx.commit().await?;
        Ok(true)
    }
}
