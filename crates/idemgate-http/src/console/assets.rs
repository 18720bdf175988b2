//! The console's one stylesheet, `assets/idemgate.css`, compiled in with `include_str!`
//! and served at a path holding a hash of its content ([`stylesheet_path`]), so a browser
//! may keep it for a year: a changed stylesheet is a new path. No CDN, no build step.

use std::sync::LazyLock;

use axum::{
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use sha2::{Digest, Sha256};

/// The stylesheet's text.
pub(crate) const STYLESHEET: &str = include_str!("assets/idemgate.css");

/// How long a browser may keep the stylesheet: a year, never revalidated (the path changes
/// with the content).
const CACHE_CONTROL: &str = "public, max-age=31536000, immutable";

/// The stylesheet's path: `/assets/idemgate.<first 12 hex digits of its SHA-256>.css`.
static PATH: LazyLock<String> = LazyLock::new(|| {
    let digest = hex::encode(Sha256::digest(STYLESHEET.as_bytes()));
    format!("/assets/idemgate.{}.css", &digest[..12])
});

/// Where pages link the stylesheet from (and where the console serves it).
pub(crate) fn stylesheet_path() -> &'static str {
    &PATH
}

/// The stylesheet, as CSS with its long-lived `Cache-Control`.
pub(crate) async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("text/css; charset=utf-8")),
            (header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL)),
        ],
        STYLESHEET,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::{STYLESHEET, stylesheet_path};

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
        for needed in ["--accent:", "prefers-color-scheme: dark", "@media (max-width: 40em)", ":focus-visible"] {
            assert!(STYLESHEET.contains(needed), "the stylesheet lacks {needed}");
        }
    }
}
