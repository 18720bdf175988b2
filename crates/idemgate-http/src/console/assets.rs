//! The console's stylesheets, each served at a path holding a hash of its content, so a
//! browser may keep it for a year: a changed stylesheet is a new path. No CDN, no build
//! step. The one stylesheet, `assets/idemgate.css`, is compiled in with `include_str!`
//! ([`stylesheet_path`]); the brand's, a few lines setting the accent colour and the text
//! drawn on it, is generated once at start-up from the accent ([`BrandSheet`]), so that no
//! page carries a style inline and the CSP's `style-src` stays `'self'`.

use std::sync::LazyLock;

use axum::{
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use sha2::{Digest, Sha256};

use super::ui::Accent;

/// The stylesheet's text.
pub(crate) const STYLESHEET: &str = include_str!("assets/idemgate.css");

/// How long a browser may keep the stylesheet: a year, never revalidated (the path changes
/// with the content).
const CACHE_CONTROL: &str = "public, max-age=31536000, immutable";

/// The stylesheet's path: `/assets/idemgate.<first 12 hex digits of its SHA-256>.css`.
static PATH: LazyLock<String> = LazyLock::new(|| content_path("idemgate", STYLESHEET));

/// `/assets/<name>.<first 12 hex digits of the SHA-256 of css>.css`.
fn content_path(name: &str, css: &str) -> String {
    let digest = hex::encode(Sha256::digest(css.as_bytes()));
    format!("/assets/{name}.{}.css", &digest[..12])
}

/// Where pages link the stylesheet from (and where the console serves it).
pub(crate) fn stylesheet_path() -> &'static str {
    &PATH
}

/// The stylesheet, as CSS with its long-lived `Cache-Control`.
pub(crate) async fn stylesheet() -> Response {
    css(STYLESHEET)
}

/// `text` as CSS with its long-lived `Cache-Control`.
fn css(text: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("text/css; charset=utf-8")),
            (header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL)),
        ],
        text,
    )
        .into_response()
}

/// The brand's stylesheet: the accent's custom properties ([`Accent::properties`]),
/// linked after the one stylesheet so that they win in both colour schemes, at
/// `/assets/brand.<hash>.css`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BrandSheet {
    path: String,
    css: String,
}

impl BrandSheet {
    /// The brand's stylesheet for `accent`.
    pub(crate) fn new(accent: Accent) -> Self {
        let css = format!("/* idemgate: the accent colour and the text drawn on it. */\n{}", accent.properties());
        Self { path: content_path("brand", &css), css }
    }

    /// Where pages link it from (and where the console serves it).
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// Its CSS.
    pub(crate) fn css(&self) -> &str {
        &self.css
    }
}

/// The brand's stylesheet the console serves: idemgate's own accent ([`Accent::DEFAULT`])
/// until `[portal] accent` is read from the configuration.
static BRAND: LazyLock<BrandSheet> = LazyLock::new(|| BrandSheet::new(Accent::DEFAULT));

/// The brand's stylesheet the pages link and the console serves.
pub(crate) fn brand_sheet() -> &'static BrandSheet {
    &BRAND
}

/// The brand's stylesheet, as CSS with its long-lived `Cache-Control`.
pub(crate) async fn brand_stylesheet() -> Response {
    css(BRAND.css())
}

#[cfg(test)]
mod tests {
    use super::{BrandSheet, STYLESHEET, brand_sheet, stylesheet_path};
    use crate::console::ui::Accent;

    #[test]
    fn the_path_names_the_content() {
        let path = stylesheet_path();
        let hash = path.strip_prefix("/assets/idemgate.").and_then(|p| p.strip_suffix(".css")).unwrap_or("");
        assert_eq!(hash.len(), 12, "{path}");
        assert!(hash.chars().all(|c| c.is_ascii_hexdigit()), "{path}");
        let full = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(STYLESHEET.as_bytes()));
        assert!(full.starts_with(hash), "{path} is not the content's hash {full}");
    }

    #[test]
    fn the_sheet_has_both_schemes_and_the_narrow_cards() {
        for needed in [
            "--accent:",
            "--on-accent:",
            "prefers-color-scheme: dark",
            "@media (max-width: 40em)",
            ":focus-visible",
            "td[data-label]::before",
            ".field-error",
        ] {
            assert!(STYLESHEET.contains(needed), "the stylesheet lacks {needed}");
        }
    }

    #[test]
    fn the_brand_sheet_carries_the_accent_and_is_named_by_it() {
        let gold = BrandSheet::new(Accent::parse("#ffd700").unwrap_or(Accent::DEFAULT));
        assert!(gold.css().contains(":root { --accent: #ffd700; --on-accent: #000000; }"), "{}", gold.css());
        let hash = gold.path().strip_prefix("/assets/brand.").and_then(|p| p.strip_suffix(".css")).unwrap_or("");
        let full = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(gold.css().as_bytes()));
        assert!(hash.len() == 12 && full.starts_with(hash), "{} is not the content's hash {full}", gold.path());
        assert_ne!(gold.path(), BrandSheet::new(Accent::DEFAULT).path(), "another accent, another path");
        assert_eq!(brand_sheet(), &BrandSheet::new(Accent::DEFAULT), "the default until configured");
        assert!(brand_sheet().css().contains("--on-accent: #ffffff;"));
    }
}
