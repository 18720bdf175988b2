//! Application tokens (`app-portal-access`, `docs/design/outbound-api.md` §3.9): an opaque
//! bearer token that sees one application, kept as its SHA-256 digest (never the token)
//! with the application's id, the name of the token that issued it and its expiry, so
//! that every instance on one store knows it. `logout` deletes it; an application that is
//! deleted takes its tokens' access with it.

/// How long a token lives unless asked for less: seven days, in milliseconds.
pub const DEFAULT_LIFETIME_MS: i64 = 7 * 24 * 3_600_000;

/// One token to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAppToken {
    /// The SHA-256 of the token.
    pub digest: [u8; 32],
    /// When it stops being accepted, unix milliseconds.
    pub expires_at_ms: i64,
    /// The portal login issued with it, if any: the single-use link that starts a portal
    /// session for the same application (`crate::session`).
    pub login: Option<crate::model::session::NewPortalLogin>,
}

/// A live token, as a request presenting it is authorized by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppToken {
    /// The id of the one application it sees.
    pub app_id: String,
    /// That application's uid now, if it has one (paths may name it by uid).
    pub app_uid: Option<String>,
    /// The name of the token that issued it.
    pub issued_by: String,
    /// When it was issued, unix milliseconds.
    pub created_at_ms: i64,
    /// When it stops being accepted, unix milliseconds.
    pub expires_at_ms: i64,
}

/// Whether a token expiring at `expires_at_ms` is still accepted at `now_ms`.
#[must_use]
pub(crate) fn live(expires_at_ms: i64, now_ms: i64) -> bool {
    now_ms < expires_at_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_accepted_until_its_expiry_and_not_at_it() {
        assert!(live(1_000, 999));
        assert!(!live(1_000, 1_000));
        assert_eq!(DEFAULT_LIFETIME_MS, 604_800_000);
    }
}
