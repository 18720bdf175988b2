//! Idempotency records, the store behind the `Idempotency-Key` layer: where a record
//! lives, what `begin` found, the response kept for replay, and how long locks and
//! records last.
//!
//! A record is unique on (scope, key) by its primary key. `begin` either creates an
//! `in_flight` record holding a lock with an expiry, or reports what exists: the stored
//! response, a lock still held, or a fingerprint mismatch. A lock that expired is taken
//! over with a new `lock_token`; `complete` and `release` name the token they were given
//! and change nothing once it is stale, so a late holder cannot overwrite the newer one.

use std::time::Duration;

use idemgate_core::idempotency::{Fingerprint, Found, HeldRecord, answer_from_read, answerable_from_read};

use super::ms;

/// Where a record lives: the caller's scope (from configuration) and the client's key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordKey {
    /// The caller, e.g. a hash of its credentials; one caller never sees another's records.
    pub scope: String,
    /// The client's `Idempotency-Key`.
    pub key: String,
}

/// A response kept for replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// The original status.
    pub status: u16,
    /// The configured response headers, as sent.
    pub headers: Vec<(String, String)>,
    /// The original body, unless it was over the size limit.
    pub body: Vec<u8>,
    /// True when the body was too large to keep: the replay has an empty body.
    pub body_omitted: bool,
}

/// What `begin` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begin {
    /// No live record: this request holds the lock with `token` and should run.
    Proceed {
        /// The fencing token for `complete` and `release`.
        token: i64,
        /// The record's expiry, fixed when it was created and kept through a take-over:
        /// with its scope and key it names this one operation, so a handler run again
        /// after a take-over (its first run's process died before completing the record)
        /// can find what the first run stored, while the same key after the window is a
        /// new operation.
        expires_at_ms: i64,
    },
    /// A completed record with the same fingerprint: replay it.
    Replay(StoredResponse),
    /// Another request holds the lock for about this much longer.
    InFlight {
        /// Time left on the lock.
        retry_after: Duration,
    },
    /// The key was used for a request with another fingerprint.
    Mismatch,
}

/// A completed record that has not expired: it does not change until `expires_at_ms`
/// (only expired records are deleted, and a completed one is never taken over), so a copy
/// of it answers every repeat until then without the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedRecord {
    /// The fingerprint of the request that created it.
    pub fingerprint: Fingerprint,
    /// The response kept for replay.
    pub response: StoredResponse,
    /// When it expires, in milliseconds (from its creation, kept through a take-over).
    pub expires_at_ms: i64,
}

impl CompletedRecord {
    /// What it answers for a request with `fingerprint` at `now_ms`: a replay, a mismatch,
    /// or `None` once it has expired (the request then takes the writing path, `begin`).
    #[must_use]
    pub fn answer(&self, fingerprint: &Fingerprint, now_ms: i64) -> Option<Begin> {
        Some(match self.judge(fingerprint, now_ms)? {
            Judged::Replay => Begin::Replay(self.response.clone()),
            Judged::Mismatch => Begin::Mismatch,
        })
    }

    /// [`Self::answer`] without the response: for a copy that keeps it in another form.
    #[must_use]
    pub fn judge(&self, fingerprint: &Fingerprint, now_ms: i64) -> Option<Judged> {
        judge_completed(&self.fingerprint, self.expires_at_ms, fingerprint, now_ms)
    }
}

/// What a completed record says to a request, its response aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// Same fingerprint, not expired: the stored response, again.
    Replay,
    /// Another fingerprint: refused (422).
    Mismatch,
}

/// [`CompletedRecord::judge`] for a record known by its fingerprint and expiry alone.
#[must_use]
pub fn judge_completed(
    stored: &Fingerprint,
    expires_at_ms: i64,
    fingerprint: &Fingerprint,
    now_ms: i64,
) -> Option<Judged> {
    // A completed record holds no lock: its token and lock time decide nothing.
    let held = HeldRecord { fingerprint: &stored.0, completed: true, lock_token: 0, locked_until_ms: None };
    match answer_from_read(&held, expires_at_ms, fingerprint, now_ms)? {
        Found::Replay => Some(Judged::Replay),
        Found::Mismatch => Some(Judged::Mismatch),
        Found::InFlight { .. } | Found::TakeOver { .. } => None,
    }
}

/// How long a lock holds and how long a record lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lifetimes {
    /// The `in_flight` lock's duration.
    pub lock: Duration,
    /// How long a record is kept after it was created.
    pub retention: Duration,
}

impl Lifetimes {
    /// Until when a lock taken at `now_ms` holds, in milliseconds.
    pub(crate) fn locked_until_ms(&self, now_ms: i64) -> i64 {
        now_ms.saturating_add(ms(self.lock))
    }

    /// When a record created at `now_ms` expires, in milliseconds.
    pub(crate) fn expires_at_ms(&self, now_ms: i64) -> i64 {
        now_ms.saturating_add(ms(self.retention))
    }
}

/// An idempotency record as read back, on either backend.
pub(crate) struct IdempotencyRow {
    pub(crate) fingerprint: Vec<u8>,
    pub(crate) state: String,
    pub(crate) lock_token: i64,
    pub(crate) locked_until_ms: Option<i64>,
    pub(crate) status: Option<u16>,
    pub(crate) headers: Option<String>,
    pub(crate) body: Option<Vec<u8>>,
    pub(crate) body_omitted: bool,
}

impl IdempotencyRow {
    /// What a `begin` with `fingerprint` at `now_ms` finds in this record, as core decides
    /// it. `Proceed` means the lock expired: the caller stores the returned token and the
    /// new lock time.
    pub(crate) fn decide(self, fingerprint: &Fingerprint, now_ms: i64, expires_at_ms: i64) -> Begin {
        match self.held().decide(fingerprint, now_ms) {
            Found::Replay => Begin::Replay(self.response()),
            Found::InFlight { retry_after } => Begin::InFlight { retry_after },
            Found::Mismatch => Begin::Mismatch,
            Found::TakeOver { token } => Begin::Proceed { token, expires_at_ms },
        }
    }

    /// This record as a [`CompletedRecord`] if it is completed and unexpired at `now_ms`;
    /// `None` when a request for it must take the writing path (`begin`).
    pub(crate) fn completed(self, expires_at_ms: i64, now_ms: i64) -> Option<CompletedRecord> {
        if !answerable_from_read(&self.held(), expires_at_ms, now_ms) {
            return None;
        }
        let fingerprint = Fingerprint(self.fingerprint.as_slice().try_into().ok()?);
        Some(CompletedRecord { fingerprint, response: self.response(), expires_at_ms })
    }

    fn held(&self) -> HeldRecord<'_> {
        HeldRecord {
            fingerprint: &self.fingerprint,
            completed: self.state == "completed",
            lock_token: self.lock_token,
            locked_until_ms: self.locked_until_ms,
        }
    }

    fn response(self) -> StoredResponse {
        StoredResponse {
            status: self.status.unwrap_or(200),
            headers: super::parse_headers(self.headers),
            body: self.body.unwrap_or_default(),
            body_omitted: self.body_omitted,
        }
    }
}
