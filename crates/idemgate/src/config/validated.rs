//! The configuration ready to use: every duration parsed, every reference between sources
//! and destinations checked, and the secrets and files of what the command uses resolved.
//! A command that does not verify deliveries does not need the sources' secrets, one that
//! does not deliver does not need the destinations', one that serves nothing does not
//! need TLS files or the admin token ([`Uses`]); everything else is validated for all.
//! One module per part: [`super::listeners`], [`super::store`], [`super::sources`],
//! [`super::destinations`], [`super::proxies`], ...; each reads its keys through
//! [`super::reading::Reading`], which imports none of them.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
    time::Duration,
};

use idemgate_store::maintenance::Retention;
use idemgate_worker::WorkerOptions;

use super::{
    ConfigError, ConfigWarning,
    effective::{Listing, Shown},
    raw::{RawConfig, RawStore, RawWorker},
    reading::{Reading, Verifies},
};
pub use super::{
    alerts::AlertsConfig,
    api::ApiConfig,
    destinations::{DestinationConfig, DestinationUrl, Target},
    listeners::{AdminConfig, ServerConfig, TlsConfig},
    metrics::{MetricsConfig, MetricsListen},
    proxies::ProxyConfig,
    smtp::SmtpConfig,
    sources::{OrderingConfig, SourceConfig},
    store::{PostgresConfig, StoreConfig},
    traces::TracesConfig,
};

/// What a command uses of the configuration, and so which secrets and files it resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uses {
    /// `serve`: the sources' secrets, TLS, the admin token, the store, and the
    /// destinations' secrets unless `[worker] enabled = false`.
    Serve,
    /// `worker`: the destinations' secrets and the store.
    Worker,
    /// The operator's commands (`events`, `destination`, `store`): the store alone.
    Store,
    /// `config check`: everything `serve` with its worker would resolve.
    Everything,
}

/// What one validation resolves.
#[derive(Debug, Clone, Copy)]
struct Resolves<'a> {
    sources: Verifies<'a>,
    destinations: bool,
    listeners: bool,
}

impl Uses {
    fn resolves(self, raw_worker: &RawWorker) -> Resolves<'static> {
        let (sources, destinations, listeners) = match self {
            Self::Serve => (Verifies::All, raw_worker.enabled.unwrap_or(true), true),
            Self::Worker => (Verifies::None, true, false),
            Self::Store => (Verifies::None, false, false),
            Self::Everything => (Verifies::All, true, true),
        };
        Resolves { sources, destinations, listeners }
    }
}

/// The validated configuration, holding what its command uses ([`Uses`]).
#[derive(Debug, Clone)]
pub struct Config {
    /// `[server]`; its TLS is loaded only for `serve`.
    pub server: ServerConfig,
    /// `[store]`.
    pub store: StoreConfig,
    /// The `[sources.*]` whose deliveries this command verifies, with their secrets: every
    /// source for `serve`, none for the others.
    pub sources: Vec<SourceConfig>,
    /// The `[destinations.*]` this command delivers to, by name, with their secrets: every
    /// destination for `worker` (and `serve` with its worker), none for the others.
    pub destinations: BTreeMap<String, DestinationConfig>,
    /// `[worker]`.
    pub worker: WorkerConfig,
    /// `[[proxy]]` entries.
    pub proxies: Vec<ProxyConfig>,
    /// `[admin]`, when a token is configured and this command serves the admin API (`serve`).
    pub admin: Option<AdminConfig>,
    /// `[api]`, when enabled and this command serves it (`serve`).
    pub api: Option<ApiConfig>,
    /// `[metrics]`.
    pub metrics: MetricsConfig,
    /// `[alerts]`, when configured.
    pub alerts: Option<AlertsConfig>,
    /// `[traces]`, when configured.
    pub traces: Option<TracesConfig>,
    /// The `[smtp.*]` listeners this command serves, with their users and TLS (`serve`).
    pub smtp: Vec<SmtpConfig>,
    /// Every source's retention, whatever the command.
    retention: Vec<Retention>,
    /// `[retention] audit`: how long the audit log's records are kept.
    pub audit_retention: Duration,
    /// Every destination's name, whatever the command.
    destination_names: BTreeSet<String>,
    /// Every destination's transform, whatever the command.
    transforms: BTreeMap<String, idemgate_jq::Program>,
    /// Every key read, its effective value and its origin.
    listing: Listing,
}

/// `[worker]`.
#[derive(Debug, Clone, Copy)]
pub struct WorkerConfig {
    /// Run the worker inside `idemgate serve`.
    pub enabled: bool,
    /// Lease, batch and poll interval.
    pub options: WorkerOptions,
}

impl Config {
    /// The retention policies of every source, for the purge.
    #[must_use]
    pub fn retention(&self) -> Vec<Retention> {
        self.retention.clone()
    }

    /// Whether `[destinations.<name>]` exists (whether or not this command delivers to it).
    #[must_use]
    pub fn has_destination(&self, name: &str) -> bool {
        self.destination_names.contains(name)
    }

    /// Every destination's name (whether or not this command delivers to it).
    #[must_use]
    pub fn destination_names(&self) -> &BTreeSet<String> {
        &self.destination_names
    }

    /// Every destination's transform by name (whether or not this command delivers), for
    /// showing the body each destination gets.
    #[must_use]
    pub fn transforms(&self) -> &BTreeMap<String, idemgate_jq::Program> {
        &self.transforms
    }

    /// Every key validation read, with its effective value and origin; secrets redacted.
    #[must_use]
    pub fn effective(&self) -> &Listing {
        &self.listing
    }
}

/// The parts, with the store as `S`: its configuration, or nothing for `verify`.
struct Parts<S> {
    server: ServerConfig,
    store: S,
    sources: super::sources::Sources,
    destinations: super::destinations::Destinations,
    worker: WorkerConfig,
    proxies: Vec<ProxyConfig>,
    admin: Option<AdminConfig>,
    api: Option<ApiConfig>,
    metrics: MetricsConfig,
    alerts: Option<AlertsConfig>,
    traces: Option<TracesConfig>,
    smtp: Vec<SmtpConfig>,
    audit_retention: Duration,
}

/// How long the audit log is kept unless `[retention] audit` says otherwise: 90 days.
pub const DEFAULT_AUDIT_RETENTION: Duration = Duration::from_secs(90 * 24 * 3600);

/// Turns what the file says into what the gateway runs with, resolving everything.
/// `base` is the config file's folder: relative paths and `file:` secrets are relative to it.
pub fn validate(raw: RawConfig, base: &Path) -> Result<(Config, Vec<ConfigWarning>), ConfigError> {
    validate_for(raw, base, Uses::Everything)
}

/// [`validate`] for a command that resolves only what it `uses`.
pub fn validate_for(raw: RawConfig, base: &Path, uses: Uses) -> Result<(Config, Vec<ConfigWarning>), ConfigError> {
    let resolves = uses.resolves(&raw.worker);
    let (parts, reading) = parts(raw, base, resolves, super::store::store)?;
    let (listing, warnings) = reading.finish();
    let config = Config {
        server: parts.server,
        store: parts.store,
        sources: parts.sources.verified,
        destinations: parts.destinations.delivered,
        worker: parts.worker,
        proxies: parts.proxies,
        admin: parts.admin,
        api: parts.api,
        metrics: parts.metrics,
        alerts: parts.alerts,
        traces: parts.traces,
        smtp: parts.smtp,
        retention: parts.sources.retention,
        audit_retention: parts.audit_retention,
        destination_names: parts.destinations.names,
        transforms: parts.destinations.transforms,
        listing,
    };
    Ok((config, warnings))
}

/// Validates everything and resolves the secrets of source `id` alone, for `verify`;
/// `None` when there is no such source.
pub fn validate_source(
    raw: RawConfig,
    base: &Path,
    id: &str,
) -> Result<(Option<SourceConfig>, Vec<ConfigWarning>), ConfigError> {
    let resolves = Resolves { sources: Verifies::One(id), destinations: false, listeners: false };
    let (parts, reading) = parts(raw, base, resolves, super::store::check)?;
    Ok((parts.sources.verified.into_iter().next(), reading.finish().1))
}

fn parts<'a, S>(
    raw: RawConfig,
    base: &'a Path,
    resolves: Resolves<'_>,
    store: impl FnOnce(RawStore, &mut Reading<'_>) -> Result<S, ConfigError>,
) -> Result<(Parts<S>, Reading<'a>), ConfigError> {
    let RawConfig {
        server,
        store: raw_store,
        sources,
        destinations,
        worker: raw_worker,
        admin,
        api,
        proxy,
        metrics,
        alerts,
        traces,
        smtp,
        retention,
        origins,
    } = raw;
    let mut reading = Reading::new(base, origins);
    let r = &mut reading;
    let server_tls = server.tls.is_some();
    let server = super::listeners::server(server, r, resolves.listeners)?;
    let store = store(raw_store, r)?;
    let destinations = super::destinations::destinations(destinations, r, resolves.destinations)?;
    let mut sources =
        super::sources::sources(sources, &destinations.names, &destinations.transforms, r, resolves.sources)?;
    let server_tls_loaded = server.tls.as_ref();
    let smtp = super::smtp::listeners(
        smtp,
        &sources.retention,
        &destinations.smtp,
        (server_tls_loaded, server_tls),
        r,
        resolves.listeners,
    )?;
    if sources.retention.is_empty() && proxy.is_empty() && smtp.retention.is_empty() {
        return Err(ConfigError::new("sources", "at least one source (or one [[proxy]] or [smtp.*]) is required"));
    }
    sources.retention.extend(smtp.retention);
    let worker = worker(&raw_worker, &destinations.timeouts, r)?;
    let proxies = super::proxies::proxies(proxy, server.body_timeout, r)?;
    let has_admin = admin.as_ref().is_some_and(|admin| admin.token.is_some() || !admin.tokens.is_empty());
    let admin = match admin {
        Some(admin) => super::listeners::admin(admin, &server, server_tls, r, resolves.listeners)?,
        None => {
            r.show("admin.token", Shown::Note("(not set: the admin API is off)"));
            None
        }
    };
    let prefixes: Vec<&str> = proxies.iter().map(|proxy| proxy.prefix.as_str()).collect();
    let api = super::api::api(api, &prefixes, r, resolves.listeners, resolves.destinations)?;
    let metrics = super::metrics::metrics(metrics, has_admin, r)?;
    let alerts = super::alerts::alerts(alerts, &destinations.names, r)?;
    let traces = super::traces::traces(traces, r)?;
    let smtp = smtp.served;
    let audit_retention = r.duration("retention.audit", retention.audit.as_deref(), DEFAULT_AUDIT_RETENTION)?;
    let parts = Parts {
        server,
        store,
        sources,
        destinations,
        worker,
        proxies,
        admin,
        api,
        metrics,
        alerts,
        traces,
        smtp,
        audit_retention,
    };
    Ok((parts, reading))
}

fn worker(raw: &RawWorker, timeouts: &[(String, Duration)], r: &mut Reading<'_>) -> Result<WorkerConfig, ConfigError> {
    let defaults = WorkerOptions::default();
    let enabled = r.value("worker.enabled", raw.enabled, true);
    let batch = r.count("worker.batch", raw.batch, defaults.batch).max(1);
    // By default a destination may have a batch in flight, as when a claim waited for its
    // batch, and four destinations may each fill their share.
    let max_in_flight = at_least_one(r, "worker.max_in_flight", raw.max_in_flight, batch.saturating_mul(4))?;
    let share = (max_in_flight / 4).max(1);
    let options = WorkerOptions {
        lease: r.duration("worker.lease", raw.lease.as_deref(), defaults.lease)?,
        batch,
        poll_interval: r.duration("worker.poll_interval", raw.poll_interval.as_deref(), defaults.poll_interval)?,
        max_in_flight,
        destination_max_in_flight: at_least_one(
            r,
            "worker.destination_max_in_flight",
            raw.destination_max_in_flight,
            share,
        )?,
    };
    if let Some((name, _)) = timeouts.iter().find(|(_, timeout)| *timeout >= options.lease) {
        return Err(ConfigError::new(
            "worker.lease",
            format!("must be longer than destinations.{name}.timeout, or a slow attempt would be taken over"),
        ));
    }
    Ok(WorkerConfig { enabled, options })
}

/// A count that must be at least 1 (a bound of 0 would deliver nothing), given or defaulted.
fn at_least_one(r: &mut Reading<'_>, key: &str, given: Option<usize>, default: usize) -> Result<usize, ConfigError> {
    if given == Some(0) {
        return Err(ConfigError::new(key, "must be at least 1"));
    }
    Ok(r.count(key, given, default))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::config::{effective::Shown, origin::Origin, raw};

    /// Every secret names a variable that is not set, and the TLS files do not exist.
    const UNRESOLVABLE: &str = r#"
[server.tls]
cert = "missing-cert.pem"
key = "missing-key.pem"
[admin]
token = "env:IDEMGATE_TEST_UNSET_TOKEN"
[sources.a]
scheme = "github"
secrets = ["env:IDEMGATE_TEST_UNSET_A"]
destinations = ["app"]
[sources.b]
scheme = "github"
secrets = ["env:IDEMGATE_TEST_UNSET_B"]
[destinations.app]
url = "http://127.0.0.1:1/"
secret = "env:IDEMGATE_TEST_UNSET_APP"
"#;

    fn validated(text: &str, env: &[(&str, &str)], uses: Uses) -> Result<Config, ConfigError> {
        let env = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
        validate_for(raw::parse(text, env)?, Path::new("/etc/idemgate"), uses).map(|(config, _)| config)
    }

    /// One source and no worker, so `serve` resolves the admin tokens and little else.
    const TOKENS: &str = "[sources.a]\nscheme = \"github\"\nsecrets = [\"a-secret\"]\n[worker]\nenabled = false\n";

    fn admin_error(text: &str, uses: Uses) -> ConfigError {
        validated(&format!("{TOKENS}{text}"), &[], uses).unwrap_err()
    }

    #[test]
    fn the_workers_room_is_bounded_overall_and_per_destination_and_a_bound_of_zero_is_refused() {
        let worker = |extra: &str| validated(&format!("{TOKENS}{extra}"), &[], Uses::Worker);
        let defaults = worker("").unwrap().worker.options;
        assert_eq!((defaults.max_in_flight, defaults.destination_max_in_flight), (128, 32));
        let batch = worker("batch = 256\n").unwrap().worker.options;
        assert_eq!((batch.max_in_flight, batch.destination_max_in_flight), (1024, 256), "a batch per destination");
        let overall = worker("max_in_flight = 10\n").unwrap().worker.options;
        assert_eq!(overall.destination_max_in_flight, 2, "a quarter of the overall bound");
        let set = worker("max_in_flight = 16\ndestination_max_in_flight = 4\n").unwrap().worker.options;
        assert_eq!((set.max_in_flight, set.destination_max_in_flight), (16, 4));
        for (line, key) in [
            ("max_in_flight = 0\n", "worker.max_in_flight"),
            ("destination_max_in_flight = 0\n", "worker.destination_max_in_flight"),
        ] {
            assert_eq!(worker(line).unwrap_err().key, key, "{line}");
        }
    }

    #[test]
    fn named_admin_tokens_have_roles_and_the_plain_token_is_admin_operate() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("viewer");
        std::fs::write(&file, "viewer-token-of-length\n").unwrap();
        let text = format!(
            "{TOKENS}[admin]\ntoken = \"admin-token-of-length\"\n[admin.tokens.viewer]\ntoken = \"file:{}\"\n\
             [admin.tokens.ops]\ntoken = \"ops-token-of-length!!\"\nrole = \"operate\"\n",
            file.display()
        );
        let admin = validated(&text, &[], Uses::Serve).unwrap().admin.unwrap();
        let named: Vec<_> =
            admin.tokens.iter().map(|t| (t.name.as_str(), t.role.as_str(), t.secret.expose())).collect();
        assert_eq!(
            named,
            [
                ("admin", "operate", &b"admin-token-of-length"[..]),
                ("ops", "operate", b"ops-token-of-length!!"),
                ("viewer", "read", b"viewer-token-of-length"),
            ],
            "a token without a role may only read"
        );
        let only_named = format!("{TOKENS}[admin.tokens.viewer]\ntoken = \"viewer-token-of-length\"\n");
        assert_eq!(validated(&only_named, &[], Uses::Serve).unwrap().admin.unwrap().tokens.len(), 1);
        let config = validated(&text, &[], Uses::Serve).unwrap();
        assert_eq!(config.audit_retention, Duration::from_secs(90 * 24 * 3600), "the audit log's default");
        let kept = validated(&format!("{text}[retention]\naudit = \"30d\"\n"), &[], Uses::Store).unwrap();
        assert_eq!(kept.audit_retention, Duration::from_secs(30 * 24 * 3600));
        let listing = kept.effective().to_string();
        assert!(listing.contains("admin.tokens.ops.token = \"<redacted>\""), "{listing}");
        assert!(listing.contains("admin.tokens.viewer.role = \"read\""), "{listing}");
        assert!(listing.contains("retention.audit = \"30days\""), "{listing}");
        let listing = config.effective().to_string();
        assert!(listing.contains("retention.audit = \"90days\""), "whole days, not months: {listing}");
        assert!(!listing.contains("ops-token-of-length"), "{listing}");
    }

    #[test]
    fn bad_admin_tokens_are_refused_naming_the_key_and_never_the_value() {
        let secret = "the-one-secret-value";
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("same");
        std::fs::write(&file, secret).unwrap();
        let cases = [
            (
                format!(
                    "[admin.tokens.a]\ntoken = \"{secret}\"\n[admin.tokens.b]\ntoken = \"file:{}\"\n",
                    file.display()
                ),
                Uses::Serve,
                "admin.tokens.b.token: is the same token as admin.tokens.a.token: each admin token needs a value of its own",
            ),
            (
                format!("[admin]\ntoken = \"{secret}\"\n[admin.tokens.b]\ntoken = \"{secret}\"\n"),
                Uses::Store,
                "admin.tokens.b.token: is the same token as admin.token: each admin token needs a value of its own",
            ),
            (
                format!("[admin.tokens.a]\ntoken = \"{secret}\"\nrole = \"root\"\n"),
                Uses::Store,
                "admin.tokens.a.role: unknown role \"root\" (read or operate)",
            ),
            (
                format!("[admin]\ntoken = \"{secret}\"\n[admin.tokens.admin]\ntoken = \"other-token-value-here\"\n"),
                Uses::Store,
                "admin.tokens.admin: [admin] token is already the token named `admin`: give this one another name, or drop one of them",
            ),
            (
                format!("[admin.tokens.Ops]\ntoken = \"{secret}\"\n"),
                Uses::Store,
                "admin.tokens.Ops: a token's name is [a-z0-9][a-z0-9_-]{0,62}",
            ),
            (
                format!("[admin.tokens.cli]\ntoken = \"{secret}\"\n"),
                Uses::Store,
                "admin.tokens.cli: the name `cli` is the command line's in the audit log",
            ),
            (
                "[admin.tokens.a]\ntoken = \"short\"\n".to_owned(),
                Uses::Serve,
                "admin.tokens.a.token: must be at least 16 characters",
            ),
            (
                "[admin.tokens.a]\ntoken = 12345678901234567\n".to_owned(),
                Uses::Store,
                "admin.tokens.a.token: must be a string (env:NAME, file:PATH or a literal in quotes); the value given is not shown",
            ),
        ];
        for (text, uses, expected) in cases {
            let err = admin_error(&text, uses);
            assert_eq!(err.to_string(), expected, "{text}");
            assert!(!err.to_string().contains(secret) && !err.to_string().contains("12345678901234567"), "{err}");
        }
    }

    /// A source of scheme `scheme` with `extra` settings, delivering to one destination.
    fn provider_source(scheme: &str, secret: &str, extra: &str) -> Result<Config, ConfigError> {
        let text = format!(
            "[worker]\nenabled = false\n[sources.a]\nscheme = \"{scheme}\"\nsecrets = [\"{secret}\"]\n\
             destinations = [\"app\"]\n{extra}\n[destinations.app]\nurl = \"http://127.0.0.1:9/\"\n"
        );
        validated(&text, &[], Uses::Serve)
    }

    /// `[sources.a.hmac]` saying what `spec` says.
    fn hmac_table(spec: &idemgate_core::catalog::HmacSpec) -> String {
        let mut table = format!(
            "[sources.a.hmac]\nalgorithm = \"{}\"\nencoding = \"{}\"\nheader = \"{}\"\nsigned = {:?}\n\
             timestamp_unit = \"{}\"\nkey = \"{}\"\n",
            spec.algorithm.name(),
            spec.encoding.name(),
            spec.header,
            spec.signed,
            spec.timestamp_unit.name(),
            spec.key.name()
        );
        if !spec.prefix.is_empty() {
            table.push_str(&format!("prefix = {:?}\n", spec.prefix));
        }
        if let Some(name) = spec.timestamp_header {
            table.push_str(&format!("timestamp_header = \"{name}\"\n"));
        }
        if let Some(pairs) = spec.pairs {
            let timestamp = pairs.timestamp.map(|t| format!(", timestamp = \"{t}\"")).unwrap_or_default();
            table.push_str(&format!(
                "pairs = {{ separator = \"{}\"{timestamp}, signature = \"{}\" }}\n",
                pairs.separator, pairs.signature
            ));
        }
        table
    }

    #[test]
    fn every_plain_hmac_provider_equals_its_generic_configuration() {
        use idemgate_core::{
            SecretSet, UnixTime,
            catalog::{self, Signing},
            scheme::{Outgoing, RawDelivery, Signer},
        };
        let now = UnixTime(1_700_000_000);
        let url = "https://hooks.example.com/in/a";
        let mut checked = 0;
        for provider in catalog::providers() {
            let Signing::Hmac(spec) = provider.signing else { continue };
            let secret = match spec.key {
                idemgate_core::scheme::generic::KeyEncoding::Utf8 => "a-provider-secret".to_owned(),
                idemgate_core::scheme::generic::KeyEncoding::Base64 => "c2VjcmV0LWtleS1ieXRlcw==".to_owned(),
                idemgate_core::scheme::generic::KeyEncoding::Hex => "00112233445566778899".to_owned(),
                idemgate_core::scheme::generic::KeyEncoding::Whsec => "whsec_c2VjcmV0LWtleS1ieXRlcw==".to_owned(),
            };
            let signed_url =
                if provider.scheme().signs_url() { format!("signed_url = \"{url}\"\n") } else { String::new() };
            let identity = "identity = { pointer = \"/id\" }\n";
            let named = provider_source(provider.name, &secret, &format!("{identity}{signed_url}")).unwrap();
            let generic =
                provider_source("hmac", &secret, &format!("{identity}{signed_url}{}", hmac_table(&spec))).unwrap();
            let (named, generic) = (&named.sources[0], &generic.sources[0]);
            let key = named.scheme.decode_secret(&secret).unwrap();
            assert_eq!(key.expose(), generic.scheme.decode_secret(&secret).unwrap().expose(), "{}", provider.name);
            let body = br#"{"id":"evt_1","n":1}"#;
            let message = Outgoing { id: "evt_1", attempt: 1, timestamp: now, body };
            let by_named = Signer::configured(named.scheme.clone(), key.clone()).unwrap();
            let by_generic = Signer::configured(generic.scheme.clone(), key.clone()).unwrap();
            assert_eq!(by_named.headers(&message), by_generic.headers(&message), "{}", provider.name);
            let sent: http::HeaderMap = by_named
                .headers(&message)
                .into_iter()
                .map(|(n, v)| (http::HeaderName::from_static(n), http::HeaderValue::from_str(&v).unwrap()))
                .collect();
            let secrets = SecretSet::new(vec![key]).unwrap();
            for body in [&body[..], br#"{"id":"evt_1","n":2}"#] {
                let delivery = RawDelivery { headers: &sent, body };
                assert_eq!(
                    named.scheme.verify(&secrets, delivery, now),
                    generic.scheme.verify(&secrets, delivery, now),
                    "{}",
                    provider.name
                );
            }
            checked += 1;
        }
        assert!(checked > 0, "the catalog has plain-HMAC providers");
    }

    #[test]
    fn a_catalog_provider_brings_its_identity_comparison_form_and_event_type() {
        let stripe = provider_source("stripe", "whsec_x", "").unwrap();
        let source = &stripe.sources[0];
        assert_eq!(source.identity, idemgate_core::scheme::IdentityLocation::Body("/id".into()));
        assert_eq!(source.per_attempt.iter().map(|p| p.as_str()).collect::<Vec<_>>(), ["/pending_webhooks"]);
        assert_eq!(source.event_type.as_deref(), Some("/type"));
        let own = provider_source("stripe", "whsec_x", "per_attempt = []\nevent_type = \"/kind\"").unwrap();
        assert!(own.sources[0].per_attempt.is_empty());
        assert_eq!(own.sources[0].event_type.as_deref(), Some("/kind"));
        let cases = [
            (
                "stripe",
                "signed_url = \"https://x.example/in/a\"",
                "sources.a.signed_url: scheme \"stripe\" does not sign the URL",
            ),
            ("stripe", "per_attempt = [\"attempt\"]", "sources.a.per_attempt[0]: a pointer starts with /"),
            (
                "stripe",
                "body = \"form\"",
                "sources.a.per_attempt: per-attempt fields are JSON pointers: only for a JSON body",
            ),
        ];
        for (scheme, extra, expected) in cases {
            assert_eq!(provider_source(scheme, "whsec_x", extra).unwrap_err().to_string(), expected, "{extra}");
        }
        let url_signed = "identity = { pointer = \"/id\" }\n[sources.a.hmac]\nalgorithm = \"sha256\"\n\
                          encoding = \"base64\"\nheader = \"X-Sig\"\nsigned = \"{url}{body}\"\n";
        let err = provider_source("hmac", "s", url_signed).unwrap_err().to_string();
        assert!(err.starts_with("sources.a.signed_url: scheme \"hmac\" signs the URL it posts to"), "{err}");
        let bad = url_signed.replace("identity", "signed_url = \"ftp://x/\"\nidentity");
        assert_eq!(
            provider_source("hmac", "s", &bad).unwrap_err().to_string(),
            "sources.a.signed_url: must be an http or https URL"
        );
        let good = url_signed.replace("identity", "signed_url = \"https://x.example/in/a\"\nidentity");
        assert!(provider_source("hmac", "s", &good).unwrap().sources[0].scheme.signs_url());
    }

    #[test]
    fn the_messaging_providers_bring_their_settings_and_ask_for_what_they_do_not_send() {
        use idemgate_core::{form::BodyFormat, scheme::IdentityLocation};
        // Twilio: its form body, its unsigned idempotency header (so body receipts), and
        // the URL it signs, which only the source can say.
        let err = provider_source("twilio", "auth-token", "").unwrap_err().to_string();
        assert!(err.starts_with("sources.a.signed_url: scheme \"twilio\" signs the URL it posts to"), "{err}");
        let twilio = provider_source("twilio", "auth-token", "signed_url = \"https://x.example/in/a\"").unwrap();
        let source = &twilio.sources[0];
        assert_eq!(source.body, BodyFormat::Form);
        assert_eq!(source.identity, IdentityLocation::Header("i-twilio-idempotency-token".into()));
        assert!(source.dedupe_body, "the token is not signed");
        assert_eq!(source.event_type.as_deref(), Some("/MessageStatus"));
        // SendGrid and Discord send no stable identity: the source names one.
        let sendgrid = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g==";
        let discord = "79b5562e8fe654f94078b112e8a98ba7901f853ae695bed7e0e3910bad049664";
        for (scheme, key, identity) in
            [("sendgrid", sendgrid, "/0/sg_event_id"), ("discord", discord, "/event/data/id")]
        {
            let err = provider_source(scheme, key, "").unwrap_err().to_string();
            assert!(
                err.starts_with(&format!(
                    "sources.a.identity: scheme \"{scheme}\" is a provider that sends no stable event identity"
                )),
                "{err}"
            );
            let named = provider_source(scheme, key, &format!("identity = {{ pointer = \"{identity}\" }}")).unwrap();
            assert_eq!(named.sources[0].identity, IdentityLocation::Body(identity.into()));
            assert!(provider_source(scheme, "not-a-key", "identity = { pointer = \"/id\" }").is_err());
        }
        // Telnyx: the event id in the body, signed, and the fields each attempt changes.
        let telnyx = provider_source("telnyx", "2inpWwLgD/oVZFd1+x0roiKhlDOV7qBrlOLAV7e+adA=", "").unwrap();
        let source = &telnyx.sources[0];
        assert_eq!(source.identity, IdentityLocation::Body("/data/id".into()));
        assert!(!source.dedupe_body, "the identity is signed with the body");
        assert_eq!(
            source.per_attempt.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
            ["/meta/attempt", "/meta/delivered_to"]
        );
    }

    #[test]
    fn configured_schemes_and_form_bodies_are_read_and_their_slips_named() {
        let source = |scheme: &str, extra: &str| {
            let text = format!(
                "[worker]\nenabled = false\n[sources.a]\nscheme = \"{scheme}\"\nsecrets = [\"user:secret\"]\n\
                 destinations = [\"app\"]\n{extra}\n[destinations.app]\nurl = \"http://127.0.0.1:9/\"\n"
            );
            validated(&text, &[], Uses::Serve)
        };
        let hmac = "identity = { pointer = \"/id\" }\nbody = \"form\"\n[sources.a.hmac]\nalgorithm = \"sha1\"\n\
                    encoding = \"base64\"\nheader = \"X-Sig\"\nsigned = \"{body}\"\n";
        let config = source("hmac", hmac).unwrap();
        assert_eq!(config.sources[0].scheme.name(), "hmac");
        assert_eq!(config.sources[0].body, idemgate_core::form::BodyFormat::Form);
        assert!(source("token", "identity = { pointer = \"/id\" }\n[sources.a.token]\nheader = \"X-Token\"").is_ok());
        assert!(source("basic", "identity = { header = \"X-Id\" }").unwrap().sources[0].dedupe_body);
        let cases = [
            ("hmac", "identity = { pointer = \"/id\" }", "sources.a.hmac: scheme = \"hmac\" needs this table"),
            ("token", "identity = { pointer = \"/id\" }", "sources.a.token: scheme = \"token\" needs this table"),
            ("github", "[sources.a.token]\nheader = \"X-T\"", "sources.a.token: only read when scheme = \"token\""),
            (
                "basic",
                "",
                "sources.a.identity: scheme \"basic\" carries no event identity of its own: give identity = { pointer = \"/…\" } or { header = \"…\" }",
            ),
            ("hmac", &hmac.replace("sha1", "md5"), "sources.a.hmac.algorithm: must be sha1, sha256 or sha512"),
            (
                "hmac",
                &hmac.replace("\"{body}\"", "\"{timestamp}.{body}\""),
                "sources.a.hmac.timestamp_header: required when signed names {timestamp}, unless pairs.timestamp",
            ),
            ("hmac", &hmac.replace("\"form\"", "\"xml\""), "sources.a.body: must be \"json\" or \"form\""),
        ];
        for (scheme, extra, expected) in cases {
            assert_eq!(source(scheme, extra).unwrap_err().to_string(), expected, "{scheme} {extra}");
        }
        let transformed = "[worker]\nenabled = false\n[sources.a]\nscheme = \"basic\"\nsecrets = [\"u:p\"]\n\
                           identity = { pointer = \"/id\" }\nbody = \"form\"\ndestinations = [\"app\"]\n\
                           [destinations.app]\nurl = \"http://127.0.0.1:9/\"\ntransform = \".\"\n";
        let err = validated(transformed, &[], Uses::Store).unwrap_err();
        assert_eq!(
            err.to_string(),
            "sources.a.body: a form source cannot deliver to a destination with a transform yet (\"app\" has one)"
        );
    }

    #[test]
    fn the_operators_commands_resolve_no_secret_and_load_no_tls_file() {
        let config = validated(UNRESOLVABLE, &[], Uses::Store).unwrap();
        assert!(config.sources.is_empty() && config.destinations.is_empty() && config.admin.is_none());
        assert!(config.server.tls.is_none());
        let sources: Vec<_> = config.retention().into_iter().map(|r| r.source).collect();
        assert_eq!(sources, ["a", "b"], "every source's retention, for the purge");
        assert!(config.has_destination("app") && !config.has_destination("other"));
        // What is not resolved is still validated.
        let broken = UNRESOLVABLE.replace("destinations = [\"app\"]", "destinations = [\"nope\"]");
        assert_eq!(validated(&broken, &[], Uses::Store).unwrap_err().key, "sources.a.destinations[0]");
    }

    #[test]
    fn serve_needs_every_secret_and_file_it_uses_and_names_the_missing_one() {
        let err = validated(UNRESOLVABLE, &[], Uses::Serve).unwrap_err();
        assert_eq!(err.key, "server.tls.cert");
        let plain = UNRESOLVABLE.replace("[server.tls]\ncert = \"missing-cert.pem\"\nkey = \"missing-key.pem\"\n", "");
        let err = validated(&plain, &[], Uses::Serve).unwrap_err();
        assert_eq!(err.to_string(), "destinations.app.secret: environment variable IDEMGATE_TEST_UNSET_APP is not set");
        let no_worker = format!("{plain}[worker]\nenabled = false\n");
        let err = validated(&no_worker, &[], Uses::Serve).unwrap_err();
        assert_eq!(err.key, "sources.a.secrets[0]", "serve without its worker signs nothing");
        let no_sources = plain.replace("secrets = [\"env:IDEMGATE_TEST_UNSET_A\"]", "secrets = [\"a-secret\"]");
        let no_sources = no_sources.replace("secrets = [\"env:IDEMGATE_TEST_UNSET_B\"]", "secrets = [\"b-secret\"]");
        let err = validated(&no_sources, &[], Uses::Serve).unwrap_err();
        assert_eq!(err.key, "destinations.app.secret");
        let err = validated(&format!("{no_sources}[worker]\nenabled = false\n"), &[], Uses::Serve).unwrap_err();
        assert_eq!(err.to_string(), "admin.token: environment variable IDEMGATE_TEST_UNSET_TOKEN is not set");
    }

    #[test]
    fn the_worker_needs_the_destinations_secrets_and_verify_one_sources() {
        let err = validated(UNRESOLVABLE, &[], Uses::Worker).unwrap_err();
        assert_eq!(err.key, "destinations.app.secret");
        let signed =
            UNRESOLVABLE.replace("env:IDEMGATE_TEST_UNSET_APP", "whsec_aWRlbWdhdGUtZGVzdGluYXRpb24tc2VjcmV0LTMyYiE=");
        let config = validated(&signed, &[], Uses::Worker).unwrap();
        assert!(config.destinations["app"].secret().is_some() && config.sources.is_empty() && config.admin.is_none());

        let text = UNRESOLVABLE.replace("env:IDEMGATE_TEST_UNSET_B", "b-secret");
        let raw = raw::parse(&text, Vec::new()).unwrap();
        let (source, _) = validate_source(raw, Path::new("."), "b").unwrap();
        assert_eq!(source.unwrap().id.as_str(), "b");
        let raw = raw::parse(&text, Vec::new()).unwrap();
        assert_eq!(validate_source(raw, Path::new("."), "a").unwrap_err().key, "sources.a.secrets[0]");
        let raw = raw::parse(&text, Vec::new()).unwrap();
        assert!(validate_source(raw, Path::new("."), "c").unwrap().0.is_none());
    }

    #[test]
    fn the_store_file_is_relative_to_the_config_files_folder() {
        let source = "[sources.a]\nscheme = \"github\"\nsecrets = [\"s\"]\n";
        let config = validated(source, &[], Uses::Store).unwrap();
        assert_eq!(config.store.path, Path::new("/etc/idemgate/data/idemgate.sqlite3"));
        let config = validated(&format!("[store]\npath = \"db/x.sqlite3\"\n{source}"), &[], Uses::Store).unwrap();
        assert_eq!(config.store.path, Path::new("/etc/idemgate/db/x.sqlite3"));
        let config = validated(source, &[("IDEMGATE_STORE__PATH", "/var/lib/x.sqlite3")], Uses::Store).unwrap();
        assert_eq!(config.store.path, Path::new("/var/lib/x.sqlite3"));
    }

    #[test]
    fn the_listing_shows_each_value_in_effect_with_its_origin_and_no_secret() {
        let text = "[server]\nlisten = \"127.0.0.1:9\"\n[sources.a]\nscheme = \"github\"\nsecrets = [\"literal-secret\", \"env:A_SECRET\"]\n";
        let env = [("IDEMGATE_SOURCES__A__BODY_LIMIT", "100"), ("IDEMGATE_ADMIN__TOKEN", "token-of-sixteen-chars")];
        let config = validated(text, &env, Uses::Store).unwrap();
        let entry = |key: &str| config.effective().entries().iter().find(|e| e.key == key).unwrap().clone();
        assert_eq!(entry("server.listen").origin, Origin::File);
        assert_eq!(entry("server.body_timeout").origin, Origin::Default);
        assert_eq!(entry("server.body_timeout").shown, Shown::Value("30s".into()));
        assert_eq!(entry("sources.a.body_limit").origin, Origin::Environment("IDEMGATE_SOURCES__A__BODY_LIMIT".into()));
        assert_eq!(entry("sources.a.body_limit").shown, Shown::Value(toml::Value::Integer(100)));
        let text = config.effective().to_string();
        assert!(text.contains("sources.a.secrets = [\"<redacted>\", \"env:A_SECRET\"]"), "{text}");
        assert!(text.contains("admin.token = \"<redacted>\""), "{text}");
        assert!(!text.contains("literal-secret") && !text.contains("token-of-sixteen"), "{text}");
    }
}
