//! `[smtp.<name>]`: SMTP submission listeners. Each is a source whose deliveries are
//! messages (its name is the receipts' source, so it may not also be a `[sources.*]` id),
//! relayed to `smtp` destinations. Passwords and TLS files are resolved only for `serve`;
//! for the other commands each listener is validated and only its retention kept.

use std::{collections::BTreeSet, net::SocketAddr, sync::Arc, time::Duration};

use idemgate_core::SourceName;
use idemgate_smtp::{ListenerConfig, Policy, User};
use idemgate_store::maintenance::Retention;

use super::{
    ConfigError,
    effective::{self, Shown},
    listeners::{TlsConfig, tls_config},
    raw::RawSmtp,
    reading::Reading,
};

/// `max_message_size` unless set: 10 MiB.
pub(super) const DEFAULT_MAX_MESSAGE_SIZE: usize = 10 * 1024 * 1024;
/// `retention` unless set.
pub(super) const DEFAULT_SMTP_RETENTION: Duration = Duration::from_secs(24 * 3600);
/// `timeout` unless set: RFC 5321's five minutes for a command.
pub(super) const DEFAULT_SMTP_TIMEOUT: Duration = Duration::from_secs(300);

/// One `[smtp.<name>]`, ready to serve.
#[derive(Debug, Clone)]
pub struct SmtpConfig {
    /// Where it listens.
    pub listen: SocketAddr,
    /// The listener itself: its policy, users, TLS and destinations.
    pub listener: Arc<ListenerConfig>,
}

/// Every listener validated.
pub(super) struct SmtpListeners {
    /// Every listener's retention, whatever the command.
    pub(super) retention: Vec<Retention>,
    /// The listeners, with their users and TLS, for a command that serves.
    pub(super) served: Vec<SmtpConfig>,
}

pub(super) fn listeners(
    raw: std::collections::BTreeMap<String, RawSmtp>,
    sources: &[Retention],
    smtp_destinations: &BTreeSet<String>,
    (server_tls, server_has_tls): (Option<&TlsConfig>, bool),
    r: &mut Reading<'_>,
    serves: bool,
) -> Result<SmtpListeners, ConfigError> {
    let mut all = SmtpListeners { retention: Vec::new(), served: Vec::new() };
    for (name, raw) in raw {
        let key = format!("smtp.{name}");
        if sources.iter().any(|source| source.source == name) {
            return Err(ConfigError::new(key, "a [sources.*] has this name: receipts would share one source"));
        }
        let (retention, listener) =
            listener(&key, &name, raw, smtp_destinations, (server_tls, server_has_tls), r, serves)?;
        all.retention.push(retention);
        all.served.extend(listener);
    }
    Ok(all)
}

fn listener(
    key: &str,
    name: &str,
    raw: RawSmtp,
    smtp_destinations: &BTreeSet<String>,
    (server_tls, server_has_tls): (Option<&TlsConfig>, bool),
    r: &mut Reading<'_>,
    serves: bool,
) -> Result<(Retention, Option<SmtpConfig>), ConfigError> {
    let source = SourceName::new(name).map_err(|err| ConfigError::new(key, err.to_string()))?;
    r.show(&format!("{key}.listen"), Shown::Value(raw.listen.clone().into()));
    let listen = super::listeners::address(&format!("{key}.listen"), &raw.listen)?;
    let loopback = listen.ip().is_loopback();
    if raw.destinations.is_empty() {
        return Err(ConfigError::new(format!("{key}.destinations"), "at least one smtp destination is required"));
    }
    for (i, destination) in raw.destinations.iter().enumerate() {
        if !smtp_destinations.contains(destination) {
            return Err(ConfigError::new(
                format!("{key}.destinations[{i}]"),
                format!("no destination named {destination:?} with kind = \"smtp\""),
            ));
        }
    }
    r.show(&format!("{key}.destinations"), Shown::Value(raw.destinations.clone().into()));
    let hostname = r.value(&format!("{key}.hostname"), raw.hostname, "idemgate".to_owned());
    if hostname.is_empty() || !hostname.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') {
        return Err(ConfigError::new(format!("{key}.hostname"), "must be a host name"));
    }
    let max_message_size = r.count(&format!("{key}.max_message_size"), raw.max_message_size, DEFAULT_MAX_MESSAGE_SIZE);
    if max_message_size == 0 {
        return Err(ConfigError::new(format!("{key}.max_message_size"), "must be at least 1"));
    }
    let key_header = r.value(&format!("{key}.key_header"), raw.key_header, "Idempotency-Key".to_owned());
    if key_header.is_empty() || !key_header.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        return Err(ConfigError::new(format!("{key}.key_header"), "must be a header field name"));
    }
    let require_key = r.value(&format!("{key}.require_key"), raw.require_key, false);
    let exclude = r.value(&format!("{key}.fingerprint_exclude_headers"), raw.fingerprint_exclude_headers, Vec::new());
    let retention = r.duration(&format!("{key}.retention"), raw.retention.as_deref(), DEFAULT_SMTP_RETENTION)?;
    let timeout = r.duration(&format!("{key}.timeout"), raw.timeout.as_deref(), DEFAULT_SMTP_TIMEOUT)?;
    let allow_unauthenticated = r.value(&format!("{key}.allow_unauthenticated"), raw.allow_unauthenticated, false);
    if allow_unauthenticated && !loopback {
        return Err(ConfigError::new(
            format!("{key}.allow_unauthenticated"),
            format!("only on a loopback listen address, not {listen}"),
        ));
    }
    if raw.users.is_empty() && !allow_unauthenticated {
        return Err(ConfigError::new(
            format!("{key}.users"),
            "at least one user is required (or allow_unauthenticated = true on a loopback address)",
        ));
    }
    for user in raw.users.keys() {
        if user.is_empty() || !user.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
            return Err(ConfigError::new(format!("{key}.users"), "a user name must be printable ASCII without ':'"));
        }
    }
    let shown = raw.users.iter().map(|(user, reference)| (user.clone(), effective::reference(reference))).collect();
    r.show(&format!("{key}.users"), Shown::Value(toml::Value::Table(shown)));
    let implicit_tls = r.value(&format!("{key}.implicit_tls"), raw.implicit_tls, false);
    let own_tls = raw.tls.is_some();
    let tls = match raw.tls {
        Some(tls) => tls_config(&format!("{key}.tls"), tls, r, serves)?,
        None => {
            r.show(&format!("{key}.tls"), Shown::Note("([server.tls], if any)"));
            server_tls.cloned()
        }
    };
    let has_tls = own_tls || server_has_tls;
    if implicit_tls && !has_tls {
        return Err(ConfigError::new(format!("{key}.implicit_tls"), "needs [smtp.NAME.tls] or [server.tls]"));
    }
    if !has_tls && !loopback {
        return Err(ConfigError::new(
            format!("{key}.tls"),
            format!("{listen} is not a loopback address: AUTH needs TLS, set [{key}.tls] or [server.tls]"),
        ));
    }
    let kept = Retention { source: name.to_owned(), receipts: retention, payloads: retention };
    if !serves {
        return Ok((kept, None));
    }
    let mut users = Vec::new();
    for (user, reference) in &raw.users {
        let password = r.resolve(&format!("{key}.users.{user}"), reference)?;
        users.push(User::new(user.clone(), password.as_bytes()));
    }
    let policy = Policy {
        hostname,
        max_message_size,
        users,
        allow_unauthenticated,
        loopback,
        starttls: false,
        key_header,
        require_key,
    };
    let listener = ListenerConfig {
        name: source,
        policy,
        tls: tls.map(|tls| tls.acceptor),
        implicit_tls,
        destinations: raw.destinations.into(),
        fingerprint_exclude_headers: exclude,
        timeout,
    };
    Ok((kept, Some(SmtpConfig { listen, listener: Arc::new(listener) })))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use crate::config::{ConfigError, Encryption, Target, Uses, raw, validated};

    const BASE: &str = r#"
[destinations.relay]
kind = "smtp"
url = "smtp://127.0.0.1:2526"
username = "relay"
password = "env:IDEMGATE_TEST_SMTP_RELAY_PW"
[smtp.mail]
listen = "127.0.0.1:2525"
destinations = ["relay"]
users = { alice = "env:IDEMGATE_TEST_SMTP_ALICE_PW" }
"#;

    /// `Uses::Store` resolves no password, so the variables need not be set.
    fn validated(text: &str, uses: Uses) -> Result<crate::config::Config, ConfigError> {
        validated::validate_for(raw::parse(text, Vec::new())?, Path::new("/etc/idemgate"), uses)
            .map(|(config, _)| config)
    }

    fn error(text: &str) -> ConfigError {
        validated(text, Uses::Store).unwrap_err()
    }

    #[test]
    fn a_listener_and_an_smtp_destination_validate_and_need_no_source() {
        let config = validated(BASE, Uses::Store).unwrap();
        let sources: Vec<_> = config.retention().into_iter().map(|r| (r.source, r.receipts.as_secs())).collect();
        assert_eq!(sources, [("mail".to_owned(), 24 * 3600)], "the listener's retention, default 24h");
        assert!(config.smtp.is_empty(), "only serve builds the listeners");
        let listing = config.effective().to_string();
        assert!(listing.contains("smtp.mail.key_header = \"Idempotency-Key\""), "{listing}");
        assert!(listing.contains("destinations.relay.starttls = \"required\""), "{listing}");
        assert!(!listing.contains("secret-pw"), "{listing}");
    }

    #[test]
    fn bad_listener_settings_are_refused_naming_the_key() {
        let cases = [
            (BASE.replace("127.0.0.1:2525", "0.0.0.0:2525"), "smtp.mail.tls"),
            (
                format!("{BASE}allow_unauthenticated = true\n").replace("127.0.0.1:2525", "0.0.0.0:2525"),
                "smtp.mail.allow_unauthenticated",
            ),
            (BASE.replace("users = { alice = \"env:IDEMGATE_TEST_SMTP_ALICE_PW\" }", ""), "smtp.mail.users"),
            (BASE.replace("destinations = [\"relay\"]", "destinations = [\"nope\"]"), "smtp.mail.destinations[0]"),
            (BASE.replace("destinations = [\"relay\"]", "destinations = []"), "smtp.mail.destinations"),
            (format!("{BASE}implicit_tls = true\n"), "smtp.mail.implicit_tls"),
            (format!("{BASE}key_header = \"Bad:Name\"\n"), "smtp.mail.key_header"),
            (BASE.replace("[smtp.mail]", "[smtp.Mail]"), "smtp.Mail"),
            (format!("{BASE}[sources.mail]\nscheme = \"github\"\n"), "smtp.mail"),
            (format!("{BASE}bogus = 1\n"), "smtp.mail.bogus"),
        ];
        for (text, key) in cases {
            assert_eq!(error(&text).key, key, "{text}");
        }
        let open = format!("{BASE}allow_unauthenticated = true\n")
            .replace("users = { alice = \"env:IDEMGATE_TEST_SMTP_ALICE_PW\" }", "");
        assert!(validated(&open, Uses::Store).is_ok(), "no users on a loopback listener that allows it");
    }

    #[test]
    fn bad_smtp_destinations_are_refused_naming_the_key() {
        let cases = [
            (BASE.replace("smtp://127.0.0.1:2526", "http://127.0.0.1:2526"), "destinations.relay.url"),
            (
                BASE.replace("url = \"smtp://127.0.0.1:2526\"", "url = \"smtp://127.0.0.1:2526/path\""),
                "destinations.relay.url",
            ),
            (BASE.replace("kind = \"smtp\"", "kind = \"smtp\"\nstarttls = \"maybe\""), "destinations.relay.starttls"),
            (
                BASE.replace("smtp://127.0.0.1:2526", "smtps://127.0.0.1:2526")
                    .replace("kind = \"smtp\"", "kind = \"smtp\"\nstarttls = \"never\""),
                "destinations.relay.starttls",
            ),
            (BASE.replace("username = \"relay\"\n", ""), "destinations.relay.username"),
            (BASE.replace("kind = \"smtp\"", "kind = \"carrier-pigeon\""), "destinations.relay.kind"),
            // Keys of another kind are refused first, before the URL is read.
            (BASE.replace("kind = \"smtp\"", "kind = \"http\""), "destinations.relay.username"),
        ];
        for (text, key) in cases {
            assert_eq!(error(&text).key, key, "{text}");
        }
        let http_with_smtp_key =
            "[sources.a]\nscheme = \"github\"\n[destinations.d]\nurl = \"http://127.0.0.1:1/\"\nstarttls = \"never\"\n";
        assert_eq!(error(http_with_smtp_key).key, "destinations.d.starttls");
    }

    #[test]
    fn the_worker_gets_the_smarthost_with_its_resolved_password() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("relay-pw"), "relay-secret-pw").unwrap();
        let text = BASE.replace("env:IDEMGATE_TEST_SMTP_RELAY_PW", "file:relay-pw");
        let raw = raw::parse(&text, Vec::new()).unwrap();
        let (config, _) = validated::validate_for(raw, dir.path(), Uses::Worker).unwrap();
        let Target::Smtp(relay) = &config.destinations["relay"].target else { panic!("an smtp destination") };
        assert_eq!(
            (relay.host.as_str(), relay.port, relay.encryption),
            ("127.0.0.1", 2526, Encryption::StartTlsRequired)
        );
        let (user, password) = relay.credentials.as_ref().unwrap();
        assert_eq!((user.as_str(), password.expose()), ("relay", &b"relay-secret-pw"[..]));
        assert!(!format!("{config:?}").contains("relay-secret-pw"), "no password in Debug");
    }
}
