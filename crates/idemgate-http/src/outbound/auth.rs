//! Who may do what on the outbound API (`docs/design/outbound-api.md` §3.9): the bearer
//! token names its caller, its role and, for an application's token, the one application
//! it sees. Nothing of that ever comes from a request's fields or path.
//!
//! Tokens are compared as the admin tokens are ([`crate::access`]): every one, digest
//! against digest, in constant time. What a request needs is decided from its method and
//! path alone ([`need_of`]), before routing, so a refusal does not depend on whether the
//! thing exists.

use http::{HeaderMap, Method, header};
use idemgate_core::Secret;

use crate::{access, answer::OutboundAnswer};

/// What an API token may do (`[api.tokens.<name>] role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ApiRole {
    /// Every read.
    Read,
    /// Every read, and publishing: message create, resend, recover.
    Publish,
    /// Everything.
    Admin,
}

impl ApiRole {
    /// Every role, as configured.
    pub const ALL: [Self; 3] = [Self::Read, Self::Publish, Self::Admin];

    /// Its configuration name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Publish => "publish",
            Self::Admin => "admin",
        }
    }

    /// The role of that configuration name.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|role| role.as_str() == name)
    }

    /// Whether this role may make a request that needs `need`: each role has what the ones
    /// below it have.
    #[must_use]
    pub fn allows(self, need: ApiRole) -> bool {
        self >= need
    }
}

impl std::fmt::Display for ApiRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One configured API token.
#[derive(Clone)]
pub struct ApiToken {
    /// Its name, as the audit log will record it.
    pub name: String,
    /// What it may do.
    pub role: ApiRole,
    /// The token itself.
    pub secret: Secret,
}

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiToken").field("name", &self.name).field("role", &self.role).finish_non_exhaustive()
    }
}

/// Who made a request, from its token alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's name.
    pub name: String,
    /// Its role.
    pub role: ApiRole,
    /// The one application an application's token sees; `None`: every application.
    pub app: Option<String>,
    /// The SHA-256 of the token: `Idempotency-Key` records are scoped by it.
    pub digest: [u8; 32],
}

/// The role a request of `method` on `path` (below `/api/v1`) needs: a read is `read`,
/// but reading an endpoint's signing secret is `admin`; publishing (message create,
/// resend, recover) is `publish`; any other change `admin`.
#[must_use]
pub fn need_of(method: &Method, path: &str) -> ApiRole {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    if method == Method::GET || method == Method::HEAD {
        let secret = matches!(segments.as_slice(), ["app", _, "endpoint", _, "secret"]);
        return if secret { ApiRole::Admin } else { ApiRole::Read };
    }
    let publishes = method == Method::POST
        && matches!(
            segments.as_slice(),
            ["app", _, "msg"] | ["app", _, "msg", _, "endpoint", _, "resend"] | ["app", _, "endpoint", _, "recover"]
        );
    if publishes { ApiRole::Publish } else { ApiRole::Admin }
}

/// The caller presenting `headers`' bearer token among `tokens`, allowed to do what `need`
/// says: 401 without a token of ours, 403 when its role is below `need`.
pub(crate) fn authorize(tokens: &[ApiToken], headers: &HeaderMap, need: ApiRole) -> Result<Caller, OutboundAnswer> {
    let given = bearer(headers).ok_or(OutboundAnswer::Unauthenticated)?;
    let index = access::position(tokens.iter().map(|token| &token.secret), given);
    let token = index.and_then(|index| tokens.get(index)).ok_or(OutboundAnswer::Unauthenticated)?;
    if !token.role.allows(need) {
        return Err(OutboundAnswer::Forbidden);
    }
    Ok(Caller { name: token.name.clone(), role: token.role, app: None, digest: access::digest(given) })
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case).
fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let (scheme, token) = value.split_at_checked(7)?;
    (scheme.eq_ignore_ascii_case(b"bearer ") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn token(name: &str, role: ApiRole, secret: &str) -> ApiToken {
        ApiToken { name: name.to_owned(), role, secret: Secret::new(secret.as_bytes().to_vec()) }
    }

    fn headers(authorization: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_str(authorization).unwrap_or_else(|_| unreachable!()));
        headers
    }

    #[test]
    fn a_bearer_token_names_its_caller_and_role() {
        let tokens =
            [token("reader", ApiRole::Read, "read-token-0123456789"), token("ops", ApiRole::Admin, "admin-0123456789")];
        let caller = authorize(&tokens, &headers("Bearer admin-0123456789"), ApiRole::Admin);
        let caller = caller.unwrap_or_else(|_| unreachable!());
        assert_eq!((caller.name.as_str(), caller.role, caller.app), ("ops", ApiRole::Admin, None));
        assert_eq!(caller.digest, access::digest(b"admin-0123456789"));
        let lower = authorize(&tokens, &headers("bearer read-token-0123456789"), ApiRole::Read);
        assert_eq!(lower.map(|caller| caller.name), Ok("reader".to_owned()));
    }

    #[test]
    fn no_token_or_an_unknown_one_is_401_and_a_low_role_403() {
        let tokens = [token("reader", ApiRole::Read, "read-token-0123456789")];
        assert_eq!(authorize(&tokens, &HeaderMap::new(), ApiRole::Read), Err(OutboundAnswer::Unauthenticated));
        for wrong in ["Bearer read-token", "Bearer ", "Basic read-token-0123456789", "read-token-0123456789"] {
            assert_eq!(
                authorize(&tokens, &headers(wrong), ApiRole::Read),
                Err(OutboundAnswer::Unauthenticated),
                "{wrong}"
            );
        }
        let given = headers("Bearer read-token-0123456789");
        assert_eq!(authorize(&tokens, &given, ApiRole::Publish), Err(OutboundAnswer::Forbidden));
        assert_eq!(authorize(&[], &given, ApiRole::Read), Err(OutboundAnswer::Unauthenticated));
    }

    #[test]
    fn reads_need_read_publishing_publish_and_the_rest_admin() {
        assert_eq!(need_of(&Method::GET, "/app/app_1/endpoint"), ApiRole::Read);
        assert_eq!(need_of(&Method::GET, "/app/app_1/endpoint/ep_1/headers"), ApiRole::Read);
        assert_eq!(need_of(&Method::GET, "/app/app_1/endpoint/ep_1/secret"), ApiRole::Admin);
        assert_eq!(need_of(&Method::HEAD, "/health"), ApiRole::Read);
        assert_eq!(need_of(&Method::POST, "/app/app_1/msg"), ApiRole::Publish);
        assert_eq!(need_of(&Method::POST, "/app/app_1/msg/msg_1/endpoint/ep_1/resend"), ApiRole::Publish);
        assert_eq!(need_of(&Method::POST, "/app/app_1/endpoint/ep_1/recover"), ApiRole::Publish);
        assert_eq!(need_of(&Method::POST, "/app"), ApiRole::Admin);
        assert_eq!(need_of(&Method::POST, "/app/app_1/endpoint"), ApiRole::Admin);
        assert_eq!(need_of(&Method::DELETE, "/app/app_1/msg"), ApiRole::Admin);
        assert!(ApiRole::Admin.allows(ApiRole::Publish) && ApiRole::Publish.allows(ApiRole::Read));
        assert!(!ApiRole::Read.allows(ApiRole::Publish) && !ApiRole::Publish.allows(ApiRole::Admin));
        for role in ApiRole::ALL {
            assert_eq!(ApiRole::parse(role.as_str()), Some(role));
        }
        assert_eq!(ApiRole::parse("operate"), None);
    }
}
