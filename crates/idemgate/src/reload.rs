//! A configuration reload (SIGHUP): which parts of a newly loaded configuration the
//! running gateway takes on, and which need a restart.
//!
//! The sources (routes, schemes, secrets, allowlists), the destinations (URLs, secrets,
//! retry schedules), the proxies, the admin tokens and the retention periods apply at once. What a running
//! listener, store or worker was built with (listen addresses, timeouts, TLS, the store,
//! the worker's settings and whether it runs, the admin listener, `[alerts]`) keeps its running value
//! and is reported as needing a restart. [`plan`] decides that without any I/O; `run`
//! applies the plan by replacing the router, the worker's routes and the admin token, each
//! behind a handle a request or a claim batch reads once, so nothing in flight changes.

use std::collections::BTreeSet;

use crate::config::{AdminConfig, Config, ServerConfig, StoreConfig, Target, WorkerConfig};

/// What a reload will run with, and what it leaves for a restart.
#[derive(Debug)]
pub struct Plan {
    /// The new configuration with every restart-only key at its running value.
    pub applied: Config,
    /// What changes now.
    pub changes: Changes,
    /// The keys that changed but apply only after a restart (they keep their running value).
    pub needs_restart: Vec<&'static str>,
}

/// What a reload changes, by name: never a secret, only whether one changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Sources added, by id.
    pub sources_added: Vec<String>,
    /// Sources removed, by id.
    pub sources_removed: Vec<String>,
    /// Sources whose settings or secrets changed, by id.
    pub sources_changed: Vec<String>,
    /// Destinations added, by name.
    pub destinations_added: Vec<String>,
    /// Destinations removed, by name.
    pub destinations_removed: Vec<String>,
    /// Destinations whose settings or secret changed, by name.
    pub destinations_changed: Vec<String>,
    /// Whether the `[[proxy]]` list changed.
    pub proxies_changed: bool,
    /// Whether the admin tokens changed: a value, a name or a role (every dashboard
    /// session then ends).
    pub admin_token_changed: bool,
}

impl Changes {
    /// Whether nothing changed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl std::fmt::Display for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_empty() {
            return f.write_str("nothing changed");
        }
        let mut parts = Vec::new();
        for (what, names) in [
            ("sources added", &self.sources_added),
            ("sources removed", &self.sources_removed),
            ("sources changed", &self.sources_changed),
            ("destinations added", &self.destinations_added),
            ("destinations removed", &self.destinations_removed),
            ("destinations changed", &self.destinations_changed),
        ] {
            if !names.is_empty() {
                parts.push(format!("{what}: {}", names.join(", ")));
            }
        }
        if self.proxies_changed {
            parts.push("proxies changed".to_owned());
        }
        if self.admin_token_changed {
            parts.push("admin tokens changed".to_owned());
        }
        f.write_str(&parts.join("; "))
    }
}

/// What reloading `new` over `running` does.
#[must_use]
pub fn plan(running: &Config, new: Config) -> Plan {
    let mut needs_restart = Vec::new();
    server_restarts(&running.server, &new.server, &mut needs_restart);
    store_restarts(&running.store, &new.store, &mut needs_restart);
    worker_restarts(running.worker, new.worker, &mut needs_restart);
    if running.metrics != new.metrics {
        needs_restart.push("metrics");
    }
    if running.alerts != new.alerts {
        needs_restart.push("alerts");
    }
    if running.traces != new.traces {
        needs_restart.push("traces");
    }
    let changes = changes(running, &new);
    let mut applied = new;
    applied.admin = admin(running.admin.as_ref(), applied.admin.take(), &mut needs_restart);
    applied.server = running.server.clone();
    applied.store = running.store.clone();
    applied.worker = running.worker;
    applied.metrics = running.metrics;
    applied.alerts = running.alerts.clone();
    applied.traces = running.traces.clone();
    if format!("{:?}", running.smtp) != format!("{:?}", applied.smtp) {
        needs_restart.push("smtp (listeners)");
    }
    applied.smtp = running.smtp.clone();
    Plan { applied, changes, needs_restart }
}

fn changes(running: &Config, new: &Config) -> Changes {
    let source_ids = |config: &Config| config.sources.iter().map(|s| s.id.to_string()).collect::<BTreeSet<_>>();
    let source = |config: &Config, id: &str| config.sources.iter().find(|s| s.id.as_str() == id).cloned();
    let (old_ids, new_ids) = (source_ids(running), source_ids(new));
    let sources_changed = old_ids
        .intersection(&new_ids)
        .filter(|id| match (source(running, id), source(new, id)) {
            (Some(a), Some(b)) => {
                format!("{a:?}") != format!("{b:?}") || !same_secrets(a.secrets.iter(), b.secrets.iter())
            }
            _ => false,
        })
        .cloned()
        .collect();
    let old_names: BTreeSet<_> = running.destinations.keys().cloned().collect();
    let new_names: BTreeSet<_> = new.destinations.keys().cloned().collect();
    let destinations_changed = old_names
        .intersection(&new_names)
        .filter(|name| {
            let (a, b) = (&running.destinations[*name], &new.destinations[*name]);
            let password = |d: &crate::config::DestinationConfig| match &d.target {
                Target::Smtp(relay) => relay.credentials.as_ref().map(|(_, p)| p.clone()),
                _ => None,
            };
            let (pa, pb) = (password(a), password(b));
            format!("{a:?}") != format!("{b:?}")
                || !same_secrets(a.secret().into_iter().chain(pa.iter()), b.secret().into_iter().chain(pb.iter()))
                || a.broker_url() != b.broker_url()
        })
        .cloned()
        .collect();
    Changes {
        sources_added: new_ids.difference(&old_ids).cloned().collect(),
        sources_removed: old_ids.difference(&new_ids).cloned().collect(),
        sources_changed,
        destinations_added: new_names.difference(&old_names).cloned().collect(),
        destinations_removed: old_names.difference(&new_names).cloned().collect(),
        destinations_changed,
        proxies_changed: format!("{:?}", running.proxies) != format!("{:?}", new.proxies),
        admin_token_changed: match (&running.admin, &new.admin) {
            (Some(a), Some(b)) => {
                let named =
                    |admin: &AdminConfig| admin.tokens.iter().map(|t| (t.name.clone(), t.role)).collect::<Vec<_>>();
                named(a) != named(b)
                    || !same_secrets(a.tokens.iter().map(|t| &t.secret), b.tokens.iter().map(|t| &t.secret))
            }
            _ => false,
        },
    }
}

/// Secrets are compared by their bytes (both sides are configuration, not a caller's
/// guess, so no constant-time comparison is needed); `Debug` redacts them.
fn same_secrets<'a>(
    a: impl Iterator<Item = &'a idemgate_core::Secret>,
    b: impl Iterator<Item = &'a idemgate_core::Secret>,
) -> bool {
    a.map(idemgate_core::Secret::expose).eq(b.map(idemgate_core::Secret::expose))
}

fn server_restarts(old: &ServerConfig, new: &ServerConfig, keys: &mut Vec<&'static str>) {
    let tls = |server: &ServerConfig| server.tls.as_ref().map(|tls| (tls.cert.clone(), tls.key.clone()));
    for (key, changed) in [
        ("server.listen", old.listen != new.listen),
        ("server.header_timeout", old.header_timeout != new.header_timeout),
        ("server.body_timeout", old.body_timeout != new.body_timeout),
        ("server.shutdown_grace", old.shutdown_grace != new.shutdown_grace),
        ("server.tls", tls(old) != tls(new)),
        ("server.pid_file", old.pid_file != new.pid_file),
    ] {
        if changed {
            keys.push(key);
        }
    }
}

fn store_restarts(old: &StoreConfig, new: &StoreConfig, keys: &mut Vec<&'static str>) {
    let postgres = |store: &StoreConfig| store.postgres.as_ref().map(|pg| (pg.url.clone(), pg.options));
    for (key, changed) in [
        ("store.path", old.postgres.is_none() && new.postgres.is_none() && old.path != new.path),
        ("store.url", postgres(old) != postgres(new)),
        ("store.busy_timeout", old.busy_timeout != new.busy_timeout),
        ("store.purge_interval", old.purge_interval != new.purge_interval),
    ] {
        if changed {
            keys.push(key);
        }
    }
}

fn worker_restarts(old: WorkerConfig, new: WorkerConfig, keys: &mut Vec<&'static str>) {
    if old.enabled != new.enabled {
        keys.push("worker.enabled");
    }
    if old.options != new.options {
        keys.push("worker (lease, batch, poll_interval, max_in_flight)");
    }
}

/// The running admin settings with the new tokens; an admin API turned on or off, or moved,
/// needs a restart.
fn admin(old: Option<&AdminConfig>, new: Option<AdminConfig>, keys: &mut Vec<&'static str>) -> Option<AdminConfig> {
    let tls = |admin: &AdminConfig| admin.tls.as_ref().map(|tls| (tls.cert.clone(), tls.key.clone()));
    match (old, new) {
        (Some(old), Some(new)) => {
            for (key, changed) in [
                ("admin.listen", old.listen != new.listen),
                ("admin.session_lifetime", old.session_lifetime != new.session_lifetime),
                ("admin.tls", tls(old) != tls(&new)),
            ] {
                if changed {
                    keys.push(key);
                }
            }
            Some(AdminConfig { tokens: new.tokens, ..old.clone() })
        }
        (None, None) => None,
        (old, _) => {
            keys.push("admin");
            old.cloned()
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{raw, validated};

    const BASE: &str = r#"
[server]
listen = "127.0.0.1:0"
[sources.a]
scheme = "demo-webhook-v1"
secrets = ["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]
destinations = ["d"]
[destinations.d]
url = "http://127.0.0.1:1/d"
"#;

    fn config(text: &str) -> Config {
        validated::validate(raw::parse(text, Vec::new()).unwrap(), Path::new(".")).unwrap().0
    }

    #[test]
    fn the_same_configuration_changes_nothing() {
        let plan = plan(&config(BASE), config(BASE));
        assert!(plan.changes.is_empty(), "{}", plan.changes);
        assert!(plan.needs_restart.is_empty());
        assert_eq!(plan.changes.to_string(), "nothing changed");
    }

    #[test]
    fn a_rotated_secret_changes_its_source_and_is_not_named() {
        let secret = "b".repeat(64);
        let rotated = BASE.replace("secrets = [", &format!("secrets = [\"{secret}\", "));
        let plan = plan(&config(BASE), config(&rotated));
        assert_eq!(plan.changes.sources_changed, ["a"]);
        assert!(!plan.changes.to_string().contains(&secret), "{}", plan.changes);
        assert_eq!(plan.applied.sources[0].secrets.iter().count(), 2);
    }

    #[test]
    fn sources_and_destinations_added_and_removed_are_named() {
        let text =
            BASE.replace("[sources.a]", "[sources.b]").replace("destinations = [\"d\"]", "destinations = [\"e\"]")
                + "[destinations.e]\nurl = \"http://127.0.0.1:1/e\"\n";
        let text = text.replace("[destinations.d]\nurl = \"http://127.0.0.1:1/d\"\n", "");
        let plan = plan(&config(BASE), config(&text));
        assert_eq!(plan.changes.sources_added, ["b"]);
        assert_eq!(plan.changes.sources_removed, ["a"]);
        assert_eq!(plan.changes.destinations_added, ["e"]);
        assert_eq!(plan.changes.destinations_removed, ["d"]);
        assert_eq!(
            plan.changes.to_string(),
            "sources added: b; sources removed: a; destinations added: e; destinations removed: d"
        );
    }

    #[test]
    fn a_moved_listener_needs_a_restart_and_keeps_its_running_address() {
        let running = config(BASE);
        let moved = BASE.replace("127.0.0.1:0", "127.0.0.1:1")
            + "[worker]\nenabled = false\n[metrics]\nlisten = \"127.0.0.1:9100\"\n";
        let plan = plan(&running, config(&moved));
        assert_eq!(plan.needs_restart, ["server.listen", "worker.enabled", "metrics"]);
        assert_eq!(plan.applied.server.listen, running.server.listen);
        assert!(plan.applied.worker.enabled);
        assert_eq!(plan.applied.metrics, running.metrics);
        assert!(plan.changes.is_empty());
    }

    #[test]
    fn alerts_turned_on_need_a_restart_and_stay_as_they_run() {
        let plan = plan(&config(BASE), config(&format!("{BASE}[alerts]\ndestination = \"d\"\n")));
        assert_eq!(plan.needs_restart, ["alerts"]);
        assert_eq!(plan.applied.alerts, None);
    }

    #[test]
    fn a_new_admin_token_applies_and_a_new_admin_listener_needs_a_restart() {
        let admin = |token: &str, listen: &str| format!("{BASE}[admin]\nlisten = \"{listen}\"\ntoken = \"{token}\"\n");
        let running = config(&admin(&"t".repeat(32), "127.0.0.1:0"));
        let plan = plan(&running, config(&admin(&"u".repeat(32), "127.0.0.1:9")));
        assert!(plan.changes.admin_token_changed);
        assert_eq!(plan.needs_restart, ["admin.listen"]);
        let applied = plan.applied.admin.unwrap();
        assert_eq!(applied.tokens[0].secret.expose(), "u".repeat(32).as_bytes());
        assert_eq!(applied.listen, running.admin.unwrap().listen);
        let without = super::plan(&config(BASE), config(&admin(&"u".repeat(32), "127.0.0.1:0")));
        assert_eq!(without.needs_restart, ["admin"]);
        assert!(without.applied.admin.is_none());
    }

    #[test]
    fn a_changed_role_changes_the_admin_tokens() {
        let viewer =
            |role: &str| format!("{BASE}[admin.tokens.viewer]\ntoken = \"{}\"\nrole = \"{role}\"\n", "v".repeat(32));
        let plan = plan(&config(&viewer("read")), config(&viewer("operate")));
        assert!(plan.changes.admin_token_changed, "the sessions of the old role end");
        assert_eq!(plan.changes.to_string(), "admin tokens changed");
        assert_eq!(plan.applied.admin.unwrap().tokens[0].role, idemgate_http::access::Role::Operate);
        assert!(super::plan(&config(&viewer("read")), config(&viewer("read"))).changes.is_empty());
    }
}
