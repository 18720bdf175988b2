//! The gateway's routes as configured: `[sources.*]`, `[[proxy]]` and `[server]` turned
//! into the plain settings `idemgate_http::gateway` builds its router from, so the HTTP
//! crate knows no configuration and this one builds no router.

use idemgate_http::{
    gateway::{OrderingGuard, Routes, Source},
    proxy::ProxyRoute,
};

use crate::config::{Config, ProxyConfig, SourceConfig};

/// What the gateway serves for `config`.
#[must_use]
pub fn routes(config: &Config) -> Routes {
    Routes {
        sources: config.sources.iter().map(source).collect(),
        proxies: config.proxies.iter().map(proxy).collect(),
        body_timeout: config.server.body_timeout,
        api: config.api.as_ref().map(crate::config::ApiConfig::routes),
    }
}

fn source(source: &SourceConfig) -> Source {
    Source {
        id: source.id.clone(),
        route: source.route.clone(),
        scheme: source.scheme.clone(),
        secrets: source.secrets.clone(),
        body_limit: source.body_limit,
        json_limits: source.json_limits,
        body: source.body,
        per_attempt: source.per_attempt.clone(),
        identity: source.identity.clone(),
        dedupe_body: source.dedupe_body,
        event_type: source.event_type.clone(),
        event_type_header: source.event_type_header.clone(),
        allowed_types: source.allowed_types.clone(),
        destinations: source.destinations.clone(),
        forward_headers: source.forward_headers.clone(),
        ordering: source
            .ordering
            .as_ref()
            .map(|guard| OrderingGuard { key: guard.key.clone(), version: guard.version.clone() }),
    }
}

fn proxy(proxy: &ProxyConfig) -> ProxyRoute {
    ProxyRoute {
        prefix: proxy.prefix.clone(),
        upstream: proxy.upstream.clone(),
        timeout: proxy.timeout,
        idempotency: proxy.idempotency.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::{path::Path, sync::Arc};

    use idemgate_clock::SystemClock;
    use idemgate_http::gateway::{Observers, reserved_prefixes, router};
    use idemgate_store::Store;

    use super::*;
    use crate::config::{raw, validated};

    fn with_proxies(prefixes: &[&str]) -> Result<Config, crate::config::ConfigError> {
        let mut text = String::new();
        for prefix in prefixes {
            text.push_str(&format!("[[proxy]]\nprefix = {prefix:?}\nupstream = \"http://127.0.0.1:1\"\n"));
        }
        Ok(validated::validate(raw::parse(&text, Vec::new())?, Path::new("."))?.0)
    }

    #[test]
    fn a_proxy_on_or_below_an_own_route_is_refused_naming_the_key() {
        for taken in reserved_prefixes() {
            for prefix in [taken.to_owned(), format!("{taken}/x")] {
                let err = with_proxies(&["/api", &prefix]).unwrap_err();
                assert_eq!(err.key, "proxy[1].prefix", "{prefix}: {err}");
                assert!(err.message.contains(taken), "{err}");
            }
        }
    }

    #[test]
    fn every_prefix_the_configuration_accepts_builds_a_router() {
        let candidates = [
            "/api",
            "/api/v1",
            "/inbox",
            "/metricsx",
            "/a:b@c",
            "/%7Bx%7D",
            "/{x}",
            "/a/{*rest}",
            "/*",
            "/a//b",
            "/a/../b",
            "/./a",
            "/api/",
            "/",
            "",
            "api",
            "/a b",
            "/a?b",
            "/a#b",
            "/ä",
        ];
        for first in ["/api", "/api/v1", "/b"] {
            for prefix in candidates {
                let Ok(config) = with_proxies(&[first, prefix]) else { continue };
                let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    router(&routes(&config), &Store::unavailable(), Arc::new(SystemClock), Observers::default())
                        .map(|_| ())
                }));
                assert!(
                    matches!(built, Ok(Ok(()))),
                    "[[proxy]] {first:?} then {prefix:?} was accepted but cannot be served"
                );
            }
        }
    }
}
