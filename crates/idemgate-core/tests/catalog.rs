//! The provider catalog against what lives outside the crate: each provider's published
//! example vectors (`tests/providers/vectors/`), and the README's and the providers page's
//! lists, which are generated from the catalog (`IDEMGATE_BLESS=1` rewrites them).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use base64::{Engine, engine::general_purpose::STANDARD};
use http::{HeaderMap, HeaderName, HeaderValue};
use idemgate_core::{
    SecretSet, UnixTime,
    catalog::{Backing, Identity, Provider, Signing, providers},
    form::BodyFormat,
    scheme::{
        RawDelivery, Scheme,
        generic::{KeyEncoding, TimestampUnit},
    },
};

/// `tests/providers/vectors/<name>.json`: a provider's published example.
#[derive(serde::Deserialize)]
struct Vector {
    source: String,
    secret: String,
    headers: std::collections::BTreeMap<String, String>,
    body: Option<String>,
    body_b64: Option<String>,
    now: i64,
    signed_url: Option<String>,
}

fn vectors_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/providers/vectors")
}

#[test]
fn every_vector_backed_provider_accepts_its_published_example_and_refuses_a_changed_byte() {
    for provider in providers() {
        let Backing::Vectors { source } = provider.backing else { continue };
        let path = vectors_dir().join(format!("{}.json", provider.name));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let vector: Vector = serde_json::from_str(&text).unwrap();
        assert_eq!(vector.source, source, "{}: the vector names where it was published", provider.name);
        let body = match (&vector.body, &vector.body_b64) {
            (Some(text), None) => text.as_bytes().to_vec(),
            (None, Some(encoded)) => STANDARD.decode(encoded).unwrap(),
            _ => panic!("{}: body or body_b64", provider.name),
        };
        let scheme: Arc<dyn Scheme> = match &vector.signed_url {
            Some(url) => provider.scheme().with_signed_url(url).unwrap(),
            None => provider.scheme().configured(None),
        };
        let secrets = SecretSet::new(vec![scheme.decode_secret(&vector.secret).unwrap()]).unwrap();
        let sent: HeaderMap = vector
            .headers
            .iter()
            .map(|(n, v)| (HeaderName::try_from(n.as_str()).unwrap(), HeaderValue::from_str(v).unwrap()))
            .collect();
        let now = UnixTime(vector.now);
        let verified = scheme.verify(&secrets, RawDelivery { headers: &sent, body: &body }, now);
        assert!(verified.is_ok(), "{}: {verified:?}", provider.name);
        let mut changed = body.clone();
        let last = changed.len() - 2;
        changed[last] ^= 1;
        let tampered = scheme.verify(&secrets, RawDelivery { headers: &sent, body: &changed }, now);
        if matches!(provider.signing, Signing::Token(_) | Signing::Basic) {
            // A token covers no byte of the body: what it proves is the secret, so it is
            // another secret that is refused.
            let other = SecretSet::new(vec![scheme.decode_secret("another:secret-value").unwrap()]).unwrap();
            let wrong = scheme.verify(&other, RawDelivery { headers: &sent, body: &body }, now);
            assert!(wrong.is_err(), "{}", provider.name);
        } else {
            assert!(tampered.is_err(), "{}", provider.name);
        }
    }
}

/// How a provider signs, in a few words.
fn signing_words(provider: &'static Provider) -> String {
    match provider.signing {
        Signing::Coded(scheme) => format!("coded scheme `{}`", scheme.name()),
        Signing::Hmac(spec) => {
            format!("HMAC-{} ({}) in `{}`", spec.algorithm.name().to_uppercase(), spec.encoding.name(), spec.header)
        }
        Signing::Token(header) => format!("shared token in `{header}`"),
        Signing::Basic => "HTTP Basic".to_owned(),
    }
}

fn identity_words(provider: &'static Provider) -> String {
    let signed = provider.identity.is_some_and(|identity| identity.location().is_signed_by(provider.scheme()));
    match provider.identity {
        Some(Identity::Header(name)) if signed => format!("header `{name}` (signed)"),
        Some(Identity::Header(name)) => format!("header `{name}` (not signed: `dedupe_body` on)"),
        Some(Identity::Body(pointer)) => format!("body `{pointer}`"),
        None => "none sent: the source names one".to_owned(),
    }
}

fn backing_words(provider: &'static Provider) -> String {
    match provider.backing {
        Backing::Library { registry, package, api } => format!("{} `{package}` ({api})", registry.name()),
        Backing::Vectors { source } => format!("published vectors ([source]({source}))"),
    }
}

fn retry_words(provider: &'static Provider) -> String {
    if provider.per_attempt.is_empty() {
        "same bytes".to_owned()
    } else {
        let fields: Vec<_> = provider.per_attempt.iter().map(|p| format!("`{p}`")).collect();
        format!("{} change", fields.join(", "))
    }
}

/// The README's short table: provider, identity, what backs it.
fn readme_table() -> String {
    let mut text = String::from("| Provider | `scheme` | Identity | Backed by |\n|---|---|---|---|\n");
    for p in providers() {
        let backing = match p.backing {
            Backing::Library { registry, package, .. } => format!("{} `{package}`", registry.name()),
            Backing::Vectors { .. } => "published vectors".to_owned(),
        };
        text.push_str(&format!("| {} | `{}` | {} | {backing} |\n", p.title, p.name, identity_words(p)));
    }
    text
}

/// The guide's table of every provider.
fn guide_table() -> String {
    let mut text = String::from(
        "| Provider | `scheme` | Signature | Identity | A retry | Backed by |\n|---|---|---|---|---|---|\n",
    );
    for p in providers() {
        text.push_str(&format!(
            "| [{}](#{}) | `{}` | {} | {} | {} | {} |\n",
            p.title,
            p.name,
            p.name,
            signing_words(p),
            identity_words(p),
            retry_words(p),
            backing_words(p)
        ));
    }
    text
}

/// The guide's section per provider.
fn guide_details() -> String {
    let mut text = String::new();
    for p in providers() {
        text.push_str(&format!("### `{}`\n\n", p.name));
        text.push_str(&format!("**{}**: `scheme = \"{}\"`", p.title, p.name));
        if p.body == BodyFormat::Form {
            text.push_str(", a form body (`body = \"form\"` by default)");
        }
        if p.scheme().signs_url() {
            text.push_str(", and `signed_url` (the URL as registered with the provider: it is signed)");
        }
        text.push_str(&format!(". Signature: {}. [Documentation]({}).\n\n", signing_words(p), p.docs));
        if let Signing::Hmac(spec) = p.signing {
            text.push_str("The same as this generic configuration:\n\n```toml\n");
            text.push_str(&format!(
                "scheme = \"hmac\"\n[sources.{}.hmac]\nalgorithm = \"{}\"\nencoding = \"{}\"\nheader = \"{}\"\n",
                p.name,
                spec.algorithm.name(),
                spec.encoding.name(),
                spec.header
            ));
            if !spec.prefix.is_empty() {
                text.push_str(&format!("prefix = {:?}\n", spec.prefix));
            }
            if let Some(pairs) = spec.pairs {
                let timestamp = pairs.timestamp.map(|t| format!(", timestamp = \"{t}\"")).unwrap_or_default();
                text.push_str(&format!(
                    "pairs = {{ separator = \"{}\"{timestamp}, signature = \"{}\" }}\n",
                    pairs.separator, pairs.signature
                ));
            }
            text.push_str(&format!("signed = {:?}\n", spec.signed));
            if let Some(name) = spec.timestamp_header {
                text.push_str(&format!("timestamp_header = \"{name}\"\n"));
            }
            if spec.timestamp_unit != TimestampUnit::Seconds {
                text.push_str(&format!("timestamp_unit = \"{}\"\n", spec.timestamp_unit.name()));
            }
            if spec.key != KeyEncoding::Utf8 {
                text.push_str(&format!("key = \"{}\"\n", spec.key.name()));
            }
            text.push_str("```\n\n");
        }
        text.push_str(&format!("- **Identity**: {}. {}\n", identity_words(p), p.identity_note));
        if let Some(pointer) = p.event_type {
            text.push_str(&format!("- **Event type**: `{pointer}`.\n"));
        }
        text.push_str(&format!("- **A retry**: {}. {}\n", retry_words(p), p.retry_note));
        text.push_str(&format!("- **Backed by**: {}.\n\n", backing_words(p)));
    }
    text
}

/// Replaces what lies between `<!-- {marker}:start -->` and `<!-- {marker}:end -->`.
fn between(text: &str, marker: &str, content: &str) -> String {
    let start = format!("<!-- {marker}:start -->\n");
    let end = format!("<!-- {marker}:end -->");
    let a = text.find(&start).unwrap_or_else(|| panic!("no {start:?}")) + start.len();
    let b = text.find(&end).unwrap_or_else(|| panic!("no {end:?}"));
    format!("{}{content}{}", &text[..a], &text[b..])
}

/// The README and the providers page list the catalog as it is. With `IDEMGATE_BLESS=1`
/// the test writes them instead.
#[test]
fn the_readme_and_the_guide_list_every_provider_as_the_catalog_says() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bless = std::env::var_os("IDEMGATE_BLESS").is_some();
    let files = [
        ("README.md", vec![("providers", readme_table())]),
        ("docs/guide/providers.md", vec![("catalog-table", guide_table()), ("catalog-details", guide_details())]),
    ];
    for (file, parts) in files {
        let path = root.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let expected = parts.iter().fold(text.clone(), |text, (marker, content)| between(&text, marker, content));
        if bless {
            std::fs::write(&path, &expected).unwrap();
        } else {
            assert!(
                text == expected,
                "{file} is not the catalog's: run IDEMGATE_BLESS=1 cargo test -p idemgate-core catalog"
            );
        }
    }
}
