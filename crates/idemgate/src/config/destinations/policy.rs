//! How the worker treats one destination, apart from where it is: the retry schedule and
//! the protection (rate limit, in-flight cap, circuit breaker), each key optional and
//! shown with its effective value.

use std::time::Duration;

use idemgate_core::{breaker::BreakerPolicy, retry::RetryPolicy};
use idemgate_worker::{Protection, RateLimit};

use crate::config::{
    ConfigError,
    effective::Shown,
    raw::{RawBreaker, RawDestination},
    reading::{Reading, shown_duration},
};

/// `retry_schedule`, `jitter`, `retry_after_cap` and `retry_client_errors`, each defaulted.
pub(super) fn retry_policy(key: &str, raw: &RawDestination, r: &mut Reading<'_>) -> Result<RetryPolicy, ConfigError> {
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

/// How often a paused destination is probed unless `probe_interval` says.
const DEFAULT_PROBE_INTERVAL: Duration = Duration::from_secs(30);

/// `rate_limit`, `burst`, `max_in_flight` and `[….breaker]`, each optional.
pub(super) fn protection(key: &str, raw: &RawDestination, r: &mut Reading<'_>) -> Result<Protection, ConfigError> {
    let rate_key = format!("{key}.rate_limit");
    let burst_key = format!("{key}.burst");
    let rate_limit = match raw.rate_limit {
        None => {
            r.show(&rate_key, Shown::Note("(none)"));
            if raw.burst.is_some() {
                return Err(ConfigError::new(burst_key, "needs rate_limit (attempts per second)"));
            }
            None
        }
        Some(per_second) => {
            if !(0.001..=1_000_000.0).contains(&per_second) {
                return Err(ConfigError::new(rate_key, "must be from 0.001 to 1000000 attempts per second"));
            }
            r.show(&rate_key, Shown::Value(toml::Value::Float(per_second)));
            // One second's worth by default, at least one attempt.
            let default_burst = u32::try_from(per_second.ceil() as u64).unwrap_or(u32::MAX).max(1);
            let burst = r.value(&burst_key, raw.burst.map(i64::from), i64::from(default_burst));
            let burst = u32::try_from(burst).unwrap_or(0);
            if burst == 0 {
                return Err(ConfigError::new(burst_key, "must be at least 1"));
            }
            Some(RateLimit { per_second, burst })
        }
    };
    let cap_key = format!("{key}.max_in_flight");
    let max_in_flight = match raw.max_in_flight {
        None => {
            r.show(&cap_key, Shown::Note("(no cap)"));
            None
        }
        Some(0) => return Err(ConfigError::new(cap_key, "must be at least 1")),
        Some(cap) => Some(r.count(&cap_key, Some(cap), cap)),
    };
    let breaker = match &raw.breaker {
        None => {
            r.show(&format!("{key}.breaker"), Shown::Note("(none: never paused)"));
            None
        }
        Some(raw) => Some(breaker(&format!("{key}.breaker"), raw, r)?),
    };
    Ok(Protection { rate_limit, max_in_flight, breaker })
}

fn breaker(key: &str, raw: &RawBreaker, r: &mut Reading<'_>) -> Result<BreakerPolicy, ConfigError> {
    let failures_key = format!("{key}.pause_after_failures");
    let after_key = format!("{key}.pause_after");
    if raw.pause_after_failures.is_none() && raw.pause_after.is_none() {
        return Err(ConfigError::new(key, "needs pause_after_failures, pause_after or both"));
    }
    let pause_after_failures = match raw.pause_after_failures {
        None => {
            r.show(&failures_key, Shown::Note("(not by count)"));
            None
        }
        Some(0) => return Err(ConfigError::new(failures_key, "must be at least 1")),
        Some(n) => {
            r.show(&failures_key, Shown::Value(toml::Value::Integer(i64::from(n))));
            Some(n)
        }
    };
    let pause_after = match raw.pause_after.as_deref() {
        None => {
            r.show(&after_key, Shown::Note("(not by time)"));
            None
        }
        Some(text) => {
            let after = r.duration(&after_key, Some(text), Duration::ZERO)?;
            if after.is_zero() {
                return Err(ConfigError::new(after_key, "must be longer than 0s"));
            }
            Some(after)
        }
    };
    let interval_key = format!("{key}.probe_interval");
    let probe_interval = r.duration(&interval_key, raw.probe_interval.as_deref(), DEFAULT_PROBE_INTERVAL)?;
    if probe_interval < Duration::from_millis(1) {
        return Err(ConfigError::new(interval_key, "must be at least 1ms"));
    }
    Ok(BreakerPolicy { pause_after_failures, pause_after, probe_interval })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::{path::Path, time::Duration};

    use idemgate_core::breaker::BreakerPolicy;
    use idemgate_worker::{Protection, RateLimit};

    use crate::config::{
        ConfigError,
        effective::Shown,
        raw,
        validated::{Uses, validate_for},
    };

    const BASE: &str = "[sources.a]\nscheme = \"github\"\nsecrets = [\"s\"]\ndestinations = [\"app\"]\n\
                        [destinations.app]\nurl = \"http://127.0.0.1:1/\"\n";

    fn configured(extra: &str) -> Result<(Protection, crate::config::Config), ConfigError> {
        let raw = raw::parse(&format!("{BASE}{extra}"), Vec::new())?;
        let (config, _) = validate_for(raw, Path::new("/etc/idemgate"), Uses::Worker)?;
        Ok((config.destinations["app"].protection, config))
    }

    #[test]
    fn no_protection_unless_configured() {
        let (protection, config) = configured("").unwrap();
        assert_eq!(protection, Protection::default());
        let shown = |key: &str| config.effective().entries().iter().find(|e| e.key == key).unwrap().shown.clone();
        assert_eq!(shown("destinations.app.rate_limit"), Shown::Note("(none)"));
        assert_eq!(shown("destinations.app.breaker"), Shown::Note("(none: never paused)"));
    }

    #[test]
    fn the_rate_limit_cap_and_breaker_as_configured_and_shown() {
        let (protection, config) = configured(
            "rate_limit = 2.5\nmax_in_flight = 4\n[destinations.app.breaker]\npause_after_failures = 5\npause_after = \"2m\"\n",
        )
        .unwrap();
        assert_eq!(protection.rate_limit, Some(RateLimit { per_second: 2.5, burst: 3 }), "one second's worth");
        assert_eq!(protection.max_in_flight, Some(4));
        assert_eq!(
            protection.breaker,
            Some(BreakerPolicy {
                pause_after_failures: Some(5),
                pause_after: Some(Duration::from_secs(120)),
                probe_interval: Duration::from_secs(30),
            })
        );
        let shown = |key: &str| config.effective().entries().iter().find(|e| e.key == key).unwrap().shown.clone();
        assert_eq!(shown("destinations.app.burst"), Shown::Value(toml::Value::Integer(3)));
        assert_eq!(shown("destinations.app.breaker.probe_interval"), Shown::Value("30s".into()));
        let (protection, _) = configured("rate_limit = 20\nburst = 1\n").unwrap();
        assert_eq!(protection.rate_limit, Some(RateLimit { per_second: 20.0, burst: 1 }));
    }

    #[test]
    fn bad_values_are_refused_naming_the_key() {
        for (extra, key) in [
            ("rate_limit = 0\n", "destinations.app.rate_limit"),
            ("rate_limit = -1.5\n", "destinations.app.rate_limit"),
            ("rate_limit = 0.0000001\n", "destinations.app.rate_limit"),
            ("rate_limit = nan\n", "destinations.app.rate_limit"),
            ("burst = 3\n", "destinations.app.burst"),
            ("rate_limit = 5\nburst = 0\n", "destinations.app.burst"),
            ("max_in_flight = 0\n", "destinations.app.max_in_flight"),
            ("[destinations.app.breaker]\nprobe_interval = \"5s\"\n", "destinations.app.breaker"),
            ("[destinations.app.breaker]\npause_after_failures = 0\n", "destinations.app.breaker.pause_after_failures"),
            ("[destinations.app.breaker]\npause_after = \"soon\"\n", "destinations.app.breaker.pause_after"),
            ("[destinations.app.breaker]\npause_after = \"0s\"\n", "destinations.app.breaker.pause_after"),
            (
                "[destinations.app.breaker]\npause_after_failures = 3\nprobe_interval = \"0s\"\n",
                "destinations.app.breaker.probe_interval",
            ),
        ] {
            let err = configured(extra).unwrap_err();
            assert_eq!(err.key, key, "{extra}: {err}");
        }
        let err = configured("[destinations.app.breaker]\npause_after_failure = 3\n").unwrap_err();
        assert!(err.to_string().contains("pause_after_failure"), "an unknown key is refused: {err}");
    }
}
