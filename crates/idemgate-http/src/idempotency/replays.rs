//! [`Replays`]: the completed records this process has stored or read, kept in memory so a
//! repeat is answered without the store.
//!
//! A completed record does not change until it expires: only expired records are deleted,
//! and a completed one is never taken over. So a copy is as good as the row until its
//! `expires_at_ms`, and one instance's copy stays true whatever other instances do; the
//! copy is checked against the layer's clock like the row would be. Each copy comes from the
//! store itself (the expiry that `complete` returned, or a read), never from the request.
//! The cache is bounded in bytes and forgets the least useful entries first; a miss only
//! costs the read it saves.

use std::{
    hash::{Hash, Hasher, RandomState},
    sync::Arc,
};

use axum::response::Response;
use idemgate_core::idempotency::Fingerprint;
use idemgate_store::idempotency::{CompletedRecord, Judged, RecordKey, judge_completed};
use quick_cache::{
    Equivalent, Weighter,
    sync::{Cache, DefaultLifecycle},
};

use crate::answer::Replay;

/// Completed records by (scope, key), weighed by the bytes they hold.
#[derive(Debug)]
pub(super) struct Replays {
    cache: Option<Cache<RecordKey, Arc<Kept>, Bytes, RandomState>>,
}

/// A completed record as kept: what decides a repeat (its fingerprint and expiry), and its
/// replay made once.
#[derive(Debug)]
struct Kept {
    fingerprint: Fingerprint,
    expires_at_ms: i64,
    replay: Replay,
}

/// A record's key as a request names it, borrowed from the request's head: the kept copies
/// are asked with this, so a repeat answered from memory allocates no key.
#[derive(Debug, Clone, Copy)]
pub(super) struct Lookup<'a> {
    pub(super) scope: &'a str,
    pub(super) key: &'a str,
}

/// Hashes as [`RecordKey`]'s derived `Hash` does (its fields in order, as `str`), so a
/// lookup finds the entry kept under the owned key.
impl Hash for Lookup<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.scope.hash(state);
        self.key.hash(state);
    }
}

impl Equivalent<RecordKey> for Lookup<'_> {
    fn equivalent(&self, record: &RecordKey) -> bool {
        self.scope == record.scope && self.key == record.key
    }
}

/// What a kept copy answers a repeat.
#[derive(Debug)]
pub(super) enum Cached {
    /// The stored response, again.
    Replay(Response),
    /// The key was used for another request (422).
    Mismatch,
}

/// What an entry holds besides its strings and body: the fingerprint, the status, the
/// expiry and the cache's own bookkeeping, roughly.
const ENTRY_OVERHEAD: usize = 160;

/// A guess at an entry's size, for sizing the cache's table up front.
const TYPICAL_ENTRY: usize = 1024;

impl Replays {
    /// A cache of at most `bytes`; `0` keeps nothing (every repeat reads the store).
    pub(super) fn with_capacity(bytes: usize) -> Self {
        let weight = u64::try_from(bytes).unwrap_or(u64::MAX);
        // Keys are the clients' own: std's randomly keyed SipHash, so no client can choose
        // keys that collide.
        let cache = (bytes > 0).then(|| {
            Cache::with((bytes / TYPICAL_ENTRY).max(16), weight, Bytes, RandomState::new(), DefaultLifecycle::default())
        });
        Self { cache }
    }

    /// The answer a kept copy gives a request with `fingerprint` at `now_ms`: a replay or
    /// a mismatch; `None` when there is no copy or it has expired (then it is dropped).
    pub(super) fn answer(&self, record: Lookup<'_>, fingerprint: &Fingerprint, now_ms: i64) -> Option<Cached> {
        let cache = self.cache.as_ref()?;
        let kept = cache.get(&record)?;
        match judge_completed(&kept.fingerprint, kept.expires_at_ms, fingerprint, now_ms) {
            Some(Judged::Replay) => Some(Cached::Replay(kept.replay.response())),
            Some(Judged::Mismatch) => Some(Cached::Mismatch),
            None => {
                cache.remove(&record);
                None
            }
        }
    }

    /// Keeps `completed`, as the store holds it under `record`.
    pub(super) fn keep(&self, record: RecordKey, completed: CompletedRecord) {
        if let Some(cache) = &self.cache {
            let CompletedRecord { fingerprint, response, expires_at_ms } = completed;
            cache.insert(record, Arc::new(Kept { fingerprint, expires_at_ms, replay: Replay::of(response) }));
        }
    }
}

/// Weighs an entry by the bytes it holds.
#[derive(Debug, Clone, Copy)]
struct Bytes;

impl Weighter<RecordKey, Arc<Kept>> for Bytes {
    fn weight(&self, record: &RecordKey, kept: &Arc<Kept>) -> u64 {
        let bytes = ENTRY_OVERHEAD + record.scope.len() + record.key.len() + kept.replay.weight();
        u64::try_from(bytes).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use idemgate_store::idempotency::StoredResponse;

    use super::*;

    fn record(key: &str) -> RecordKey {
        RecordKey { scope: "caller".to_owned(), key: key.to_owned() }
    }

    fn lookup(key: &str) -> Lookup<'_> {
        Lookup { scope: "caller", key }
    }

    fn completed(body: &[u8], expires_at_ms: i64) -> CompletedRecord {
        let response = StoredResponse { status: 201, headers: vec![], body: body.to_vec(), body_omitted: false };
        CompletedRecord { fingerprint: Fingerprint([1; 32]), response, expires_at_ms }
    }

    #[test]
    fn a_kept_copy_answers_until_the_record_expires() {
        let replays = Replays::with_capacity(1 << 20);
        replays.keep(record("k"), completed(b"{}", 2_000));
        let Some(Cached::Replay(response)) = replays.answer(lookup("k"), &Fingerprint([1; 32]), 1_999) else {
            panic!("a live copy replays");
        };
        assert_eq!(response.status(), 201);
        assert_eq!(response.headers()["idempotency-replay"], "true");
        assert!(matches!(replays.answer(lookup("k"), &Fingerprint([2; 32]), 1_999), Some(Cached::Mismatch)));
        let other_scope = Lookup { scope: "other", key: "k" };
        assert!(replays.answer(other_scope, &Fingerprint([1; 32]), 1_999).is_none(), "scopes never meet");
        assert!(replays.answer(lookup("k"), &Fingerprint([1; 32]), 2_000).is_none(), "expired with the record");
        assert!(replays.answer(lookup("k"), &Fingerprint([1; 32]), 1_000).is_none(), "and forgotten");
    }

    #[test]
    fn a_lookup_hashes_and_compares_as_the_key_it_borrows() {
        let hasher = RandomState::new();
        for (scope, key) in [("caller", "k"), ("", "ab"), ("a", "b"), ("ab", "")] {
            let owned = RecordKey { scope: scope.to_owned(), key: key.to_owned() };
            let borrowed = Lookup { scope, key };
            assert_eq!(hasher.hash_one(borrowed), hasher.hash_one(&owned), "{scope:?}/{key:?}");
            assert!(borrowed.equivalent(&owned));
        }
        let moved = RecordKey { scope: "a".to_owned(), key: "b".to_owned() };
        assert!(!Lookup { scope: "ab", key: "" }.equivalent(&moved), "the boundary between the parts counts");
    }

    #[test]
    fn capacity_zero_keeps_nothing() {
        let replays = Replays::with_capacity(0);
        replays.keep(record("k"), completed(b"{}", 2_000));
        assert!(replays.answer(lookup("k"), &Fingerprint([1; 32]), 1_000).is_none());
    }

    #[test]
    fn the_cache_holds_no_more_bytes_than_its_capacity() {
        let replays = Replays::with_capacity(64 * 1024);
        for n in 0..100 {
            replays.keep(record(&n.to_string()), completed(&[b'x'; 4096], 2_000));
        }
        let cache = replays.cache.as_ref().expect("a cache of 64 KiB");
        assert!(cache.weight() <= 64 * 1024, "weighed {} bytes", cache.weight());
        let kept =
            (0..100).filter(|n| replays.answer(lookup(&n.to_string()), &Fingerprint([1; 32]), 1_000).is_some()).count();
        assert!((1..=16).contains(&kept), "kept {kept} of 100 entries of 4 KiB in 64 KiB");
    }
}
