//! `Idempotency-Key` for HTTP APIs, the pure part: parsing the key, fingerprinting the
//! request it names, and deciding what a response means for the key's record.
//!
//! The rules follow the provider guide in the seeds and the IETF draft
//! `draft-ietf-httpapi-idempotency-key-header`: a key of at most 255 characters, sent bare
//! or as a structured-field string (`"…"`); the fingerprint covers method, path (route and
//! path parameters), query string and the raw body bytes, so a JSON whitespace change is
//! another request; a 2xx or 3xx is stored and replayed; a 5xx is never stored; a 4xx
//! releases the key unless configured to be stored.

use std::{borrow::Cow, time::Duration};

use sha2::{Digest, Sha256};

/// Longest accepted key, in characters.
pub const MAX_KEY_LEN: usize = 255;

/// Why an `Idempotency-Key` header is refused (400).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// Empty, or only quotes.
    #[error("the Idempotency-Key is empty")]
    Empty,
    /// Longer than [`MAX_KEY_LEN`].
    #[error("the Idempotency-Key is longer than 255 characters")]
    TooLong,
    /// A character outside visible ASCII, or a broken quoted string.
    #[error("the Idempotency-Key must be visible ASCII, bare or as a quoted string")]
    Malformed,
}

/// Parses a header value: a bare token of visible ASCII, or an RFC 8941 string
/// (`"…"` with `\"` and `\\` as the only escapes, spaces allowed inside).
///
/// ```
/// # use idemgate_core::idempotency::parse_key;
/// assert_eq!(parse_key(b"welcome-user/usr_abc123").as_deref(), Ok("welcome-user/usr_abc123"));
/// assert_eq!(parse_key(br#""8e03978e-40d5-43e8-bc93-6894a57f9324""#).as_deref(), Ok("8e03978e-40d5-43e8-bc93-6894a57f9324"));
/// ```
pub fn parse_key(value: &[u8]) -> Result<Cow<'_, str>, KeyError> {
    let key = match value.strip_prefix(b"\"") {
        Some(quoted) => Cow::Owned(unquote(quoted)?),
        // Visible ASCII is UTF-8: a bare key is the header's own bytes, not a copy.
        None if value.iter().all(|b| b.is_ascii_graphic()) => String::from_utf8_lossy(value),
        None => return Err(KeyError::Malformed),
    };
    match key.len() {
        0 => Err(KeyError::Empty),
        len if len > MAX_KEY_LEN => Err(KeyError::TooLong),
        _ => Ok(key),
    }
}

fn unquote(rest: &[u8]) -> Result<String, KeyError> {
    let mut key = String::new();
    let mut bytes = rest.iter();
    while let Some(&b) = bytes.next() {
        match b {
            b'"' if bytes.len() == 0 => return Ok(key),
            b'\\' => match bytes.next() {
                Some(&escaped @ (b'"' | b'\\')) => key.push(char::from(escaped)),
                _ => return Err(KeyError::Malformed),
            },
            0x20..=0x7e if b != b'"' => key.push(char::from(b)),
            _ => return Err(KeyError::Malformed),
        }
    }
    Err(KeyError::Malformed)
}

/// SHA-256 over the parts of a request that make it "the same operation".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// Fingerprints method, path, query string and raw body. Each part is length-prefixed,
    /// so moving bytes between parts changes the fingerprint.
    ///
    /// ```
    /// # use idemgate_core::idempotency::Fingerprint;
    /// let a = Fingerprint::of("POST", "/orders", "", br#"{"n":1}"#);
    /// assert_ne!(a, Fingerprint::of("POST", "/orders", "", br#"{"n": 1}"#));
    /// assert_ne!(a, Fingerprint::of("POST", "/orders", "dry=1", br#"{"n":1}"#));
    /// ```
    #[must_use]
    pub fn of(method: &str, path: &str, query: &str, body: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        for part in [method.as_bytes(), path.as_bytes(), query.as_bytes(), body] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part);
        }
        Self(hasher.finalize().into())
    }
}

/// What a finished request's status means for its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterResponse {
    /// Keep status, headers and body; replay them to every repeat.
    Store,
    /// Forget the key: the operation did not complete, a retry may use it again.
    Release,
}

/// 2xx and 3xx are stored; 5xx is released (retry with the same key); 4xx is released so
/// the corrected request can use the key, unless `store_client_errors` (as Stripe does).
#[must_use]
pub fn after_response(status: u16, store_client_errors: bool) -> AfterResponse {
    match status {
        200..=399 => AfterResponse::Store,
        400..=499 if store_client_errors => AfterResponse::Store,
        _ => AfterResponse::Release,
    }
}

/// What a record already under a key holds, as far as deciding a new request needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldRecord<'a> {
    /// The fingerprint of the request that created it.
    pub fingerprint: &'a [u8],
    /// Whether its response is stored (else it is in flight).
    pub completed: bool,
    /// The fencing token of its current lock.
    pub lock_token: i64,
    /// When its lock expires, in milliseconds; none once completed.
    pub locked_until_ms: Option<i64>,
}

/// What a new request with a key finds in the record already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// The same request completed: replay its stored response.
    Replay,
    /// The same request is still running for about this much longer.
    InFlight {
        /// Time left on the lock.
        retry_after: Duration,
    },
    /// The key was used for a request with another fingerprint.
    Mismatch,
    /// The lock expired: this request takes it over with `token`, fencing out the old holder.
    TakeOver {
        /// The new fencing token.
        token: i64,
    },
}

impl HeldRecord<'_> {
    /// What a request with `fingerprint` at `now_ms` finds in this record.
    #[must_use]
    pub fn decide(&self, fingerprint: &Fingerprint, now_ms: i64) -> Found {
        if self.fingerprint != fingerprint.0 {
            return Found::Mismatch;
        }
        if self.completed {
            return Found::Replay;
        }
        let locked_until = self.locked_until_ms.unwrap_or(0);
        if locked_until > now_ms {
            return Found::InFlight {
                retry_after: Duration::from_millis(u64::try_from(locked_until - now_ms).unwrap_or(0)),
            };
        }
        Found::TakeOver { token: self.lock_token + 1 }
    }
}

/// What a plain read of the record under a key can answer without a write: a completed,
/// unexpired record is immutable until it expires, so a replay of it (or a mismatch with
/// it) needs no lock. `None` for everything else (no record, expired, in flight): that
/// request takes the writing path, [`HeldRecord::decide`] inside a write.
#[must_use]
pub fn answer_from_read(
    held: &HeldRecord<'_>,
    expires_at_ms: i64,
    fingerprint: &Fingerprint,
    now_ms: i64,
) -> Option<Found> {
    if !answerable_from_read(held, expires_at_ms, now_ms) {
        return None;
    }
    match held.decide(fingerprint, now_ms) {
        found @ (Found::Replay | Found::Mismatch) => Some(found),
        Found::InFlight { .. } | Found::TakeOver { .. } => None,
    }
}

/// Whether a plain read may answer requests for `held`, expiring at `expires_at_ms`, at
/// `now_ms`: only once it is completed, and until it expires.
#[must_use]
pub fn answerable_from_read(held: &HeldRecord<'_>, expires_at_ms: i64, now_ms: i64) -> bool {
    held.completed && expires_at_ms > now_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_completed_unexpired_record_is_answered_from_a_read() {
        let request = Fingerprint::of("POST", "/orders", "", b"{}");
        let other = Fingerprint::of("POST", "/orders", "", b"{ }");
        let completed = held(&request, true, None);
        assert_eq!(answer_from_read(&completed, 2_000, &request, 1_000), Some(Found::Replay));
        assert_eq!(answer_from_read(&completed, 2_000, &other, 1_000), Some(Found::Mismatch));
        // Expired at exactly its expiry time, as the writing path's purge has it.
        assert_eq!(answer_from_read(&completed, 1_000, &request, 1_000), None);
        assert_eq!(answer_from_read(&completed, 999, &other, 1_000), None);
        let in_flight = held(&request, false, Some(5_000));
        assert_eq!(answer_from_read(&in_flight, 9_000, &request, 1_000), None);
        assert_eq!(answer_from_read(&in_flight, 9_000, &other, 1_000), None);
        assert_eq!(answer_from_read(&held(&request, false, Some(500)), 9_000, &request, 1_000), None);
    }

    fn held(fingerprint: &Fingerprint, completed: bool, locked_until_ms: Option<i64>) -> HeldRecord<'_> {
        HeldRecord { fingerprint: &fingerprint.0, completed, lock_token: 4, locked_until_ms }
    }

    #[test]
    fn a_held_record_decides_the_repeat() {
        let request = Fingerprint::of("POST", "/orders", "", b"{}");
        let other = Fingerprint::of("POST", "/orders", "", b"{ }");
        assert_eq!(held(&request, true, None).decide(&request, 1_000), Found::Replay);
        assert_eq!(held(&other, true, None).decide(&request, 1_000), Found::Mismatch);
        assert_eq!(held(&other, false, Some(5_000)).decide(&request, 1_000), Found::Mismatch);
        assert_eq!(
            held(&request, false, Some(1_250)).decide(&request, 1_000),
            Found::InFlight { retry_after: Duration::from_millis(250) }
        );
    }

    #[test]
    fn an_expired_lock_is_taken_over_with_the_next_token() {
        let request = Fingerprint::of("POST", "/orders", "", b"{}");
        assert_eq!(held(&request, false, Some(1_000)).decide(&request, 1_000), Found::TakeOver { token: 5 });
        assert_eq!(held(&request, false, None).decide(&request, 1_000), Found::TakeOver { token: 5 });
    }

    #[test]
    fn bare_and_quoted_keys() {
        assert_eq!(parse_key(b"abc").as_deref(), Ok("abc"));
        assert_eq!(parse_key(br#""a b""#).as_deref(), Ok("a b"));
        assert_eq!(parse_key(br#""a\"b\\c""#).as_deref(), Ok(r#"a"b\c"#));
        assert_eq!(parse_key(b"a b"), Err(KeyError::Malformed));
        assert_eq!(parse_key(br#""abc"#), Err(KeyError::Malformed));
        assert_eq!(parse_key(br#""a"b""#), Err(KeyError::Malformed));
        assert_eq!(parse_key(br#""a\nb""#), Err(KeyError::Malformed));
        assert_eq!(parse_key("é".as_bytes()), Err(KeyError::Malformed));
        assert_eq!(parse_key(b""), Err(KeyError::Empty));
        assert_eq!(parse_key(br#""""#), Err(KeyError::Empty));
    }

    #[test]
    fn keys_are_limited_to_255_characters() {
        assert!(parse_key("k".repeat(255).as_bytes()).is_ok());
        assert_eq!(parse_key("k".repeat(256).as_bytes()), Err(KeyError::TooLong));
    }

    #[test]
    fn every_part_of_the_request_is_in_the_fingerprint() {
        let base = Fingerprint::of("POST", "/orders/7", "a=1", b"{}");
        assert_eq!(base, Fingerprint::of("POST", "/orders/7", "a=1", b"{}"));
        for other in [
            Fingerprint::of("PATCH", "/orders/7", "a=1", b"{}"),
            Fingerprint::of("POST", "/orders/8", "a=1", b"{}"),
            Fingerprint::of("POST", "/orders/7", "a=2", b"{}"),
            Fingerprint::of("POST", "/orders/7", "a=1", b"{ }"),
            Fingerprint::of("POST", "/orders/7a=1", "", b"{}"),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn what_is_stored() {
        assert_eq!(after_response(201, false), AfterResponse::Store);
        assert_eq!(after_response(303, false), AfterResponse::Store);
        assert_eq!(after_response(422, false), AfterResponse::Release);
        assert_eq!(after_response(422, true), AfterResponse::Store);
        assert_eq!(after_response(500, true), AfterResponse::Release);
        assert_eq!(after_response(503, false), AfterResponse::Release);
    }
}
