//! The backend-neutral root: the values the store takes and returns (one module per
//! concept, public through the crate root as `idemgate_store::jobs`, `::inbox`, …), and
//! what both backends share below their SQL: turning stored values back into domain
//! values, bounding what is kept, and reading an idempotency record for core's decision.
//! Each backend imports this root, never the other backend's modules.

pub mod idempotency;
pub mod inbox;
pub mod jobs;
pub mod maintenance;
pub(crate) mod receive;
pub mod views;

use std::time::Duration;

use idemgate_core::{
    Identity, ReceiptKey, SourceName, UnixTime,
    idempotency::{Fingerprint, Found, HeldRecord},
    job::JobState,
};
use serde_json::Value;

use self::{
    idempotency::{Begin, StoredResponse},
    jobs::{MAX_ATTEMPT_TEXT, ReplayFilter},
};
use crate::StoreError;

/// An attempt's text cut to [`MAX_ATTEMPT_TEXT`] characters.
pub(crate) fn bounded(text: Option<&str>) -> Option<String> {
    text.map(|t| t.chars().take(MAX_ATTEMPT_TEXT).collect())
}

/// Whole seconds, saturating.
pub(crate) fn secs(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

/// Milliseconds, saturating.
pub(crate) fn ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// The whole second `now_ms` falls in, for the second-granular columns (leases, `updated_at`).
pub(crate) fn second_of(now_ms: i64) -> i64 {
    now_ms.div_euclid(1000)
}

/// The time `keep` before `now`, in seconds: what is older goes.
pub(crate) fn cutoff(now: UnixTime, keep: Duration) -> i64 {
    now.0.saturating_sub(secs(keep))
}

/// A stored (source, identity) as a receipt key.
pub(crate) fn key(source: &str, identity: &str) -> Result<ReceiptKey, StoreError> {
    Ok(ReceiptKey {
        source: SourceName::new(source).map_err(|_| StoreError::Malformed("source name"))?,
        identity: Identity::new(identity).map_err(|_| StoreError::Malformed("identity"))?,
    })
}

/// A receipt's stored result.
pub(crate) fn parse_result(text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|_| StoreError::Malformed("receipt result is not json"))
}

/// What either backend does when a conflict could not be recorded: it is still answered
/// as a conflict, and the operator is told here.
pub(crate) fn conflict_not_recorded(key: &ReceiptKey, err: &dyn std::fmt::Display) {
    metrics::counter!("idemgate_conflicts_unrecorded_total", "source" => key.source.to_string()).increment(1);
    tracing::error!(source = %key.source, identity = %key.identity, error = %err, "conflicting repeat refused, but could not be recorded");
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
    pub(crate) fn decide(self, fingerprint: &Fingerprint, now_ms: i64) -> Begin {
        let held = HeldRecord {
            fingerprint: &self.fingerprint,
            completed: self.state == "completed",
            lock_token: self.lock_token,
            locked_until_ms: self.locked_until_ms,
        };
        match held.decide(fingerprint, now_ms) {
            Found::Replay => Begin::Replay(self.response()),
            Found::InFlight { retry_after } => Begin::InFlight { retry_after },
            Found::Mismatch => Begin::Mismatch,
            Found::TakeOver { token } => Begin::Proceed { token },
        }
    }

    fn response(self) -> StoredResponse {
        StoredResponse {
            status: self.status.unwrap_or(200),
            headers: self.headers.and_then(|h| serde_json::from_str(&h).ok()).unwrap_or_default(),
            body: self.body.unwrap_or_default(),
            body_omitted: self.body_omitted,
        }
    }
}

impl ReplayFilter {
    fn replayed_state(&self) -> Result<JobState, StoreError> {
        let state = self.state.unwrap_or(JobState::Dead);
        if state.is_replayable() {
            Ok(state)
        } else {
            Err(StoreError::Malformed("only succeeded, dead or superseded jobs can be replayed"))
        }
    }

    /// The values both backends' replay query binds as its first six parameters.
    pub(crate) fn bindings(&self) -> Result<FilterBindings<'_>, StoreError> {
        Ok(FilterBindings {
            state: self.replayed_state()?.as_str(),
            source: self.source.as_deref(),
            identity: self.identity.as_deref(),
            destination: self.destination.as_deref(),
            since: self.since.map(|t| t.0),
            until: self.until.map(|t| t.0),
        })
    }
}

/// A [`ReplayFilter`] as the six values its query binds, in order: state, source,
/// identity, destination, since, until.
pub(crate) struct FilterBindings<'a> {
    pub state: &'static str,
    pub source: Option<&'a str>,
    pub identity: Option<&'a str>,
    pub destination: Option<&'a str>,
    pub since: Option<i64>,
    pub until: Option<i64>,
}
