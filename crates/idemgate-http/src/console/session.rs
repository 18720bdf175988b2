//! Dashboard sessions. Signing in with an admin token yields a random session id, never
//! the token itself, so a leaked cookie expires, can be signed out, and tells nothing about
//! the token. Sessions live in memory (a restart signs everyone out), bounded in number;
//! each carries its own CSRF token for the dashboard's forms and the name and role of the
//! token it was signed in with (so a `read` session is shown no buttons and refused any
//! change). The map is keyed by the
//! SHA-256 of the id, so the ids themselves are not kept. Times are milliseconds since the
//! epoch from the admin listener's clock, so expiry is tested on a manual clock.

use std::{collections::HashMap, sync::Mutex, time::Duration};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::access::Principal;

/// Most sessions kept at once; signing in beyond it ends the oldest.
pub const MAX_SESSIONS: usize = 256;
/// How long a session lasts unless configured otherwise.
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// The operating system's random source failed.
#[derive(Debug, thiserror::Error)]
#[error("no randomness available for a session id")]
pub struct NoRandomness;

/// A session just created: the cookie value and the CSRF token of its forms.
#[derive(Debug)]
pub struct NewSession {
    /// The session id, hex, for the cookie.
    pub id: String,
    /// The CSRF token, hex, for the forms.
    pub csrf: String,
}

struct Session {
    expires_ms: i64,
    csrf: String,
    principal: Principal,
}

/// The signed-in sessions of one admin listener.
pub struct Sessions {
    lifetime: Duration,
    by_digest: Mutex<HashMap<[u8; 32], Session>>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions").field("lifetime", &self.lifetime).finish_non_exhaustive()
    }
}

impl Sessions {
    /// Sessions that last `lifetime` from sign-in.
    #[must_use]
    pub fn new(lifetime: Duration) -> Self {
        Self { lifetime, by_digest: Mutex::default() }
    }

    /// How long a session lasts.
    #[must_use]
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    fn lifetime_ms(&self) -> i64 {
        i64::try_from(self.lifetime.as_millis()).unwrap_or(i64::MAX)
    }

    /// Starts a session for `principal` at `now_ms`, dropping expired ones and, when full,
    /// the oldest.
    pub fn create(&self, now_ms: i64, principal: Principal) -> Result<NewSession, NoRandomness> {
        let id = random_hex()?;
        let csrf = random_hex()?;
        let mut sessions = self.lock();
        sessions.retain(|_, s| s.expires_ms > now_ms);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions.iter().min_by_key(|(_, s)| s.expires_ms).map(|(k, _)| *k)
        {
            sessions.remove(&oldest);
        }
        sessions.insert(
            digest(id.as_bytes()),
            Session { expires_ms: now_ms.saturating_add(self.lifetime_ms()), csrf: csrf.clone(), principal },
        );
        Ok(NewSession { id, csrf })
    }

    /// The CSRF token of the live session `id`; `None` if unknown, signed out or expired.
    #[must_use]
    pub fn csrf(&self, id: &str, now_ms: i64) -> Option<String> {
        self.live(id, now_ms).map(|(csrf, _)| csrf)
    }

    /// The CSRF token and the token's name and role of the live session `id`.
    #[must_use]
    pub fn live(&self, id: &str, now_ms: i64) -> Option<(String, Principal)> {
        let mut sessions = self.lock();
        let key = digest(id.as_bytes());
        match sessions.get(&key) {
            Some(s) if s.expires_ms > now_ms => Some((s.csrf.clone(), s.principal.clone())),
            Some(_) => {
                sessions.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Whether `given` is the CSRF token of the live session `id`.
    #[must_use]
    pub fn csrf_matches(&self, id: &str, given: &str, now_ms: i64) -> bool {
        self.csrf(id, now_ms).is_some_and(|csrf| digest_eq(csrf.as_bytes(), given.as_bytes()))
    }

    /// Signs the session `id` out.
    pub fn end(&self, id: &str) {
        self.lock().remove(&digest(id.as_bytes()));
    }

    /// Signs every session out: when the admin tokens change, the sessions signed in with
    /// the old ones end with them.
    pub fn end_all(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Session>> {
        self.by_digest.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn digest_eq(a: &[u8], b: &[u8]) -> bool {
    bool::from(digest(a).ct_eq(&digest(b)))
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// 32 bytes from the operating system's CSPRNG, as hex.
fn random_hex() -> Result<String, NoRandomness> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|_| NoRandomness)?;
    Ok(hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::access::Role;

    fn ops() -> Principal {
        Principal { name: "ops".into(), role: Role::Operate }
    }

    #[test]
    fn a_session_lives_until_its_expiry_and_not_after_sign_out() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let start = 1_800_000_000_000_i64;
        let session = sessions.create(start, ops()).unwrap();
        assert_eq!(session.id.len(), 64);
        assert_ne!(session.id, session.csrf);
        assert_eq!(sessions.csrf(&session.id, start + 59_000).as_deref(), Some(&*session.csrf));
        assert_eq!(sessions.live(&session.id, start).map(|(_, who)| who), Some(ops()), "it knows its token");
        assert!(sessions.csrf_matches(&session.id, &session.csrf, start));
        assert!(!sessions.csrf_matches(&session.id, "", start));
        assert!(!sessions.csrf_matches(&session.id, &session.id, start));
        assert_eq!(sessions.csrf(&session.id, start + 60_000), None, "expired");
        let other = sessions.create(start, ops()).unwrap();
        sessions.end(&other.id);
        assert_eq!(sessions.csrf(&other.id, start), None, "signed out");
        sessions.end_all();
        assert_eq!(sessions.csrf(&session.id, start), None, "all signed out");
        assert_eq!(sessions.csrf("", start), None);
    }

    #[test]
    fn sessions_are_bounded_and_the_oldest_goes_first() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let start = 1_800_000_000_000_i64;
        let first = sessions.create(start, ops()).unwrap();
        let ids: Vec<String> =
            (1..=MAX_SESSIONS as u64).map(|i| sessions.create(start + i as i64, ops()).unwrap().id).collect();
        assert_eq!(sessions.lock().len(), MAX_SESSIONS);
        assert_eq!(sessions.csrf(&first.id, start), None);
        assert!(ids.iter().all(|id| sessions.csrf(id, start).is_some()));
    }
}
