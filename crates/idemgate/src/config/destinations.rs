//! `[destinations.<name>]`: where the worker forwards events, its timeouts, its retry
//! schedule and the secret it signs with, resolved only for a command that delivers.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use idemgate_core::{Secret, retry::RetryPolicy, scheme};
pub use idemgate_worker::smtp::Encryption;

use super::{
    ConfigError,
    effective::{self, Shown},
    raw::RawDestination,
    validated::{Reading, shown_duration},
};

const DEFAULT_DESTINATION_TIMEOUT: Duration = Duration::from_secs(15);

/// What a destination is, and what its kind alone needs.
#[derive(Debug, Clone)]
pub enum DestinationKind {
    /// An HTTP endpoint (`kind = "http"`, the default): signed webhooks.
    Http,
    /// A smarthost (`kind = "smtp"`): messages from an SMTP listener, relayed.
    Smtp(SmtpRelay),
}

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
    /// `http` or `smtp`, with what that kind needs.
    pub kind: DestinationKind,
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

/// Every destination validated; loaded with its secret when the command delivers.
pub(super) struct Destinations {
    /// Every name, for the sources' references.
    pub(super) names: BTreeSet<String>,
    /// The names of the `smtp` destinations, for the SMTP listeners' references.
    pub(super) smtp: BTreeSet<String>,
    /// Every attempt timeout, for the worker's lease.
    pub(super) timeouts: Vec<(String, Duration)>,
    /// The destinations the command delivers to.
    pub(super) delivered: BTreeMap<String, DestinationConfig>,
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
    };
    for (name, raw) in raw {
        if raw.kind.as_deref() == Some("smtp") {
            all.smtp.insert(name.clone());
        }
        let (timeout, loaded) = destination(&name, raw, r, delivers)?;
        all.timeouts.push((name.clone(), timeout));
        if let Some(loaded) = loaded {
            all.delivered.insert(name.clone(), loaded);
        }
        all.names.insert(name);
    }
    Ok(all)
}

/// One destination's attempt timeout, and the destination itself when the command `delivers`.
fn destination(
    name: &str,
    raw: RawDestination,
    r: &mut Reading<'_>,
    delivers: bool,
) -> Result<(Duration, Option<DestinationConfig>), ConfigError> {
    let key = format!("destinations.{name}");
    let kind = r.value(&format!("{key}.kind"), raw.kind.clone(), "http".to_owned());
    r.show(&format!("{key}.url"), Shown::Value(raw.url.clone().into()));
    let url: http::Uri = raw.url.parse().map_err(|_| ConfigError::new(format!("{key}.url"), "not a valid URL"))?;
    let smtp = match kind.as_str() {
        "http" => {
            if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
                return Err(ConfigError::new(format!("{key}.url"), "must be an http:// or https:// URL with a host"));
            }
            for (field, given) in [
                ("starttls", raw.starttls.is_some()),
                ("username", raw.username.is_some()),
                ("password", raw.password.is_some()),
                ("keep_key_header", raw.keep_key_header.is_some()),
            ] {
                if given {
                    return Err(ConfigError::new(format!("{key}.{field}"), "only for kind = \"smtp\""));
                }
            }
            None
        }
        "smtp" => Some(smtp_relay(&key, &url, &raw, r)?),
        other => {
            return Err(ConfigError::new(
                format!("{key}.kind"),
                format!("unknown kind {other:?} (use \"http\" or \"smtp\")"),
            ));
        }
    };
    let secret_key = format!("{key}.secret");
    match &raw.secret {
        Some(reference) => r.show(&secret_key, Shown::Value(effective::reference(reference))),
        None => r.show(&secret_key, Shown::Note("(none: deliveries are not signed)")),
    }
    let timeout = r.duration(&format!("{key}.timeout"), raw.timeout.as_deref(), DEFAULT_DESTINATION_TIMEOUT)?;
    let connect_timeout = r.duration(&format!("{key}.connect_timeout"), raw.connect_timeout.as_deref(), timeout)?;
    let policy = retry_policy(&key, &raw, r)?;
    let fifo = r.value(&format!("{key}.fifo"), raw.fifo, false);
    if !delivers {
        return Ok((timeout, None));
    }
    let kind = match smtp {
        None => DestinationKind::Http,
        Some((mut relay, password)) => {
            if let (Some((user, _)), Some(reference)) = (relay.credentials.take(), password) {
                let text = r.resolve(&format!("{key}.password"), &reference)?;
                relay.credentials = Some((user, Secret::new(text.into_bytes())));
            }
            DestinationKind::Smtp(relay)
        }
    };
    let secret = match raw.secret {
        None => None,
        Some(reference) => {
            let text = r.resolve(&secret_key, &reference)?;
            let decoded = scheme::OUTGOING.decode_secret(&text);
            Some(decoded.map_err(|err| ConfigError::new(secret_key, err.to_string()))?)
        }
    };
    Ok((timeout, Some(DestinationConfig { kind, url, secret, timeout, connect_timeout, policy, fifo })))
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
    if raw.secret.is_some() {
        return Err(ConfigError::new(format!("{key}.secret"), "only for kind = \"http\" (signed webhooks)"));
    }
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

fn retry_policy(key: &str, raw: &RawDestination, r: &mut Reading<'_>) -> Result<RetryPolicy, ConfigError> {
    let defaults = RetryPolicy::default();
    let schedule_key = format!("{key}.retry_schedule");
    let schedule: Vec<Duration> = match &raw.retry_schedule {
        None => defaults.schedule,
        Some(delays) => delays
            .iter()
            .enumerate()
            .map(|(i, d)| {
                humantime::parse_duration(d).map_err(|_| {
                    ConfigError::new(
                        format!("{schedule_key}[{i}]"),
                        format!("invalid duration {d:?} (use e.g. \"30s\", \"5m\", \"2h\")"),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
    };
    let shown = schedule.iter().map(|delay| shown_duration(*delay)).collect::<Vec<_>>();
    r.show(&schedule_key, Shown::Value(toml::Value::Array(shown)));
    let jitter = r.value(&format!("{key}.jitter"), raw.jitter, defaults.jitter);
    if !(0.0..=1.0).contains(&jitter) {
        return Err(ConfigError::new(format!("{key}.jitter"), "must be between 0.0 and 1.0"));
    }
    Ok(RetryPolicy {
        schedule,
        jitter,
        retry_after_cap: r.duration(
            &format!("{key}.retry_after_cap"),
            raw.retry_after_cap.as_deref(),
            defaults.retry_after_cap,
        )?,
        retry_client_errors: r.value(
            &format!("{key}.retry_client_errors"),
            raw.retry_client_errors,
            defaults.retry_client_errors,
        ),
    })
}
