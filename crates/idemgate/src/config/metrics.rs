//! `[metrics]`: where `/metrics` is served and how often the queue's gauges are read from
//! the store. By default it is on the public port, as it always was; `"admin"` moves it to
//! the admin listener, and an address gives it a listener of its own, which is also how
//! `idemgate worker` (with no public listener) serves it.

use std::{net::SocketAddr, time::Duration};

use super::{
    ConfigError,
    raw::RawMetrics,
    validated::{DEFAULT_METRICS_REFRESH, Reading},
};

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
        address => MetricsListen::Address(address.parse().map_err(|_| {
            ConfigError::new("metrics.listen", format!("{address:?} is not \"public\", \"admin\" or HOST:PORT"))
        })?),
    };
    let refresh_interval =
        r.duration("metrics.refresh_interval", raw.refresh_interval.as_deref(), DEFAULT_METRICS_REFRESH)?;
    if refresh_interval.is_zero() {
        return Err(ConfigError::new("metrics.refresh_interval", "must be longer than 0s"));
    }
    Ok(MetricsConfig { listen, refresh_interval })
}
