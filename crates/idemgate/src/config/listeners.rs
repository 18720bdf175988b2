//! `[server]` and `[admin]`: where the gateway and its admin API listen, their timeouts,
//! TLS and the admin token. TLS files are loaded and the token resolved only for a command
//! that serves (`serve`); for the others they are checked for form and listed.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use idemgate_core::Secret;
use idemgate_http::tls::{self, TlsAcceptor};

use super::{
    ConfigError,
    effective::{self, Shown},
    raw::{RawAdmin, RawServer, RawTls},
    validated::{DEFAULT_TIMEOUT, Reading},
};

const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1:8081";

/// `[server]`.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Limit on receiving a request head.
    pub header_timeout: Duration,
    /// Limit on receiving a body.
    pub body_timeout: Duration,
    /// Limit on finishing in-flight requests at shutdown.
    pub shutdown_grace: Duration,
    /// TLS, if the gateway terminates it itself (loaded for `serve` only).
    pub tls: Option<TlsConfig>,
    /// Where `serve` and `worker` write their process id while running (for `idemgate reload`).
    pub pid_file: Option<PathBuf>,
}

/// `[server.tls]`: the files, already loaded into an acceptor.
#[derive(Clone)]
pub struct TlsConfig {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
    /// The rustls acceptor built from them.
    pub acceptor: TlsAcceptor,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig").field("cert", &self.cert).field("key", &self.key).finish_non_exhaustive()
    }
}

/// `[admin]`.
#[derive(Debug, Clone)]
pub struct AdminConfig {
    /// Where the admin API listens.
    pub listen: SocketAddr,
    /// The bearer token.
    pub token: Secret,
    /// How long a dashboard session lasts.
    pub session_lifetime: Duration,
    /// TLS: `[admin.tls]`, else `[server.tls]`; plain HTTP only when neither is set.
    pub tls: Option<TlsConfig>,
}

pub(super) fn server(raw: RawServer, r: &mut Reading<'_>, serves: bool) -> Result<ServerConfig, ConfigError> {
    let listen = r.value("server.listen", raw.listen, DEFAULT_LISTEN.to_owned());
    Ok(ServerConfig {
        listen: address("server.listen", &listen)?,
        header_timeout: r.duration("server.header_timeout", raw.header_timeout.as_deref(), DEFAULT_TIMEOUT)?,
        body_timeout: r.duration("server.body_timeout", raw.body_timeout.as_deref(), DEFAULT_TIMEOUT)?,
        shutdown_grace: r.duration("server.shutdown_grace", raw.shutdown_grace.as_deref(), DEFAULT_TIMEOUT)?,
        tls: raw.tls.and_then(|tls| tls_config("server.tls", tls, r, serves).transpose()).transpose()?,
        pid_file: pid_file(raw.pid_file, r),
    })
}

/// `server.pid_file`, relative to the config file's folder.
fn pid_file(given: Option<String>, r: &mut Reading<'_>) -> Option<PathBuf> {
    match given {
        Some(path) => {
            r.show("server.pid_file", Shown::Value(path.clone().into()));
            Some(r.base.join(path))
        }
        None => {
            r.show("server.pid_file", Shown::Note("(not set: `idemgate reload` needs one)"));
            None
        }
    }
}

/// `[admin]`: `None` without a token, or for a command that does not serve it.
/// `server_tls` says whether `[server.tls]` is configured (loaded or not).
pub(super) fn admin(
    raw: RawAdmin,
    server: &ServerConfig,
    server_tls: bool,
    r: &mut Reading<'_>,
    serves: bool,
) -> Result<Option<AdminConfig>, ConfigError> {
    let Some(reference) = raw.token else {
        r.show("admin.token", Shown::Note("(not set: the admin API is off)"));
        return Ok(None);
    };
    r.show("admin.token", Shown::Value(effective::reference(&reference)));
    let listen = r.value("admin.listen", raw.listen, DEFAULT_ADMIN_LISTEN.to_owned());
    let listen = address("admin.listen", &listen)?;
    let has_tls = raw.tls.is_some() || server_tls;
    let tls = match raw.tls {
        Some(tls) => tls_config("admin.tls", tls, r, serves)?,
        None => server.tls.clone(),
    };
    let allow_plaintext = r.value("admin.allow_plaintext", raw.allow_plaintext, false);
    if !has_tls && !listen.ip().is_loopback() && !allow_plaintext {
        return Err(ConfigError::new(
            "admin.listen",
            format!(
                "{listen} is not a loopback address and no TLS is configured: set [admin.tls] or [server.tls], \
                 or admin.allow_plaintext = true to send the token in plain HTTP"
            ),
        ));
    }
    let session_lifetime = r.duration(
        "admin.session_lifetime",
        raw.session_lifetime.as_deref(),
        idemgate_http::session::DEFAULT_LIFETIME,
    )?;
    if !serves {
        return Ok(None);
    }
    let token = r.resolve("admin.token", &reference)?;
    if token.len() < 16 {
        return Err(ConfigError::new("admin.token", "must be at least 16 characters"));
    }
    Ok(Some(AdminConfig { listen, token: Secret::new(token.into_bytes()), session_lifetime, tls }))
}

fn address(key: &str, text: &str) -> Result<SocketAddr, ConfigError> {
    text.parse().map_err(|_| ConfigError::new(key, format!("{text:?} is not HOST:PORT with an IP address")))
}

/// `[server.tls]` or `[admin.tls]` (`table`): its files, relative to the config file,
/// loaded into an acceptor when the command `serves`.
pub(super) fn tls_config(
    table: &str,
    raw: RawTls,
    r: &mut Reading<'_>,
    serves: bool,
) -> Result<Option<TlsConfig>, ConfigError> {
    let (cert, key) = (r.base.join(raw.cert), r.base.join(raw.key));
    for (field, path) in [("cert", &cert), ("key", &key)] {
        r.show(&format!("{table}.{field}"), Shown::Value(path.display().to_string().into()));
    }
    if !serves {
        return Ok(None);
    }
    let acceptor = tls::acceptor(&cert, &key).map_err(|err| {
        let field = if matches!(err, tls::TlsError::Key { .. }) { "key" } else { "cert" };
        ConfigError::new(format!("{table}.{field}"), err.to_string())
    })?;
    Ok(Some(TlsConfig { cert, key, acceptor }))
}
