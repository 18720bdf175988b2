//! Dashboard sessions, kept in the store (`idemgate_store::session`, kind `dashboard`) so
//! that every instance on one store knows them: signed in on one, a session is known on
//! every other, and a sign-out on one ends it everywhere; a restart signs nobody out.
//!
//! Signing in with an admin token yields a random session id, never the token itself, so a
//! leaked cookie expires, can be signed out, and tells nothing about the token. The store
//! keeps the SHA-256 of the id (never the id), the session's own CSRF token for the
//! dashboard's forms, and the name and role (its configuration name) of the token it was
//! signed in with, so a `read` session is shown no buttons and refused any change. A
//! session ends once unused for its lifetime (the store moves its expiry on once half of it
//! is used). There is no bound on their number: every sign-in first purges the expired
//! rows in the store.
//!
//! Each request checks its session's token against the admin tokens this instance runs
//! with now: a session whose token name is no longer configured, or whose role changed,
//! reads as signed out, on an instance that has not reloaded yet as much as on one that
//! has (and a reload that changes the admin tokens ends every dashboard session in the
//! store, [`Sessions::end_all`]). An unknown role reads as signed out too. Times are
//! milliseconds since the epoch from the admin listener's clock, so expiry is tested on a
//! manual clock.

use std::time::Duration;

use idemgate_store::{
    Store, StoreError,
    session::{self, SessionKind},
};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::{
    access::{Principal, Role},
    current::AdminTokens,
};

/// How long a session lasts unused unless configured otherwise.
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// Why a session could not be started, read or ended.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The operating system's random source failed.
    #[error("no randomness available for a session id")]
    NoRandomness,
    /// The store could not keep or read the session.
    #[error("the store cannot keep the dashboard's sessions: {0}")]
    Store(#[from] StoreError),
}

/// A session just started: the cookie value and the CSRF token of its forms.
#[derive(Debug)]
pub struct NewSession {
    /// The session id, hex, for the cookie.
    pub id: String,
    /// The CSRF token, hex, for the forms.
    pub csrf: String,
}

/// A live session: the CSRF token of its forms and the token it was signed in with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSession {
    /// The CSRF token its forms carry.
    pub csrf: String,
    /// The name and role of the admin token it was signed in with.
    pub principal: Principal,
}

/// Whether `given` is the session's CSRF token `csrf` (compared in constant time).
#[must_use]
pub fn csrf_matches(csrf: &str, given: &str) -> bool {
    bool::from(digest(csrf.as_bytes()).ct_eq(&digest(given.as_bytes())))
}

/// The dashboard's signed-in sessions: a door to the store's, with their lifetime.
#[derive(Debug, Clone)]
pub struct Sessions {
    store: Store,
    lifetime: Duration,
}

impl Sessions {
    /// Sessions in `store` that last `lifetime` since they were last used.
    #[must_use]
    pub fn new(store: Store, lifetime: Duration) -> Self {
        Self { store, lifetime }
    }

    /// How long a session lasts unused.
    #[must_use]
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// Starts a session for `principal` at `now_ms`.
    pub async fn start(&self, principal: &Principal, now_ms: i64) -> Result<NewSession, SessionError> {
        let id = random_hex()?;
        let csrf = random_hex()?;
        let new = session::NewSession {
            digest: digest(id.as_bytes()),
            csrf: csrf.clone(),
            lifetime_ms: i64::try_from(self.lifetime.as_millis()).unwrap_or(i64::MAX),
            name: principal.name.clone(),
            role: principal.role.as_str().to_owned(),
        };
        self.store.start_session(new, now_ms).await?;
        Ok(NewSession { id, csrf })
    }

    /// The live session `id` at `now_ms`, if its token is still configured in `tokens` by
    /// its name with its role; `None` if unknown, signed out, expired, of a token renamed,
    /// removed or given another role, or not a dashboard session.
    pub async fn live(&self, id: &str, tokens: &AdminTokens, now_ms: i64) -> Result<Option<LiveSession>, SessionError> {
        let Some(found) = self.store.session(digest(id.as_bytes()), now_ms).await? else { return Ok(None) };
        if found.kind != SessionKind::Dashboard {
            return Ok(None);
        }
        let Some(role) = Role::parse(&found.role) else { return Ok(None) };
        let principal = Principal { name: found.name, role };
        Ok(tokens.configures(&principal).then_some(LiveSession { csrf: found.csrf, principal }))
    }

    /// Signs the session `id` out, on every instance.
    pub async fn end(&self, id: &str) -> Result<(), SessionError> {
        self.store.end_session(digest(id.as_bytes())).await?;
        Ok(())
    }

    /// Signs every dashboard session out, on every instance: when the admin tokens change,
    /// the sessions signed in with the old ones end with them. How many there were.
    pub async fn end_all(&self) -> Result<u64, SessionError> {
        Ok(self.store.end_sessions(SessionKind::Dashboard).await?)
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// 32 bytes from the operating system's CSPRNG, as hex.
fn random_hex() -> Result<String, SessionError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|_| SessionError::NoRandomness)?;
    Ok(hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csrf_token_matches_only_itself() {
        let csrf = "ab".repeat(32);
        assert!(csrf_matches(&csrf, &"ab".repeat(32)));
        assert!(!csrf_matches(&csrf, ""));
        assert!(!csrf_matches(&csrf, &"ab".repeat(31)));
        assert!(!csrf_matches(&csrf, &"ba".repeat(32)));
    }
}
