//! `[[proxy]]`: the `Idempotency-Key` layer in front of an HTTP API, under a prefix the
//! gateway's own routes do not use.

use std::time::Duration;

use idemgate_http::{
    gateway::reserved_prefixes,
    idempotency::{IdempotencyConfig, RefusalStyle, Scope, WhenUnavailable},
};

use super::{
    ConfigError,
    effective::Shown,
    raw::RawProxy,
    reading::{DEFAULT_TIMEOUT, Reading},
};

/// One `[[proxy]]`: idempotency in front of an HTTP API.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Path prefix served (stripped before forwarding).
    pub prefix: String,
    /// Base URL of the API.
    pub upstream: http::Uri,
    /// Total timeout of one upstream request.
    pub timeout: Duration,
    /// The layer's settings.
    pub idempotency: IdempotencyConfig,
}

pub(super) fn proxies(
    raw: Vec<RawProxy>,
    body_timeout: Duration,
    r: &mut Reading<'_>,
) -> Result<Vec<ProxyConfig>, ConfigError> {
    let mut proxies = Vec::with_capacity(raw.len());
    for (i, raw) in raw.into_iter().enumerate() {
        let proxy = proxy(&format!("proxy[{i}]"), raw, &proxies, body_timeout, r)?;
        proxies.push(proxy);
    }
    Ok(proxies)
}

/// A `[[proxy]]` prefix: plain path segments, outside the gateway's own routes and
/// different from every earlier proxy's.
fn proxy_prefix(key: &str, prefix: &str, earlier: &[ProxyConfig]) -> Result<(), ConfigError> {
    let key = format!("{key}.prefix");
    let plain = |segment: &str| {
        !matches!(segment, "" | "." | "..")
            && segment.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()+,;=:@%".contains(&b))
    };
    if !prefix.starts_with('/') || prefix.len() < 2 || !prefix[1..].split('/').all(plain) {
        return Err(ConfigError::new(
            key,
            "must be / followed by plain path segments, not ending with / (e.g. \"/api\" or \"/api/v1\")",
        ));
    }
    let below = |taken: &str| prefix == taken || prefix.starts_with(&format!("{taken}/"));
    if let Some(taken) = reserved_prefixes().into_iter().find(|taken| below(taken)) {
        return Err(ConfigError::new(key, format!("{taken} is the gateway's own route")));
    }
    if let Some(i) = earlier.iter().position(|other| other.prefix == prefix) {
        return Err(ConfigError::new(key, format!("is already the prefix of proxy[{i}]")));
    }
    Ok(())
}

fn proxy(
    key: &str,
    raw: RawProxy,
    earlier: &[ProxyConfig],
    body_timeout: Duration,
    r: &mut Reading<'_>,
) -> Result<ProxyConfig, ConfigError> {
    proxy_prefix(key, &raw.prefix, earlier)?;
    r.show(&format!("{key}.prefix"), Shown::Value(raw.prefix.clone().into()));
    r.show(&format!("{key}.upstream"), Shown::Value(raw.upstream.clone().into()));
    let upstream: http::Uri =
        raw.upstream.parse().map_err(|_| ConfigError::new(format!("{key}.upstream"), "not a valid URL"))?;
    if !matches!(upstream.scheme_str(), Some("http" | "https")) || upstream.host().is_none() {
        return Err(ConfigError::new(format!("{key}.upstream"), "must be an http:// or https:// URL with a host"));
    }
    let timeout = r.duration(&format!("{key}.timeout"), raw.timeout.as_deref(), DEFAULT_TIMEOUT)?;
    let defaults = IdempotencyConfig::default();
    let methods = match &raw.methods {
        None => defaults.methods,
        Some(methods) => methods
            .iter()
            .map(|m| http::Method::from_bytes(m.to_ascii_uppercase().as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|_| ConfigError::new(format!("{key}.methods"), "not a valid method"))?,
    };
    let shown = methods.iter().map(ToString::to_string).collect::<Vec<_>>();
    r.show(&format!("{key}.methods"), Shown::Value(shown.into()));
    let require_key = r.value(&format!("{key}.require_key"), raw.require_key, defaults.require_key);
    let lock = r.duration(&format!("{key}.lock"), raw.lock.as_deref(), defaults.lock)?;
    let retention = r.duration(&format!("{key}.retention"), raw.retention.as_deref(), defaults.retention)?;
    let max_request_body = r.count(&format!("{key}.max_body"), raw.max_body, defaults.max_request_body);
    let body_timeout = r.duration(&format!("{key}.body_timeout"), raw.body_timeout.as_deref(), body_timeout)?;
    let max_stored_body = r.count(&format!("{key}.max_stored_body"), raw.max_stored_body, defaults.max_stored_body);
    let stored_headers = match &raw.stored_headers {
        None => defaults.stored_headers,
        Some(names) => names
            .iter()
            .map(|n| http::HeaderName::try_from(n.as_str()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| ConfigError::new(format!("{key}.stored_headers"), "not a valid header name"))?,
    };
    let shown = stored_headers.iter().map(|name| name.as_str().to_owned()).collect::<Vec<_>>();
    r.show(&format!("{key}.stored_headers"), Shown::Value(shown.into()));
    let store_client_errors =
        r.value(&format!("{key}.store_client_errors"), raw.store_client_errors, defaults.store_client_errors);
    let when_unavailable = match raw.when_unavailable.as_deref() {
        None | Some("refuse") => WhenUnavailable::Refuse,
        Some("pass-through") => WhenUnavailable::PassThrough,
        Some(_) => {
            return Err(ConfigError::new(format!("{key}.when_unavailable"), "must be \"refuse\" or \"pass-through\""));
        }
    };
    let shown = if matches!(when_unavailable, WhenUnavailable::Refuse) { "refuse" } else { "pass-through" };
    r.show(&format!("{key}.when_unavailable"), Shown::Value(shown.into()));
    let scope = match &raw.scope_header {
        None => defaults.scope,
        Some(name) => Scope::HeaderHash(
            http::HeaderName::try_from(name.as_str())
                .map_err(|_| ConfigError::new(format!("{key}.scope_header"), "not a valid header name"))?,
        ),
    };
    let shown = match &scope {
        Scope::HeaderHash(name) => Shown::Value(name.as_str().into()),
        Scope::Custom(_) => Shown::Note("(the application's)"),
    };
    r.show(&format!("{key}.scope_header"), shown);
    let replay_cache_bytes = r.count(&format!("{key}.replay_cache"), raw.replay_cache, defaults.replay_cache_bytes);
    let idempotency = IdempotencyConfig {
        methods,
        require_key,
        lock,
        retention,
        max_request_body,
        body_timeout,
        max_stored_body,
        stored_headers,
        store_client_errors,
        when_unavailable,
        scope,
        replay_cache_bytes,
        refusals: RefusalStyle::Problem,
    };
    Ok(ProxyConfig { prefix: raw.prefix, upstream, timeout, idempotency })
}
