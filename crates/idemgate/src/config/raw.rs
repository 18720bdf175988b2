//! The configuration as written: TOML plus environment overrides, deserialised with
//! unknown keys refused and the path of the offending key kept for the error. An error
//! about a key that only an override gave names the variable, not a key of the file.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{ConfigError, origin::Origins, syntax};

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
    /// `[api]`: the outbound API on `/api/v1`.
    pub api: Option<RawApi>,
    /// `[[proxy]]`: idempotency in front of HTTP APIs.
    #[serde(default)]
    pub proxy: Vec<RawProxy>,
    /// `[metrics]`.
    #[serde(default)]
    pub metrics: RawMetrics,
    /// `[alerts]`: signed webhooks about the queue's health.
    pub alerts: Option<RawAlerts>,
    /// `[traces]`: OpenTelemetry spans exported over OTLP/HTTP.
    pub traces: Option<RawTraces>,
    /// `[smtp.<name>]`: SMTP submission listeners.
    #[serde(default)]
    pub smtp: BTreeMap<String, RawSmtp>,
    /// `[retention]`: how long what is not a source's is kept.
    #[serde(default)]
    pub retention: RawRetention,
    /// What the file said and which keys the environment set, for each value's origin.
    #[serde(skip)]
    pub origins: Origins,
}

/// `[admin]`: the admin API and its token.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAdmin {
    /// Listen address, `HOST:PORT`.
    pub listen: Option<String>,
    /// Bearer token: `env:NAME`, `file:PATH` or a literal; the token named `admin`, role
    /// `operate`. No token here or in `tokens`: the admin API is off.
    pub token: Option<String>,
    /// `[admin.tokens.<name>]`: named tokens, each with its role.
    #[serde(default)]
    pub tokens: BTreeMap<String, RawAdminToken>,
    /// How long a dashboard session lasts unused.
    pub session_lifetime: Option<String>,
    /// `[admin.tls]`: its own certificate; `[server.tls]` otherwise.
    pub tls: Option<RawTls>,
    /// Serve a non-loopback admin address without TLS.
    pub allow_plaintext: Option<bool>,
}

/// `[admin.tokens.<name>]`: one named admin token.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAdminToken {
    /// `env:NAME`, `file:PATH` or a literal.
    pub token: String,
    /// `read` or `operate`; `read` when absent.
    pub role: Option<String>,
}

/// `[api]`: the outbound API (Svix-compatible) on `/api/v1` of the public listener.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawApi {
    /// Serve it; off unless `true`.
    pub enabled: Option<bool>,
    /// `[api.tokens.<name>]`: its bearer tokens, each with its role.
    #[serde(default)]
    pub tokens: BTreeMap<String, RawApiToken>,
    /// The key sealing endpoint secrets: `env:NAME` or `file:PATH` (32 bytes, hex or base64).
    pub secrets_key: Option<String>,
    /// Accept plain `http` endpoint URLs.
    pub allow_http: Option<bool>,
    /// Networks endpoints may reach although they are not public, as CIDRs.
    #[serde(default)]
    pub allow_networks: Vec<String>,
    /// The base URL of the links the API hands out.
    pub public_url: Option<String>,
    /// One metrics label value per endpoint (its id) instead of one for all (`api`).
    pub metrics_per_endpoint: Option<bool>,
    /// `[api.portal]`: the customer portal's branding and framing.
    pub portal: Option<RawPortal>,
}

/// `[api.portal]`: how the customer portal looks and who may frame it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPortal {
    /// The provider's name, in every page's header and title.
    pub name: Option<String>,
    /// An `https` URL of the provider's logo.
    pub logo_url: Option<String>,
    /// The accent colour, `#rrggbb`.
    pub accent: Option<String>,
    /// The origins that may show the portal in an iframe.
    #[serde(default)]
    pub frame_ancestors: Vec<String>,
}

/// `[api.tokens.<name>]`: one API token.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawApiToken {
    /// `env:NAME`, `file:PATH` or a literal.
    pub token: String,
    /// `admin`, `publish` or `read`; `read` when absent.
    pub role: Option<String>,
}

/// `[retention]`: what is kept apart from the sources' receipts and payloads.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRetention {
    /// How long the audit log's records are kept.
    pub audit: Option<String>,
}

/// `[alerts]`: which conditions of the queue are sent, to which destination, how often.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAlerts {
    /// The `[destinations.*]` alerts go to.
    pub destination: String,
    /// Alert when jobs of a destination go dead.
    pub dead_jobs: Option<bool>,
    /// Alert when a destination is disabled (410).
    pub destination_disabled: Option<bool>,
    /// Alert when a destination's circuit breaker pauses it.
    pub destination_paused: Option<bool>,
    /// Alert when the oldest waiting job is older than this; off when absent.
    pub oldest_waiting: Option<String>,
    /// How often the conditions are read from the store.
    pub check_interval: Option<String>,
    /// At most one alert per condition and target within this.
    pub min_interval: Option<String>,
}

/// `[metrics]`: where `/metrics` is served.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetrics {
    /// `"public"`, `"admin"` or `HOST:PORT`.
    pub listen: Option<String>,
    /// How often the queue's gauges are read from the store.
    pub refresh_interval: Option<String>,
}

/// `[traces]`: where spans are exported.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTraces {
    /// The collector's OTLP/HTTP traces URL.
    pub endpoint: Option<String>,
    /// The `service.name` of the spans.
    pub service_name: Option<String>,
    /// The share of new traces kept, 0 to 1.
    pub sample_ratio: Option<f64>,
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
    /// Bytes of completed records kept in memory to answer repeats without a read.
    pub replay_cache: Option<usize>,
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
    /// Most attempts in flight at once, over every destination.
    pub max_in_flight: Option<usize>,
    /// Most attempts in flight at once to a destination without its own `max_in_flight`.
    pub destination_max_in_flight: Option<usize>,
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
    /// Where `serve` and `worker` write their process id (for `idemgate reload`).
    pub pid_file: Option<String>,
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
    /// `[sources.<id>.hmac]`: what `scheme = "hmac"` signs and how.
    pub hmac: Option<RawHmac>,
    /// `[sources.<id>.rsa]`: what `scheme = "rsa"` verifies and how.
    pub rsa: Option<RawRsa>,
    /// `[sources.<id>.token]`: where `scheme = "token"` reads the token.
    pub token: Option<RawToken>,
    /// How the body is read once verified: `"json"` or `"form"` (default: the catalog
    /// provider's, else JSON).
    pub body: Option<String>,
    /// The URL the provider signs, as registered with it (schemes that sign the URL).
    pub signed_url: Option<String>,
    /// JSON pointers to fields a retry changes, left out of the fingerprint (default: the
    /// catalog provider's, else none).
    pub per_attempt: Option<Vec<String>>,
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
    /// Request header holding the event type (`X-GitHub-Event`), read before `event_type`.
    pub event_type_header: Option<String>,
    /// Event types accepted; absent = all.
    pub allowed_types: Option<Vec<String>>,
    /// The destinations each event may be forwarded to: a name (every event), or a table
    /// with the name and the events it subscribes to.
    #[serde(default)]
    pub destinations: Vec<RawSubscription>,
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

/// `[sources.<id>.hmac]`: a configured HMAC scheme.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHmac {
    /// `sha1`, `sha256` or `sha512`.
    pub algorithm: String,
    /// `hex` or `base64`.
    pub encoding: String,
    /// The header carrying the signature.
    pub header: String,
    /// Text before the encoded signature, required when given.
    pub prefix: Option<String>,
    /// The template of what is signed: `{body}`, `{timestamp}`, `{header:Name}`, text.
    pub signed: String,
    /// The header `{timestamp}` comes from (decimal Unix seconds).
    pub timestamp_header: Option<String>,
    /// `s` (default) or `ms`.
    pub timestamp_unit: Option<String>,
    /// How the secret's text becomes the key: `utf8` (default), `base64`, `hex`, `whsec`.
    pub key: Option<String>,
    /// The header is `key=value` pairs: `{ separator = ",", timestamp = "t", signature = "v1" }`.
    pub pairs: Option<RawPairs>,
}

/// `pairs` of `[sources.<id>.hmac]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPairs {
    /// `,`, `;` or a space.
    pub separator: char,
    /// The key the timestamp is under, if the header carries it.
    pub timestamp: Option<String>,
    /// The key each signature is under.
    pub signature: String,
}

/// `[sources.<id>.rsa]`: an RSA signature under the provider's published public key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRsa {
    /// `sha256` or `sha512` (PKCS #1 v1.5).
    pub algorithm: String,
    /// `hex` or `base64`.
    pub encoding: String,
    /// The header carrying the signature.
    pub header: String,
    /// Text before the encoded signature, required when given.
    pub prefix: Option<String>,
    /// The template of what is signed: `{body}`, `{timestamp}`, `{header:Name}`, `{url}`, text.
    pub signed: String,
    /// The header `{timestamp}` comes from (decimal Unix seconds).
    pub timestamp_header: Option<String>,
}

/// `[sources.<id>.token]`: a shared token in a header.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawToken {
    /// The header carrying the token.
    pub header: String,
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

/// One entry of a source's `destinations`: `"app"`, or
/// `{ name = "billing", types = ["invoice.*"], filter = '.data.amount > 100' }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSubscription {
    /// The destination's name.
    pub name: String,
    /// Event-type patterns; absent = every event.
    pub types: Option<Vec<String>>,
    /// A jq expression on the body; absent = every event.
    pub filter: Option<String>,
}

/// The table form of a [`RawSubscription`], with unknown keys refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSubscriptionTable {
    name: String,
    types: Option<Vec<String>>,
    filter: Option<String>,
}

impl<'de> Deserialize<'de> for RawSubscription {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = RawSubscription;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a destination name, or a table { name = \"…\", types = [\"…\"], filter = \"…\" }")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<RawSubscription, E> {
                Ok(RawSubscription { name: name.to_owned(), types: None, filter: None })
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawSubscription, A::Error> {
                let table = RawSubscriptionTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(RawSubscription { name: table.name, types: table.types, filter: table.filter })
            }
        }
        deserializer.deserialize_any(Entry)
    }
}

/// `[smtp.<name>]`: an SMTP submission listener.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSmtp {
    /// Listen address, `HOST:PORT`.
    pub listen: String,
    /// The `smtp` destinations each message is relayed to.
    #[serde(default)]
    pub destinations: Vec<String>,
    /// The name in the greeting and the `EHLO` answer.
    pub hostname: Option<String>,
    /// Largest message accepted, in bytes (`SIZE`).
    pub max_message_size: Option<usize>,
    /// The header carrying the idempotency key.
    pub key_header: Option<String>,
    /// Refuse messages without a key.
    pub require_key: Option<bool>,
    /// Header fields left out of the fingerprint.
    pub fingerprint_exclude_headers: Option<Vec<String>>,
    /// How long receipts (and so the keys) are kept.
    pub retention: Option<String>,
    /// How long one read from the client may wait.
    pub timeout: Option<String>,
    /// User name → password (`env:NAME`, `file:PATH` or a literal).
    #[serde(default)]
    pub users: BTreeMap<String, String>,
    /// Submission without AUTH; only on a loopback address.
    pub allow_unauthenticated: Option<bool>,
    /// `[smtp.<name>.tls]`: its own certificate; `[server.tls]` otherwise.
    pub tls: Option<RawTls>,
    /// TLS from the first byte (SMTPS) instead of `STARTTLS`.
    pub implicit_tls: Option<bool>,
}

/// `[destinations.<name>]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDestination {
    /// What the destination is: `"http"` (the default), `"rabbitmq"`, `"nats"` or `"smtp"`.
    pub kind: Option<String>,
    /// Where events are forwarded.
    pub url: String,
    /// RabbitMQ: the exchange published to (`""`, the default exchange, if not given).
    pub exchange: Option<String>,
    /// RabbitMQ: the routing key of every message.
    pub routing_key: Option<String>,
    /// NATS JetStream: the subject published to.
    pub subject: Option<String>,
    /// `smtp`: `required` (the default), `opportunistic` or `never`.
    pub starttls: Option<String>,
    /// `smtp`: the user name for AUTH at the smarthost.
    pub username: Option<String>,
    /// `smtp`: the password: `env:`, `file:` or a literal.
    pub password: Option<String>,
    /// `smtp`: relay the key header too.
    pub keep_key_header: Option<bool>,
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
    /// A jq expression whose one output, as compact JSON, is the body this destination gets.
    pub transform: Option<String>,
    /// Most attempts started per second (this worker's), on average.
    pub rate_limit: Option<f64>,
    /// Attempts that may start at once under `rate_limit`.
    pub burst: Option<u32>,
    /// Most attempts in flight at once (this worker's).
    pub max_in_flight: Option<usize>,
    /// `[destinations.<name>.breaker]`: pause a destination that keeps failing.
    pub breaker: Option<RawBreaker>,
}

/// `[destinations.<name>.breaker]`: when a failing destination is paused, and how often it
/// is probed while paused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBreaker {
    /// Pause after this many consecutive failed attempts.
    pub pause_after_failures: Option<u32>,
    /// Pause once attempts have failed without a break for this long.
    pub pause_after: Option<String>,
    /// While paused, one probe attempt per this interval.
    pub probe_interval: Option<String>,
}

/// The keys whose values are secrets or references to them (`*` is any table name). An
/// environment override of one stays a string, and an error about one never shows its value.
const SECRET_KEYS: [&[&str]; 9] = [
    &["admin", "token"],
    &["admin", "tokens", "*", "token"],
    &["api", "tokens", "*", "token"],
    &["api", "secrets_key"],
    &["store", "url"],
    &["sources", "*", "secrets"],
    &["destinations", "*", "secret"],
    &["destinations", "*", "password"],
    &["smtp", "*", "users", "*"],
];

/// What an error about a secret key says instead of the deserialiser's message, which
/// would quote the value.
const SECRET_TYPE_MESSAGE: &str =
    "must be a string (env:NAME, file:PATH or a literal in quotes); the value given is not shown";

pub(super) fn is_secret_key(keys: &[&str]) -> bool {
    SECRET_KEYS.iter().any(|secret| {
        secret.len() == keys.len() && secret.iter().zip(keys).all(|(pattern, key)| *pattern == "*" || pattern == key)
    })
}

/// Parses the TOML text, overlays the environment, and deserialises.
pub fn parse(text: &str, env: impl IntoIterator<Item = (String, String)>) -> Result<RawConfig, ConfigError> {
    parse_file("config", text, env)
}

/// [`parse`] of the text of `file`, which a syntax error names with its line and column.
pub fn parse_file(
    file: &str,
    text: &str,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<RawConfig, ConfigError> {
    let mut table: toml::Table = toml::from_str(text).map_err(|err| syntax::error(file, text, &err))?;
    let mut origins = Origins::new(table.clone());
    for (name, value) in env {
        apply_override(&mut table, &name, &value, &mut origins)?;
    }
    switch_store(&mut table, &origins);
    let mut raw: RawConfig =
        serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|err| deserialise_error(&err, &origins))?;
    raw.origins = origins;
    Ok(raw)
}

/// An override of one store kind replaces the other kind the file gives:
/// `IDEMGATE_STORE__URL` on a file with `store.path` means PostgreSQL instead of SQLite.
/// Both kinds from the environment stay an error.
fn switch_store(table: &mut toml::Table, overrides: &Origins) {
    for (set, other) in [("url", "path"), ("path", "url")] {
        if overrides.sets(&["store", set])
            && !overrides.sets(&["store", other])
            && let Some(store) = table.get_mut("store").and_then(toml::Value::as_table_mut)
        {
            store.remove(other);
        }
    }
}

/// The deserialiser's error, located by its key, or by the variable when an override
/// gave that key (or created the table it is in) and the file did not.
fn deserialise_error(err: &serde_path_to_error::Error<toml::de::Error>, origins: &Origins) -> ConfigError {
    let key = err.path().to_string();
    let segments: Vec<Option<&str>> = err
        .path()
        .iter()
        .map(|segment| match segment {
            serde_path_to_error::Segment::Map { key } => Some(key.as_str()),
            _ => None,
        })
        .collect();
    let tables: Vec<&str> = segments.iter().flatten().copied().collect();
    let message = err.inner().message();
    let message = if is_secret_key(&tables) { SECRET_TYPE_MESSAGE } else { message };
    let only_tables = segments.len() == tables.len() && !tables.is_empty();
    if let Some((variable, set)) = origins.creator(&tables).filter(|_| only_tables)
        && (set == key || !origins.in_file(&tables))
    {
        let message = match message.strip_prefix("unknown field ") {
            Some(rest) => match rest.split_once(", ") {
                Some((_, expected)) => format!("no key {set} ({expected})"),
                None => format!("no key {set}"),
            },
            None => format!("{key}: {message}"),
        };
        return ConfigError::new(variable, message);
    }
    ConfigError::new(if key == "." { "config".into() } else { key }, message)
}

/// `IDEMGATE_SOURCES__STRIPE__TOLERANCE=10m` sets `sources.stripe.tolerance`. Variables
/// without `__` (like `IDEMGATE_LOG`) are not configuration and are skipped.
fn apply_override(
    table: &mut toml::Table,
    name: &str,
    value: &str,
    overrides: &mut Origins,
) -> Result<(), ConfigError> {
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
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let value = match keys.as_slice() {
        ["sources", _, "secrets"] => secret_list(value),
        secret if is_secret_key(secret) => toml::Value::String(value.to_owned()),
        _ => env_value(value),
    };
    node.insert(last.clone(), value);
    overrides.push(keys.iter().map(|key| (*key).to_owned()).collect(), name);
    Ok(())
}

/// A source's secrets from one variable: a TOML list of strings (`["env:A", "env:B"]`),
/// or else the whole value as the one secret, never coerced to a number or a date.
fn secret_list(value: &str) -> toml::Value {
    match env_value(value) {
        toml::Value::Array(items) if items.iter().all(toml::Value::is_str) => toml::Value::Array(items),
        _ => toml::Value::Array(vec![toml::Value::String(value.to_owned())]),
    }
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
    fn a_destination_entry_is_a_name_or_a_subscription_table() {
        let raw = parse(
            "[sources.a]\nscheme = \"github\"\ndestinations = [\"app\", { name = \"b\", types = [\"x.*\"], filter = \".n > 1\" }]\n",
            env(&[]),
        )
        .unwrap();
        let entries = &raw.sources["a"].destinations;
        assert_eq!(entries[0], RawSubscription { name: "app".into(), types: None, filter: None });
        assert_eq!(entries[1].types.as_deref(), Some(&["x.*".to_owned()][..]));
        assert_eq!(entries[1].filter.as_deref(), Some(".n > 1"));

        let err = parse("[sources.a]\nscheme = \"github\"\ndestinations = [{ name = \"b\", typs = [] }]\n", env(&[]))
            .unwrap_err();
        assert_eq!(err.key, "sources.a.destinations[0].typs", "{err}");
        let err = parse("[sources.a]\nscheme = \"github\"\ndestinations = [1]\n", env(&[])).unwrap_err();
        assert_eq!(err.key, "sources.a.destinations[0]", "{err}");
        assert!(err.message.contains("a destination name, or a table"), "{err}");
        let raw = parse(
            "[sources.a]\nscheme = \"github\"\n",
            env(&[("IDEMGATE_SOURCES__A__DESTINATIONS", r#"["app", { name = "b", types = ["x"] }]"#)]),
        )
        .unwrap();
        assert_eq!(raw.sources["a"].destinations[1].name, "b", "an override takes both forms");
    }

    #[test]
    fn a_wrong_type_is_named_with_its_path() {
        let err = parse("[sources.a]\nscheme = \"github\"\nbody_limit = \"big\"\n", env(&[])).unwrap_err();
        assert_eq!(err.key, "sources.a.body_limit");
    }

    #[test]
    fn an_override_of_one_store_kind_replaces_the_other_from_the_file() {
        let file = "[store]\npath = \"data/x.sqlite3\"\nbusy_timeout = \"1s\"\n";
        let raw = parse(file, env(&[("IDEMGATE_STORE__URL", "env:DB")])).unwrap();
        assert_eq!((raw.store.url.as_deref(), raw.store.path), (Some("env:DB"), None));
        assert_eq!(raw.store.busy_timeout.as_deref(), Some("1s"), "the other keys stay");

        let raw = parse("[store]\nurl = \"env:DB\"\n", env(&[("IDEMGATE_STORE__PATH", "y.sqlite3")])).unwrap();
        assert_eq!((raw.store.url, raw.store.path.as_deref()), (None, Some("y.sqlite3")));

        let both = env(&[("IDEMGATE_STORE__PATH", "y.sqlite3"), ("IDEMGATE_STORE__URL", "env:DB")]);
        let raw = parse(file, both).unwrap();
        assert!(raw.store.url.is_some() && raw.store.path.is_some(), "both from the environment stay both");
        let raw = parse("[store]\npath = \"a\"\nurl = \"env:DB\"\n", env(&[])).unwrap();
        assert!(raw.store.url.is_some() && raw.store.path.is_some(), "both in the file stay both");
    }

    #[test]
    fn a_key_only_an_override_gives_is_named_by_its_variable() {
        let file = "[server]\nlisten = \"127.0.0.1:1\"\n[sources.a]\nscheme = \"github\"\n";
        let err = parse(file, env(&[("IDEMGATE_SERVER__LISTN", "127.0.0.1:2")])).unwrap_err();
        assert_eq!(err.key, "IDEMGATE_SERVER__LISTN");
        assert!(err.message.starts_with("no key server.listn (expected one of `listen`"), "{err}");

        let err = parse(file, env(&[("IDEMGATE_SERVR__LISTEN", "x")])).unwrap_err();
        assert_eq!(err.to_string().split(" (").next(), Some("IDEMGATE_SERVR__LISTEN: no key servr.listen"));

        let err = parse(file, env(&[("IDEMGATE_SOURCES__B__BODY_LIMIT", "5")])).unwrap_err();
        assert_eq!(err.to_string(), "IDEMGATE_SOURCES__B__BODY_LIMIT: sources.b: missing field `scheme`");

        let err = parse(file, env(&[("IDEMGATE_SOURCES__A__BODY_LIMIT", "big")])).unwrap_err();
        assert_eq!(err.key, "IDEMGATE_SOURCES__A__BODY_LIMIT");
        assert!(err.message.starts_with("sources.a.body_limit: invalid type"), "{err}");

        let err = parse(&format!("{file}body_limit = \"big\"\n"), env(&[("IDEMGATE_SOURCES__A__MAX_DEPTH", "3")]))
            .unwrap_err();
        assert_eq!(err.key, "sources.a.body_limit", "a file key's error names the key");
    }

    #[test]
    fn broken_toml_is_located_and_shown() {
        let err = parse("[server\nlisten = 1", env(&[])).unwrap_err();
        assert_eq!(err.key, "config:1:8");
        assert_eq!(err.to_string().lines().nth(1), Some(" 1 | [server"), "{err}");
    }

    /// Values a TOML parser would turn into numbers, dates, booleans, lists or tables.
    const ODD_SECRETS: [&str; 9] = [
        "123456789012345678",
        "12345678901234567890123456789",
        "0x1234567890abcdef",
        "1979-05-27T07:32:00Z",
        "1_234_567_890_123",
        "6.02e23",
        "true",
        "[1234567890, 1234567890]",
        "{ a = 1234567890 }",
    ];

    const SOURCE_AND_DESTINATION: &str =
        "[sources.a]\nscheme = \"github\"\n[destinations.d]\nurl = \"http://127.0.0.1:1/\"\n";

    #[test]
    fn environment_values_of_secret_keys_stay_strings() {
        for value in ODD_SECRETS {
            let raw = parse(
                SOURCE_AND_DESTINATION,
                env(&[
                    ("IDEMGATE_ADMIN__TOKEN", value),
                    ("IDEMGATE_STORE__URL", value),
                    ("IDEMGATE_SOURCES__A__SECRETS", value),
                    ("IDEMGATE_DESTINATIONS__D__SECRET", value),
                ]),
            )
            .unwrap_or_else(|err| panic!("{value}: {err}"));
            assert_eq!(raw.admin.unwrap().token.as_deref(), Some(value));
            assert_eq!(raw.store.url.as_deref(), Some(value));
            assert_eq!(raw.sources["a"].secrets, [value]);
            assert_eq!(raw.destinations["d"].secret.as_deref(), Some(value));
        }
    }

    #[test]
    fn a_secret_of_another_type_in_the_file_is_named_but_not_shown() {
        for value in ODD_SECRETS {
            let files = [
                format!("[admin]\ntoken = {value}\n{SOURCE_AND_DESTINATION}"),
                format!("[store]\nurl = {value}\n{SOURCE_AND_DESTINATION}"),
                format!("[sources.a]\nscheme = \"github\"\nsecrets = {value}\n"),
                format!("[sources.a]\nscheme = \"github\"\nsecrets = [\"ok\", {value}]\n"),
                format!("[destinations.d]\nurl = \"http://127.0.0.1:1/\"\nsecret = {value}\n"),
            ];
            for text in files {
                // A TOML date reads as its text: that configuration is simply accepted.
                let Err(err) = parse(&text, env(&[])) else { continue };
                assert!(!err.to_string().contains(value), "{err}");
                for part in value.split(|c: char| !c.is_ascii_alphanumeric()).filter(|p| p.len() >= 4) {
                    assert!(!err.to_string().contains(part), "{err}");
                }
                // "config": the TOML itself does not parse (a number too large for any type).
                assert!(
                    ["admin.token", "store.url", "sources.a.secrets", "destinations.d.secret", "config"]
                        .iter()
                        .any(|key| err.key.starts_with(key)),
                    "{err}"
                );
            }
        }
    }
}
