//! Mail messages as the SMTP listener and the `smtp` destination see them: the header that
//! carries a submission's idempotency key, the fingerprint a repeat is judged by, and the
//! changes made before relaying (the key header removed, a `Message-ID` added when absent).
//!
//! Pure functions over the message bytes as received (after dot-unstuffing, CRLF line
//! endings). Only the header section (up to the first empty line) is read, with folded
//! lines unfolded, and names compared case-insensitively, as RFC 5322 has them.

use std::borrow::Cow;

use sha2::{Digest, Sha256};

use crate::BodyHash;

/// Longest idempotency key a message header may carry.
pub const MAX_KEY_LEN: usize = 255;

/// A submission's envelope: the reverse path and the forward paths, as given to
/// `MAIL FROM` and `RCPT TO` (without the angle brackets; the null sender is empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// `MAIL FROM`.
    pub mail_from: String,
    /// Every accepted `RCPT TO`, in the order given.
    pub rcpt_to: Vec<String>,
}

/// The names of the stored headers that carry the envelope with the event, so that the
/// relay needs nothing else: one `MAIL_FROM_HEADER`, one `RCPT_TO_HEADER` per recipient.
pub const MAIL_FROM_HEADER: &str = "smtp-mail-from";
/// See [`MAIL_FROM_HEADER`].
pub const RCPT_TO_HEADER: &str = "smtp-rcpt-to";
/// The stored header naming the listener's key header, which the relay removes.
pub const KEY_HEADER_HEADER: &str = "smtp-key-header";

impl Envelope {
    /// The envelope as stored header pairs.
    #[must_use]
    pub fn to_headers(&self) -> Vec<(String, String)> {
        let mut headers = vec![(MAIL_FROM_HEADER.to_owned(), self.mail_from.clone())];
        headers.extend(self.rcpt_to.iter().map(|to| (RCPT_TO_HEADER.to_owned(), to.clone())));
        headers
    }

    /// The envelope back from stored header pairs; `None` when there is no sender or no
    /// recipient among them.
    #[must_use]
    pub fn from_headers(headers: &[(String, String)]) -> Option<Self> {
        let mail_from = headers.iter().find(|(name, _)| name == MAIL_FROM_HEADER)?.1.clone();
        let rcpt_to: Vec<String> =
            headers.iter().filter(|(name, _)| name == RCPT_TO_HEADER).map(|(_, value)| value.clone()).collect();
        (!rcpt_to.is_empty()).then_some(Self { mail_from, rcpt_to })
    }
}

/// One header field: where it starts and ends in the message (its folded lines and final
/// CRLF included), its name and its unfolded value.
struct Field<'a> {
    start: usize,
    end: usize,
    name: &'a [u8],
    value: String,
}

/// The header fields of `message`, up to the first empty line (or the end).
fn fields(message: &[u8]) -> Vec<Field<'_>> {
    let mut fields: Vec<Field<'_>> = Vec::new();
    let mut at = 0;
    while at < message.len() {
        let line_end = message[at..].iter().position(|&b| b == b'\n').map_or(message.len(), |i| at + i + 1);
        let line = &message[at..line_end];
        let content = line.strip_suffix(b"\n").unwrap_or(line);
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        if content.is_empty() {
            break;
        }
        if matches!(content.first(), Some(b' ' | b'\t')) {
            if let Some(last) = fields.last_mut() {
                last.value.push_str(&String::from_utf8_lossy(content));
                last.end = line_end;
            }
        } else if let Some(colon) = content.iter().position(|&b| b == b':') {
            fields.push(Field {
                start: at,
                end: line_end,
                name: &content[..colon],
                value: String::from_utf8_lossy(&content[colon + 1..]).into_owned(),
            });
        }
        at = line_end;
    }
    fields
}

fn is_named(field: &Field<'_>, name: &str) -> bool {
    field.name.eq_ignore_ascii_case(name.as_bytes())
}

/// The unfolded, trimmed value of the first header `name`, if the message has one.
#[must_use]
pub fn header(message: &[u8], name: &str) -> Option<String> {
    fields(message).into_iter().find(|field| is_named(field, name)).map(|field| field.value.trim().to_owned())
}

/// Why a key header cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The header is there more than once.
    #[error("the key header is given more than once")]
    Repeated,
    /// Empty, longer than [`MAX_KEY_LEN`], or not printable ASCII without spaces.
    #[error("the key must be 1 to 255 printable ASCII characters without spaces")]
    Malformed,
}

/// The idempotency key in header `name`: `Ok(None)` when the message has none.
pub fn idempotency_key(message: &[u8], name: &str) -> Result<Option<String>, KeyError> {
    let mut found = fields(message).into_iter().filter(|field| is_named(field, name));
    let Some(first) = found.next() else { return Ok(None) };
    if found.next().is_some() {
        return Err(KeyError::Repeated);
    }
    let key = first.value.trim();
    if key.is_empty() || key.len() > MAX_KEY_LEN || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(KeyError::Malformed);
    }
    Ok(Some(key.to_owned()))
}

/// `message` without the header fields named in `names` (each with its folded lines).
#[must_use]
pub fn without_headers(message: &[u8], names: &[String]) -> Vec<u8> {
    let mut kept = Vec::with_capacity(message.len());
    let mut at = 0;
    for field in fields(message) {
        if names.iter().any(|name| is_named(&field, name)) {
            kept.extend_from_slice(&message[at..field.start]);
            at = field.end;
        }
    }
    kept.extend_from_slice(&message[at..]);
    kept
}

/// The fingerprint a repeated submission is judged by: SHA-256 over the envelope and the
/// message, without the header fields in `exclude`. Framed so that no two different
/// submissions hash the same bytes: `MAIL FROM:<a>` CRLF, one `RCPT TO:<b>` CRLF per
/// recipient in order, an empty line, then the message.
#[must_use]
pub fn fingerprint(envelope: &Envelope, message: &[u8], exclude: &[String]) -> BodyHash {
    let mut hash = Sha256::new();
    hash.update(format!("MAIL FROM:<{}>\r\n", envelope.mail_from));
    for to in &envelope.rcpt_to {
        hash.update(format!("RCPT TO:<{to}>\r\n"));
    }
    hash.update(b"\r\n");
    if exclude.is_empty() {
        hash.update(message);
    } else {
        hash.update(without_headers(message, exclude));
    }
    BodyHash(hash.finalize().into())
}

/// The message as relayed: without the key header `key_header` (unless `None`: kept), and
/// with `Message-ID: <fallback_id>` added at the top when it has none, so that the id is the
/// same on every attempt of one job.
#[must_use]
pub fn for_relay(message: &[u8], key_header: Option<&str>, fallback_id: &str) -> Vec<u8> {
    relayed(message, key_header, fallback_id).into_owned()
}

/// [`for_relay`] without a copy: the message itself, borrowed, when relaying changes
/// nothing (no key header to remove, a `Message-ID` of its own); a new message otherwise.
#[must_use]
pub fn relayed<'a>(message: &'a [u8], key_header: Option<&str>, fallback_id: &str) -> Cow<'a, [u8]> {
    let stripped = match key_header {
        Some(name) if fields(message).iter().any(|field| is_named(field, name)) => {
            Cow::Owned(without_headers(message, &[name.to_owned()]))
        }
        _ => Cow::Borrowed(message),
    };
    if header(&stripped, "Message-ID").is_some() {
        return stripped;
    }
    let mut relayed = format!("Message-ID: <{fallback_id}>\r\n").into_bytes();
    relayed.extend_from_slice(&stripped);
    Cow::Owned(relayed)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MESSAGE: &[u8] = b"From: a@example.com\r\nIdempotency-Key: k-1\r\nSubject: hello\r\n  world\r\nDate: Mon, 1 Dec 2026 10:00:00 +0000\r\n\r\nBody\r\nIdempotency-Key: not-a-header\r\n";

    fn envelope() -> Envelope {
        Envelope { mail_from: "a@example.com".into(), rcpt_to: vec!["b@example.com".into(), "c@example.com".into()] }
    }

    #[test]
    fn headers_are_found_case_insensitively_unfolded_and_only_above_the_body() {
        assert_eq!(header(MESSAGE, "subject").as_deref(), Some("hello  world"));
        assert_eq!(idempotency_key(MESSAGE, "idempotency-key"), Ok(Some("k-1".into())));
        assert_eq!(idempotency_key(b"Subject: x\r\n\r\nIdempotency-Key: k\r\n", "Idempotency-Key"), Ok(None));
    }

    #[test]
    fn a_repeated_empty_long_or_spaced_key_is_refused() {
        let twice = b"Idempotency-Key: a\r\nIdempotency-Key: b\r\n\r\n";
        assert_eq!(idempotency_key(twice, "Idempotency-Key"), Err(KeyError::Repeated));
        for bad in ["", "a b", &"k".repeat(256), "caf\u{e9}"] {
            let message = format!("Idempotency-Key: {bad}\r\n\r\nx");
            assert_eq!(idempotency_key(message.as_bytes(), "Idempotency-Key"), Err(KeyError::Malformed), "{bad:?}");
        }
        let longest = format!("Idempotency-Key: {}\r\n\r\n", "k".repeat(255));
        assert!(idempotency_key(longest.as_bytes(), "Idempotency-Key").unwrap().is_some());
    }

    #[test]
    fn the_fingerprint_covers_the_envelope_and_the_bytes_except_excluded_headers() {
        let first = fingerprint(&envelope(), MESSAGE, &[]);
        assert_eq!(first, fingerprint(&envelope(), MESSAGE, &[]));
        let mut reordered = envelope();
        reordered.rcpt_to.reverse();
        assert_ne!(first, fingerprint(&reordered, MESSAGE, &[]));
        let mut fewer = envelope();
        fewer.rcpt_to.pop();
        assert_ne!(first, fingerprint(&fewer, MESSAGE, &[]));
        let other_body = [MESSAGE, b"more"].concat();
        assert_ne!(first, fingerprint(&envelope(), &other_body, &[]));

        let redated = String::from_utf8_lossy(MESSAGE).replace("10:00:00", "10:05:00");
        assert_ne!(first, fingerprint(&envelope(), redated.as_bytes(), &[]));
        let exclude = ["date".to_owned()];
        assert_eq!(
            fingerprint(&envelope(), MESSAGE, &exclude),
            fingerprint(&envelope(), redated.as_bytes(), &exclude),
            "an excluded header does not count"
        );
    }

    #[test]
    fn the_relayed_message_loses_its_key_header_and_keeps_or_gains_a_message_id() {
        let relayed = for_relay(MESSAGE, Some("Idempotency-Key"), "fallback@idemgate");
        let text = String::from_utf8(relayed.clone()).unwrap();
        assert!(
            text.starts_with("Message-ID: <fallback@idemgate>\r\nFrom: a@example.com\r\nSubject: hello\r\n  world\r\n"),
            "{text}"
        );
        assert!(text.ends_with("\r\n\r\nBody\r\nIdempotency-Key: not-a-header\r\n"), "the body is untouched: {text}");
        assert_eq!(for_relay(&relayed, Some("Idempotency-Key"), "other@idemgate"), relayed, "an id is kept");
        let kept = for_relay(MESSAGE, None, "fallback@idemgate");
        assert!(String::from_utf8(kept).unwrap().contains("Idempotency-Key: k-1\r\n"));
    }

    #[test]
    fn a_message_that_relaying_leaves_unchanged_is_borrowed_not_copied() {
        let with_id: &[u8] = b"Message-ID: <a@example.com>\r\nSubject: x\r\n\r\nIdempotency-Key: k\r\n";
        let same = relayed(with_id, Some("Idempotency-Key"), "fallback@idemgate");
        assert!(matches!(same, Cow::Borrowed(kept) if kept.as_ptr() == with_id.as_ptr()), "{same:?}");
        assert!(matches!(relayed(with_id, None, "fallback@idemgate"), Cow::Borrowed(_)));
        assert!(matches!(relayed(MESSAGE, None, "fallback@idemgate"), Cow::Owned(_)), "a Message-ID is added");
        let keyed: &[u8] = b"Message-ID: <a@example.com>\r\nIdempotency-Key: k\r\n\r\nBody\r\n";
        assert_eq!(relayed(keyed, Some("Idempotency-Key"), "f"), &b"Message-ID: <a@example.com>\r\n\r\nBody\r\n"[..]);
    }

    #[test]
    fn the_envelope_survives_its_stored_headers() {
        assert_eq!(Envelope::from_headers(&envelope().to_headers()), Some(envelope()));
        let null_sender = Envelope { mail_from: String::new(), rcpt_to: vec!["b@example.com".into()] };
        assert_eq!(Envelope::from_headers(&null_sender.to_headers()), Some(null_sender));
        assert_eq!(Envelope::from_headers(&[]), None);
    }
}
