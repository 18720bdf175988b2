//! The comparison form of a repeat: what a retried delivery must share with the first one
//! to be its duplicate rather than a conflicting event under the same identity.
//!
//! For most providers it is every raw byte ([`BodyHash::of`]). Some change per-attempt
//! fields when they retry (an attempt counter, a delivery time inside the body); for them
//! the catalog names exactly those fields as JSON pointers, and the fingerprint is taken
//! over the raw bytes with the values of those members cut out. Everything else, the
//! members' names included, is still compared byte for byte, so a changed event under the
//! same identity stays a conflict. `*` in a pointer stands for every member or element at
//! that depth (HubSpot sends an array of events, each with its own attempt number).
//!
//! The body has already passed the strict JSON parser when this runs; bytes that do not
//! scan as JSON here are fingerprinted whole.

use sha2::{Digest, Sha256};

use crate::BodyHash;

/// A JSON pointer (RFC 6901) naming per-attempt fields, `*` matching any one token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPointer {
    text: String,
    tokens: Vec<String>,
}

/// A per-attempt pointer that cannot be one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PointerError(&'static str);

impl FieldPointer {
    /// Parses `text`: `/` and then tokens separated by `/`, `~0` for `~` and `~1` for `/`.
    pub fn parse(text: &str) -> Result<Self, PointerError> {
        let rest = text.strip_prefix('/').ok_or(PointerError("a pointer starts with /"))?;
        let tokens = rest
            .split('/')
            .map(|token| {
                let decoded = token.replace("~1", "/").replace("~0", "~");
                let stray = token.replace("~0", "").replace("~1", "").contains('~');
                if stray { Err(PointerError("~ is followed by 0 or 1 in a pointer")) } else { Ok(decoded) }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { text: text.to_owned(), tokens })
    }

    /// The pointer as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    fn matches(&self, path: &[String]) -> bool {
        self.tokens.len() == path.len()
            && self.tokens.iter().zip(path).all(|(token, step)| token == "*" || token == step)
    }
}

/// The fingerprint of `body` in its comparison form: the raw bytes, less the values of the
/// members `per_attempt` names.
#[must_use]
pub fn fingerprint(body: &[u8], per_attempt: &[FieldPointer]) -> BodyHash {
    if per_attempt.is_empty() {
        return BodyHash::of(body);
    }
    let mut scanner = Scanner { bytes: body, pos: 0, path: Vec::new(), cuts: Vec::new(), per_attempt };
    if scanner.value().is_none() {
        return BodyHash::of(body);
    }
    let mut hasher = Sha256::new();
    // Marks the comparison form apart from a plain hash of the same bytes.
    hasher.update(b"idemgate comparison form\0");
    let mut kept = 0;
    for (start, end) in scanner.cuts {
        hasher.update(&body[kept..start]);
        // A NUL never occurs in JSON text, so a cut cannot be mistaken for kept bytes.
        hasher.update([0u8]);
        kept = end;
    }
    hasher.update(&body[kept..]);
    BodyHash(hasher.finalize().into())
}

/// Walks JSON text, recording the byte span of every value whose path a pointer matches.
struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
    path: Vec<String>,
    cuts: Vec<(usize, usize)>,
    per_attempt: &'a [FieldPointer],
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.skip_whitespace();
        (self.peek() == Some(byte)).then(|| self.pos += 1)
    }

    /// One value at the current path; records its span when a pointer names the path.
    fn value(&mut self) -> Option<()> {
        self.skip_whitespace();
        let start = self.pos;
        match self.peek()? {
            b'{' => self.object()?,
            b'[' => self.array()?,
            b'"' => {
                self.string()?;
            }
            _ => {
                while matches!(self.peek(), Some(b) if !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                {
                    self.pos += 1;
                }
                if self.pos == start {
                    return None;
                }
            }
        }
        if !self.path.is_empty() && self.per_attempt.iter().any(|pointer| pointer.matches(&self.path)) {
            self.cuts.push((start, self.pos));
        }
        Some(())
    }

    fn object(&mut self) -> Option<()> {
        self.pos += 1;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            self.skip_whitespace();
            let key = self.string()?;
            self.eat(b':')?;
            self.path.push(key);
            let walked = self.value();
            self.path.pop();
            walked?;
            if self.eat(b',').is_none() {
                return self.eat(b'}');
            }
        }
    }

    fn array(&mut self) -> Option<()> {
        self.pos += 1;
        if self.eat(b']').is_some() {
            return Some(());
        }
        let mut index = 0usize;
        loop {
            self.path.push(index.to_string());
            let walked = self.value();
            self.path.pop();
            walked?;
            index += 1;
            if self.eat(b',').is_none() {
                return self.eat(b']');
            }
        }
    }

    /// A string, decoded (a member name is compared with a pointer's token).
    fn string(&mut self) -> Option<String> {
        let start = self.pos;
        if self.peek()? != b'"' {
            return None;
        }
        self.pos += 1;
        let mut escaped = false;
        loop {
            match self.peek()? {
                b'\\' => {
                    escaped = true;
                    self.pos += 2;
                }
                b'"' => break,
                _ => self.pos += 1,
            }
        }
        self.pos += 1;
        let raw = &self.bytes[start..self.pos];
        if !escaped {
            return std::str::from_utf8(&raw[1..raw.len() - 1]).ok().map(str::to_owned);
        }
        match crate::json::parse(raw, crate::json::Limits::default()).ok()? {
            crate::json::Json::String(text) => Some(text),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn pointers(texts: &[&str]) -> Vec<FieldPointer> {
        texts.iter().map(|text| FieldPointer::parse(text).unwrap()).collect()
    }

    #[test]
    fn without_per_attempt_fields_every_byte_counts() {
        assert_eq!(fingerprint(br#"{"a":1}"#, &[]), BodyHash::of(br#"{"a":1}"#));
        assert_ne!(fingerprint(br#"{"a":1}"#, &[]), fingerprint(br#"{"a": 1}"#, &[]));
    }

    #[test]
    fn a_per_attempt_field_may_change_and_nothing_else() {
        let fields = pointers(&["/attempt_number"]);
        let first = fingerprint(br#"{"id":"e1","attempt_number":1,"data":{"n":5}}"#, &fields);
        let retry = fingerprint(br#"{"id":"e1","attempt_number":12,"data":{"n":5}}"#, &fields);
        assert_eq!(first, retry);
        let changed = fingerprint(br#"{"id":"e1","attempt_number":2,"data":{"n":6}}"#, &fields);
        assert_ne!(first, changed, "the event itself changed");
        let respaced = fingerprint(br#"{"id":"e1", "attempt_number":1,"data":{"n":5}}"#, &fields);
        assert_ne!(first, respaced, "other bytes are compared as bytes");
        let renamed = fingerprint(br#"{"id":"e1","attempt_numbers":1,"data":{"n":5}}"#, &fields);
        assert_ne!(first, renamed, "the member's name is kept");
        let dropped = fingerprint(br#"{"id":"e1","data":{"n":5}}"#, &fields);
        assert_ne!(first, dropped, "a missing member is a difference");
        assert_ne!(first, BodyHash::of(br#"{"id":"e1","attempt_number":1,"data":{"n":5}}"#));
    }

    #[test]
    fn nested_members_arrays_wildcards_and_escapes() {
        let fields = pointers(&["/*/attemptNumber", "/meta/sent~1at"]);
        let a = br#"[{"eventId":1,"attemptNumber":0},{"eventId":2,"attemptNumber":0}]"#;
        let b = br#"[{"eventId":1,"attemptNumber":3},{"eventId":2,"attemptNumber":4}]"#;
        let c = br#"[{"eventId":1,"attemptNumber":3},{"eventId":3,"attemptNumber":4}]"#;
        assert_eq!(fingerprint(a, &fields), fingerprint(b, &fields));
        assert_ne!(fingerprint(a, &fields), fingerprint(c, &fields));
        let x = br#"{"meta":{"sent/at":"2026-01-01T00:00:00Z","by":"x"},"v":1}"#;
        let y = br#"{"meta":{"sent\/at":"2026-01-02T00:00:00Z","by":"x"},"v":1}"#;
        let z = br#"{"meta":{"sent/at":"2026-01-02T00:00:00Z","by":"x"},"v":1}"#;
        assert_eq!(fingerprint(x, &fields), fingerprint(z, &fields));
        assert_ne!(fingerprint(x, &fields), fingerprint(y, &fields), "the name's bytes differ");
    }

    #[test]
    fn a_cut_value_cannot_be_mistaken_for_kept_bytes() {
        let fields = pointers(&["/a"]);
        assert_ne!(fingerprint(br#"{"a":"x","b":1}"#, &fields), fingerprint(br#"{"a":"x,\"b\":1"}"#, &fields));
    }

    #[test]
    fn pointers_are_parsed_strictly() {
        assert!(FieldPointer::parse("attempt").is_err());
        assert!(FieldPointer::parse("/a~2").is_err());
        assert_eq!(FieldPointer::parse("/a~1b~0c").unwrap().tokens, ["a/b~c"]);
    }
}
