//! Who may do what on the outbound API (`docs/design/outbound-api.md` §3.9): the bearer
//! token names its caller, its role and, for an application's token, the one application
//! it sees. Nothing of that ever comes from a request's fields or path.
//!
//! Configured tokens are compared as the admin tokens are ([`crate::access`]): every one,
//! digest against digest, in constant time. An application's token (`appsk_…`, issued by
//! `app-portal-access`) is looked up in the store by its digest on every request, so a
//! logout on any instance counts at the next request everywhere. What a request needs is
//! decided from its method and path alone ([`need_of`], [`app_scope`]), before routing,
//! so a refusal does not depend on whether the thing exists.

use axum::{extract::FromRequestParts, http::request::Parts};
use http::{HeaderMap, Method, header};
use idemgate_core::Secret;
use idemgate_store::{audit::Actor, outbound::app_token::AppToken};

use crate::{access, answer::OutboundAnswer};

/// How an application's token begins.
pub const APP_TOKEN_PREFIX: &str = "appsk_";

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

impl Caller {
    /// The caller presenting the application token `token`, whose SHA-256 is `digest`: it
    /// may do everything [`app_scope`] lets through, named `app:<application id>`.
    #[must_use]
    pub fn of_app(token: &AppToken, digest: [u8; 32]) -> Self {
        let actor = Actor::app(&token.app_id);
        Self { name: actor.name().to_owned(), role: ApiRole::Admin, app: Some(token.app_id.clone()), digest }
    }

    /// Who the audit log records this caller's changes under.
    #[must_use]
    pub fn actor(&self) -> Actor {
        match &self.app {
            Some(app) => Actor::app(app),
            None => Actor::token(self.name.clone()),
        }
    }
}

/// A handler's [`Actor`], from the [`Caller`] the token check put on the request.
pub(crate) struct By(pub(crate) Actor);

impl<S: Send + Sync> FromRequestParts<S> for By {
    type Rejection = OutboundAnswer;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let caller = parts.extensions.get::<Caller>().ok_or(OutboundAnswer::Unauthenticated)?;
        Ok(Self(caller.actor()))
    }
}

/// The role a request of `method` on `path` (below `/api/v1`) needs: a read is `read`,
/// but reading an endpoint's signing secret is `admin`; publishing (message create,
/// resend, recover) is `publish`; logging out `read` (only an application's token can,
/// and any other token is told so); any other change `admin`.
#[must_use]
pub fn need_of(method: &Method, path: &str) -> ApiRole {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    if method == Method::POST && segments.as_slice() == ["auth", "logout"] {
        return ApiRole::Read;
    }
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

/// What an application's token may do on `method` `path` (below `/api/v1`): any path
/// naming another application (by id or uid) is 404, as if it did not exist; what only
/// the organisation may do is 403: listing and creating applications, replacing,
/// patching or deleting its own, publishing a message, expunging content, sending an
/// example, writing event types, and issuing application tokens (Svix's
/// `permissions::Organization`). Everything else on its application, reading event types
/// and logging out pass.
pub(crate) fn app_scope(method: &Method, path: &str, token: &AppToken) -> Result<(), OutboundAnswer> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let its_own = |named: &str| named == token.app_id || token.app_uid.as_deref() == Some(named);
    let read = method == Method::GET || method == Method::HEAD;
    match segments.as_slice() {
        ["app"] => Err(OutboundAnswer::Forbidden),
        ["app", named, ..] | ["auth", "app-portal-access", named, ..] if !its_own(named) => {
            Err(OutboundAnswer::NotFound)
        }
        ["auth", "app-portal-access", ..] => Err(OutboundAnswer::Forbidden),
        ["app", _, rest @ ..] if organisation_only(method, rest) => Err(OutboundAnswer::Forbidden),
        ["event-type", ..] if !read => Err(OutboundAnswer::Forbidden),
        _ => Ok(()),
    }
}

/// Whether `method` on `rest` (below `/app/{app_id}`) is for the organisation alone.
fn organisation_only(method: &Method, rest: &[&str]) -> bool {
    match rest {
        [] => method != Method::GET && method != Method::HEAD,
        ["msg"] | ["endpoint", _, "send-example"] => method == Method::POST,
        ["msg", _, "content"] | ["msg", _, "attempt", _, "content"] => method == Method::DELETE,
        _ => false,
    }
}

/// The SHA-256 of the bearer token in `headers` when it is an application's (`appsk_…`).
pub(crate) fn app_token_digest(headers: &HeaderMap) -> Option<[u8; 32]> {
    let given = bearer(headers)?;
    given.starts_with(APP_TOKEN_PREFIX.as_bytes()).then(|| access::digest(given))
}

/// A new application token from 32 random bytes: [`APP_TOKEN_PREFIX`] and their hex.
#[must_use]
pub(crate) fn new_app_token(random: [u8; 32]) -> Secret {
    Secret::new(format!("{APP_TOKEN_PREFIX}{}", hex::encode(random)).into_bytes())
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

    fn app_token(uid: Option<&str>) -> AppToken {
        AppToken {
            app_id: "app_1".into(),
            app_uid: uid.map(str::to_owned),
            issued_by: "ops".into(),
            created_at_ms: 0,
            expires_at_ms: 1,
        }
    }

    #[test]
    fn an_app_token_sees_its_application_by_id_or_uid_and_nothing_else() {
        let token = app_token(Some("shop"));
        let (get, post, put, delete) = (Method::GET, Method::POST, Method::PUT, Method::DELETE);
        for (method, path) in [
            (&get, "/app/app_1"),
            (&get, "/app/shop/endpoint"),
            (&post, "/app/app_1/endpoint"),
            (&delete, "/app/shop/endpoint/ep_1"),
            (&post, "/app/app_1/endpoint/ep_1/secret/rotate"),
            (&post, "/app/app_1/msg/msg_1/endpoint/ep_1/resend"),
            (&get, "/event-type"),
            (&get, "/event-type/a.b"),
            (&post, "/auth/logout"),
            (&get, "/app/app_1/msg/msg_1/content"),
        ] {
            assert_eq!(app_scope(method, path, &token), Ok(()), "{method} {path}");
        }
        for (method, path) in [
            (&get, "/app/app_2"),
            (&get, "/app/other-uid/endpoint"),
            (&put, "/app/app_2"),
            (&post, "/app/app_2/msg"),
            (&post, "/auth/app-portal-access/app_2"),
            (&delete, "/app/app_2/msg/msg_1/content"),
        ] {
            assert_eq!(app_scope(method, path, &token), Err(OutboundAnswer::NotFound), "{method} {path}");
        }
        for (method, path) in [
            (&get, "/app"),
            (&post, "/app"),
            (&put, "/app/app_1"),
            (&delete, "/app/shop"),
            (&post, "/app/app_1/msg"),
            (&delete, "/app/app_1/msg/msg_1/content"),
            (&delete, "/app/app_1/msg/msg_1/attempt/atmpt_1/content"),
            (&post, "/app/app_1/endpoint/ep_1/send-example"),
            (&post, "/event-type"),
            (&delete, "/event-type/a.b"),
            (&post, "/auth/app-portal-access/app_1"),
            (&post, "/auth/app-portal-access/shop"),
        ] {
            assert_eq!(app_scope(method, path, &token), Err(OutboundAnswer::Forbidden), "{method} {path}");
        }
        // Without a uid, a uid-looking path is another application.
        assert_eq!(app_scope(&get, "/app/shop", &app_token(None)), Err(OutboundAnswer::NotFound));
    }

    #[test]
    fn an_app_token_is_told_by_its_prefix_and_named_by_its_application() {
        let made = new_app_token([7; 32]);
        let text = std::str::from_utf8(made.expose()).unwrap_or_else(|_| unreachable!());
        assert!(text.starts_with("appsk_") && text.len() == 6 + 64, "{}", text.len());
        assert_ne!(made.expose(), new_app_token([8; 32]).expose());
        let given = headers(&format!("Bearer {text}"));
        assert_eq!(app_token_digest(&given), Some(access::digest(made.expose())));
        assert_eq!(app_token_digest(&headers("Bearer admin-0123456789")), None);
        let caller = Caller::of_app(&app_token(None), [1; 32]);
        assert_eq!((caller.name.as_str(), caller.app.as_deref()), ("app:app_1", Some("app_1")));
        assert_eq!(caller.actor().name(), "app:app_1");
        let configured = Caller { name: "ops".into(), role: ApiRole::Admin, app: None, digest: [0; 32] };
        assert_eq!(configured.actor().name(), "ops");
    }

    #[test]
    fn reads_need_read_publishing_publish_and_the_rest_admin() {
        assert_eq!(need_of(&Method::POST, "/auth/logout"), ApiRole::Read);
        assert_eq!(need_of(&Method::POST, "/auth/app-portal-access/app_1"), ApiRole::Admin);
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
