//! Signed-in browser sessions, kept in the store so that every instance on one store knows
//! them (`docs/design/portal.md` §2): a customer's session in the portal, which sees one
//! application, and (kind [`SessionKind::Dashboard`]) an operator's on the dashboard.
//!
//! A session is kept as the SHA-256 of its id (never the id), with its kind, who it is,
//! its CSRF token and a sliding expiry. A portal session is entered with a portal login:
//! a single-use token, kept as its digest, that `app-portal-access` issues beside the
//! application token and that expires in minutes. Entering consumes the login and starts
//! the session in one transaction, so a login is used at most once on any instance. A
//! portal session names the application token it was entered with: revoking that token
//! (`auth/logout`) ends it, and so does deleting the application.

/// How long a portal login may wait to be used: ten minutes, in milliseconds.
pub const LOGIN_LIFETIME_MS: i64 = 10 * 60_000;

/// How long a portal session lasts since it was last used: eight hours, in milliseconds.
pub const PORTAL_LIFETIME_MS: i64 = 8 * 3_600_000;

/// Whose session it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionKind {
    /// A customer in the portal: one application.
    Portal,
    /// An operator on the dashboard: an admin token's name and role.
    Dashboard,
}

impl SessionKind {
    /// Its name in the store.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Portal => "portal",
            Self::Dashboard => "dashboard",
        }
    }

    /// The kind of that name.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Portal, Self::Dashboard].into_iter().find(|kind| kind.as_str() == name)
    }
}

/// A portal login to keep beside the application token it was issued with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPortalLogin {
    /// The SHA-256 of the login token.
    pub digest: [u8; 32],
    /// When it can no longer be used, unix milliseconds.
    pub expires_at_ms: i64,
}

/// A session to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// The SHA-256 of the session id (the cookie's value).
    pub digest: [u8; 32],
    /// Its CSRF token, as its forms carry it.
    pub csrf: String,
    /// How long it lasts since it was last used, milliseconds.
    pub lifetime_ms: i64,
    /// A dashboard session's admin token name (a portal session's is made from its
    /// application).
    pub name: String,
    /// A dashboard session's role, as configured; empty for a portal session.
    pub role: String,
}

/// A live session, as a request presenting its id is served by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Whose it is.
    pub kind: SessionKind,
    /// The one application a portal session sees; `None` for a dashboard session.
    pub app_id: Option<String>,
    /// Who it acts as: a dashboard session's token name; a portal session's `app:<id>`.
    pub name: String,
    /// A dashboard session's role; empty for a portal session.
    pub role: String,
    /// Its CSRF token.
    pub csrf: String,
    /// When it ends unless used again, unix milliseconds.
    pub expires_at_ms: i64,
}

/// Whether a row expiring at `expires_at_ms` is live at `now_ms`.
#[must_use]
pub(crate) fn live(expires_at_ms: i64, now_ms: i64) -> bool {
    now_ms < expires_at_ms
}

/// The expiry a session of `lifetime_ms` that expires at `expires_at_ms` gets when used at
/// `now_ms`, if it should be written: only once less than half its lifetime is left, so a
/// busy session is not a write on every page.
#[must_use]
pub(crate) fn renewal(expires_at_ms: i64, lifetime_ms: i64, now_ms: i64) -> Option<i64> {
    let renewed = now_ms.saturating_add(lifetime_ms);
    (expires_at_ms.saturating_sub(now_ms) < lifetime_ms / 2).then_some(renewed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_slides_only_once_half_its_lifetime_is_used() {
        assert_eq!(renewal(10_000, 10_000, 0), None);
        assert_eq!(renewal(10_000, 10_000, 5_000), None);
        assert_eq!(renewal(10_000, 10_000, 5_001), Some(15_001));
        assert!(live(1_000, 999));
        assert!(!live(1_000, 1_000));
        for kind in [SessionKind::Portal, SessionKind::Dashboard] {
            assert_eq!(SessionKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(SessionKind::parse("other"), None);
    }
}
