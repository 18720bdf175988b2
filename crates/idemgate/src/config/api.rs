//! `[api]`: the outbound API on `/api/v1` of the public listener (Svix-compatible;
//! `docs/design/outbound-api.md`). Off unless `enabled = true`. Its tokens are
//! `[api.tokens.<name>]` (a token and a role: `admin`, `publish` or `read`); `secrets_key`
//! seals endpoint secrets at rest (32 bytes, 64 hex digits or base64); `allow_http` and
//! `allow_networks` loosen the rule for endpoint URLs (https to public addresses only);
//! `public_url` is the base of the links the API hands out; `metrics_per_endpoint` makes
//! each endpoint's id a value of the metrics' `destination` label (by default they all
//! read `api`, so that a customer is not a time series).
//!
//! Every key is checked for form and listed whatever the command; the tokens are resolved
//! only for a command that serves the API (`serve`), as the admin tokens are, and the key
//! also for one that delivers to its endpoints (`serve` with its worker, `worker`).

use std::str::FromStr;

use idemgate_core::{
    Secret, SourceName,
    outbound::{address::UrlPolicy, label::EndpointLabels, sealing::SecretsKey},
};
use idemgate_http::{
    outbound::{Api, ApiRole, ApiToken, PREFIX},
    portal::Portal,
};
use ipnet::IpNet;

use super::{
    ConfigError,
    effective::{self, Shown},
    raw::RawApi,
    reading::Reading,
};

/// `[api]`, enabled, for a command that serves it or delivers to its endpoints.
#[derive(Clone)]
pub struct ApiConfig {
    /// The bearer tokens and their roles (none for a command that does not serve the API).
    pub tokens: Vec<ApiToken>,
    /// The key sealing endpoint secrets (`serve` refuses to start the API without one).
    pub secrets_key: Option<SecretsKey>,
    /// What endpoint URLs may be (`allow_http`, `allow_networks`).
    pub url_policy: UrlPolicy,
    /// The base URL of the links the API hands out (the app portal's).
    pub public_url: Option<String>,
    /// How endpoints show in the metrics' `destination` label.
    pub endpoint_labels: EndpointLabels,
    /// The customer portal, served when `public_url` is set (`[api.portal]`).
    pub portal: Option<Portal>,
}

impl std::fmt::Debug for ApiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiConfig")
            .field("tokens", &self.tokens)
            .field("secrets_key", &self.secrets_key)
            .field("url_policy", &self.url_policy)
            .field("public_url", &self.public_url)
            .field("endpoint_labels", &self.endpoint_labels)
            .field("portal", &self.portal)
            .finish()
    }
}

impl ApiConfig {
    /// What the HTTP crate's router serves.
    #[must_use]
    pub fn routes(&self) -> Api {
        Api {
            tokens: self.tokens.clone(),
            secrets_key: self.secrets_key.clone(),
            url_policy: self.url_policy.clone(),
            public_url: self.public_url.clone(),
            portal: self.portal.clone(),
        }
    }
}

/// The shortest token accepted, in bytes.
const MIN_TOKEN_LEN: usize = 16;

/// `[api]`: `None` when it is absent or not enabled, or for a command that neither `serves`
/// it nor `delivers` to its endpoints. `proxies` are the `[[proxy]]` prefixes: none may be
/// the API's own.
pub(super) fn api(
    raw: Option<RawApi>,
    proxies: &[&str],
    r: &mut Reading<'_>,
    serves: bool,
    delivers: bool,
) -> Result<Option<ApiConfig>, ConfigError> {
    let Some(raw) = raw else {
        r.show("api.enabled", Shown::Note("(not set: the outbound API is off)"));
        return Ok(None);
    };
    let enabled = r.value("api.enabled", raw.enabled, false);
    let allow_http = r.value("api.allow_http", raw.allow_http, false);
    let per_endpoint = r.value("api.metrics_per_endpoint", raw.metrics_per_endpoint, false);
    let mut allow_networks = Vec::new();
    for (i, text) in raw.allow_networks.iter().enumerate() {
        let key = format!("api.allow_networks[{i}]");
        let network = IpNet::from_str(text).map_err(|_| {
            ConfigError::new(&key, format!("{text:?} is not a network in CIDR form (e.g. \"10.0.0.0/8\")"))
        })?;
        allow_networks.push(network.trunc());
    }
    let listed = allow_networks.iter().map(|network| toml::Value::String(network.to_string())).collect();
    r.show("api.allow_networks", Shown::Value(toml::Value::Array(listed)));
    let public_url = match raw.public_url {
        Some(url) => {
            public_url(&url)?;
            r.show("api.public_url", Shown::Value(url.clone().into()));
            Some(url)
        }
        None => {
            r.show("api.public_url", Shown::Note("(not set: the portal is off; links name Svix's fixed portal page)"));
            None
        }
    };
    let portal = super::portal::portal(raw.portal, public_url.as_deref(), r)?;
    match &raw.secrets_key {
        Some(reference) => r.show("api.secrets_key", Shown::Value(effective::reference(reference))),
        None => r.show("api.secrets_key", Shown::Note("(not set: `serve` refuses to start the API)")),
    }
    let mut named = Vec::new();
    for (name, token) in raw.tokens {
        let table = format!("api.tokens.{name}");
        if SourceName::new(name.as_str()).is_err() {
            return Err(ConfigError::new(table, "a token's name is [a-z0-9][a-z0-9_-]{0,62}"));
        }
        let role_key = format!("{table}.role");
        let role_name = r.value(&role_key, token.role, ApiRole::Read.as_str().to_owned());
        let role = ApiRole::parse(&role_name).ok_or_else(|| {
            ConfigError::new(&role_key, format!("unknown role {role_name:?} (admin, publish or read)"))
        })?;
        let key = format!("{table}.token");
        r.show(&key, Shown::Value(effective::reference(&token.token)));
        named.push((key, name, role, token.token));
    }
    if let Some(i) = proxies.iter().position(|prefix| enabled && *prefix == idemgate_http::portal::PREFIX) {
        return Err(ConfigError::new(
            "api.enabled",
            format!(
                "the customer portal is served at {}, which is already the prefix of proxy[{i}]",
                idemgate_http::portal::PREFIX
            ),
        ));
    }
    if let Some(i) = proxies.iter().position(|prefix| enabled && *prefix == PREFIX) {
        return Err(ConfigError::new(
            "api.enabled",
            format!("the outbound API is served at {PREFIX}, which is already the prefix of proxy[{i}]"),
        ));
    }
    if enabled && named.is_empty() {
        return Err(ConfigError::new("api.tokens", "the API is enabled without a token: add [api.tokens.<name>]"));
    }
    if !enabled || !(serves || delivers) {
        return Ok(None);
    }
    let mut tokens: Vec<(String, ApiToken)> = Vec::new();
    for (key, name, role, reference) in named.into_iter().filter(|_| serves) {
        let token = r.resolve(&key, &reference)?;
        if token.len() < MIN_TOKEN_LEN {
            return Err(ConfigError::new(key, format!("must be at least {MIN_TOKEN_LEN} characters")));
        }
        if let Some((other, _)) = tokens.iter().find(|(_, t)| t.secret.expose() == token.as_bytes()) {
            return Err(ConfigError::new(
                key,
                format!("is the same token as {other}: each API token needs a value of its own"),
            ));
        }
        tokens.push((key, ApiToken { name, role, secret: Secret::new(token.into_bytes()) }));
    }
    let secrets_key = match raw.secrets_key {
        Some(reference) => {
            let text = r.resolve("api.secrets_key", &reference)?;
            Some(SecretsKey::parse(&text).map_err(|err| ConfigError::new("api.secrets_key", err.to_string()))?)
        }
        None => {
            return Err(ConfigError::new(
                "api.secrets_key",
                "the API is enabled without a key to seal endpoint secrets: set it to 32 bytes \
                 (64 hex digits or base64), e.g. \"env:IDEMGATE_API_SECRETS_KEY\"",
            ));
        }
    };
    Ok(Some(ApiConfig {
        tokens: tokens.into_iter().map(|(_, token)| token).collect(),
        secrets_key,
        url_policy: UrlPolicy { allow_http, allow_networks },
        public_url,
        endpoint_labels: EndpointLabels::of(per_endpoint),
        portal,
    }))
}

/// `api.public_url`: an absolute `http(s)` URL without credentials, query or fragment.
fn public_url(url: &str) -> Result<(), ConfigError> {
    let bad = |why: &str| ConfigError::new("api.public_url", format!("{url:?} {why}"));
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| bad("is not an http:// or https:// URL"))?;
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() {
        return Err(bad("has no host"));
    }
    if host.contains('@') || url.contains(['?', '#']) || url.contains(char::is_whitespace) {
        return Err(bad("must be a plain base URL (no credentials, query, fragment or spaces)"));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{Config, Uses, raw, validated::validate_for};

    const SOURCE: &str = "[sources.a]\nscheme = \"github\"\nsecrets = [\"s\"]\n";
    const KEY_HEX: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    fn config(extra: &str, uses: Uses) -> Result<Config, ConfigError> {
        let raw = raw::parse(&format!("{SOURCE}{extra}"), std::iter::empty())?;
        validate_for(raw, Path::new("."), uses).map(|(config, _)| config)
    }

    fn shown(config: &Config, key: &str) -> Shown {
        config.effective().entries().iter().find(|e| e.key == key).unwrap().shown.clone()
    }

    #[test]
    fn the_portal_is_served_with_a_public_url_and_its_brand_is_checked() {
        let api = |extra: &str| {
            format!(
                "[api]\nenabled = true\nsecrets_key = \"{KEY_HEX}\"\n{extra}\
                 [api.tokens.ci]\ntoken = \"publish-token-0123456789\"\n"
            )
        };
        let off = config(&api(""), Uses::Serve).unwrap();
        assert!(off.api.as_ref().unwrap().portal.is_none(), "no public_url: no portal");
        let text =
            api("public_url = \"https://hooks.example.com/\"\n[api.portal]\nname = \"Acme\"\naccent = \"#0B6E4F\"\n\
             logo_url = \"https://cdn.example/l.svg\"\nframe_ancestors = [\"https://app.example\"]\n");
        let portal = config(&text, Uses::Serve).unwrap().api.unwrap().portal.unwrap();
        assert_eq!(portal.public_url, "https://hooks.example.com");
        assert_eq!((portal.brand.name.as_str(), portal.brand.accent.as_deref()), ("Acme", Some("#0b6e4f")));
        assert_eq!(portal.frame_ancestors, ["https://app.example"]);
        for (bad, key) in [
            ("accent = \"green\"", "api.portal.accent"),
            ("logo_url = \"http://cdn.example/l.svg\"", "api.portal.logo_url"),
            ("frame_ancestors = [\"https://app.example/path\"]", "api.portal.frame_ancestors[0]"),
            ("name = \"\"", "api.portal.name"),
        ] {
            let text = api(&format!("public_url = \"https://hooks.example.com\"\n[api.portal]\n{bad}\n"));
            let err = config(&text, Uses::Serve).unwrap_err().to_string();
            assert!(err.contains(key), "{bad}: {err}");
        }
    }

    #[test]
    fn metrics_per_endpoint_makes_each_endpoint_a_label_value() {
        let text = format!(
            "[api]\nenabled = true\nsecrets_key = \"{KEY_HEX}\"\nmetrics_per_endpoint = true\n\
             [api.tokens.ci]\ntoken = \"publish-token-0123456789\"\n"
        );
        let config = config(&text, Uses::Serve).unwrap();
        assert_eq!(config.api.as_ref().unwrap().endpoint_labels, EndpointLabels::PerEndpoint);
        assert_eq!(shown(&config, "api.metrics_per_endpoint"), Shown::Value(true.into()));
    }

    #[test]
    fn the_api_is_off_unless_enabled() {
        assert!(config("", Uses::Serve).unwrap().api.is_none());
        let off = config("[api]\n[api.tokens.ci]\ntoken = \"publish-token-0123456789\"\n", Uses::Serve).unwrap();
        assert!(off.api.is_none());
    }

    #[test]
    fn an_enabled_api_has_its_tokens_key_and_policy_and_shows_no_secret() {
        let text = format!(
            "[api]\nenabled = true\nsecrets_key = \"{KEY_HEX}\"\nallow_networks = [\"127.0.0.1/8\", \"::1/128\"]\n\
             public_url = \"https://hooks.example.com\"\n\
             [api.tokens.ci]\ntoken = \"publish-token-0123456789\"\nrole = \"publish\"\n\
             [api.tokens.ops]\ntoken = \"admin-token-0123456789\"\nrole = \"admin\"\n"
        );
        let config = config(&text, Uses::Serve).unwrap();
        let api = config.api.as_ref().unwrap();
        let roles: Vec<_> = api.tokens.iter().map(|t| (t.name.as_str(), t.role)).collect();
        assert_eq!(roles, [("ci", ApiRole::Publish), ("ops", ApiRole::Admin)]);
        let expected_key = SecretsKey::parse(KEY_HEX).unwrap().id();
        assert_eq!(api.secrets_key.as_ref().map(SecretsKey::id), Some(expected_key));
        assert_eq!(api.url_policy.allow_networks, ["127.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()]);
        assert!(!api.url_policy.allow_http);
        assert_eq!(api.public_url.as_deref(), Some("https://hooks.example.com"));
        assert_eq!(api.endpoint_labels, EndpointLabels::Folded, "endpoints share one metrics label by default");
        assert_eq!(shown(&config, "api.tokens.ci.token"), Shown::Value(effective::REDACTED.into()));
        assert_eq!(shown(&config, "api.secrets_key"), Shown::Value(effective::REDACTED.into()));
        let listing = config.effective().to_string();
        assert!(!listing.contains("publish-token") && !listing.contains(KEY_HEX), "{listing}");
        assert!(!format!("{api:?}").contains("publish-token"));
    }

    #[test]
    fn each_bad_value_is_refused_at_its_key() {
        let token = "[api.tokens.ci]\ntoken = \"publish-token-0123456789\"\n";
        let cases = [
            ("[api]\nenabled = true\n".to_owned(), "api.tokens"),
            (
                format!(
                    "[[proxy]]\nprefix = \"/api/v1\"\nupstream = \"http://127.0.0.1:1\"\n[api]\nenabled = true\n{token}"
                ),
                "api.enabled",
            ),
            (format!("[api]\nenabled = true\nallow_networks = [\"10.0.0.0/33\"]\n{token}"), "api.allow_networks[0]"),
            (format!("[api]\nenabled = true\nsecrets_key = \"abcd\"\n{token}"), "api.secrets_key"),
            (format!("[api]\nenabled = true\npublic_url = \"ftp://x\"\n{token}"), "api.public_url"),
            (format!("[api]\nenabled = true\npublic_url = \"https://u:p@x\"\n{token}"), "api.public_url"),
            ("[api]\nenabled = true\n[api.tokens.ci]\ntoken = \"short\"\n".to_owned(), "api.tokens.ci.token"),
            (format!("[api]\nenabled = true\n{token}role = \"operate\"\n"), "api.tokens.ci.role"),
            (
                "[api]\nenabled = true\n[api.tokens.Bad]\ntoken = \"publish-token-0123456789\"\n".to_owned(),
                "api.tokens.Bad",
            ),
            (
                format!("[api]\nenabled = true\n{token}[api.tokens.two]\ntoken = \"publish-token-0123456789\"\n"),
                "api.tokens.two.token",
            ),
        ];
        for (text, key) in cases {
            let err = config(&text, Uses::Serve).unwrap_err();
            assert_eq!(err.key, key, "{text}: {err}");
            assert!(!err.to_string().contains("publish-token") && !err.to_string().contains("abcd"), "{err}");
        }
    }

    #[test]
    fn serving_the_api_needs_a_secrets_key() {
        let text = "[api]\nenabled = true\n[api.tokens.ci]\ntoken = \"publish-token-0123456789\"\n";
        let err = config(text, Uses::Serve).unwrap_err();
        assert_eq!(err.key, "api.secrets_key", "{err}");
        assert!(config(text, Uses::Store).unwrap().api.is_none());
        let keyed = format!(
            "[api]\nenabled = true\nsecrets_key = \"{KEY_HEX}\"\n[api.tokens.ci]\ntoken = \"publish-token-0123456789\"\n"
        );
        assert!(config(&keyed, Uses::Serve).unwrap().api.is_some());
    }

    #[test]
    fn a_command_that_does_not_serve_resolves_no_token() {
        let text = "[api]\nenabled = true\nsecrets_key = \"env:IDEMGATE_TEST_SURELY_UNSET\"\n\
                    [api.tokens.ci]\ntoken = \"env:IDEMGATE_TEST_SURELY_UNSET\"\n";
        assert!(config(text, Uses::Store).unwrap().api.is_none());
        let err = config(text, Uses::Serve).unwrap_err();
        assert_eq!(err.key, "api.tokens.ci.token");
        assert_eq!(
            shown(&config(text, Uses::Store).unwrap(), "api.secrets_key"),
            Shown::Value("env:IDEMGATE_TEST_SURELY_UNSET".into())
        );
    }
}
