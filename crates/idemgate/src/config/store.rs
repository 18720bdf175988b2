//! `[store]`: the SQLite file, relative to the config file like every path in it, or the
//! PostgreSQL URL, a secret since it may hold a password.

use std::{path::PathBuf, time::Duration};

use idemgate_store::PgOptions;

use super::{
    ConfigError, ConfigWarning,
    effective::{self, Shown},
    paths,
    raw::RawStore,
    reading::Reading,
};

const DEFAULT_STORE: &str = "data/idemgate.sqlite3";

/// `[store]`.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// The SQLite file, relative paths taken from the config file's folder (unused when
    /// `postgres` is set).
    pub path: PathBuf,
    /// PostgreSQL, when `store.url` is set.
    pub postgres: Option<PostgresConfig>,
    /// Lock wait.
    pub busy_timeout: Duration,
    /// How often `serve` purges.
    pub purge_interval: Duration,
}

/// `[store] url = ...`: the PostgreSQL store shared by several instances.
#[derive(Clone)]
pub struct PostgresConfig {
    /// The connection URL; it may hold a password, so it is never printed.
    pub url: String,
    /// The pool's size and wait.
    pub options: PgOptions,
}

impl std::fmt::Debug for PostgresConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresConfig").field("options", &self.options).finish_non_exhaustive()
    }
}

/// The store of a command that opens it (or checks it): `store.url` resolved.
pub(super) fn store(raw: RawStore, r: &mut Reading<'_>) -> Result<StoreConfig, ConfigError> {
    let postgres = match kind(&raw, r)? {
        Kind::Sqlite => None,
        Kind::Postgres { reference, options } => {
            let url = if is_literal(&reference) { literal(&reference, r) } else { r.resolve("store.url", &reference)? };
            Some(PostgresConfig { url: postgres_url(url)?, options })
        }
    };
    Ok(StoreConfig {
        path: sqlite_path(&raw, r),
        postgres,
        busy_timeout: busy_timeout(&raw, r)?,
        purge_interval: r.duration("store.purge_interval", raw.purge_interval.as_deref(), Duration::from_secs(3600))?,
    })
}

/// The store of a command that does not open it (`verify`): validated, `store.url` not
/// resolved (a literal one is checked).
pub(super) fn check(raw: RawStore, r: &mut Reading<'_>) -> Result<(), ConfigError> {
    if let Kind::Postgres { reference, .. } = kind(&raw, r)?
        && is_literal(&reference)
    {
        postgres_url(literal(&reference, r))?;
    }
    busy_timeout(&raw, r)?;
    r.duration("store.purge_interval", raw.purge_interval.as_deref(), Duration::from_secs(3600))?;
    Ok(())
}

/// Which backend, with PostgreSQL's pool settings and its URL still a reference.
enum Kind {
    Sqlite,
    Postgres { reference: String, options: PgOptions },
}

fn kind(raw: &RawStore, r: &mut Reading<'_>) -> Result<Kind, ConfigError> {
    let Some(reference) = raw.url.clone() else {
        let path = sqlite_path(raw, r);
        r.show("store.path", Shown::Value(path.display().to_string().into()));
        return Ok(Kind::Sqlite);
    };
    if raw.path.is_some() {
        return Err(ConfigError::new("store.url", "give either store.path (SQLite) or store.url (PostgreSQL)"));
    }
    r.show("store.url", Shown::Value(effective::reference(&reference)));
    let defaults = PgOptions::default();
    let pool_size = r.count("store.pool_size", raw.pool_size, defaults.pool_size);
    if pool_size == 0 {
        return Err(ConfigError::new("store.pool_size", "must be at least 1"));
    }
    let wait_timeout = r.duration("store.pool_wait", raw.pool_wait.as_deref(), defaults.wait_timeout)?;
    Ok(Kind::Postgres { reference, options: PgOptions { pool_size, wait_timeout } })
}

/// The SQLite file, relative to the config file's folder.
fn sqlite_path(raw: &RawStore, r: &Reading<'_>) -> PathBuf {
    paths::resolve(r.base, raw.path.as_deref().unwrap_or(DEFAULT_STORE))
}

fn busy_timeout(raw: &RawStore, r: &mut Reading<'_>) -> Result<Duration, ConfigError> {
    r.duration("store.busy_timeout", raw.busy_timeout.as_deref(), Duration::from_secs(5))
}

fn is_literal(reference: &str) -> bool {
    !reference.starts_with("env:") && !reference.starts_with("file:")
}

/// A literal URL: fine in a config file unless it carries a password.
fn literal(reference: &str, r: &mut Reading<'_>) -> String {
    if url_has_password(reference) && !r.set_by_environment("store.url") {
        r.warnings.push(ConfigWarning(
            "store.url: password given literally in the config file; use env:NAME or file:PATH".to_owned(),
        ));
    }
    reference.to_owned()
}

/// A `postgres://` URL, or libpq's `key=value` form naming its host(s), as in
/// `host=a,b port=5432,5433 target_session_attrs=read-write` (either form may list a
/// primary and its standby; the store's driver parses it when it connects).
fn postgres_url(url: String) -> Result<String, ConfigError> {
    let key_value = url.split_whitespace().any(|pair| pair.starts_with("host=") || pair.starts_with("hostaddr="));
    if url.starts_with("postgres://") || url.starts_with("postgresql://") || key_value {
        Ok(url)
    } else {
        Err(ConfigError::new(
            "store.url",
            "must be a postgres:// or postgresql:// URL, or a key=value connection string with host=",
        ))
    }
}

/// Whether a `postgres://user:password@host` URL (or its `password=` parameter) holds a password.
fn url_has_password(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let userinfo = authority.rsplit_once('@').map_or("", |(userinfo, _)| userinfo);
    userinfo.contains(':') || url.contains("password=")
}

#[cfg(test)]
mod tests {
    use super::postgres_url;

    #[test]
    fn a_url_or_a_key_value_string_naming_hosts_is_a_postgres_store() {
        for url in [
            "postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write",
            "postgresql://u@h/db",
            "host=h1,h2 port=5432,5433 user=u dbname=db target_session_attrs=read-write",
            "user=u hostaddr=10.0.0.1",
        ] {
            assert_eq!(postgres_url(url.to_owned()).ok().as_deref(), Some(url));
        }
        for url in ["mysql://localhost/x", "data/idemgate.sqlite3", "dbname=db user=u", ""] {
            assert!(postgres_url(url.to_owned()).is_err(), "{url}");
        }
    }
}
