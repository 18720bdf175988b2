//! `[alerts]`: signed webhooks to a configured destination when jobs go dead, a
//! destination is disabled (or paused), or the oldest waiting job is too old. The alert
//! destination is an ordinary `[destinations.*]` (its URL, secret and retry schedule), so
//! alerts go through the durable queue like any event; it is left out of the conditions
//! itself, so an alert that cannot be delivered never alerts about itself.

use std::time::Duration;

use idemgate_core::alert::{ALERT_SOURCE, Rules};

use super::{ConfigError, effective::Shown, raw::RawAlerts, reading::Reading};

/// `[alerts] check_interval`.
const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(10);
/// `[alerts] min_interval`.
const DEFAULT_MIN_INTERVAL: Duration = Duration::from_secs(15 * 60);

/// `[alerts]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertsConfig {
    /// The `[destinations.*]` alerts are sent to.
    pub destination: String,
    /// Which conditions are watched and how often an alert may be sent.
    pub rules: Rules,
    /// How often the store is read for the conditions.
    pub check_interval: Duration,
}

fn seconds(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

/// `[alerts]`, if given; `destinations` names every configured destination.
pub(super) fn alerts(
    raw: Option<RawAlerts>,
    destinations: &std::collections::BTreeSet<String>,
    r: &mut Reading<'_>,
) -> Result<Option<AlertsConfig>, ConfigError> {
    let Some(raw) = raw else {
        r.show("alerts.destination", Shown::Note("(not set: alerts are off)"));
        return Ok(None);
    };
    let destination = r.value("alerts.destination", Some(raw.destination), String::new());
    if !destinations.contains(&destination) {
        return Err(ConfigError::new("alerts.destination", format!("no destination named {destination:?}")));
    }
    let dead_jobs = r.value("alerts.dead_jobs", raw.dead_jobs, true);
    let destination_disabled = r.value("alerts.destination_disabled", raw.destination_disabled, true);
    let destination_paused = r.value("alerts.destination_paused", raw.destination_paused, true);
    let oldest_waiting = match raw.oldest_waiting.as_deref() {
        Some(text) => {
            let threshold = r.duration("alerts.oldest_waiting", Some(text), Duration::ZERO)?;
            if threshold.is_zero() {
                return Err(ConfigError::new("alerts.oldest_waiting", "must be longer than 0s"));
            }
            Some(seconds(threshold))
        }
        None => {
            r.show("alerts.oldest_waiting", Shown::Note("(not set: off)"));
            None
        }
    };
    let check_interval = r.duration("alerts.check_interval", raw.check_interval.as_deref(), DEFAULT_CHECK_INTERVAL)?;
    if check_interval.is_zero() {
        return Err(ConfigError::new("alerts.check_interval", "must be longer than 0s"));
    }
    let min_interval = r.duration("alerts.min_interval", raw.min_interval.as_deref(), DEFAULT_MIN_INTERVAL)?;
    if min_interval < Duration::from_secs(1) {
        return Err(ConfigError::new("alerts.min_interval", "must be at least 1s"));
    }
    r.show("alerts.source", Shown::Value(ALERT_SOURCE.into()));
    let rules = Rules {
        dead_jobs,
        destination_disabled,
        destination_paused,
        oldest_waiting,
        min_interval: seconds(min_interval),
    };
    Ok(Some(AlertsConfig { destination, rules, check_interval }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{Config, Uses, raw, validated::validate_for};

    const BASE: &str = "[sources.a]\nscheme = \"github\"\nsecrets = [\"s\"]\ndestinations = [\"app\"]\n\
        [destinations.app]\nurl = \"http://127.0.0.1:1/\"\n[destinations.ops]\nurl = \"http://127.0.0.1:2/\"\n";

    fn config(extra: &str) -> Result<Config, ConfigError> {
        let raw = raw::parse(&format!("{BASE}{extra}"), Vec::new())?;
        validate_for(raw, Path::new("."), Uses::Store).map(|(config, _)| config)
    }

    #[test]
    fn alerts_are_off_without_the_table_and_take_their_defaults_with_it() {
        assert_eq!(config("").unwrap().alerts, None);
        let config = config("[alerts]\ndestination = \"ops\"\n").unwrap();
        let alerts = config.alerts.clone().unwrap();
        assert_eq!(alerts.destination, "ops");
        assert_eq!(alerts.check_interval, Duration::from_secs(10));
        assert_eq!(
            alerts.rules,
            Rules {
                dead_jobs: true,
                destination_disabled: true,
                destination_paused: true,
                oldest_waiting: None,
                min_interval: 900
            }
        );
        let text = config.effective().to_string();
        assert!(
            text.contains("alerts.destination = \"ops\"") && text.contains("alerts.min_interval = \"15m\""),
            "{text}"
        );
    }

    #[test]
    fn every_alerts_key_is_validated_and_named() {
        let err = config("[alerts]\ndestination = \"nope\"\n").unwrap_err();
        assert_eq!(err.to_string(), "alerts.destination: no destination named \"nope\"");
        for (key, value) in [("oldest_waiting", "\"0s\""), ("check_interval", "\"soon\""), ("min_interval", "\"0s\"")] {
            let err = config(&format!("[alerts]\ndestination = \"ops\"\n{key} = {value}\n")).unwrap_err();
            assert_eq!(err.key, format!("alerts.{key}"));
        }
        assert_eq!(config("[alerts]\ndestination = \"ops\"\ndead = true\n").unwrap_err().key, "alerts.dead");
        let given = config("[alerts]\ndestination = \"ops\"\ndead_jobs = false\noldest_waiting = \"15m\"\n").unwrap();
        let rules = given.alerts.unwrap().rules;
        assert_eq!((rules.dead_jobs, rules.oldest_waiting), (false, Some(900)));
    }

    #[test]
    fn no_source_may_take_the_alerts_source_id() {
        let err = config("[sources.idemgate-alerts]\nscheme = \"github\"\nsecrets = [\"s\"]\n").unwrap_err();
        assert_eq!(err.key, "sources.idemgate-alerts");
        assert!(err.message.contains("reserved"), "{err}");
    }
}
