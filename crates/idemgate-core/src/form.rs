//! Strict parsing of `application/x-www-form-urlencoded` webhook bodies (Twilio, Slack
//! interactivity) into a JSON view.
//!
//! The signature is verified on the raw bytes before this runs, as for JSON; this only
//! makes the verified bytes readable by identity pointers, event types and filters. The
//! view is an object whose members are the form's fields, every value a string: `+` is a
//! space, `%XX` a byte, and the decoded bytes must be UTF-8. A field that holds JSON (Slack's
//! `payload`) stays a string in the view.
//!
//! Like the strict JSON parser, it refuses what could be read more than one way: a key
//! given twice (`a=1&a=2`, which parsers resolve first-wins, last-wins or as a list),
//! invalid percent-encoding (`%G1`, a `%` at the end, which lenient decoders keep as
//! literal text) and bytes that are not UTF-8 once decoded (which lenient decoders replace
//! with U+FFFD). An empty segment (`a=1&&b=2`, a trailing `&`) carries nothing and is
//! skipped, as in the WHATWG URL standard; a segment without `=` is a field with an empty
//! value. The `form_urlencoded` crate is not used: it decodes leniently and cannot report
//! any of these refusals.
//!
//! Error messages never contain payload bytes, field names or values.

use std::collections::BTreeMap;

use crate::{
    Rejection,
    json::{self, Json, Object},
};

/// How a source's bodies are read into the JSON view that identity pointers, event types
/// and filters read, once the signature holds (`body = "json"` or `"form"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BodyFormat {
    /// Strict JSON ([`json::parse`]).
    #[default]
    Json,
    /// A strict `application/x-www-form-urlencoded` form ([`parse`]).
    Form,
}

impl BodyFormat {
    /// The format configured as `name`: `json` or `form`.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "json" => Some(Self::Json),
            "form" => Some(Self::Form),
            _ => None,
        }
    }

    /// The configuration name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Form => "form",
        }
    }

    /// The JSON view of `bytes`, or why they are refused.
    pub fn read(self, bytes: &[u8], limits: json::Limits) -> Result<Json, Rejection> {
        match self {
            Self::Json => Ok(json::parse(bytes, limits)?),
            Self::Form => Ok(parse(bytes)?),
        }
    }
}

/// The most fields a form body may have.
pub const MAX_FIELDS: usize = 1024;

/// Why a body is not an acceptable form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormError {
    /// A field name appears twice; `field` is its 1-based position among the fields.
    #[error("duplicate form key at field {field}")]
    DuplicateKey {
        /// The position of the second occurrence.
        field: usize,
    },
    /// A `%` not followed by two hexadecimal digits.
    #[error("invalid percent-encoding at field {field}")]
    InvalidPercentEncoding {
        /// The position of the field.
        field: usize,
    },
    /// A name or value that is not UTF-8 once decoded.
    #[error("form field {field} is not valid utf-8 after decoding")]
    InvalidUtf8 {
        /// The position of the field.
        field: usize,
    },
    /// More fields than [`MAX_FIELDS`].
    #[error("form has more than {limit} fields")]
    TooManyFields {
        /// The limit in force.
        limit: usize,
    },
}

impl FormError {
    /// A short, stable snake_case code for this variant, fit for a bounded metric label.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        match self {
            Self::DuplicateKey { .. } => "duplicate_key",
            Self::InvalidPercentEncoding { .. } => "invalid_percent_encoding",
            Self::InvalidUtf8 { .. } => "invalid_utf8",
            Self::TooManyFields { .. } => "too_many_fields",
        }
    }
}

/// Parses a form body into its JSON view: an object of string members.
///
/// ```
/// # use idemgate_core::{form, json::Json};
/// let view = form::parse(b"MessageSid=SM1&Body=hello+w%C3%B6rld").unwrap();
/// assert_eq!(view.pointer("/Body").and_then(Json::as_str), Some("hello wörld"));
/// assert_eq!(form::parse(b"a=1&a=2").unwrap_err().reason(), "duplicate_key");
/// ```
pub fn parse(bytes: &[u8]) -> Result<Json, FormError> {
    let mut members = BTreeMap::new();
    let segments = bytes.split(|&b| b == b'&').filter(|segment| !segment.is_empty());
    for (index, segment) in segments.enumerate() {
        let field = index + 1;
        if field > MAX_FIELDS {
            return Err(FormError::TooManyFields { limit: MAX_FIELDS });
        }
        let (name, value) = match segment.iter().position(|&b| b == b'=') {
            Some(at) => (&segment[..at], &segment[at + 1..]),
            None => (segment, &[][..]),
        };
        let name = decode(name, field)?;
        let value = decode(value, field)?;
        if members.insert(name, Json::String(value)).is_some() {
            return Err(FormError::DuplicateKey { field });
        }
    }
    Ok(Json::Object(Object::from_members(members)))
}

/// One name or value decoded: `+` a space, `%XX` a byte, then the bytes as UTF-8.
fn decode(encoded: &[u8], field: usize) -> Result<String, FormError> {
    let mut out = Vec::with_capacity(encoded.len());
    let mut bytes = encoded.iter();
    while let Some(&b) = bytes.next() {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let digit = |d: Option<&u8>| d.and_then(|&d| char::from(d).to_digit(16));
                match (digit(bytes.next()), digit(bytes.next())) {
                    // Two hex digits are at most 0xFF, so the cast cannot truncate.
                    (Some(high), Some(low)) => out.push((high * 16 + low) as u8),
                    _ => return Err(FormError::InvalidPercentEncoding { field }),
                }
            }
            b => out.push(b),
        }
    }
    String::from_utf8(out).map_err(|_| FormError::InvalidUtf8 { field })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn member<'a>(view: &'a Json, name: &str) -> Option<&'a str> {
        view.get(name).and_then(Json::as_str)
    }

    #[test]
    fn fields_become_string_members_with_plus_as_space_and_percent_as_bytes() {
        let view = parse(b"MessageSid=SM123&Body=hello+w%C3%B6rld%21&NumMedia=0&To=%2B15550001111").unwrap();
        assert_eq!(member(&view, "MessageSid"), Some("SM123"));
        assert_eq!(member(&view, "Body"), Some("hello wörld!"));
        assert_eq!(view.get("NumMedia"), Some(&Json::String("0".into())), "values stay strings");
        assert_eq!(member(&view, "To"), Some("+15550001111"), "%2B is a plus, + is a space");
        assert_eq!(view.as_object().unwrap().len(), 4);
    }

    #[test]
    fn a_field_holding_json_stays_a_string() {
        let view = parse(b"payload=%7B%22type%22%3A%22block_actions%22%2C%22trigger_id%22%3A%221.2%22%7D").unwrap();
        assert_eq!(member(&view, "payload"), Some(r#"{"type":"block_actions","trigger_id":"1.2"}"#));
        assert_eq!(view.pointer("/payload/type"), None, "not parsed into an object");
    }

    #[test]
    fn names_are_decoded_and_empty_segments_skipped() {
        let view = parse(b"&a%20b=1&&flag&c=&").unwrap();
        assert_eq!(member(&view, "a b"), Some("1"));
        assert_eq!(member(&view, "flag"), Some(""), "no = is an empty value");
        assert_eq!(member(&view, "c"), Some(""));
        assert_eq!(view.as_object().unwrap().len(), 3);
        assert_eq!(parse(b"").unwrap(), Json::Object(Object::default()), "an empty body is an empty form");
        assert_eq!(member(&parse(b"k=a=b").unwrap(), "k"), Some("a=b"), "only the first = splits");
    }

    #[test]
    fn a_duplicate_key_is_refused_even_when_spelled_differently() {
        assert_eq!(parse(b"a=1&b=2&a=1"), Err(FormError::DuplicateKey { field: 3 }));
        assert_eq!(parse(b"a+b=1&a%20b=2"), Err(FormError::DuplicateKey { field: 2 }), "equal once decoded");
        assert_eq!(parse(b"a=1&a").unwrap_err().reason(), "duplicate_key");
    }

    #[test]
    fn invalid_percent_encoding_is_refused() {
        for body in [&b"a=%"[..], b"a=%4", b"a=%G1", b"a=%4g", b"b=1&%zz=1", b"a=100%"] {
            let err = parse(body).unwrap_err();
            assert_eq!(err.reason(), "invalid_percent_encoding", "{body:?}");
        }
        assert_eq!(parse(b"x=1&a=%4"), Err(FormError::InvalidPercentEncoding { field: 2 }));
        assert_eq!(member(&parse(b"a=%4A%4a").unwrap(), "a"), Some("JJ"), "either case of hex digit");
    }

    #[test]
    fn invalid_utf8_after_decoding_is_refused() {
        assert_eq!(parse(b"a=%FF"), Err(FormError::InvalidUtf8 { field: 1 }));
        assert_eq!(parse(b"a=%C3"), Err(FormError::InvalidUtf8 { field: 1 }), "a cut sequence");
        assert_eq!(parse(b"x=1&%C0%AF=1"), Err(FormError::InvalidUtf8 { field: 2 }), "an overlong name");
        assert_eq!(parse(b"a=\xff").unwrap_err().reason(), "invalid_utf8", "a raw byte too");
    }

    #[test]
    fn too_many_fields_are_refused() {
        let body: Vec<u8> = (0..=MAX_FIELDS).map(|i| format!("f{i}=1")).collect::<Vec<_>>().join("&").into_bytes();
        assert_eq!(parse(&body), Err(FormError::TooManyFields { limit: MAX_FIELDS }));
        let most: Vec<u8> = (0..MAX_FIELDS).map(|i| format!("f{i}=1")).collect::<Vec<_>>().join("&").into_bytes();
        assert_eq!(parse(&most).unwrap().as_object().unwrap().len(), MAX_FIELDS);
    }

    #[test]
    fn a_source_reads_its_bodies_in_its_format() {
        let limits = json::Limits::default();
        assert_eq!(
            BodyFormat::from_name("form").map(|f| f.read(b"id=1", limits)),
            Some(parse(b"id=1").map_err(Rejection::from))
        );
        assert!(matches!(BodyFormat::Json.read(b"id=1", limits), Err(Rejection::InvalidJson(_))));
        assert!(matches!(BodyFormat::Form.read(b"a=1&a=2", limits), Err(Rejection::InvalidForm(_))));
        assert_eq!(BodyFormat::default().name(), "json");
        assert_eq!(BodyFormat::from_name("xml"), None);
    }

    #[test]
    fn errors_never_echo_the_payload() {
        for body in [&b"secret=%zz"[..], b"secret=1&secret=2", b"secret=%FF"] {
            let text = parse(body).unwrap_err().to_string();
            assert!(!text.contains("secret") && !text.contains("zz"), "{text}");
        }
    }
}
