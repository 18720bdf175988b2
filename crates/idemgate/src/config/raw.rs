//! The configuration as written: TOML plus environment overrides, deserialised with
//! unknown keys refused and the path of the offending key kept for the error.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ConfigError;

/// Prefix of environment overrides; `__` separates the levels of the key.
pub const ENV_PREFIX: &str = "IDEMGATE_";

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// `[server]`.
    #[serde(default)]
    pub server: RawServer,
    /// `[store]`.
    #[serde(default)]
    pub store: RawStore,
    /// `[sources.<id>]`.
    #[serde(default)]
    pub sources: BTreeMap<String, RawSource>,
    /// `[destinations.<name>]`.
    #[serde(default)]
    pub destinations: BTreeMap<String, RawDestination>,
    /// `[worker]`.
    #[serde(default)]
    pub worker: RawWorker,
    /// `[admin]`.
    pub admin: Option<RawAdmin>,
    /// `[[proxy]]`: idempotency in front of HTTP APIs.
    #[serde(default)]
    pub proxy: Vec<RawProxy>,
}

/// `[admin]`: the admin API and its token.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAdmin {
    /// Listen address, `HOST:PORT`.
    pub listen: Option<String>,
    /// Bearer token: `env:NAME`, `file:PATH` or a literal. No token: the admin API is off.
    pub token: Option<String>,
    /// How long a dashboard session lasts after signing in.
    pub session_lifetime: Option<String>,
    /// `[admin.tls]`: its own certificate; `[server.tls]` otherwise.
    pub tls: Option<RawTls>,
    /// Serve a non-loopback admin address without TLS.
    pub allow_plaintext: Option<bool>,
}

/// One `[[proxy]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProxy {
    /// Path prefix served, e.g. `/api`; stripped before forwarding.
    pub prefix: String,
    /// Base URL of the API behind it.
    pub upstream: String,
    /// Total timeout of one upstream request.
    pub timeout: Option<String>,
    /// Methods the `Idempotency-Key` applies to.
    pub methods: Option<Vec<String>>,
    /// Refuse requests of those methods without a key.
    pub require_key: Option<bool>,
    /// In-flight lock.
    pub lock: Option<String>,
    /// How long a stored response is replayed.
    pub retention: Option<String>,
    /// Largest request body, in bytes.
    pub max_body: Option<usize>,
    /// How long a client may take to send its body; `[server] body_timeout` by default.
    pub body_timeout: Option<String>,
    /// Largest response body stored for replay, in bytes.
    pub max_stored_body: Option<usize>,
    /// Response headers stored and replayed.
    pub stored_headers: Option<Vec<String>>,
    /// Store 4xx answers instead of releasing the key.
    pub store_client_errors: Option<bool>,
    /// `refuse` (503) or `pass-through` when the store is unavailable.
    pub when_unavailable: Option<String>,
    /// Header whose SHA-256 scopes keys to a caller.
    pub scope_header: Option<String>,
}

/// `[worker]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorker {
    /// Run the worker inside `idemgate serve`.
    pub enabled: Option<bool>,
    /// How long a claim holds a job.
    pub lease: Option<String>,
    /// Most jobs claimed at once.
    pub batch: Option<usize>,
    /// Pause between polls when nothing is due.
    pub poll_interval: Option<String>,
}

/// `[server]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    /// Listen address, `HOST:PORT`.
    pub listen: Option<String>,
    /// How long a client may take to send its request head.
    pub header_timeout: Option<String>,
    /// How long a client may take to send its body.
    pub body_timeout: Option<String>,
    /// How long in-flight requests may take to finish at shutdown.
    pub shutdown_grace: Option<String>,
    /// `[server.tls]`.
    pub tls: Option<RawTls>,
}

/// `[server.tls]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTls {
    /// PEM certificate chain file.
    pub cert: String,
    /// PEM private key file.
    pub key: String,
}

/// `[store]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStore {
    /// SQLite file.
    pub path: Option<String>,
    /// PostgreSQL instead of SQLite: a `postgres://` URL, `env:NAME` or `file:PATH`.
    pub url: Option<String>,
    /// Most PostgreSQL connections this instance opens.
    pub pool_size: Option<usize>,
    /// How long an operation waits for a PostgreSQL connection.
    pub pool_wait: Option<String>,
    /// How long a write waits for a lock held elsewhere.
    pub busy_timeout: Option<String>,
    /// How often `serve` purges what retention allows to forget.
    pub purge_interval: Option<String>,
}

/// `[sources.<id>]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSource {
    /// The route segment, `POST /in/<route>`; defaults to the id.
    pub route: Option<String>,
    /// Signature scheme name.
    pub scheme: String,
    /// Active secrets: `env:NAME`, `file:PATH` or a literal.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// Timestamp tolerance, for schemes that sign one.
    pub tolerance: Option<String>,
    /// Largest accepted body in bytes.
    pub body_limit: Option<usize>,
    /// Deepest JSON nesting accepted.
    pub max_depth: Option<usize>,
    /// Where the event identity is, if not the scheme's default.
    pub identity: Option<RawIdentity>,
    /// Whether byte-identical bodies are one event; default: when the identity is not
    /// covered by the signature.
    pub dedupe_body: Option<bool>,
    /// JSON pointer to the event type.
    pub event_type: Option<String>,
    /// Event types accepted; absent = all.
    pub allowed_types: Option<Vec<String>>,
    /// Names of the destinations each event is forwarded to.
    #[serde(default)]
    pub destinations: Vec<String>,
    /// How long receipts are kept (at least as long as the source can redeliver).
    pub retention: Option<String>,
    /// How long payloads of finished events are kept (may be shorter).
    pub payload_retention: Option<String>,
    /// Original request headers passed on to destinations.
    #[serde(default)]
    pub forward_headers: Vec<String>,
    /// The ordering guard: JSON pointers to the ordering key and the version.
    pub ordering: Option<RawOrdering>,
}

/// `ordering = { key = "/data/id", version = "/data/version" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOrdering {
    /// JSON pointer to the ordering key (a string or an integer).
    pub key: String,
    /// JSON pointer to the version (an integer, or a string compared lexicographically).
    pub version: String,
}

/// `identity = { header = "..." }` or `identity = { pointer = "/..." }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIdentity {
    /// A request header.
    pub header: Option<String>,
    /// A JSON pointer into the body.
    pub pointer: Option<String>,
}

/// `[destinations.<name>]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDestination {
    /// Where events are forwarded.
    pub url: String,
    /// Secret for the outgoing Standard Webhooks signature: `env:`, `file:` or a literal.
    pub secret: Option<String>,
    /// Total timeout of one attempt.
    pub timeout: Option<String>,
    /// Timeout for establishing the connection.
    pub connect_timeout: Option<String>,
    /// Delays between attempts, e.g. `["5s", "5m", "30m"]`.
    pub retry_schedule: Option<Vec<String>>,
    /// Spread of each delay, 0.0 to 1.0.
    pub jitter: Option<f64>,
    /// Longest `Retry-After` honoured.
    pub retry_after_cap: Option<String>,
    /// Retry 4xx answers other than 408, 410 and 429 too.
    pub retry_client_errors: Option<bool>,
    /// Deliver the events of one ordering key strictly one after the other.
    pub fifo: Option<bool>,
}

/// Parses the TOML text, overlays the environment, and deserialises.
pub fn parse(text: &str, env: impl IntoIterator<Item = (String, String)>) -> Result<RawConfig, ConfigError> {
    let mut table: toml::Table = toml::from_str(text).map_err(|err| ConfigError::new("config", toml_message(&err)))?;
    for (name, value) in env {
        apply_override(&mut table, &name, &value)?;
    }
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|err| {
        let key = err.path().to_string();
        ConfigError::new(if key == "." { "config".into() } else { key }, err.into_inner().message().to_owned())
    })
}

/// toml's own errors span several lines; keep the first and the position.
fn toml_message(err: &toml::de::Error) -> String {
    let line = err.message().lines().next().unwrap_or("invalid toml").to_owned();
    match err.span() {
        Some(span) => format!("{line} (at byte {})", span.start),
        None => line,
    }
}

/// `IDEMGATE_SOURCES__STRIPE__TOLERANCE=10m` sets `sources.stripe.tolerance`. Variables
/// without `__` (like `IDEMGATE_LOG`) are not configuration and are skipped.
fn apply_override(table: &mut toml::Table, name: &str, value: &str) -> Result<(), ConfigError> {
    let Some(path) = name.strip_prefix(ENV_PREFIX).filter(|rest| rest.contains("__")) else {
        return Ok(());
    };
    let keys: Vec<String> = path.split("__").map(str::to_ascii_lowercase).collect();
    let (last, parents) = keys.split_last().ok_or_else(|| ConfigError::new(name, "empty key"))?;
    let mut node = table;
    for key in parents {
        let entry = node.entry(key.clone()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        node = entry.as_table_mut().ok_or_else(|| ConfigError::new(name, format!("{key} is not a table")))?;
    }
    node.insert(last.clone(), env_value(value));
    Ok(())
}

/// A TOML literal if the value is one (`30`, `true`, `["a","b"]`), else a plain string.
fn env_value(value: &str) -> toml::Value {
    toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_owned()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn environment_overrides_nested_keys_and_keeps_types() {
        let raw = parse(
            "[server]\nlisten = \"127.0.0.1:1\"\n[sources.a]\nscheme = \"github\"\n",
            env(&[
                ("IDEMGATE_SERVER__LISTEN", "127.0.0.1:2"),
                ("IDEMGATE_SOURCES__A__BODY_LIMIT", "100"),
                ("IDEMGATE_SOURCES__A__SECRETS", r#"["env:X", "env:Y"]"#),
                ("IDEMGATE_LOG", "debug"),
                ("OTHER__THING", "x"),
            ]),
        )
        .unwrap();
        assert_eq!(raw.server.listen.as_deref(), Some("127.0.0.1:2"));
        assert_eq!(raw.sources["a"].body_limit, Some(100));
        assert_eq!(raw.sources["a"].secrets, ["env:X", "env:Y"]);
    }

    #[test]
    fn an_unknown_key_is_named_with_its_path() {
        let err = parse("[sources.a]\nscheme = \"github\"\nsecrte = []\n", env(&[])).unwrap_err();
        assert_eq!(err.key, "sources.a.secrte");

        assert!(err.message.contains("unknown field `secrte`"), "{err}");
    }

    #[test]
    fn a_wrong_type_is_named_with_its_path() {
        let err = parse("[sources.a]\nscheme = \"github\"\nbody_limit = \"big\"\n", env(&[])).unwrap_err();
        assert_eq!(err.key, "sources.a.body_limit");
    }

    #[test]
    fn broken_toml_is_one_line() {
        let err = parse("[server\nlisten = 1", env(&[])).unwrap_err();
        assert_eq!(err.key, "config");
        assert_eq!(err.to_string().lines().count(), 1, "{err}");
    }
}
