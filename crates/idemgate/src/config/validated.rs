//! The configuration ready to use: every duration parsed, every secret resolved and
//! decoded by its scheme, every reference between sources and destinations checked.

use std::{
    collections::{BTreeMap, BTreeSet},
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use idemgate_core::{
    Scheme, Secret, SecretSet, SourceName,
    json::Limits,
    scheme::{self, IdentityLocation},
};

use idemgate_core::retry::RetryPolicy;
use idemgate_http::{
    idempotency::{IdempotencyConfig, Scope, WhenUnavailable},
    tls::{self, TlsAcceptor},
};

use idemgate_worker::WorkerOptions;

use super::{
    ConfigError, ConfigWarning,
    raw::{RawAdmin, RawConfig, RawDestination, RawIdentity, RawProxy, RawServer, RawSource, RawStore, RawWorker},
    secrets,
};

/// Defaults, also documented in `idemgate.toml`.
const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
const DEFAULT_STORE: &str = "data/idemgate.sqlite3";
const DEFAULT_BODY_LIMIT: usize = 256 * 1024;
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_DESTINATION_TIMEOUT: Duration = Duration::from_secs(15);
/// Receipts outlive every provider's redelivery window by a wide margin: Stripe retries for
/// up to 3 days, Svix/Standard Webhooks' schedule spans about 28 hours, GitHub redelivers
/// on request for 3 days.
const DEFAULT_RETENTION: Duration = Duration::from_secs(30 * 86_400);

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// `[server]`.
    pub server: ServerConfig,
    /// `[store]`.
    pub store: StoreConfig,
    /// `[sources.*]`, by id.
    pub sources: Vec<SourceConfig>,
    /// `[destinations.*]`, by name.
    pub destinations: BTreeMap<String, DestinationConfig>,
    /// `[worker]`.
    pub worker: WorkerConfig,
    /// `[[proxy]]` entries.
    pub proxies: Vec<ProxyConfig>,
    /// `[admin]`, when a token is configured.
    pub admin: Option<AdminConfig>,
}

/// `[admin]`.
#[derive(Debug, Clone)]
pub struct AdminConfig {
    /// Where the admin API listens.
    pub listen: SocketAddr,
    /// The bearer token.
    pub token: Secret,
    /// How long a dashboard session lasts.
    pub session_lifetime: Duration,
    /// TLS: `[admin.tls]`, else `[server.tls]`; plain HTTP only when neither is set.
    pub tls: Option<TlsConfig>,
}

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

/// `[worker]`.
#[derive(Debug, Clone, Copy)]
pub struct WorkerConfig {
    /// Run the worker inside `idemgate serve`.
    pub enabled: bool,
    /// Lease, batch and poll interval.
    pub options: WorkerOptions,
}

/// The ordering guard of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderingConfig {
    /// JSON pointer to the ordering key.
    pub key: String,
    /// JSON pointer to the version.
    pub version: String,
}

/// `[server]`.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Limit on receiving a request head.
    pub header_timeout: Duration,
    /// Limit on receiving a body.
    pub body_timeout: Duration,
    /// Limit on finishing in-flight requests at shutdown.
    pub shutdown_grace: Duration,
    /// TLS, if the gateway terminates it itself.
    pub tls: Option<TlsConfig>,
    /// Where `serve` and `worker` write their process id while running.
    pub pid_file: Option<PathBuf>,
}

/// `[server.tls]`: the files, already loaded into an acceptor.
#[derive(Clone)]
pub struct TlsConfig {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
    /// The rustls acceptor built from them.
    pub acceptor: TlsAcceptor,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig").field("cert", &self.cert).field("key", &self.key).finish_non_exhaustive()
    }
}

/// `[store]`.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// The SQLite file (unused when `postgres` is set).
    pub path: PathBuf,
    /// PostgreSQL, when `store.url` is set.
    pub postgres: Option<PostgresConfig>,
    /// Lock wait.
    pub busy_timeout: Duration,
    /// How often `serve` purges.
    pub purge_interval: Duration,
}

/// `[store] url = ...`: the PostgreSQL store shared by several instances.
#[derive(Clone)]
pub struct PostgresConfig {
    /// The connection URL; it may hold a password, so it is never printed.
    pub url: String,
    /// The pool's size and wait.
    pub options: idemgate_store::PgOptions,
}

impl std::fmt::Debug for PostgresConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresConfig").field("options", &self.options).finish_non_exhaustive()
    }
}

/// One `[sources.<id>]`.
#[derive(Debug, Clone)]
pub struct SourceConfig {
    /// Stable id: receipts are keyed by it, so the route can be renamed freely.
    pub id: SourceName,
    /// `POST /in/<route>`.
    pub route: String,
    /// The signature scheme.
    pub scheme: Arc<dyn Scheme>,
    /// Decoded active secrets.
    pub secrets: SecretSet,
    /// Largest body.
    pub body_limit: usize,
    /// Strict JSON limits.
    pub json_limits: Limits,
    /// Where the stable event identity is.
    pub identity: IdentityLocation,
    /// Whether the same body bytes under another identity are a duplicate of the first.
    pub dedupe_body: bool,
    /// JSON pointer to the event type.
    pub event_type: Option<String>,
    /// Accepted event types; `None` accepts all.
    pub allowed_types: Option<BTreeSet<String>>,
    /// Destination names.
    pub destinations: Vec<String>,
    /// How long receipts are kept.
    pub retention: Duration,
    /// How long payloads of finished events are kept.
    pub payload_retention: Duration,
    /// Original headers passed on to destinations (lowercase names).
    pub forward_headers: Vec<http::HeaderName>,
    /// The ordering guard, if configured.
    pub ordering: Option<OrderingConfig>,
}

/// One `[destinations.<name>]`.
#[derive(Debug, Clone)]
pub struct DestinationConfig {
    /// Where events go.
    pub url: http::Uri,
    /// Outgoing signing secret.
    pub secret: Option<Secret>,
    /// Total timeout of one attempt.
    pub timeout: Duration,
    /// Timeout for establishing the connection.
    pub connect_timeout: Duration,
    /// What follows a failed attempt.
    pub policy: RetryPolicy,
    /// Deliver the events of one ordering key strictly one after the other.
    pub fifo: bool,
}

/// Turns what the file says into what the gateway runs with. `base` is the config file's
/// folder: relative `file:` secrets and TLS paths are relative to it.
pub fn validate(raw: RawConfig, base: &Path) -> Result<(Config, Vec<ConfigWarning>), ConfigError> {
    let mut warnings = Vec::new();
    let server = server(raw.server, base)?;
    let store = store(raw.store, base, &mut warnings)?;
    let destinations = raw
        .destinations
        .into_iter()
        .map(|(name, dest)| Ok((name.clone(), destination(&name, dest, base, &mut warnings)?)))
        .collect::<Result<BTreeMap<_, _>, ConfigError>>()?;
    let sources = raw
        .sources
        .into_iter()
        .map(|(id, src)| source(&id, src, &destinations, base, &mut warnings))
        .collect::<Result<Vec<_>, _>>()?;
    if sources.is_empty() && raw.proxy.is_empty() {
        return Err(ConfigError::new("sources", "at least one source (or one [[proxy]]) is required"));
    }

    unique_routes(&sources)?;
    let worker = worker(&raw.worker, &destinations)?;
    let mut proxies = Vec::with_capacity(raw.proxy.len());
    for (i, raw) in raw.proxy.into_iter().enumerate() {
        let proxy = proxy(&format!("proxy[{i}]"), raw, &proxies, server.body_timeout)?;
        proxies.push(proxy);
    }
    let admin = raw.admin.map(|a| admin(a, base, &server, &mut warnings)).transpose()?.flatten();
    Ok((Config { server, store, sources, destinations, worker, proxies, admin }, warnings))
}

fn admin(
    raw: RawAdmin,
    base: &Path,
    server: &ServerConfig,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<Option<AdminConfig>, ConfigError> {
    let Some(reference) = raw.token else { return Ok(None) };
    let token = secrets::resolve("admin.token", &reference, base, warnings)?;
    if token.len() < 16 {
        return Err(ConfigError::new("admin.token", "must be at least 16 characters"));
    }
    let listen = raw.listen.as_deref().unwrap_or("127.0.0.1:8081");
    let listen: SocketAddr = listen
        .parse()
        .map_err(|_| ConfigError::new("admin.listen", format!("{listen:?} is not HOST:PORT with an IP address")))?;
    let tls = match raw.tls {
        Some(tls) => Some(tls_config("admin.tls", &base.join(tls.cert), &base.join(tls.key))?),
        None => server.tls.clone(),
    };
    if tls.is_none() && !listen.ip().is_loopback() && raw.allow_plaintext != Some(true) {
        return Err(ConfigError::new(
            "admin.listen",
            format!(
                "{listen} is not a loopback address and no TLS is configured: set [admin.tls] or [server.tls], \
                 or admin.allow_plaintext = true to send the token in plain HTTP"
            ),
        ));
    }
    let session_lifetime =
        duration("admin.session_lifetime", raw.session_lifetime.as_deref(), idemgate_http::session::DEFAULT_LIFETIME)?;
    Ok(Some(AdminConfig { listen, token: Secret::new(token.into_bytes()), session_lifetime, tls }))
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
    if let Some(taken) = crate::gateway::reserved_prefixes().into_iter().find(|taken| below(taken)) {
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
) -> Result<ProxyConfig, ConfigError> {
    proxy_prefix(key, &raw.prefix, earlier)?;
    let upstream: http::Uri =
        raw.upstream.parse().map_err(|_| ConfigError::new(format!("{key}.upstream"), "not a valid URL"))?;
    if !matches!(upstream.scheme_str(), Some("http" | "https")) || upstream.host().is_none() {
        return Err(ConfigError::new(format!("{key}.upstream"), "must be an http:// or https:// URL with a host"));
    }
    let defaults = IdempotencyConfig::default();
    let header_names = |field: &str, names: Option<Vec<String>>, default: Vec<http::HeaderName>| match names {
        None => Ok(default),
        Some(names) => names
            .iter()
            .map(|n| http::HeaderName::try_from(n.as_str()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| ConfigError::new(format!("{key}.{field}"), "not a valid header name")),
    };
    let methods = match raw.methods {
        None => defaults.methods,
        Some(methods) => methods
            .iter()
            .map(|m| http::Method::from_bytes(m.to_ascii_uppercase().as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|_| ConfigError::new(format!("{key}.methods"), "not a valid method"))?,
    };
    let when_unavailable = match raw.when_unavailable.as_deref() {
        None | Some("refuse") => WhenUnavailable::Refuse,
        Some("pass-through") => WhenUnavailable::PassThrough,
        Some(_) => {
            return Err(ConfigError::new(format!("{key}.when_unavailable"), "must be \"refuse\" or \"pass-through\""));
        }
    };
    let scope = match raw.scope_header {
        None => defaults.scope,
        Some(name) => Scope::HeaderHash(
            http::HeaderName::try_from(name.as_str())
                .map_err(|_| ConfigError::new(format!("{key}.scope_header"), "not a valid header name"))?,
        ),
    };
    let idempotency = IdempotencyConfig {
        methods,
        require_key: raw.require_key.unwrap_or(defaults.require_key),
        lock: duration(&format!("{key}.lock"), raw.lock.as_deref(), defaults.lock)?,
        retention: duration(&format!("{key}.retention"), raw.retention.as_deref(), defaults.retention)?,
        max_request_body: raw.max_body.unwrap_or(defaults.max_request_body),
        body_timeout: duration(&format!("{key}.body_timeout"), raw.body_timeout.as_deref(), body_timeout)?,
        max_stored_body: raw.max_stored_body.unwrap_or(defaults.max_stored_body),
        stored_headers: header_names("stored_headers", raw.stored_headers, defaults.stored_headers)?,
        store_client_errors: raw.store_client_errors.unwrap_or(defaults.store_client_errors),
        when_unavailable,
        scope,
    };
    let timeout = duration(&format!("{key}.timeout"), raw.timeout.as_deref(), DEFAULT_TIMEOUT)?;
    Ok(ProxyConfig { prefix: raw.prefix, upstream, timeout, idempotency })
}

fn worker(raw: &RawWorker, destinations: &BTreeMap<String, DestinationConfig>) -> Result<WorkerConfig, ConfigError> {
    let defaults = WorkerOptions::default();
    let options = WorkerOptions {
        lease: duration("worker.lease", raw.lease.as_deref(), defaults.lease)?,
        batch: raw.batch.unwrap_or(defaults.batch).max(1),
        poll_interval: duration("worker.poll_interval", raw.poll_interval.as_deref(), defaults.poll_interval)?,
    };
    if let Some((name, _)) = destinations.iter().find(|(_, d)| d.timeout >= options.lease) {
        return Err(ConfigError::new(
            "worker.lease",
            format!("must be longer than destinations.{name}.timeout, or a slow attempt would be taken over"),
        ));
    }
    Ok(WorkerConfig { enabled: raw.enabled.unwrap_or(true), options })
}

fn duration(key: &str, text: Option<&str>, default: Duration) -> Result<Duration, ConfigError> {
    match text {
        None => Ok(default),
        Some(text) => humantime::parse_duration(text).map_err(|_| {
            ConfigError::new(key, format!("invalid duration {text:?} (use e.g. \"30s\", \"5m\", \"2h\")"))
        }),
    }
}

fn server(raw: RawServer, base: &Path) -> Result<ServerConfig, ConfigError> {
    let listen = raw.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
    Ok(ServerConfig {
        listen: listen.parse().map_err(|_| {
            ConfigError::new("server.listen", format!("{listen:?} is not HOST:PORT with an IP address"))
        })?,
        header_timeout: duration("server.header_timeout", raw.header_timeout.as_deref(), DEFAULT_TIMEOUT)?,
        body_timeout: duration("server.body_timeout", raw.body_timeout.as_deref(), DEFAULT_TIMEOUT)?,
        shutdown_grace: duration("server.shutdown_grace", raw.shutdown_grace.as_deref(), DEFAULT_TIMEOUT)?,
        tls: raw.tls.map(|tls| tls_config("server.tls", &base.join(tls.cert), &base.join(tls.key))).transpose()?,
        pid_file: raw.pid_file.map(|path| base.join(path)),
    })
}

/// `[server.tls]` or `[admin.tls]` (`table`).
fn tls_config(table: &str, cert: &Path, key: &Path) -> Result<TlsConfig, ConfigError> {
    let acceptor = tls::acceptor(cert, key).map_err(|err| {
        let field = if matches!(err, tls::TlsError::Key { .. }) { "key" } else { "cert" };
        ConfigError::new(format!("{table}.{field}"), err.to_string())
    })?;
    Ok(TlsConfig { cert: cert.to_owned(), key: key.to_owned(), acceptor })
}

fn store(raw: RawStore, base: &Path, warnings: &mut Vec<ConfigWarning>) -> Result<StoreConfig, ConfigError> {
    let postgres = match raw.url.as_deref() {
        None => None,
        Some(_) if raw.path.is_some() => {
            return Err(ConfigError::new("store.url", "give either store.path (SQLite) or store.url (PostgreSQL)"));
        }
        Some(reference) => Some(postgres(reference, &raw, base, warnings)?),
    };
    Ok(StoreConfig {
        postgres,
        path: PathBuf::from(raw.path.as_deref().unwrap_or(DEFAULT_STORE)),
        busy_timeout: duration("store.busy_timeout", raw.busy_timeout.as_deref(), Duration::from_secs(5))?,
        purge_interval: duration("store.purge_interval", raw.purge_interval.as_deref(), Duration::from_secs(3600))?,
    })
}

fn postgres(
    reference: &str,
    raw: &RawStore,
    base: &Path,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<PostgresConfig, ConfigError> {
    let literal = !reference.starts_with("env:") && !reference.starts_with("file:");
    let url = if literal {
        // A literal URL is fine in a config file unless it carries a password.
        if url_has_password(reference) {
            warnings.push(ConfigWarning(
                "store.url: password given literally in the config file; use env:NAME or file:PATH".to_owned(),
            ));
        }
        reference.to_owned()
    } else {
        secrets::resolve("store.url", reference, base, warnings)?
    };
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(ConfigError::new("store.url", "must be a postgres:// or postgresql:// URL"));
    }
    let defaults = idemgate_store::PgOptions::default();
    let pool_size = raw.pool_size.unwrap_or(defaults.pool_size);
    if pool_size == 0 {
        return Err(ConfigError::new("store.pool_size", "must be at least 1"));
    }
    let wait_timeout = duration("store.pool_wait", raw.pool_wait.as_deref(), defaults.wait_timeout)?;
    Ok(PostgresConfig { url, options: idemgate_store::PgOptions { pool_size, wait_timeout } })
}

/// Whether a `postgres://user:password@host` URL (or its `password=` parameter) holds a password.
fn url_has_password(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let userinfo = authority.rsplit_once('@').map_or("", |(userinfo, _)| userinfo);
    userinfo.contains(':') || url.contains("password=")
}

fn destination(
    name: &str,
    raw: RawDestination,
    base: &Path,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<DestinationConfig, ConfigError> {
    let key = format!("destinations.{name}");
    let url: http::Uri = raw.url.parse().map_err(|_| ConfigError::new(format!("{key}.url"), "not a valid URL"))?;
    if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
        return Err(ConfigError::new(format!("{key}.url"), "must be an http:// or https:// URL with a host"));
    }
    let policy = retry_policy(&key, &raw)?;
    let secret = match raw.secret {
        None => None,
        Some(reference) => {
            let secret_key = format!("{key}.secret");
            let text = secrets::resolve(&secret_key, &reference, base, warnings)?;
            let decoded = scheme::OUTGOING.decode_secret(&text);
            Some(decoded.map_err(|err| ConfigError::new(secret_key, err.to_string()))?)
        }
    };
    let timeout = duration(&format!("{key}.timeout"), raw.timeout.as_deref(), DEFAULT_DESTINATION_TIMEOUT)?;
    let connect_timeout = duration(&format!("{key}.connect_timeout"), raw.connect_timeout.as_deref(), timeout)?;
    Ok(DestinationConfig { url, secret, timeout, connect_timeout, policy, fifo: raw.fifo.unwrap_or(false) })
}

fn retry_policy(key: &str, raw: &RawDestination) -> Result<RetryPolicy, ConfigError> {
    let defaults = RetryPolicy::default();
    let schedule = match &raw.retry_schedule {
        None => defaults.schedule,
        Some(delays) => delays
            .iter()
            .enumerate()
            .map(|(i, d)| duration(&format!("{key}.retry_schedule[{i}]"), Some(d), Duration::ZERO))
            .collect::<Result<_, _>>()?,
    };
    let jitter = raw.jitter.unwrap_or(defaults.jitter);
    if !(0.0..=1.0).contains(&jitter) {
        return Err(ConfigError::new(format!("{key}.jitter"), "must be between 0.0 and 1.0"));
    }
    Ok(RetryPolicy {
        schedule,
        jitter,
        retry_after_cap: duration(
            &format!("{key}.retry_after_cap"),
            raw.retry_after_cap.as_deref(),
            defaults.retry_after_cap,
        )?,
        retry_client_errors: raw.retry_client_errors.unwrap_or(defaults.retry_client_errors),
    })
}

fn source(
    id: &str,
    raw: RawSource,
    destinations: &BTreeMap<String, DestinationConfig>,
    base: &Path,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<SourceConfig, ConfigError> {
    let key = format!("sources.{id}");
    let name = SourceName::new(id).map_err(|err| ConfigError::new(&key, err.to_string()))?;
    let route = raw.route.unwrap_or_else(|| id.to_owned());
    if SourceName::new(route.as_str()).is_err() {
        return Err(ConfigError::new(format!("{key}.route"), "must match [a-z0-9][a-z0-9_-]{0,62}"));
    }
    let tolerance = match raw.tolerance.as_deref() {
        Some(text) => Some(duration(&format!("{key}.tolerance"), Some(text), Duration::ZERO)?.as_secs()),
        None => None,
    };
    let scheme = scheme::lookup(&raw.scheme)
        .map_err(|unknown| ConfigError::new(format!("{key}.scheme"), unknown.to_string()))?
        .configured(tolerance);
    let secrets = source_secrets(&key, &raw.secrets, scheme.as_ref(), base, warnings)?;
    for (i, dest) in raw.destinations.iter().enumerate() {
        if !destinations.contains_key(dest) {
            return Err(ConfigError::new(format!("{key}.destinations[{i}]"), format!("no destination named {dest:?}")));
        }
    }
    let forward_headers =
        raw.forward_headers.iter().enumerate().map(|(i, h)| forward_header(&key, i, h)).collect::<Result<_, _>>()?;
    let ordering = match raw.ordering {
        None => None,
        Some(o) => Some(OrderingConfig {
            key: pointer(&format!("{key}.ordering.key"), o.key)?,
            version: pointer(&format!("{key}.ordering.version"), o.version)?,
        }),
    };
    let retention = duration(&format!("{key}.retention"), raw.retention.as_deref(), DEFAULT_RETENTION)?;
    let configured_identity = raw.identity.is_some();
    let identity = identity(&key, raw.identity, scheme.as_ref())?;
    let signed = identity.is_signed_by(scheme.as_ref());
    let dedupe_body = raw.dedupe_body.unwrap_or(!signed);
    if configured_identity && !signed {
        warnings.push(ConfigWarning(format!(
            "{key}.identity: {identity} is not covered by the {} signature, so a captured delivery can be re-sent \
             under another identity; dedupe_body is {}",
            scheme.name(),
            if dedupe_body { "on" } else { "off" },
        )));
    }
    Ok(SourceConfig {
        payload_retention: duration(&format!("{key}.payload_retention"), raw.payload_retention.as_deref(), retention)?,
        retention,
        forward_headers,
        ordering,
        identity,
        dedupe_body,
        event_type: raw.event_type.map(|p| pointer(&format!("{key}.event_type"), p)).transpose()?,
        allowed_types: raw.allowed_types.map(|types| types.into_iter().collect()),
        body_limit: raw.body_limit.unwrap_or(DEFAULT_BODY_LIMIT),
        json_limits: Limits { max_depth: raw.max_depth.unwrap_or(Limits::default().max_depth) },
        destinations: raw.destinations,
        id: name,
        route,
        scheme,
        secrets,
    })
}

/// One name of `forward_headers`: a valid header that the worker does not set itself.
fn forward_header(key: &str, i: usize, name: &str) -> Result<http::HeaderName, ConfigError> {
    let key = format!("{key}.forward_headers[{i}]");
    let name = http::HeaderName::try_from(name).map_err(|_| ConfigError::new(&key, "not a valid header name"))?;
    if idemgate_worker::http::sets_itself(&name) {
        return Err(ConfigError::new(
            key,
            format!("{name} is set by idemgate on every delivery; it cannot be forwarded"),
        ));
    }
    Ok(name)
}

fn source_secrets(
    key: &str,
    references: &[String],
    scheme: &dyn Scheme,
    base: &Path,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<SecretSet, ConfigError> {
    let mut decoded = Vec::with_capacity(references.len());
    for (i, reference) in references.iter().enumerate() {
        let item = format!("{key}.secrets[{i}]");
        let text = secrets::resolve(&item, reference, base, warnings)?;
        decoded.push(scheme.decode_secret(&text).map_err(|err| ConfigError::new(&item, err.to_string()))?);
    }
    SecretSet::new(decoded).map_err(|err| ConfigError::new(format!("{key}.secrets"), err.to_string()))
}

fn identity(key: &str, raw: Option<RawIdentity>, scheme: &dyn Scheme) -> Result<IdentityLocation, ConfigError> {
    let key = format!("{key}.identity");
    match raw {
        None => Ok(scheme.default_identity()),
        Some(RawIdentity { header: Some(header), pointer: None }) => {
            http::HeaderName::try_from(header.as_str())
                .map_err(|_| ConfigError::new(&key, "not a valid header name"))?;
            Ok(IdentityLocation::Header(header.to_ascii_lowercase()))
        }
        Some(RawIdentity { header: None, pointer: Some(p) }) => Ok(IdentityLocation::Body(pointer(&key, p)?)),
        Some(_) => Err(ConfigError::new(key, "give exactly one of header or pointer")),
    }
}

fn pointer(key: &str, pointer: String) -> Result<String, ConfigError> {
    if pointer.starts_with('/') {
        Ok(pointer)
    } else {
        Err(ConfigError::new(key, "a JSON pointer starts with / (e.g. \"/id\")"))
    }
}

fn unique_routes(sources: &[SourceConfig]) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    for source in sources {
        if !seen.insert(source.route.as_str()) {
            return Err(ConfigError::new(
                format!("sources.{}.route", source.id),
                format!("route {:?} is used twice", source.route),
            ));
        }
    }
    Ok(())
}

impl Config {
    /// The retention policies of every source, for the purge.
    #[must_use]
    pub fn retention(&self) -> Vec<idemgate_store::maintenance::Retention> {
        self.sources
            .iter()
            .map(|s| idemgate_store::maintenance::Retention {
                source: s.id.to_string(),
                receipts: s.retention,
                payloads: s.payload_retention,
            })
            .collect()
    }
}
