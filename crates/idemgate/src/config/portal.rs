//! `[api.portal]`: the customer portal's branding and framing (`docs/guide/portal.md`).
//! The portal is served under `/portal` whenever the API is and `[api] public_url` is set
//! (its links start there); these keys only change how it looks and who may frame it:
//! `name` (the provider's, 1–64 printable characters), `logo_url` (`https`), `accent`
//! (`#rrggbb`), `frame_ancestors` (origins allowed to show it in an iframe: `https://host`
//! with an optional port, or `http://` for loopback only).

use idemgate_http::{
    console::Accent,
    portal::{Brand, Portal},
};

use super::{ConfigError, effective::Shown, raw::RawPortal, reading::Reading};

/// The portal served at `public_url`, branded by `raw`; `None` without a public URL (the
/// portal is then off, and `app-portal-access` answers Svix's fixed page).
pub(super) fn portal(
    raw: Option<RawPortal>,
    public_url: Option<&str>,
    r: &mut Reading<'_>,
) -> Result<Option<Portal>, ConfigError> {
    let raw = raw.unwrap_or_default();
    let default = Brand::default();
    let name = r.value("api.portal.name", raw.name, default.name);
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(ConfigError::new("api.portal.name", "must be 1 to 64 printable characters"));
    }
    let logo_url = match raw.logo_url {
        Some(url) => {
            logo(&url)?;
            r.show("api.portal.logo_url", Shown::Value(url.clone().into()));
            Some(url)
        }
        None => {
            r.show("api.portal.logo_url", Shown::Note("(not set: the name alone)"));
            None
        }
    };
    let accent = match raw.accent {
        Some(accent) => {
            let parsed = Accent::parse(&accent)
                .map_err(|_| ConfigError::new("api.portal.accent", format!("{accent:?} is not a colour #rrggbb")))?;
            r.show("api.portal.accent", Shown::Value(accent.into()));
            Some(parsed.to_string())
        }
        None => {
            r.show("api.portal.accent", Shown::Note("(not set: idemgate's own)"));
            None
        }
    };
    for (i, origin) in raw.frame_ancestors.iter().enumerate() {
        frame_ancestor(origin).map_err(|why| ConfigError::new(format!("api.portal.frame_ancestors[{i}]"), why))?;
    }
    let listed = raw.frame_ancestors.iter().map(|o| toml::Value::String(o.clone())).collect();
    r.show("api.portal.frame_ancestors", Shown::Value(toml::Value::Array(listed)));
    let Some(public_url) = public_url else { return Ok(None) };
    Ok(Some(Portal {
        public_url: public_url.trim_end_matches('/').to_owned(),
        brand: Brand { name, logo_url, accent },
        frame_ancestors: raw.frame_ancestors.iter().map(|o| o.to_ascii_lowercase()).collect(),
    }))
}

/// `logo_url`: an `https` URL without spaces, quotes or angle brackets (it goes into an
/// attribute and the CSP).
fn logo(url: &str) -> Result<(), ConfigError> {
    let ok = url.strip_prefix("https://").is_some_and(|rest| {
        !rest.is_empty()
            && !rest.starts_with('/')
            && !url.contains(|c: char| c.is_whitespace() || "\"'<>;,".contains(c))
    });
    if ok { Ok(()) } else { Err(ConfigError::new("api.portal.logo_url", format!("{url:?} is not a plain https URL"))) }
}

/// An origin that may frame the portal: `https://host[:port]`, or `http://` to loopback.
fn frame_ancestor(origin: &str) -> Result<(), String> {
    let (scheme, host) = origin.split_once("://").ok_or_else(|| format!("{origin:?} is not an origin"))?;
    let plain = !host.is_empty()
        && host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
        && !host.starts_with([':', '.']);
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    let loopback = matches!(name, "localhost" | "127.0.0.1" | "[::1]");
    match scheme {
        "https" if plain => Ok(()),
        "http" if plain && loopback => Ok(()),
        "http" if plain => Err(format!("{origin:?} is plain http: only https, or http to loopback")),
        _ => Err(format!("{origin:?} is not an origin like \"https://app.example.com\" (no path)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_https_origins_may_frame_the_portal() {
        for good in
            ["https://app.example.com", "https://app.example.com:8443", "http://localhost:3000", "http://127.0.0.1"]
        {
            assert_eq!(frame_ancestor(good), Ok(()), "{good}");
        }
        for bad in [
            "app.example.com",
            "http://app.example.com",
            "https://app.example.com/x",
            "https://*",
            "https://",
            "javascript://x",
            "https://a b",
        ] {
            assert!(frame_ancestor(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_logo_is_a_plain_https_url() {
        assert!(logo("https://cdn.example/logo.svg").is_ok());
        for bad in
            ["http://cdn.example/l.svg", "https://", "https:///x", "https://cdn.example/a b", "https://x/\"onerror"]
        {
            assert!(logo(bad).is_err(), "{bad}");
        }
    }
}
