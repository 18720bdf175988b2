//! Who may do what on the admin listener: the one place a role is checked.
//!
//! Each admin token has a name and a role. `read` sees every view of the admin API and the
//! dashboard; `operate` may also change state (replays, retries, enabling a destination).
//! A request is identified by comparing what it presents with every configured token, each
//! by its SHA-256 digest in constant time and without stopping at a match, so neither the
//! tokens' lengths nor which of them matched shows in the time taken.

use http::Method;
use idemgate_core::Secret;
use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Every view, no change.
    Read,
    /// Every view and every state-changing action.
    Operate,
}

impl Role {
    /// Every role, as configured.
    pub const ALL: [Self; 2] = [Self::Read, Self::Operate];

    /// Its configuration name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Operate => "operate",
        }
    }

    /// The role of that configuration name.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|role| role.as_str() == name)
    }

    /// Whether this role may make a request that needs `need`.
    #[must_use]
    pub fn allows(self, need: Need) -> bool {
        match need {
            Need::View => true,
            Need::Operate => self == Self::Operate,
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a request needs of its token's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// It only reads.
    View,
    /// It changes state.
    Operate,
}

impl Need {
    /// What an admin API request of `method` needs: `GET` and `HEAD` read, anything else
    /// changes state.
    #[must_use]
    pub fn of_method(method: &Method) -> Self {
        if method == Method::GET || method == Method::HEAD { Self::View } else { Self::Operate }
    }
}

/// The role check: `Ok` when `principal` may do what needs `need`.
pub fn check(principal: &Principal, need: Need) -> Result<(), Forbidden> {
    if principal.role.allows(need) { Ok(()) } else { Err(Forbidden) }
}

/// A signed-in token whose role does not allow the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("this token's role does not allow the request")]
pub struct Forbidden;

/// One configured admin token.
#[derive(Clone)]
pub struct NamedToken {
    /// Its name, as the audit log records it.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The token itself.
    pub secret: Secret,
}

impl std::fmt::Debug for NamedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamedToken").field("name", &self.name).field("role", &self.role).finish_non_exhaustive()
    }
}

/// Who made a request: the name and role of the token it presented.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The token's name.
    pub name: String,
    /// Its role.
    pub role: Role,
}

/// The token among `tokens` that `given` is, if any. Every token is compared (digest
/// against digest, in constant time) and the match is selected without a branch, so the
/// time does not depend on which token matched or on how long any of them is.
#[must_use]
pub fn identify(tokens: &[NamedToken], given: &[u8]) -> Option<Principal> {
    let token = tokens.get(position(tokens.iter().map(|token| &token.secret), given)?)?;
    Some(Principal { name: token.name.clone(), role: token.role })
}

/// Where `given` is among `secrets`, compared as [`identify`] does: every secret, digest
/// against digest, in constant time, the match selected without a branch. Also the outbound
/// API's token check (`outbound::auth`).
pub(crate) fn position<'a>(secrets: impl IntoIterator<Item = &'a Secret>, given: &[u8]) -> Option<usize> {
    let given = digest(given);
    let mut found = subtle::Choice::from(0);
    let mut index = 0u32;
    for (i, secret) in secrets.into_iter().enumerate() {
        let matches = digest(secret.expose()).ct_eq(&given);
        index = u32::conditional_select(&index, &u32::try_from(i).unwrap_or(u32::MAX), matches);
        found |= matches;
    }
    if !bool::from(found) {
        return None;
    }
    usize::try_from(index).ok()
}

pub(crate) fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(name: &str, role: Role, secret: &str) -> NamedToken {
        NamedToken { name: name.to_owned(), role, secret: Secret::new(secret.as_bytes().to_vec()) }
    }

    #[test]
    fn a_token_is_identified_among_all_and_a_wrong_one_is_none() {
        let tokens = [
            token("viewer", Role::Read, "read-token-of-some-length"),
            token("ops", Role::Operate, "operate-token-of-some-length"),
        ];
        let ops = identify(&tokens, b"operate-token-of-some-length").unwrap_or_else(|| unreachable!());
        assert_eq!((ops.name.as_str(), ops.role), ("ops", Role::Operate));
        let viewer = identify(&tokens, b"read-token-of-some-length").unwrap_or_else(|| unreachable!());
        assert_eq!((viewer.name.as_str(), viewer.role), ("viewer", Role::Read));
        for wrong in [&b""[..], b"read-token", b"operate-token-of-some-lengtX", b"read-token-of-some-length!"] {
            assert_eq!(identify(&tokens, wrong), None, "{wrong:?}");
        }
        assert_eq!(identify(&[], b"anything"), None);
    }

    #[test]
    fn read_views_and_only_operate_changes_state() {
        assert_eq!(Need::of_method(&Method::GET), Need::View);
        assert_eq!(Need::of_method(&Method::HEAD), Need::View);
        assert_eq!(Need::of_method(&Method::POST), Need::Operate);
        let reader = Principal { name: "viewer".into(), role: Role::Read };
        let operator = Principal { name: "ops".into(), role: Role::Operate };
        assert_eq!(check(&reader, Need::View), Ok(()));
        assert_eq!(check(&reader, Need::Operate), Err(Forbidden));
        assert_eq!(check(&operator, Need::Operate), Ok(()));
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("admin"), None);
    }
}
