//! What a listener serves, replaceable while it runs: a configuration reload builds a new
//! router and puts it in place of the old one. Each request takes the router current when
//! it arrives and finishes on it, so a reload drops no connection and changes nothing for
//! a delivery in flight; the next request on the same connection sees the new one.

use std::{convert::Infallible, sync::Arc};

use arc_swap::ArcSwap;
use axum::{Router, extract::Request, response::Response};
use idemgate_clock::Clock;
use idemgate_store::Store;
use tower::ServiceExt;

use crate::gateway::{Observers, Routes, router};

/// The gateway's router ([`router`]) behind a [`CurrentRouter`], with what rebuilding it
/// for new [`Routes`] takes: the store, the clock and the observers stay the same.
#[derive(Debug, Clone)]
pub struct LiveGateway {
    current: CurrentRouter,
    store: Store,
    clock: Arc<dyn Clock>,
    observers: Observers,
}

impl LiveGateway {
    /// The gateway's router for `routes`.
    pub fn new(
        routes: &Routes,
        store: &Store,
        clock: Arc<dyn Clock>,
        observers: Observers,
    ) -> Result<Self, reqwest::Error> {
        let built = router(routes, store, Arc::clone(&clock), observers.clone())?;
        Ok(Self { current: CurrentRouter::new(built), store: store.clone(), clock, observers })
    }

    /// Serves `routes` from the next request on; when they cannot be built (a proxy's
    /// HTTP client), the running ones stay.
    pub fn replace(&self, routes: &Routes) -> Result<(), reqwest::Error> {
        self.current.replace(router(routes, &self.store, Arc::clone(&self.clock), self.observers.clone())?);
        Ok(())
    }

    /// What the listener serves: each request on the routes current when it arrives.
    pub fn router(&self) -> Router {
        self.current.router()
    }
}

/// The router a listener serves now. Clones share it.
#[derive(Clone)]
pub struct CurrentRouter(Arc<ArcSwap<Router>>);

impl std::fmt::Debug for CurrentRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CurrentRouter(..)")
    }
}

impl CurrentRouter {
    /// Serves `router` until it is replaced.
    #[must_use]
    pub fn new(router: Router) -> Self {
        Self(Arc::new(ArcSwap::from_pointee(router)))
    }

    /// Serves `router` from the next request on.
    pub fn replace(&self, router: Router) {
        self.0.store(Arc::new(router));
    }

    /// A router that hands each request to the router current when it arrives.
    pub fn router(&self) -> Router {
        let current = Arc::clone(&self.0);
        let dispatch = tower::service_fn(move |request: Request| {
            let router = Router::clone(&current.load());
            async move { Ok::<Response, Infallible>(router.oneshot(request).await.unwrap_or_else(|never| match never {})) }
        });
        Router::new().fallback_service(dispatch)
    }
}

/// The admin tokens, replaceable while the admin API runs. Clones share them.
#[derive(Clone)]
pub struct AdminTokens(Arc<ArcSwap<Vec<crate::access::NamedToken>>>);

impl std::fmt::Debug for AdminTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminTokens(<redacted>)")
    }
}

impl AdminTokens {
    /// Accepts `tokens` until they are replaced.
    #[must_use]
    pub fn new(tokens: Vec<crate::access::NamedToken>) -> Self {
        Self(Arc::new(ArcSwap::from_pointee(tokens)))
    }

    /// Accepts `tokens` from now on, and none of the previous ones.
    pub fn replace(&self, tokens: Vec<crate::access::NamedToken>) {
        self.0.store(Arc::new(tokens));
    }

    /// Which token `given` is now, compared as [`crate::access::identify`] does.
    #[must_use]
    pub fn identify(&self, given: &[u8]) -> Option<crate::access::Principal> {
        crate::access::identify(&self.0.load(), given)
    }

    /// Whether a token of `principal`'s name is configured now, with its role: a dashboard
    /// session signed in with a token since renamed, removed or given another role is not.
    #[must_use]
    pub fn configures(&self, principal: &crate::access::Principal) -> bool {
        self.0.load().iter().any(|token| token.name == principal.name && token.role == principal.role)
    }
}

/// The configured destinations: their names, for the admin API's replay to a named one,
/// and their transforms, for the dashboard's event page to show the body each one gets;
/// replaced by a configuration reload. Clones share one set.
#[derive(Debug, Clone, Default)]
pub struct DestinationNames {
    names: Arc<ArcSwap<std::collections::BTreeSet<String>>>,
    transforms: Arc<ArcSwap<Transforms>>,
}

/// Destination name to its transform, for the destinations that have one.
pub type Transforms = std::collections::BTreeMap<String, idemgate_jq::Program>;

impl DestinationNames {
    /// These names until they are replaced.
    #[must_use]
    pub fn new(names: std::collections::BTreeSet<String>) -> Self {
        Self { names: Arc::new(ArcSwap::from_pointee(names)), transforms: Arc::default() }
    }

    /// With these transforms until they are replaced.
    #[must_use]
    pub fn with_transforms(self, transforms: Transforms) -> Self {
        self.transforms.store(Arc::new(transforms));
        self
    }

    /// These names from now on.
    pub fn replace(&self, names: std::collections::BTreeSet<String>) {
        self.names.store(Arc::new(names));
    }

    /// These transforms from now on.
    pub fn replace_transforms(&self, transforms: Transforms) {
        self.transforms.store(Arc::new(transforms));
    }

    /// Whether `name` is a configured destination now.
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.names.load().contains(name)
    }

    /// The transforms now.
    #[must_use]
    pub fn transforms(&self) -> Arc<Transforms> {
        self.transforms.load_full()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use axum::{body::Body, routing::get};

    use super::*;

    async fn get_status(router: &Router, path: &str) -> u16 {
        router.clone().oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap().status().as_u16()
    }

    #[tokio::test]
    async fn a_replaced_router_answers_the_next_request() {
        let current = CurrentRouter::new(Router::new().route("/old", get(|| async { "old" })));
        let served = current.router();
        assert_eq!(get_status(&served, "/old").await, 200);
        current.replace(Router::new().route("/new", get(|| async { "new" })));
        assert_eq!(get_status(&served, "/new").await, 200);
        assert_eq!(get_status(&served, "/old").await, 404);
    }

    #[test]
    fn a_replaced_token_is_no_longer_accepted() {
        use crate::access::{NamedToken, Role};
        let named = |secret: &[u8]| {
            vec![NamedToken {
                name: "admin".into(),
                role: Role::Operate,
                secret: idemgate_core::Secret::new(secret.to_vec()),
            }]
        };
        let tokens = AdminTokens::new(named(b"old-token"));
        let shared = tokens.clone();
        assert!(shared.identify(b"old-token").is_some());
        tokens.replace(named(b"new-token"));
        assert!(shared.identify(b"new-token").is_some());
        assert!(shared.identify(b"old-token").is_none());
    }

    #[test]
    fn only_a_configured_name_with_its_role_is_configured() {
        use crate::access::{NamedToken, Principal, Role};
        let token = |name: &str, role| NamedToken {
            name: name.into(),
            role,
            secret: idemgate_core::Secret::new(b"some-token".to_vec()),
        };
        let tokens = AdminTokens::new(vec![token("ops", Role::Operate), token("viewer", Role::Read)]);
        let who = |name: &str, role| Principal { name: name.into(), role };
        assert!(tokens.configures(&who("ops", Role::Operate)));
        assert!(tokens.configures(&who("viewer", Role::Read)));
        assert!(!tokens.configures(&who("ops", Role::Read)), "another role");
        assert!(!tokens.configures(&who("admin", Role::Operate)), "another name");
        tokens.replace(vec![token("ops", Role::Read)]);
        assert!(!tokens.configures(&who("ops", Role::Operate)), "its role changed");
        assert!(!tokens.configures(&who("viewer", Role::Read)), "removed");
    }
}
