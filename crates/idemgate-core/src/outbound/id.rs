//! The outbound API's ids: a prefix naming the kind (`app_`, `ep_`, `msg_`, `atmpt_`,
//! `qtask_`) and a 27-character base62 KSUID whose first five bytes are its creation time.
//!
//! The layout is Svix's `KsuidMs` (`svix-ksuid`, what Svix's server generates ids with):
//! 4 bytes of seconds since the KSUID epoch (1,400,000,000), 1 byte of the millisecond in
//! 4 ms steps, then 15 bytes of payload, written as the big-endian number in base62
//! (`0-9A-Za-z`, zero-padded to 27 characters). Because the alphabet is in ASCII order and
//! the length fixed, ids compare as text exactly as they compare by time: the order Svix
//! paginates on. The time and the random payload are the caller's (the OS random source
//! at the edge); nothing here reads either.
//!
//! Not the `svix-ksuid` crate itself: it draws the time and the payload itself when they
//! are not given, and its decoder keeps the last 20 bytes of a text that overflows 160 bits,
//! so two texts would name one id. The codec is 40 lines, tested against its vectors.

use std::{fmt, str::FromStr};

/// Seconds from the unix epoch to the KSUID epoch (Segment's, kept by Svix).
pub const KSUID_EPOCH_SECS: i64 = 1_400_000_000;
/// Bytes in a KSUID.
pub const KSUID_LEN: usize = 20;
/// Characters of its base62 text.
pub const KSUID_TEXT_LEN: usize = 27;
/// Bytes of the time (seconds, then 4 ms steps).
const TIME_LEN: usize = 5;
/// Bytes after the time: random for a generated id.
pub const PAYLOAD_LEN: usize = KSUID_LEN - TIME_LEN;
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// The first millisecond a KSUID can carry.
pub const MIN_MILLIS: i64 = KSUID_EPOCH_SECS * 1000;
/// The last millisecond a KSUID can carry (early 2150).
pub const MAX_MILLIS: i64 = (KSUID_EPOCH_SECS + u32::MAX as i64) * 1000 + 999;

/// An id that cannot be made or read. Never echoes the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdError {
    /// The text does not start with the kind's prefix.
    #[error("not an id of this kind (expected the prefix {expected})")]
    Prefix {
        /// The prefix the kind requires.
        expected: &'static str,
    },
    /// After the prefix, not 27 base62 characters of at most 160 bits.
    #[error("not a valid id: expected the prefix and 27 base62 characters")]
    Malformed,
    /// A time before 2014-05-13 or after early 2150 has no KSUID.
    #[error("the time is outside what an id can carry")]
    TimeOutOfRange,
}

/// A KSUID with millisecond (4 ms) precision: 20 bytes, time first.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ksuid([u8; KSUID_LEN]);

impl Ksuid {
    /// The KSUID of `at_ms` (unix milliseconds, truncated to 4 ms) with this payload.
    pub fn new(at_ms: i64, payload: [u8; PAYLOAD_LEN]) -> Result<Self, IdError> {
        if !(MIN_MILLIS..=MAX_MILLIS).contains(&at_ms) {
            return Err(IdError::TimeOutOfRange);
        }
        let secs = u64::try_from(at_ms / 1000 - KSUID_EPOCH_SECS).map_err(|_| IdError::TimeOutOfRange)?;
        let steps = u64::try_from((at_ms % 1000) >> 2).map_err(|_| IdError::TimeOutOfRange)?;
        let time = (secs << 8) | steps;
        let mut bytes = [0; KSUID_LEN];
        bytes[..TIME_LEN].copy_from_slice(&time.to_be_bytes()[8 - TIME_LEN..]);
        bytes[TIME_LEN..].copy_from_slice(&payload);
        Ok(Self(bytes))
    }

    /// The KSUID of these 20 bytes.
    #[must_use]
    pub fn from_bytes(bytes: [u8; KSUID_LEN]) -> Self {
        Self(bytes)
    }

    /// Its 20 bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8; KSUID_LEN] {
        &self.0
    }

    /// The 15 bytes after the time.
    #[must_use]
    pub fn payload(&self) -> &[u8] {
        &self.0[TIME_LEN..]
    }

    /// Its time in unix milliseconds (a multiple of 4 within the second).
    #[must_use]
    pub fn millis(&self) -> i64 {
        let mut time = [0; 8];
        time[8 - TIME_LEN..].copy_from_slice(&self.0[..TIME_LEN]);
        let time = u64::from_be_bytes(time);
        let secs = i64::from(u32::try_from(time >> 8).unwrap_or(u32::MAX));
        (secs + KSUID_EPOCH_SECS) * 1000 + i64::from(u8::try_from(time & 0xFF).unwrap_or(0)) * 4
    }

    /// The 27-character base62 text.
    #[must_use]
    pub fn to_base62(&self) -> String {
        let mut words = self.words();
        let mut text = [b'0'; KSUID_TEXT_LEN];
        for slot in text.iter_mut().rev() {
            let mut remainder = 0u64;
            for word in &mut words {
                let current = (remainder << 32) | u64::from(*word);
                *word = u32::try_from(current / 62).unwrap_or(0);
                remainder = current % 62;
            }
            *slot = BASE62[usize::try_from(remainder).unwrap_or(0)];
        }
        text.iter().map(|&byte| char::from(byte)).collect()
    }

    /// Reads 27 base62 characters; refuses any other length, character, or a value
    /// beyond 160 bits (above `aWgEPTl1tmebfsQzFP4bxwgy80V`).
    pub fn from_base62(text: &str) -> Result<Self, IdError> {
        if text.len() != KSUID_TEXT_LEN {
            return Err(IdError::Malformed);
        }
        let mut words = [0u32; KSUID_LEN / 4];
        for byte in text.bytes() {
            let digit = BASE62.iter().position(|&c| c == byte).ok_or(IdError::Malformed)?;
            let mut carry = u64::try_from(digit).map_err(|_| IdError::Malformed)?;
            for word in words.iter_mut().rev() {
                let current = u64::from(*word) * 62 + carry;
                *word = u32::try_from(current & 0xFFFF_FFFF).unwrap_or(0);
                carry = current >> 32;
            }
            if carry != 0 {
                return Err(IdError::Malformed);
            }
        }
        let mut bytes = [0; KSUID_LEN];
        for (chunk, word) in bytes.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        Ok(Self(bytes))
    }

    fn words(&self) -> [u32; KSUID_LEN / 4] {
        let mut words = [0u32; KSUID_LEN / 4];
        for (word, chunk) in words.iter_mut().zip(self.0.chunks_exact(4)) {
            *word = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        words
    }
}

impl fmt::Display for Ksuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_base62())
    }
}

impl fmt::Debug for Ksuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ksuid({self})")
    }
}

macro_rules! outbound_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Ksuid);

        impl $name {
            /// What every id of this kind starts with.
            pub const PREFIX: &'static str = $prefix;

            /// A new id created at `created_at_ms` (unix milliseconds) with 15 bytes the
            /// caller drew from the OS random source.
            pub fn generate(created_at_ms: i64, random: [u8; PAYLOAD_LEN]) -> Result<Self, IdError> {
                Ksuid::new(created_at_ms, random).map(Self)
            }

            /// The smallest id of `at_ms`: every id created at or after it sorts at or above.
            pub fn first_at(at_ms: i64) -> Result<Self, IdError> {
                Ksuid::new(at_ms, [0; PAYLOAD_LEN]).map(Self)
            }

            /// The largest id of `at_ms`: every id created before it sorts below.
            pub fn last_at(at_ms: i64) -> Result<Self, IdError> {
                Ksuid::new(at_ms, [0xFF; PAYLOAD_LEN]).map(Self)
            }

            /// Reads `prefix` + 27 base62 characters.
            pub fn parse(text: &str) -> Result<Self, IdError> {
                let rest = text.strip_prefix(Self::PREFIX).ok_or(IdError::Prefix { expected: Self::PREFIX })?;
                Ksuid::from_base62(rest).map(Self)
            }

            /// Whether `text` is in this kind's id space (it starts with the prefix), as
            /// opposed to a uid, which never does.
            #[must_use]
            pub fn is_id_text(text: &str) -> bool {
                text.starts_with(Self::PREFIX)
            }

            /// When it was created, in unix milliseconds (4 ms precision).
            #[must_use]
            pub fn created_at_ms(&self) -> i64 {
                self.0.millis()
            }

            /// Its KSUID.
            #[must_use]
            pub fn ksuid(&self) -> Ksuid {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", Self::PREFIX, self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }

        impl FromStr for $name {
            type Err = IdError;

            fn from_str(text: &str) -> Result<Self, IdError> {
                Self::parse(text)
            }
        }
    };
}

outbound_id!(
    /// An application (`app_…`): one customer of the user, owning endpoints and messages.
    ApplicationId,
    "app_"
);
outbound_id!(
    /// An endpoint (`ep_…`): a URL of an application's that receives its messages.
    EndpointId,
    "ep_"
);
outbound_id!(
    /// A message (`msg_…`); also its `webhook-id` on every attempt.
    MessageId,
    "msg_"
);
outbound_id!(
    /// A message attempt (`atmpt_…`), derived from the attempt's row: see [`AttemptId::for_row`].
    AttemptId,
    "atmpt_"
);
outbound_id!(
    /// A background task (`qtask_…`), as `recover` answers.
    TaskId,
    "qtask_"
);

impl AttemptId {
    /// The public id of the attempt stored as row `row` and started at `started_at_ms`: its
    /// time is the attempt's, its payload the row id (8 bytes, big-endian) and 7 zero bytes,
    /// so attempt ids sort by time, need no column, and [`AttemptId::row`] finds the row.
    pub fn for_row(started_at_ms: i64, row: i64) -> Result<Self, IdError> {
        let row = u64::try_from(row).map_err(|_| IdError::Malformed)?;
        let mut payload = [0; PAYLOAD_LEN];
        payload[..8].copy_from_slice(&row.to_be_bytes());
        Ksuid::new(started_at_ms, payload).map(Self)
    }

    /// The attempt row this id was derived from; `None` for an id not made by
    /// [`AttemptId::for_row`].
    #[must_use]
    pub fn row(&self) -> Option<i64> {
        let payload = self.0.payload();
        let (row, zeros) = payload.split_at(8);
        if zeros.iter().any(|&byte| byte != 0) {
            return None;
        }
        let row: [u8; 8] = row.try_into().ok()?;
        i64::try_from(u64::from_be_bytes(row)).ok()
    }
}

#[cfg(test)]
mod tests;
