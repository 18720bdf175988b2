//! Which custom headers an endpoint may carry (`docs/design/outbound-api.md` §3.8): none
//! that the worker sets or signs itself (`webhook-*`, `idempotency-key`, `idemgate-*`,
//! `traceparent`), none that describe the body or one hop (`content-*`, `host`,
//! `connection`, `transfer-encoding`, …), and none of Svix's forbidden names and prefixes
//! (`FORBIDDEN_KEYS`, `FORBIDDEN_PREFIXES` in Svix's `core/types/mod.rs`, which also
//! forbid `user-agent`, caching headers and cloud providers' `x-amz-`, `x-goog-`, …).
//! Names are compared in lower case. `authorization` is allowed, but it and the other
//! credential headers are **sensitive**: the API lists their names, never their values.

use super::field::{FieldError, Loc};

/// The longest header value, in bytes (Svix's).
pub const MAX_VALUE_LEN: usize = 4096;

/// Names an endpoint may not set: the worker's own, the transport's, and Svix's list.
const FORBIDDEN_NAMES: &[&str] = &[
    // The worker sets these on every attempt.
    "idempotency-key",
    "traceparent",
    "tracestate",
    "content-type",
    "content-length",
    "user-agent",
    // One hop, or the client's from the URL and the body (RFC 9110, 7.6.1).
    "host",
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
    // Svix's remaining FORBIDDEN_KEYS.
    "age",
    "cache-control",
    "clear-site-data",
    "expires",
    "pragma",
    "warning",
    "content-encoding",
    "content-language",
    "content-location",
];

/// Prefixes an endpoint's header names may not start with.
const FORBIDDEN_PREFIXES: &[&str] = &[
    // Signed by the worker (Standard Webhooks, and Svix's spelling of it), or idemgate's own.
    "webhook-",
    "svix-",
    "idemgate-",
    // Svix's FORBIDDEN_PREFIXES.
    "x-svix-",
    "x-amz-",
    "x-amzn-",
    "x-google",
    "x-goog-",
    "x-gfe",
    "x-azure-",
    "x-fd-",
];

/// Headers whose values the API never shows (Svix's `EndpointHeadersOut::SENSITIVE_HEADERS`
/// that an endpoint may set).
const SENSITIVE: &[&str] = &["authorization", "x-auth-token", "x-api-key", "www-authenticate"];

/// Why a custom header is refused. Never carries the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// Not a valid HTTP header name.
    #[error("Invalid Header Name.")]
    Name,
    /// Not a valid HTTP header value.
    #[error("Invalid Header Value.")]
    Value,
    /// A value over [`MAX_VALUE_LEN`] bytes.
    #[error("Maximum header length is 4096 bytes")]
    ValueTooLong,
    /// A name the worker or the transport sets.
    #[error("Header uses a forbidden key.")]
    Forbidden,
    /// A name with a reserved prefix.
    #[error("Header starts with a forbidden prefix.")]
    ForbiddenPrefix,
}

/// Checks one custom header; a refusal's location is `loc` with the header's name
/// (`["body","headers","X-Foo"]`).
pub fn check(name: &str, value: &str, loc: &Loc) -> Result<(), FieldError> {
    let refuse = |err: HeaderError| Err(FieldError::new(loc.key(name), err));
    let lower = name.to_ascii_lowercase();
    if http::HeaderName::from_bytes(lower.as_bytes()).is_err() {
        return refuse(HeaderError::Name);
    }
    if FORBIDDEN_NAMES.contains(&lower.as_str()) {
        return refuse(HeaderError::Forbidden);
    }
    if FORBIDDEN_PREFIXES.iter().any(|prefix| lower.starts_with(prefix)) {
        return refuse(HeaderError::ForbiddenPrefix);
    }
    if value.len() > MAX_VALUE_LEN {
        return refuse(HeaderError::ValueTooLong);
    }
    if http::HeaderValue::from_str(value).is_err() {
        return refuse(HeaderError::Value);
    }
    Ok(())
}

/// Checks every header of an endpoint's `headers` field, at `loc`.
pub fn check_all<'h>(headers: impl IntoIterator<Item = (&'h str, &'h str)>, loc: &Loc) -> Result<(), FieldError> {
    headers.into_iter().try_for_each(|(name, value)| check(name, value, loc))
}

/// Whether the API hides this header's value (`EndpointHeadersOut.sensitive`).
#[must_use]
pub fn is_sensitive(name: &str) -> bool {
    SENSITIVE.iter().any(|sensitive| name.eq_ignore_ascii_case(sensitive))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbound::field::Rule;

    fn refused(name: &str, value: &str) -> Option<HeaderError> {
        match check(name, value, &Loc::body("headers")).err().map(|err| err.rule) {
            Some(Rule::Header(err)) => Some(err),
            _ => None,
        }
    }

    #[test]
    fn ordinary_headers_and_authorization_are_allowed() {
        for name in ["X-Example", "x-tenant", "Authorization", "X-Api-Key", "accept-language"] {
            assert_eq!(refused(name, "value 1"), None, "{name}");
        }
        assert!(is_sensitive("Authorization") && is_sensitive("x-api-key") && is_sensitive("X-Auth-Token"));
        assert!(!is_sensitive("x-example"));
    }

    #[test]
    fn the_workers_own_and_the_transports_headers_are_forbidden_in_any_case() {
        for name in [
            "Idempotency-Key",
            "traceparent",
            "Content-Type",
            "content-length",
            "Host",
            "Connection",
            "Transfer-Encoding",
            "TE",
            "upgrade",
            "User-Agent",
            "Cache-Control",
            "proxy-authorization",
        ] {
            assert_eq!(refused(name, "x"), Some(HeaderError::Forbidden), "{name}");
        }
        for name in
            ["webhook-signature", "Webhook-Id", "svix-id", "idemgate-source", "X-Amz-Date", "x-goog-foo", "X-Svix-X"]
        {
            assert_eq!(refused(name, "x"), Some(HeaderError::ForbiddenPrefix), "{name}");
        }
    }

    #[test]
    fn invalid_names_and_values_are_refused_at_the_headers_location() {
        assert_eq!(refused("x-invalid???", "1"), Some(HeaderError::Name));
        assert_eq!(refused("", "1"), Some(HeaderError::Name));
        assert_eq!(refused("x ok", "1"), Some(HeaderError::Name));
        assert_eq!(refused("x-ok", "line\nbreak"), Some(HeaderError::Value));
        assert_eq!(refused("x-ok", &"v".repeat(4097)), Some(HeaderError::ValueTooLong));
        assert_eq!(refused("x-ok", &"v".repeat(4096)), None);
        let err = check_all([("x-a", "1"), ("Host", "evil")], &Loc::body("headers")).err();
        assert_eq!(err.map(|e| e.loc.parts().to_vec()), Some(vec!["body".into(), "headers".into(), "Host".into()]));
    }
}
