//! `[metrics]`: where `/metrics` is served and how often the queue's gauges are read from
//! the store. By default it is on the public port, as it always was; `"admin"` moves it to
//! the admin listener, and an address gives it a listener of its own, which is also how
//! `idemgate worker` (with no public listener) serves it.

use std::{net::SocketAddr, time::Duration};

use super::{ConfigError, raw::RawMetrics, reading::Reading};

/// `[metrics] refresh_interval`.
const DEFAULT_METRICS_REFRESH: Duration = Duration::from_secs(5);

/// Where `/metrics` is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsListen {
    /// On the public listener (`[server] listen`); `idemgate worker` serves none.
    Public,
    /// On the admin listener (`[admin] listen`), next to the admin API; `idemgate worker`
    /// serves none.
    Admin,
    /// On a listener of its own, for `serve` and `worker` alike.
    Address(SocketAddr),
}

/// `[metrics]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsConfig {
    /// Where `/metrics` is served.
    pub listen: MetricsListen,
    /// How often the queue's gauges are read from the store (never on a scrape).
    pub refresh_interval: Duration,
}

/// `[metrics]`; `has_admin` says whether `[admin]` has a token (the admin API runs).
pub(super) fn metrics(raw: RawMetrics, has_admin: bool, r: &mut Reading<'_>) -> Result<MetricsConfig, ConfigError> {
    let text = r.value("metrics.listen", raw.listen, "public".to_owned());
    let listen = match text.as_str() {
        "public" => MetricsListen::Public,
        "admin" if has_admin => MetricsListen::Admin,
        "admin" => {
            return Err(ConfigError::new(
                "metrics.listen",
                "\"admin\" needs the admin API: set [admin] token, or use \"public\" or HOST:PORT",
            ));
        }
        address if !address.contains(':') => {
            return Err(ConfigError::new(
                "metrics.listen",
                format!("{address:?} is not \"public\", \"admin\" or HOST:PORT"),
            ));
        }
        address => MetricsListen::Address(super::listeners::address("metrics.listen", address)?),
    };
    let refresh_interval =
        r.duration("metrics.refresh_interval", raw.refresh_interval.as_deref(), DEFAULT_METRICS_REFRESH)?;
    if refresh_interval.is_zero() {
        return Err(ConfigError::new("metrics.refresh_interval", "must be longer than 0s"));
    }
    Ok(MetricsConfig { listen, refresh_interval })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{Uses, effective::Shown, origin::Origin, raw, validated::validate_for};

    const SOURCE: &str = "[sources.a]\nscheme = \"github\"\nsecrets = [\"s\"]\n";

    fn metrics(extra: &str, env: &[(&str, &str)]) -> Result<crate::config::Config, ConfigError> {
        let env = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
        let raw = raw::parse(&format!("{SOURCE}{extra}"), env)?;
        validate_for(raw, Path::new("."), Uses::Store).map(|(config, _)| config)
    }

    #[test]
    fn metrics_stay_on_the_public_port_by_default_and_are_listed() {
        let config = metrics("", &[]).unwrap();
        assert_eq!(
            config.metrics,
            MetricsConfig { listen: MetricsListen::Public, refresh_interval: DEFAULT_METRICS_REFRESH }
        );
        let entry = |key: &str| config.effective().entries().iter().find(|e| e.key == key).unwrap().clone();
        assert_eq!(
            (entry("metrics.listen").shown, entry("metrics.listen").origin),
            (Shown::Value("public".into()), Origin::Default)
        );
        assert_eq!(entry("metrics.refresh_interval").shown, Shown::Value("5s".into()));
    }

    #[test]
    fn metrics_listen_takes_admin_with_a_token_or_an_address() {
        let admin = "[admin]\ntoken = \"env:UNSET\"\n[metrics]\nlisten = \"admin\"\n";
        assert_eq!(metrics(admin, &[]).unwrap().metrics.listen, MetricsListen::Admin);
        let err = metrics("[metrics]\nlisten = \"admin\"\n", &[]).unwrap_err();
        assert_eq!(err.key, "metrics.listen");
        let own = metrics("", &[("IDEMGATE_METRICS__LISTEN", "127.0.0.1:9100")]).unwrap();
        assert_eq!(own.metrics.listen, MetricsListen::Address("127.0.0.1:9100".parse().unwrap()));
        let named = metrics("[metrics]\nlisten = \"localhost:9100\"\n", &[]).unwrap();
        assert_eq!(named.metrics.listen, MetricsListen::Address("127.0.0.1:9100".parse().unwrap()));
        let err = metrics("[metrics]\nlisten = \"somewhere\"\n", &[]).unwrap_err();
        assert!(err.message.contains("is not \"public\", \"admin\" or HOST:PORT"), "{err}");
        assert_eq!(metrics("[metrics]\nrefresh_interval = \"0s\"\n", &[]).unwrap_err().key, "metrics.refresh_interval");
    }
}
