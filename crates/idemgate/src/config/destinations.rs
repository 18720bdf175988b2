//! `[destinations.<name>]`: where the worker forwards events, its timeouts, its retry
//! schedule and the secret it signs with, resolved only for a command that delivers.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use idemgate_core::{Secret, retry::RetryPolicy, scheme};
use idemgate_jq::Program;

use super::{
    ConfigError,
    effective::{self, Shown},
    raw::RawDestination,
    validated::{Reading, shown_duration},
};

const DEFAULT_DESTINATION_TIMEOUT: Duration = Duration::from_secs(15);

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
    /// The body this destination gets instead of the original, compiled.
    pub transform: Option<Program>,
}

/// Every destination validated; loaded with its secret when the command delivers.
pub(super) struct Destinations {
    /// Every name, for the sources' references.
    pub(super) names: BTreeSet<String>,
    /// Every attempt timeout, for the worker's lease.
    pub(super) timeouts: Vec<(String, Duration)>,
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
        timeouts: Vec::new(),
        delivered: BTreeMap::new(),
        transforms: BTreeMap::new(),
    };
    for (name, raw) in raw {
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
    r.show(&format!("{key}.url"), Shown::Value(raw.url.clone().into()));
    let url: http::Uri = raw.url.parse().map_err(|_| ConfigError::new(format!("{key}.url"), "not a valid URL"))?;
    if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
        return Err(ConfigError::new(format!("{key}.url"), "must be an http:// or https:// URL with a host"));
    }
    let secret_key = format!("{key}.secret");
    match &raw.secret {
        Some(reference) => r.show(&secret_key, Shown::Value(effective::reference(reference))),
        None => r.show(&secret_key, Shown::Note("(none: deliveries are not signed)")),
    }
    let timeout = r.duration(&format!("{key}.timeout"), raw.timeout.as_deref(), DEFAULT_DESTINATION_TIMEOUT)?;
    let connect_timeout = r.duration(&format!("{key}.connect_timeout"), raw.connect_timeout.as_deref(), timeout)?;
    let policy = retry_policy(&key, &raw, r)?;
    let fifo = r.value(&format!("{key}.fifo"), raw.fifo, false);
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
    if !delivers {
        return Ok((timeout, transform, None));
    }
    let secret = match raw.secret {
        None => None,
        Some(reference) => {
            let text = r.resolve(&secret_key, &reference)?;
            let decoded = scheme::OUTGOING.decode_secret(&text);
            Some(decoded.map_err(|err| ConfigError::new(secret_key, err.to_string()))?)
        }
    };
    let loaded =
        DestinationConfig { url, secret, timeout, connect_timeout, policy, fifo, transform: transform.clone() };
    Ok((timeout, transform, Some(loaded)))
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
