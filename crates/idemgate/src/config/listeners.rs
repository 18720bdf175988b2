//! `[server]` and `[admin]`: where the gateway and its admin API listen, their timeouts,
//! TLS and the admin tokens. TLS files are loaded and the tokens resolved only for a command
//! that serves (`serve`); for the others they are checked for form and listed.
//!
//! The admin tokens are `[admin.tokens.<name>]` (a token and a role each) plus `[admin]
//! token`, which is the token named `admin` with the role `operate`. Each token must be a
//! value of its own: two names for one value would make the audit log's name a guess.

use std::{
    net::{SocketAddr, ToSocketAddrs},
    path::PathBuf,
    time::Duration,
};

use idemgate_core::{Secret, SourceName};
use idemgate_http::{
    access::{NamedToken, Role},
    tls::{self, TlsAcceptor},
};

use super::{
    ConfigError,
    effective::{self, Shown},
    paths,
    raw::{RawAdmin, RawAdminToken, RawServer, RawTls},
    reading::{DEFAULT_TIMEOUT, Reading},
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
    /// The named bearer tokens and their roles (`[admin] token` is `admin`, `operate`).
    pub tokens: Vec<NamedToken>,
    /// How long a dashboard session lasts unused (in the store; its cookie since sign-in).
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
            let path = paths::resolve(r.base, path);
            r.show("server.pid_file", Shown::Value(path.display().to_string().into()));
            Some(path)
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
    let Some(named) = named_tokens(raw.token, raw.tokens, r)? else {
        r.show("admin.token", Shown::Note("(not set: the admin API is off)"));
        return Ok(None);
    };
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
        idemgate_http::console::session::DEFAULT_LIFETIME,
    )?;
    if !serves {
        return Ok(None);
    }
    let mut tokens: Vec<(String, NamedToken)> = Vec::new();
    for (key, name, role, reference) in named {
        let token = r.resolve(&key, &reference)?;
        if token.len() < 16 {
            return Err(ConfigError::new(key, "must be at least 16 characters"));
        }
        if let Some((other, _)) = tokens.iter().find(|(_, t)| t.secret.expose() == token.as_bytes()) {
            return Err(same_value(&key, other));
        }
        tokens.push((key, NamedToken { name, role, secret: Secret::new(token.into_bytes()) }));
    }
    Ok(Some(AdminConfig { listen, tokens: tokens.into_iter().map(|(_, t)| t).collect(), session_lifetime, tls }))
}

/// One admin token as configured: its key, name, role and reference.
type TokenEntry = (String, String, Role, String);

/// `[admin] token` and `[admin.tokens.*]` checked for form and listed; `None` when there
/// is neither. Two entries with one reference are refused here already; two references
/// to one value once they are resolved.
fn named_tokens(
    token: Option<String>,
    tokens: std::collections::BTreeMap<String, RawAdminToken>,
    r: &mut Reading<'_>,
) -> Result<Option<Vec<TokenEntry>>, ConfigError> {
    let mut entries: Vec<TokenEntry> = Vec::new();
    if let Some(reference) = token {
        r.show("admin.token", Shown::Value(effective::reference(&reference)));
        entries.push(("admin.token".to_owned(), DEFAULT_TOKEN_NAME.to_owned(), Role::Operate, reference));
    }
    for (name, raw) in tokens {
        let table = format!("admin.tokens.{name}");
        if SourceName::new(name.as_str()).is_err() {
            return Err(ConfigError::new(table, "a token's name is [a-z0-9][a-z0-9_-]{0,62}"));
        }
        if name == idemgate_store::audit::CLI {
            return Err(ConfigError::new(table, "the name `cli` is the command line's in the audit log"));
        }
        if name == DEFAULT_TOKEN_NAME && !entries.is_empty() {
            return Err(ConfigError::new(
                table,
                "[admin] token is already the token named `admin`: give this one another name, or drop one of them",
            ));
        }
        let role_key = format!("{table}.role");
        let role_name = r.value(&role_key, raw.role, Role::Read.as_str().to_owned());
        let role = Role::parse(&role_name).ok_or_else(|| {
            ConfigError::new(role_key.clone(), format!("unknown role {role_name:?} (read or operate)"))
        })?;
        let key = format!("{table}.token");
        r.show(&key, Shown::Value(effective::reference(&raw.token)));
        if let Some((other, ..)) = entries.iter().find(|(_, _, _, reference)| *reference == raw.token) {
            return Err(same_value(&key, other));
        }
        entries.push((key, name, role, raw.token));
    }
    Ok((!entries.is_empty()).then_some(entries))
}

/// The name `[admin] token` stands for.
const DEFAULT_TOKEN_NAME: &str = "admin";

/// Two admin tokens with one value; neither the value nor its reference is shown.
fn same_value(key: &str, other: &str) -> ConfigError {
    ConfigError::new(key, format!("is the same token as {other}: each admin token needs a value of its own"))
}

/// The listen address `HOST:PORT` at `key`: an IP address, or a host name resolved now, at
/// start-up or reload, so that the loopback checks and the bind see what the name means
/// (its first IPv4 address, else its first address: `localhost` is 127.0.0.1 on hosts
/// that also list ::1).
pub(super) fn address(key: &str, text: &str) -> Result<SocketAddr, ConfigError> {
    if let Ok(address) = text.parse() {
        return Ok(address);
    }
    let not_host_port = || ConfigError::new(key, format!("{text:?} is not HOST:PORT"));
    let (host, port) = text.rsplit_once(':').ok_or_else(not_host_port)?;
    let port: u16 = port.parse().map_err(|_| not_host_port())?;
    if host.is_empty() {
        return Err(not_host_port());
    }
    let found: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|err| ConfigError::new(key, format!("host {host:?} does not resolve: {err}")))?
        .collect();
    let first = found.iter().find(|address| address.is_ipv4()).or(found.first());
    first.copied().ok_or_else(|| ConfigError::new(key, format!("host {host:?} resolves to no address")))
}

/// `[server.tls]` or `[admin.tls]` (`table`): its files, relative to the config file,
/// loaded into an acceptor when the command `serves`.
pub(super) fn tls_config(
    table: &str,
    raw: RawTls,
    r: &mut Reading<'_>,
    serves: bool,
) -> Result<Option<TlsConfig>, ConfigError> {
    let (cert, key) = (paths::resolve(r.base, raw.cert), paths::resolve(r.base, raw.key));
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_listen_address_is_an_ip_address_or_a_name_that_resolves() {
        assert_eq!(address("server.listen", "127.0.0.1:8095").unwrap(), "127.0.0.1:8095".parse().unwrap());
        assert_eq!(address("server.listen", "[::1]:8095").unwrap(), "[::1]:8095".parse().unwrap());
        assert!(address("server.listen", "localhost:8095").unwrap().ip().is_loopback());
        for text in ["localhost", "localhost:http", ":8095", "localhost:70000"] {
            let err = address("server.listen", text).unwrap_err();
            assert_eq!(err.to_string(), format!("server.listen: {text:?} is not HOST:PORT"));
        }
        // A label longer than 63 bytes is refused by the resolver itself: no query leaves.
        let name = "a".repeat(64);
        let err = address("admin.listen", &format!("{name}:8095")).unwrap_err();
        assert_eq!(err.key, "admin.listen");
        assert!(err.message.starts_with(&format!("host {name:?} does not resolve: ")), "{err}");
        assert_eq!(err.to_string().lines().count(), 1, "{err}");
    }
}
