//! `[destinations.<name>]`: where the worker forwards events (per kind: HTTP, RabbitMQ,
//! NATS, SMTP), its timeouts and the secret it signs with, resolved only for a command that
//! delivers; how it retries and is protected is [`policy`]'s.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use idemgate_core::{Secret, retry::RetryPolicy, scheme};
use idemgate_jq::Program;
use idemgate_worker::Protection;
pub use idemgate_worker::smtp::Encryption;

use self::policy::{protection, retry_policy};
use super::{
    ConfigError,
    effective::{self, Shown},
    raw::RawDestination,
    reading::Reading,
};

mod policy;

const DEFAULT_DESTINATION_TIMEOUT: Duration = Duration::from_secs(15);

/// `kind = "smtp"`: how the smarthost is reached.
#[derive(Debug, Clone)]
pub struct SmtpRelay {
    /// The host of `url`.
    pub host: String,
    /// The port of `url`; 25 for `smtp://`, 465 for `smtps://` by default.
    pub port: u16,
    /// `smtps://`, or the `starttls` policy.
    pub encryption: Encryption,
    /// `username` and `password`, when the smarthost wants AUTH.
    pub credentials: Option<(String, Secret)>,
    /// Relay the listener's key header too.
    pub keep_key_header: bool,
}

/// One `[destinations.<name>]`.
#[derive(Debug, Clone)]
pub struct DestinationConfig {
    /// What the destination is and where its events go, by its `kind`.
    pub target: Target,
    /// Total timeout of one attempt.
    pub timeout: Duration,
    /// Timeout for establishing the connection.
    pub connect_timeout: Duration,
    /// What follows a failed attempt.
    pub policy: RetryPolicy,
    /// Deliver the events of one ordering key strictly one after the other.
    pub fifo: bool,
    /// Its rate limit, in-flight cap and circuit breaker.
    pub protection: Protection,
    /// The body this destination gets instead of the original, compiled.
    pub transform: Option<Program>,
}

impl DestinationConfig {
    /// The outgoing signing secret of an HTTP destination.
    #[must_use]
    pub fn secret(&self) -> Option<&Secret> {
        match &self.target {
            Target::Http { secret, .. } => secret.as_ref(),
            Target::Rabbitmq { .. } | Target::Nats { .. } | Target::Smtp(_) => None,
        }
    }

    /// The URL of a broker destination, password included (its `Debug` hides it).
    #[must_use]
    pub fn broker_url(&self) -> Option<&str> {
        match &self.target {
            Target::Http { .. } | Target::Smtp(_) => None,
            Target::Rabbitmq { url, .. } | Target::Nats { url, .. } => Some(url.expose()),
        }
    }
}

/// A destination's `kind` and the keys only that kind has. A new kind is one variant
/// here, one in [`Kind`], and one arm in [`target`].
#[derive(Debug, Clone)]
pub enum Target {
    /// `kind = "http"`: an HTTP endpoint, the events signed when a secret is given.
    Http {
        /// Where events are posted; credentials in it go out as `Authorization: Basic`.
        url: DestinationUrl,
        /// Outgoing signing secret.
        secret: Option<Secret>,
    },
    /// `kind = "rabbitmq"`: an exchange of a RabbitMQ broker (AMQP 0.9.1).
    Rabbitmq {
        /// `amqp://` or `amqps://`, credentials included.
        url: DestinationUrl,
        /// The exchange (`""` is the default exchange).
        exchange: String,
        /// The routing key of every message.
        routing_key: String,
    },
    /// `kind = "nats"`: a subject of a NATS JetStream stream.
    Nats {
        /// `nats://` or `tls://`, credentials included.
        url: DestinationUrl,
        /// The subject published to.
        subject: String,
    },
    /// `kind = "smtp"`: a smarthost that relays the messages of the SMTP listeners.
    Smtp(SmtpRelay),
}

/// A destination's URL, which may carry a password: its `Debug` never shows it.
#[derive(Clone)]
pub struct DestinationUrl(String);

impl DestinationUrl {
    /// The URL itself, for connecting only.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for DestinationUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&redacted_url(&self.0))
    }
}

/// The kinds of destination, as `kind` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Http,
    Rabbitmq,
    Nats,
    Smtp,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Http, Kind::Rabbitmq, Kind::Nats, Kind::Smtp];

    fn name(self) -> &'static str {
        match self {
            Kind::Http => "http",
            Kind::Rabbitmq => "rabbitmq",
            Kind::Nats => "nats",
            Kind::Smtp => "smtp",
        }
    }

    /// The URL schemes of the kind.
    fn schemes(self) -> &'static [&'static str] {
        match self {
            Kind::Http => &["http", "https"],
            Kind::Rabbitmq => &["amqp", "amqps"],
            Kind::Nats => &["nats", "tls"],
            Kind::Smtp => &["smtp", "smtps"],
        }
    }
}

/// Every destination validated; loaded with its secret when the command delivers.
pub(super) struct Destinations {
    /// Every name, for the sources' references.
    pub(super) names: BTreeSet<String>,
    /// Every attempt timeout, for the worker's lease.
    pub(super) timeouts: Vec<(String, Duration)>,
    /// The names of the `smtp` destinations, for the SMTP listeners' references.
    pub(super) smtp: BTreeSet<String>,
    /// The destinations the command delivers to.
    pub(super) delivered: BTreeMap<String, DestinationConfig>,
    /// Every destination's transform, for the operator's views of what each one gets.
    pub(super) transforms: BTreeMap<String, Program>,
}

pub(super) fn destinations(
    raw: BTreeMap<String, RawDestination>,
    r: &mut Reading<'_>,
    delivers: bool,
) -> Result<Destinations, ConfigError> {
    let mut all = Destinations {
        names: BTreeSet::new(),
        smtp: BTreeSet::new(),
        timeouts: Vec::new(),
        delivered: BTreeMap::new(),
        transforms: BTreeMap::new(),
    };
    for (name, raw) in raw {
        if raw.kind.as_deref() == Some(Kind::Smtp.name()) {
            all.smtp.insert(name.clone());
        }
        let (timeout, transform, loaded) = destination(&name, raw, r, delivers)?;
        all.timeouts.push((name.clone(), timeout));
        if let Some(transform) = transform {
            all.transforms.insert(name.clone(), transform);
        }
        if let Some(loaded) = loaded {
            all.delivered.insert(name.clone(), loaded);
        }
        all.names.insert(name);
    }
    Ok(all)
}

/// One destination's attempt timeout and transform, and the destination itself when the
/// command `delivers`.
fn destination(
    name: &str,
    raw: RawDestination,
    r: &mut Reading<'_>,
    delivers: bool,
) -> Result<(Duration, Option<Program>, Option<DestinationConfig>), ConfigError> {
    let key = format!("destinations.{name}");
    let kind = kind(&key, &raw, r)?;
    let timeout = r.duration(&format!("{key}.timeout"), raw.timeout.as_deref(), DEFAULT_DESTINATION_TIMEOUT)?;
    let connect_timeout = r.duration(&format!("{key}.connect_timeout"), raw.connect_timeout.as_deref(), timeout)?;
    let policy = retry_policy(&key, &raw, r)?;
    let fifo = r.value(&format!("{key}.fifo"), raw.fifo, false);
    let protection = protection(&key, &raw, r)?;
    let transform_key = format!("{key}.transform");
    let transform = match &raw.transform {
        Some(text) => {
            r.show(&transform_key, Shown::Value(text.clone().into()));
            Some(Program::compile(text).map_err(|err| ConfigError::new(&transform_key, err.to_string()))?)
        }
        None => {
            r.show(&transform_key, Shown::Note("(none: the original body)"));
            None
        }
    };
    let target = target(&key, kind, raw, r, delivers)?;
    let loaded = target.map(|target| DestinationConfig {
        target,
        timeout,
        connect_timeout,
        policy,
        fifo,
        protection,
        transform: transform.clone(),
    });
    Ok((timeout, transform, loaded))
}

/// The destination's `kind`, with every key of another kind refused.
fn kind(key: &str, raw: &RawDestination, r: &mut Reading<'_>) -> Result<Kind, ConfigError> {
    let kind_key = format!("{key}.kind");
    let given = r.value(&kind_key, raw.kind.clone(), Kind::Http.name().to_owned());
    let Some(kind) = Kind::ALL.into_iter().find(|kind| kind.name() == given) else {
        let names = Kind::ALL.map(|kind| format!("\"{}\"", kind.name())).join(", ");
        return Err(ConfigError::new(kind_key, format!("must be one of {names}")));
    };
    let own: [(&str, bool, &[Kind]); 8] = [
        ("secret", raw.secret.is_some(), &[Kind::Http]),
        ("exchange", raw.exchange.is_some(), &[Kind::Rabbitmq]),
        ("routing_key", raw.routing_key.is_some(), &[Kind::Rabbitmq]),
        ("subject", raw.subject.is_some(), &[Kind::Nats]),
        ("starttls", raw.starttls.is_some(), &[Kind::Smtp]),
        ("username", raw.username.is_some(), &[Kind::Smtp]),
        ("password", raw.password.is_some(), &[Kind::Smtp]),
        ("keep_key_header", raw.keep_key_header.is_some(), &[Kind::Smtp]),
    ];
    for (name, given, kinds) in own {
        if given && !kinds.contains(&kind) {
            let names = kinds.iter().map(|kind| format!("kind = \"{}\"", kind.name())).collect::<Vec<_>>().join(", ");
            return Err(ConfigError::new(format!("{key}.{name}"), format!("only for {names}")));
        }
    }
    Ok(kind)
}

/// The kind's own keys, validated; resolved into a [`Target`] when the command `delivers`.
fn target(
    key: &str,
    kind: Kind,
    raw: RawDestination,
    r: &mut Reading<'_>,
    delivers: bool,
) -> Result<Option<Target>, ConfigError> {
    match kind {
        Kind::Http => http_target(key, raw, r, delivers),
        Kind::Smtp => smtp_target(key, &raw, r, delivers),
        Kind::Rabbitmq => {
            let url = BrokerReference::read(key, kind, raw.url, r)?;
            let exchange = r.value(&format!("{key}.exchange"), raw.exchange, String::new());
            let routing_key_key = format!("{key}.routing_key");
            let routing_key = match raw.routing_key {
                Some(routing_key) => routing_key,
                None if exchange.is_empty() => {
                    return Err(ConfigError::new(
                        routing_key_key,
                        "required with the default exchange: the name of the queue the events go to",
                    ));
                }
                None => String::new(),
            };
            r.show(&routing_key_key, Shown::Value(routing_key.clone().into()));
            for (name, value) in [("exchange", &exchange), ("routing_key", &routing_key)] {
                if value.len() > 255 {
                    return Err(ConfigError::new(format!("{key}.{name}"), "at most 255 bytes (AMQP's short string)"));
                }
            }
            let url = url.resolve(r, delivers)?;
            Ok(url.map(|url| Target::Rabbitmq { url, exchange, routing_key }))
        }
        Kind::Nats => {
            let url = BrokerReference::read(key, kind, raw.url, r)?;
            let subject_key = format!("{key}.subject");
            let Some(subject) = raw.subject else {
                return Err(ConfigError::new(subject_key, "required: the subject the events are published to"));
            };
            r.show(&subject_key, Shown::Value(subject.clone().into()));
            if !valid_subject(&subject) {
                return Err(ConfigError::new(
                    subject_key,
                    "must be a subject without wildcards: tokens of printable characters but *, > and \
                     whitespace, separated by single dots",
                ));
            }
            let url = url.resolve(r, delivers)?;
            Ok(url.map(|url| Target::Nats { url, subject }))
        }
    }
}

/// `kind = "smtp"`: the smarthost, its password resolved when the command `delivers`.
fn smtp_target(
    key: &str,
    raw: &RawDestination,
    r: &mut Reading<'_>,
    delivers: bool,
) -> Result<Option<Target>, ConfigError> {
    let url_key = format!("{key}.url");
    r.show(&url_key, Shown::Value(raw.url.clone().into()));
    let url: http::Uri = raw.url.parse().map_err(|_| ConfigError::new(url_key, "not a valid URL"))?;
    let (mut relay, password) = smtp_relay(key, &url, raw, r)?;
    if !delivers {
        return Ok(None);
    }
    if let (Some((user, _)), Some(reference)) = (relay.credentials.take(), password) {
        let text = r.resolve(&format!("{key}.password"), &reference)?;
        relay.credentials = Some((user, Secret::new(text.into_bytes())));
    }
    Ok(Some(Target::Smtp(relay)))
}

/// `kind = "smtp"`: the smarthost from `url`, the `starttls` policy and the credentials
/// (the password still a reference, resolved only for a command that delivers).
fn smtp_relay(
    key: &str,
    url: &http::Uri,
    raw: &RawDestination,
    r: &mut Reading<'_>,
) -> Result<(SmtpRelay, Option<String>), ConfigError> {
    let implicit = match url.scheme_str() {
        Some("smtp") => false,
        Some("smtps") => true,
        _ => return Err(ConfigError::new(format!("{key}.url"), "must be an smtp:// or smtps:// URL with a host")),
    };
    let Some(host) = url.host().filter(|host| !host.is_empty()) else {
        return Err(ConfigError::new(format!("{key}.url"), "must be an smtp:// or smtps:// URL with a host"));
    };
    if url.path_and_query().is_some_and(|p| p.as_str() != "/" && !p.as_str().is_empty()) {
        return Err(ConfigError::new(format!("{key}.url"), "takes no path or query: smtp://host:port"));
    }
    let port = url.port_u16().unwrap_or(if implicit { 465 } else { 25 });
    let starttls_key = format!("{key}.starttls");
    let encryption = if implicit {
        if raw.starttls.is_some() {
            return Err(ConfigError::new(starttls_key, "not with smtps://, which is TLS from the first byte"));
        }
        r.show(&starttls_key, Shown::Note("(smtps://: implicit TLS)"));
        Encryption::Implicit
    } else {
        match r.value(&starttls_key, raw.starttls.clone(), "required".to_owned()).as_str() {
            "required" => Encryption::StartTlsRequired,
            "opportunistic" => Encryption::StartTlsOpportunistic,
            "never" => Encryption::Never,
            other => {
                return Err(ConfigError::new(
                    starttls_key,
                    format!("unknown policy {other:?} (use \"required\", \"opportunistic\" or \"never\")"),
                ));
            }
        }
    };
    let credentials = match (&raw.username, &raw.password) {
        (Some(user), Some(password)) => {
            r.show(&format!("{key}.username"), Shown::Value(user.clone().into()));
            r.show(&format!("{key}.password"), Shown::Value(effective::reference(password)));
            Some((user.clone(), Secret::new(Vec::new())))
        }
        (None, None) => {
            r.show(&format!("{key}.username"), Shown::Note("(none: no AUTH at the smarthost)"));
            None
        }
        (Some(_), None) => return Err(ConfigError::new(format!("{key}.password"), "required with username")),
        (None, Some(_)) => return Err(ConfigError::new(format!("{key}.username"), "required with password")),
    };
    let keep_key_header = r.value(&format!("{key}.keep_key_header"), raw.keep_key_header, false);
    let relay = SmtpRelay { host: host.to_owned(), port, encryption, credentials, keep_key_header };
    Ok((relay, raw.password.clone()))
}

fn http_target(
    key: &str,
    raw: RawDestination,
    r: &mut Reading<'_>,
    delivers: bool,
) -> Result<Option<Target>, ConfigError> {
    let url_key = format!("{key}.url");
    r.show(&url_key, Shown::Value(redacted_url(&raw.url).into()));
    let url: http::Uri = raw.url.parse().map_err(|_| ConfigError::new(url_key.clone(), "not a valid URL"))?;
    if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
        return Err(ConfigError::new(url_key, "must be an http:// or https:// URL with a host"));
    }
    let secret_key = format!("{key}.secret");
    match &raw.secret {
        Some(reference) => r.show(&secret_key, Shown::Value(effective::reference(reference))),
        None => r.show(&secret_key, Shown::Note("(none: deliveries are not signed)")),
    }
    if !delivers {
        return Ok(None);
    }
    let secret = match raw.secret {
        None => None,
        Some(reference) => {
            let text = r.resolve(&secret_key, &reference)?;
            let decoded = scheme::OUTGOING.decode_secret(&text);
            Some(decoded.map_err(|err| ConfigError::new(secret_key, err.to_string()))?)
        }
    };
    Ok(Some(Target::Http { url: DestinationUrl(raw.url), secret }))
}

/// A broker destination's `url`: a literal URL (shown with its password redacted, checked
/// at once) or an `env:`/`file:` reference to one (shown as written, checked once resolved).
struct BrokerReference {
    key: String,
    kind: Kind,
    reference: String,
    literal: bool,
}

impl BrokerReference {
    fn read(key: &str, kind: Kind, reference: String, r: &mut Reading<'_>) -> Result<Self, ConfigError> {
        let key = format!("{key}.url");
        let literal = !reference.starts_with("env:") && !reference.starts_with("file:");
        let shown = if literal { redacted_url(&reference) } else { reference.clone() };
        r.show(&key, Shown::Value(shown.into()));
        if literal {
            broker_url(&key, kind, &reference)?;
        }
        Ok(Self { key, kind, reference, literal })
    }

    /// The URL itself, when the command `delivers`.
    fn resolve(self, r: &mut Reading<'_>, delivers: bool) -> Result<Option<DestinationUrl>, ConfigError> {
        if !delivers {
            return Ok(None);
        }
        let url = if self.literal { self.reference } else { r.resolve(&self.key, &self.reference)? };
        broker_url(&self.key, self.kind, &url)?;
        Ok(Some(DestinationUrl(url)))
    }
}

/// A broker URL's scheme must be the kind's, and it must name a host. The error never
/// quotes the URL (it may hold a password).
fn broker_url(key: &str, kind: Kind, url: &str) -> Result<(), ConfigError> {
    let schemes = kind.schemes();
    let expected = schemes.iter().map(|scheme| format!("{scheme}://")).collect::<Vec<_>>().join(" or ");
    let wrong = || ConfigError::new(key, format!("must be an {expected} URL with a host (kind = \"{}\")", kind.name()));
    let (scheme, rest) = url.split_once("://").ok_or_else(wrong)?;
    if !schemes.contains(&scheme) {
        return Err(wrong());
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    if host.is_empty() || host.starts_with(':') {
        return Err(wrong());
    }
    Ok(())
}

/// `scheme://user:<redacted>@host/...` for a URL with a password, the URL otherwise.
fn redacted_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let Some((userinfo, host)) = authority.rsplit_once('@') else { return url.to_owned() };
    let Some((user, _)) = userinfo.split_once(':') else { return url.to_owned() };
    format!("{scheme}://{user}:{}@{host}{path}", effective::REDACTED)
}

/// A NATS subject one can publish to: dot-separated non-empty tokens, no wildcards.
fn valid_subject(subject: &str) -> bool {
    !subject.is_empty()
        && subject.split('.').all(|token| {
            !token.is_empty() && token != "*" && token != ">" && token.chars().all(|c| c.is_ascii_graphic())
        })
        && !subject.contains(['*', '>'])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{Config, Uses, raw, validated::validate_for};

    fn validated(destination: &str, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let text = format!("[sources.a]\nscheme = \"github\"\nsecrets = [\"s\"]\n[destinations.d]\n{destination}\n");
        let env = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
        validate_for(raw::parse(&text, env)?, Path::new("/etc/idemgate"), Uses::Everything).map(|(config, _)| config)
    }

    fn error(destination: &str) -> ConfigError {
        validated(destination, &[]).unwrap_err()
    }

    fn shown(config: &Config, key: &str) -> String {
        let entry = config.effective().entries().iter().find(|entry| entry.key == key).unwrap();
        match &entry.shown {
            Shown::Value(value) => value.to_string(),
            Shown::Note(note) => (*note).to_owned(),
        }
    }

    #[test]
    fn a_destination_without_a_kind_is_http() {
        let config = validated("url = \"http://127.0.0.1:1/\"", &[]).unwrap();
        assert!(matches!(config.destinations["d"].target, Target::Http { .. }));
        assert_eq!(shown(&config, "destinations.d.kind"), "\"http\"");
    }

    #[test]
    fn an_http_destination_never_shows_the_password_in_its_url() {
        let config = validated("url = \"https://hooks:hunter2@127.0.0.1:1/in\"", &[]).unwrap();
        let destination = &config.destinations["d"];
        let Target::Http { url, .. } = &destination.target else { panic!("not http") };
        assert_eq!(url.expose(), "https://hooks:hunter2@127.0.0.1:1/in");
        assert_eq!(shown(&config, "destinations.d.url"), "\"https://hooks:<redacted>@127.0.0.1:1/in\"");
        assert!(!format!("{destination:?}").contains("hunter2"));
        assert!(!config.effective().to_string().contains("hunter2"));
    }

    #[test]
    fn a_rabbitmq_destination_reads_its_keys_and_never_shows_its_password() {
        let config = validated(
            "kind = \"rabbitmq\"\nurl = \"amqp://guest:hunter2@127.0.0.1:5672/%2f\"\nexchange = \"ex\"\nrouting_key = \"rk\"",
            &[],
        )
        .unwrap();
        let destination = &config.destinations["d"];
        let Target::Rabbitmq { url, exchange, routing_key } = &destination.target else { panic!("not rabbitmq") };
        assert_eq!(
            (url.expose(), exchange.as_str(), routing_key.as_str()),
            ("amqp://guest:hunter2@127.0.0.1:5672/%2f", "ex", "rk")
        );
        assert_eq!(shown(&config, "destinations.d.url"), "\"amqp://guest:<redacted>@127.0.0.1:5672/%2f\"");
        assert!(!format!("{destination:?}").contains("hunter2"));
        assert!(!config.effective().to_string().contains("hunter2"));
    }

    #[test]
    fn a_broker_url_may_be_a_reference_checked_once_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("nats-url");
        std::fs::write(&file, "nats://u:hunter2@127.0.0.1:4222").unwrap();
        let destination = format!("kind = \"nats\"\nurl = \"file:{}\"\nsubject = \"events.in\"", file.display());
        let config = validated(&destination, &[]).unwrap();
        assert_eq!(config.destinations["d"].broker_url(), Some("nats://u:hunter2@127.0.0.1:4222"));
        assert_eq!(shown(&config, "destinations.d.url"), format!("\"file:{}\"", file.display()));
        std::fs::write(&file, "amqp://u:hunter2@127.0.0.1/").unwrap();
        let err = validated(&destination, &[]).unwrap_err();
        assert_eq!(err.key, "destinations.d.url");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }

    #[test]
    fn the_url_scheme_must_be_the_kinds() {
        let err = error("kind = \"rabbitmq\"\nurl = \"nats://127.0.0.1:4222\"\nrouting_key = \"q\"");
        assert_eq!(err.key, "destinations.d.url");
        assert!(err.message.contains("amqp://"), "{err}");
        let err = error("kind = \"nats\"\nurl = \"amqp://u:secretpw@127.0.0.1/\"\nsubject = \"s\"");
        assert_eq!(err.key, "destinations.d.url");
        assert!(!err.to_string().contains("secretpw"));
        assert_eq!(error("kind = \"nats\"\nurl = \"nats://\"\nsubject = \"s\"").key, "destinations.d.url");
        assert_eq!(error("url = \"amqp://127.0.0.1/\"").key, "destinations.d.url");
    }

    #[test]
    fn a_kind_needs_its_own_keys_and_refuses_the_others() {
        assert_eq!(error("kind = \"kafka\"\nurl = \"http://127.0.0.1:1/\"").key, "destinations.d.kind");
        assert_eq!(error("kind = \"rabbitmq\"\nurl = \"amqp://127.0.0.1/\"").key, "destinations.d.routing_key");
        assert_eq!(error("kind = \"nats\"\nurl = \"nats://127.0.0.1:4222\"").key, "destinations.d.subject");
        assert_eq!(
            error("kind = \"nats\"\nurl = \"nats://127.0.0.1:4222\"\nsubject = \"a.*\"").key,
            "destinations.d.subject"
        );
        assert_eq!(
            error("kind = \"nats\"\nurl = \"nats://127.0.0.1:4222\"\nsubject = \"a..b\"").key,
            "destinations.d.subject"
        );
        let err = error("kind = \"nats\"\nurl = \"nats://127.0.0.1:4222\"\nsubject = \"s\"\nsecret = \"x\"");
        assert_eq!(err.key, "destinations.d.secret");
        assert_eq!(error("url = \"http://127.0.0.1:1/\"\nsubject = \"s\"").key, "destinations.d.subject");
        assert_eq!(
            error("kind = \"nats\"\nurl = \"nats://127.0.0.1:4222\"\nsubject = \"s\"\nexchange = \"e\"").key,
            "destinations.d.exchange"
        );
        // A named exchange may go without a routing key (a fanout exchange ignores it).
        let config = validated("kind = \"rabbitmq\"\nurl = \"amqp://127.0.0.1/\"\nexchange = \"fan\"", &[]).unwrap();
        assert!(
            matches!(&config.destinations["d"].target, Target::Rabbitmq { routing_key, .. } if routing_key.is_empty())
        );
    }

    #[test]
    fn a_password_is_redacted_only_where_there_is_one() {
        assert_eq!(redacted_url("amqp://u:p@h:1/v?x=1"), "amqp://u:<redacted>@h:1/v?x=1");
        assert_eq!(redacted_url("amqp://u@h/"), "amqp://u@h/");
        assert_eq!(redacted_url("nats://h:4222"), "nats://h:4222");
        assert_eq!(redacted_url("nats://u:p:q@h"), "nats://u:<redacted>@h");
    }
}
