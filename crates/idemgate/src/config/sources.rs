//! `[sources.<id>]`: where deliveries arrive, how they are verified and what they become.
//! Every source is validated; its secrets are resolved and decoded by its scheme only for
//! a command that verifies its deliveries (`serve`, or `verify` for that one source).

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::Duration,
};

use idemgate_core::{
    Scheme, SecretSet, SourceName, catalog,
    comparison::FieldPointer,
    form::BodyFormat,
    json::Limits,
    routing::TypePattern,
    scheme::{
        self, BasicAuth, GenericHmac, IdentityLocation, SharedToken,
        generic::{self, Algorithm, Encoding, HmacSettings, KeyEncoding, PairsSettings, SettingError, TimestampUnit},
        rsa::{self, ConfiguredRsa, RsaHash, RsaSettings},
    },
};
use idemgate_http::gateway::Subscription;
use idemgate_jq::Program;
use idemgate_store::maintenance::Retention;

use super::{
    ConfigError, ConfigWarning,
    effective::{self, Shown},
    raw::{RawHmac, RawIdentity, RawRsa, RawSource, RawSubscription, RawToken},
    reading::{Reading, Verifies},
};

const DEFAULT_BODY_LIMIT: usize = 256 * 1024;
/// Receipts outlive every provider's redelivery window by a wide margin: Stripe retries for
/// up to 3 days, Svix/Standard Webhooks' schedule spans about 28 hours, GitHub redelivers
/// on request for 3 days.
const DEFAULT_RETENTION: Duration = Duration::from_secs(30 * 86_400);

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
    /// How bodies are read into the JSON view (`body = "json"` or `"form"`).
    pub body: BodyFormat,
    /// The fields a retry changes, left out of the fingerprint (the comparison form).
    pub per_attempt: Vec<FieldPointer>,
    /// Where the stable event identity is.
    pub identity: IdentityLocation,
    /// Whether the same body bytes under another identity are a duplicate of the first.
    pub dedupe_body: bool,
    /// JSON pointer to the event type.
    pub event_type: Option<String>,
    /// Request header holding the event type, read before the body.
    pub event_type_header: Option<http::HeaderName>,
    /// Accepted event types; `None` accepts all.
    pub allowed_types: Option<BTreeSet<String>>,
    /// The destinations and the events each subscribes to.
    pub destinations: Vec<Subscription>,
    /// How long receipts are kept.
    pub retention: Duration,
    /// How long payloads of finished events are kept.
    pub payload_retention: Duration,
    /// Original headers passed on to destinations (lowercase names).
    pub forward_headers: Vec<http::HeaderName>,
    /// The ordering guard, if configured.
    pub ordering: Option<OrderingConfig>,
}

/// The ordering guard of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderingConfig {
    /// JSON pointer to the ordering key.
    pub key: String,
    /// JSON pointer to the version.
    pub version: String,
}

/// Every source validated: its retention, and the source itself with its secrets when
/// the command verifies its deliveries.
pub(super) struct Sources {
    pub(super) retention: Vec<Retention>,
    pub(super) verified: Vec<SourceConfig>,
}

pub(super) fn sources(
    raw: BTreeMap<String, RawSource>,
    destinations: &BTreeSet<String>,
    transformed: &BTreeMap<String, Program>,
    r: &mut Reading<'_>,
    verifies: Verifies<'_>,
) -> Result<Sources, ConfigError> {
    let mut all = Sources { retention: Vec::new(), verified: Vec::new() };
    let mut routes = BTreeSet::new();
    for (id, raw) in raw {
        let verified = match verifies {
            Verifies::All => true,
            Verifies::One(one) => one == id,
            Verifies::None => false,
        };
        let form = raw.body.as_deref() == Some(BodyFormat::Form.name());
        if let Some(entry) = raw.destinations.iter().find(|entry| form && transformed.contains_key(&entry.name)) {
            // A transform runs in the worker on the stored bytes, which for a form are not JSON.
            return Err(ConfigError::new(
                format!("sources.{id}.body"),
                format!(
                    "a form source cannot deliver to a destination with a transform yet ({:?} has one)",
                    entry.name
                ),
            ));
        }
        let (retention, route, source) = source(&id, raw, destinations, r, verified)?;
        if !routes.insert(route.clone()) {
            return Err(ConfigError::new(format!("sources.{id}.route"), format!("route {route:?} is used twice")));
        }
        all.retention.push(retention);
        all.verified.extend(source);
    }
    Ok(all)
}

/// One source's retention and route, and the source itself when `verified`.
fn source(
    id: &str,
    raw: RawSource,
    destinations: &BTreeSet<String>,
    r: &mut Reading<'_>,
    verified: bool,
) -> Result<(Retention, String, Option<SourceConfig>), ConfigError> {
    let key = format!("sources.{id}");
    if id == idemgate_core::alert::ALERT_SOURCE {
        return Err(ConfigError::new(&key, "this source id is reserved for the gateway's own alerts ([alerts])"));
    }
    let name = SourceName::new(id).map_err(|err| ConfigError::new(&key, err.to_string()))?;
    let route = r.value(&format!("{key}.route"), raw.route, id.to_owned());
    if SourceName::new(route.as_str()).is_err() {
        return Err(ConfigError::new(format!("{key}.route"), "must match [a-z0-9][a-z0-9_-]{0,62}"));
    }
    r.show(&format!("{key}.scheme"), Shown::Value(raw.scheme.clone().into()));
    let tolerance = match raw.tolerance.as_deref() {
        Some(text) => Some(r.duration(&format!("{key}.tolerance"), Some(text), Duration::ZERO)?.as_secs()),
        None => {
            r.show(&format!("{key}.tolerance"), Shown::Note("(the scheme's own)"));
            None
        }
    };
    let tables = SchemeTables { hmac: raw.hmac.as_ref(), rsa: raw.rsa.as_ref(), token: raw.token.as_ref() };
    let scheme = source_scheme(&key, &raw.scheme, tables, tolerance, r)?;
    let scheme = signed_url(&key, scheme, raw.signed_url, r)?;
    let provider = catalog::find(&raw.scheme);
    let body = match raw.body.as_deref() {
        None => provider.map_or(BodyFormat::Json, |p| p.body),
        Some(name) => BodyFormat::from_name(name)
            .ok_or_else(|| ConfigError::new(format!("{key}.body"), "must be \"json\" or \"form\""))?,
    };
    let per_attempt = per_attempt(&key, raw.per_attempt, provider, body, r)?;
    r.show(&format!("{key}.body"), Shown::Value(body.name().into()));
    let shown = raw.secrets.iter().map(|reference| effective::reference(reference)).collect();
    r.show(&format!("{key}.secrets"), Shown::Value(toml::Value::Array(shown)));
    let body_limit = r.count(&format!("{key}.body_limit"), raw.body_limit, DEFAULT_BODY_LIMIT);
    let max_depth = r.count(&format!("{key}.max_depth"), raw.max_depth, Limits::default().max_depth);
    let configured_identity = raw.identity.is_some();
    if !configured_identity && !scheme.carries_identity() {
        let why = if provider.is_some() {
            "is a provider that sends no stable event identity"
        } else {
            "carries no event identity of its own"
        };
        return Err(ConfigError::new(
            format!("{key}.identity"),
            format!("scheme {:?} {why}: give identity = {{ pointer = \"/…\" }} or {{ header = \"…\" }}", scheme.name()),
        ));
    }
    let identity = identity(&key, raw.identity, scheme.as_ref())?;
    r.show(&format!("{key}.identity"), Shown::Value(shown_identity(&identity)));
    let signed = identity.is_signed_by(scheme.as_ref());
    let dedupe_body = r.value(&format!("{key}.dedupe_body"), raw.dedupe_body, !signed);
    if configured_identity && !signed {
        r.warnings.push(ConfigWarning(format!(
            "{key}.identity: {identity} is not covered by the {} signature, so a captured delivery can be re-sent \
             under another identity; dedupe_body is {}",
            scheme.name(),
            if dedupe_body { "on" } else { "off" },
        )));
    }
    let event_type = match raw.event_type {
        Some(p) => Some(pointer(&format!("{key}.event_type"), p)?),
        None if raw.event_type_header.is_none() => provider.and_then(|p| p.event_type).map(str::to_owned),
        None => None,
    };
    if let Some(event_type) = &event_type {
        r.show(&format!("{key}.event_type"), Shown::Value(event_type.clone().into()));
    }
    match &raw.allowed_types {
        Some(types) => r.show(&format!("{key}.allowed_types"), Shown::Value(types.clone().into())),
        None => r.show(&format!("{key}.allowed_types"), Shown::Note("(all)")),
    }
    let event_type_header = match &raw.event_type_header {
        Some(name) => {
            let header = http::HeaderName::try_from(name.as_str())
                .map_err(|_| ConfigError::new(format!("{key}.event_type_header"), "not a valid header name"))?;
            r.show(&format!("{key}.event_type_header"), Shown::Value(header.as_str().to_owned().into()));
            Some(header)
        }
        None => {
            r.show(&format!("{key}.event_type_header"), Shown::Note("(none: the type is read from the body)"));
            None
        }
    };
    let subscriptions = raw
        .destinations
        .iter()
        .enumerate()
        .map(|(i, entry)| subscription(&format!("{key}.destinations[{i}]"), entry, destinations))
        .collect::<Result<Vec<_>, _>>()?;
    r.show(&format!("{key}.destinations"), Shown::Value(shown_subscriptions(&raw.destinations)));
    let retention = r.duration(&format!("{key}.retention"), raw.retention.as_deref(), DEFAULT_RETENTION)?;
    let payload_retention =
        r.duration(&format!("{key}.payload_retention"), raw.payload_retention.as_deref(), retention)?;
    let forward_headers: Vec<http::HeaderName> =
        raw.forward_headers.iter().enumerate().map(|(i, h)| forward_header(&key, i, h)).collect::<Result<_, _>>()?;
    let shown = forward_headers.iter().map(|name| name.as_str().to_owned()).collect::<Vec<_>>();
    r.show(&format!("{key}.forward_headers"), Shown::Value(shown.into()));
    let ordering = match raw.ordering {
        None => None,
        Some(o) => Some(OrderingConfig {
            key: pointer(&format!("{key}.ordering.key"), o.key)?,
            version: pointer(&format!("{key}.ordering.version"), o.version)?,
        }),
    };
    if let Some(ordering) = &ordering {
        let table = toml::Table::from_iter([
            ("key".to_owned(), toml::Value::String(ordering.key.clone())),
            ("version".to_owned(), toml::Value::String(ordering.version.clone())),
        ]);
        r.show(&format!("{key}.ordering"), Shown::Value(toml::Value::Table(table)));
    }
    let kept = Retention { source: id.to_owned(), receipts: retention, payloads: payload_retention };
    if !verified {
        return Ok((kept, route, None));
    }
    let secrets = source_secrets(&key, &raw.secrets, scheme.as_ref(), r)?;
    let source = SourceConfig {
        id: name,
        route: route.clone(),
        scheme,
        secrets,
        body_limit,
        json_limits: Limits { max_depth },
        body,
        per_attempt,
        identity,
        dedupe_body,
        event_type,
        event_type_header,
        allowed_types: raw.allowed_types.map(|types| types.into_iter().collect()),
        destinations: subscriptions,
        retention,
        payload_retention,
        forward_headers,
        ordering,
    };
    Ok((kept, route, Some(source)))
}

/// The tables of a source that configure its scheme, when given.
#[derive(Clone, Copy)]
struct SchemeTables<'a> {
    hmac: Option<&'a RawHmac>,
    rsa: Option<&'a RawRsa>,
    token: Option<&'a RawToken>,
}

/// The source's scheme: one of the registry's by name, or one configured by its table
/// (`hmac`, `token`, `basic`), shown in the effective view. A table that its scheme does not
/// read is refused rather than ignored.
fn source_scheme(
    key: &str,
    name: &str,
    raw: SchemeTables<'_>,
    tolerance: Option<u64>,
    r: &mut Reading<'_>,
) -> Result<Arc<dyn Scheme>, ConfigError> {
    if raw.hmac.is_some() && name != generic::HMAC {
        return Err(ConfigError::new(format!("{key}.hmac"), "only read when scheme = \"hmac\""));
    }
    if raw.rsa.is_some() && name != rsa::RSA {
        return Err(ConfigError::new(format!("{key}.rsa"), "only read when scheme = \"rsa\""));
    }
    if raw.token.is_some() && name != generic::TOKEN {
        return Err(ConfigError::new(format!("{key}.token"), "only read when scheme = \"token\""));
    }
    let setting = |err: SettingError| ConfigError::new(format!("{key}.{name}.{}", err.setting), err.reason);
    let needs =
        |table: &str| ConfigError::new(format!("{key}.{table}"), format!("scheme = {table:?} needs this table"));
    match name {
        generic::HMAC => {
            let table = raw.hmac.ok_or_else(|| needs(generic::HMAC))?;
            let scheme = GenericHmac::new(&hmac_settings(table).map_err(setting)?).map_err(setting)?;
            r.show(&format!("{key}.hmac"), Shown::Value(shown_hmac(&scheme.settings())));
            Ok(scheme.configured(tolerance))
        }
        rsa::RSA => {
            let table = raw.rsa.ok_or_else(|| needs(rsa::RSA))?;
            let settings = RsaSettings {
                algorithm: RsaHash::from_name(&table.algorithm).map_err(setting)?,
                encoding: Encoding::from_name(&table.encoding).map_err(setting)?,
                header: table.header.clone(),
                prefix: table.prefix.clone().unwrap_or_default(),
                signed: table.signed.clone(),
                timestamp_header: table.timestamp_header.clone(),
            };
            let scheme = ConfiguredRsa::new(&settings).map_err(setting)?;
            r.show(&format!("{key}.rsa"), Shown::Value(shown_rsa(&scheme.settings())));
            Ok(scheme.configured(tolerance))
        }
        generic::TOKEN => {
            let table = raw.token.ok_or_else(|| needs(generic::TOKEN))?;
            let scheme = SharedToken::new(&table.header).map_err(setting)?;
            r.show(&format!("{key}.token.header"), Shown::Value(scheme.header().into()));
            Ok(scheme.configured(tolerance))
        }
        generic::BASIC => Ok(BasicAuth.configured(tolerance)),
        name => {
            let known = scheme::lookup(name).map_err(|unknown| {
                let configured = generic::NAMES.join(", ");
                ConfigError::new(format!("{key}.scheme"), format!("{unknown}, or one configured: {configured}"))
            })?;
            Ok(known.configured(tolerance))
        }
    }
}

fn hmac_settings(table: &RawHmac) -> Result<HmacSettings, SettingError> {
    Ok(HmacSettings {
        algorithm: Algorithm::from_name(&table.algorithm)?,
        encoding: Encoding::from_name(&table.encoding)?,
        header: table.header.clone(),
        prefix: table.prefix.clone().unwrap_or_default(),
        pairs: table.pairs.as_ref().map(|p| PairsSettings {
            separator: p.separator,
            timestamp: p.timestamp.clone(),
            signature: p.signature.clone(),
        }),
        signed: table.signed.clone(),
        timestamp_header: table.timestamp_header.clone(),
        timestamp_unit: table.timestamp_unit.as_deref().map(TimestampUnit::from_name).transpose()?.unwrap_or_default(),
        key: table.key.as_deref().map(KeyEncoding::from_name).transpose()?.unwrap_or_default(),
    })
}

/// The scheme signing the source's `signed_url`, when it signs the URL; refuses the
/// setting where it is not read and its absence where it is needed.
fn signed_url(
    key: &str,
    scheme: Arc<dyn Scheme>,
    url: Option<String>,
    r: &mut Reading<'_>,
) -> Result<Arc<dyn Scheme>, ConfigError> {
    let at = format!("{key}.signed_url");
    match (scheme.signs_url(), url) {
        (false, None) => Ok(scheme),
        (false, Some(_)) => Err(ConfigError::new(at, format!("scheme {:?} does not sign the URL", scheme.name()))),
        (true, None) => Err(ConfigError::new(
            at,
            format!("scheme {:?} signs the URL it posts to: give it as registered with the provider", scheme.name()),
        )),
        (true, Some(url)) => {
            let parsed: http::Uri = url.parse().map_err(|_| ConfigError::new(&at, "not a valid URL"))?;
            if !matches!(parsed.scheme_str(), Some("http" | "https")) || parsed.host().is_none() {
                return Err(ConfigError::new(at, "must be an http or https URL"));
            }
            r.show(&at, Shown::Value(url.clone().into()));
            Ok(scheme.with_signed_url(&url).unwrap_or(scheme))
        }
    }
}

/// The fields a retry changes: as configured, else the catalog provider's; only for JSON.
fn per_attempt(
    key: &str,
    raw: Option<Vec<String>>,
    provider: Option<&'static catalog::Provider>,
    body: BodyFormat,
    r: &mut Reading<'_>,
) -> Result<Vec<FieldPointer>, ConfigError> {
    let at = format!("{key}.per_attempt");
    let texts = match raw {
        Some(texts) => texts,
        None => provider.map(|p| p.per_attempt.iter().map(|t| (*t).to_owned()).collect()).unwrap_or_default(),
    };
    if !texts.is_empty() && body != BodyFormat::Json {
        return Err(ConfigError::new(at, "per-attempt fields are JSON pointers: only for a JSON body"));
    }
    let pointers = texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            FieldPointer::parse(text).map_err(|err| ConfigError::new(format!("{at}[{i}]"), err.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    r.show(&at, Shown::Value(texts.into()));
    Ok(pointers)
}

/// `[sources.<id>.rsa]` as in effect: header names lowercased, the prefix shown even empty.
fn shown_rsa(settings: &RsaSettings) -> toml::Value {
    let mut table = toml::Table::new();
    table.insert("algorithm".to_owned(), settings.algorithm.name().into());
    table.insert("encoding".to_owned(), settings.encoding.name().into());
    table.insert("header".to_owned(), settings.header.clone().into());
    table.insert("prefix".to_owned(), settings.prefix.clone().into());
    table.insert("signed".to_owned(), settings.signed.clone().into());
    if let Some(name) = &settings.timestamp_header {
        table.insert("timestamp_header".to_owned(), name.clone().into());
    }
    toml::Value::Table(table)
}

/// `[sources.<id>.hmac]` as in effect: header names lowercased, the prefix shown even empty.
fn shown_hmac(settings: &HmacSettings) -> toml::Value {
    let mut table = toml::Table::new();
    table.insert("algorithm".to_owned(), settings.algorithm.name().into());
    table.insert("encoding".to_owned(), settings.encoding.name().into());
    table.insert("header".to_owned(), settings.header.clone().into());
    table.insert("prefix".to_owned(), settings.prefix.clone().into());
    table.insert("signed".to_owned(), settings.signed.clone().into());
    if let Some(name) = &settings.timestamp_header {
        table.insert("timestamp_header".to_owned(), name.clone().into());
    }
    table.insert("timestamp_unit".to_owned(), settings.timestamp_unit.name().into());
    table.insert("key".to_owned(), settings.key.name().into());
    if let Some(pairs) = &settings.pairs {
        let mut shown = toml::Table::new();
        shown.insert("separator".to_owned(), pairs.separator.to_string().into());
        if let Some(t) = &pairs.timestamp {
            shown.insert("timestamp".to_owned(), t.clone().into());
        }
        shown.insert("signature".to_owned(), pairs.signature.clone().into());
        table.insert("pairs".to_owned(), toml::Value::Table(shown));
    }
    toml::Value::Table(table)
}

/// One entry of `destinations` at `key`: the destination exists, every pattern is one, and
/// the filter compiles.
fn subscription(key: &str, entry: &RawSubscription, names: &BTreeSet<String>) -> Result<Subscription, ConfigError> {
    let name = &entry.name;
    if !names.contains(name) {
        let at = if entry.types.is_none() && entry.filter.is_none() { key.to_owned() } else { format!("{key}.name") };
        return Err(ConfigError::new(at, format!("no destination named {name:?}")));
    }
    let types = match &entry.types {
        None => None,
        Some(types) if types.is_empty() => {
            return Err(ConfigError::new(
                format!("{key}.types"),
                "an empty list matches no event; leave types out for every event",
            ));
        }
        Some(types) => Some(
            types
                .iter()
                .enumerate()
                .map(|(i, text)| {
                    TypePattern::new(text).map_err(|err| ConfigError::new(format!("{key}.types[{i}]"), err.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let filter = entry
        .filter
        .as_deref()
        .map(|text| Program::compile(text).map_err(|err| ConfigError::new(format!("{key}.filter"), err.to_string())))
        .transpose()?;
    Ok(Subscription { destination: name.clone(), types, filter })
}

/// The `destinations` list as the file says it: a name, or a table when it filters.
fn shown_subscriptions(entries: &[RawSubscription]) -> toml::Value {
    let shown = entries
        .iter()
        .map(|entry| {
            if entry.types.is_none() && entry.filter.is_none() {
                return toml::Value::String(entry.name.clone());
            }
            let mut table = toml::Table::new();
            table.insert("name".to_owned(), entry.name.clone().into());
            if let Some(types) = &entry.types {
                table.insert("types".to_owned(), types.clone().into());
            }
            if let Some(filter) = &entry.filter {
                table.insert("filter".to_owned(), filter.clone().into());
            }
            toml::Value::Table(table)
        })
        .collect();
    toml::Value::Array(shown)
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
    r: &mut Reading<'_>,
) -> Result<SecretSet, ConfigError> {
    let mut decoded = Vec::with_capacity(references.len());
    for (i, reference) in references.iter().enumerate() {
        let item = format!("{key}.secrets[{i}]");
        let text = r.resolve(&item, reference)?;
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

/// `{ header = "…" }` or `{ pointer = "…" }`, as the file says it.
fn shown_identity(identity: &IdentityLocation) -> toml::Value {
    let (field, value) = match identity {
        IdentityLocation::Header(name) => ("header", name),
        IdentityLocation::Body(pointer) => ("pointer", pointer),
    };
    toml::Value::Table(toml::Table::from_iter([(field.to_owned(), toml::Value::String(value.clone()))]))
}

fn pointer(key: &str, pointer: String) -> Result<String, ConfigError> {
    if pointer.starts_with('/') {
        Ok(pointer)
    } else {
        Err(ConfigError::new(key, "a JSON pointer starts with / (e.g. \"/id\")"))
    }
}
