//! [`Store`]'s session operations (`crate::session`): the portal's and the dashboard's
//! signed-in sessions, each the same call on either backend.

use super::{Backend, Store};
use crate::{
    StoreError,
    model::session::{NewSession, Session, SessionKind},
};

impl Store {
    /// Consumes the portal login of SHA-256 `login` if it is unexpired, and starts the
    /// portal session `new` for its application, in one transaction; `None` (and no
    /// session) when the login is unknown, used, expired, or its application or token is
    /// gone. Expired sessions and logins are dropped on the way.
    pub async fn enter_portal(
        &self,
        login: [u8; 32],
        new: NewSession,
        now_ms: i64,
    ) -> Result<Option<Session>, StoreError> {
        on_backend!(self, store => store.enter_portal(login, new, now_ms).await)
    }

    /// Starts the dashboard session `new` (its token's name and role in it).
    pub async fn start_session(&self, new: NewSession, now_ms: i64) -> Result<(), StoreError> {
        on_backend!(self, store => store.start_session(new, now_ms).await)
    }

    /// The live session of SHA-256 `digest` at `now_ms`, read from the store on every call
    /// (so a sign-out on any instance counts at once); its expiry moves on once half its
    /// lifetime is used.
    pub async fn session(&self, digest: [u8; 32], now_ms: i64) -> Result<Option<Session>, StoreError> {
        on_backend!(self, store => store.session(digest, now_ms).await)
    }

    /// Ends the session of SHA-256 `digest`; whether there was one.
    pub async fn end_session(&self, digest: [u8; 32]) -> Result<bool, StoreError> {
        on_backend!(self, store => store.end_session(digest).await)
    }

    /// Ends every session of `kind` (the dashboard's, when the admin tokens change); how
    /// many there were.
    pub async fn end_sessions(&self, kind: SessionKind) -> Result<u64, StoreError> {
        on_backend!(self, store => store.end_sessions(kind).await)
    }
}
