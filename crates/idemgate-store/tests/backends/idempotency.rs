//! `Idempotency-Key` records: one holder at a time, replay of the stored response,
//! fingerprint mismatch, lock takeover with fencing, expiry and purge, and the read that
//! answers a repeat of a completed record without a write.

use std::{sync::Arc, time::Duration};

use idemgate_core::idempotency::Fingerprint;
use idemgate_store::idempotency::{Begin, Lifetimes, RecordKey, StoredResponse};

use crate::{TestStore, on_both};

const LIFETIMES: Lifetimes = Lifetimes { lock: Duration::from_secs(10), retention: Duration::from_secs(3600) };
const NOW: i64 = 1_700_000_000_000;
/// [`LIFETIMES`]' retention in milliseconds: a record created at `t` expires at `t + RETENTION_MS`.
const RETENTION_MS: i64 = 3_600_000;

fn record(key: &str) -> RecordKey {
    RecordKey { scope: "caller-a".to_owned(), key: key.to_owned() }
}

fn fingerprint(n: u8) -> Fingerprint {
    Fingerprint([n; 32])
}

/// What a plain read of `record` answers a request with `fingerprint(n)` at `now_ms`.
async fn read(t: &TestStore, record: RecordKey, n: u8, now_ms: i64) -> Option<Begin> {
    let completed = t.completed_idempotent(record, now_ms).await.unwrap()?;
    completed.answer(&fingerprint(n), now_ms)
}

fn response() -> StoredResponse {
    StoredResponse {
        status: 201,
        headers: vec![("location".to_owned(), "/orders/1".to_owned())],
        body: b"{\"id\":1}".to_vec(),
        body_omitted: false,
    }
}

on_both! {
    async fn the_first_request_proceeds_a_concurrent_one_waits_and_a_later_one_replays(t: TestStore) {
        assert_eq!(t.begin_idempotent(record("k"), fingerprint(1), NOW, LIFETIMES).await.unwrap(), Begin::Proceed { token: 1, expires_at_ms: NOW + RETENTION_MS });
        let waiting = t.begin_idempotent(record("k"), fingerprint(1), NOW + 4_000, LIFETIMES).await.unwrap();
        assert_eq!(waiting, Begin::InFlight { retry_after: Duration::from_secs(6) });
        assert_eq!(t.complete_idempotent(record("k"), 1, response()).await.unwrap(), Some(NOW + 3_600_000));
        let replay = t.begin_idempotent(record("k"), fingerprint(1), NOW + 5_000, LIFETIMES).await.unwrap();
        assert_eq!(replay, Begin::Replay(response()));
        let other_scope = RecordKey { scope: "caller-b".to_owned(), key: "k".to_owned() };
        assert_eq!(t.begin_idempotent(other_scope, fingerprint(1), NOW, LIFETIMES).await.unwrap(), Begin::Proceed { token: 1, expires_at_ms: NOW + RETENTION_MS }, "scopes never meet");
    }

    async fn a_key_reused_for_another_request_is_a_mismatch(t: TestStore) {
        t.begin_idempotent(record("k"), fingerprint(1), NOW, LIFETIMES).await.unwrap();
        assert_eq!(t.begin_idempotent(record("k"), fingerprint(2), NOW, LIFETIMES).await.unwrap(), Begin::Mismatch);
        t.complete_idempotent(record("k"), 1, response()).await.unwrap();
        assert_eq!(t.begin_idempotent(record("k"), fingerprint(2), NOW, LIFETIMES).await.unwrap(), Begin::Mismatch);
    }

    async fn an_expired_lock_is_taken_over_and_the_late_holder_changes_nothing(t: TestStore) {
        t.begin_idempotent(record("k"), fingerprint(1), NOW, LIFETIMES).await.unwrap();
        let takeover = t.begin_idempotent(record("k"), fingerprint(1), NOW + 10_000, LIFETIMES).await.unwrap();
        assert_eq!(takeover, Begin::Proceed { token: 2, expires_at_ms: NOW + RETENTION_MS }, "a take-over keeps the record's expiry");
        assert_eq!(t.complete_idempotent(record("k"), 1, response()).await.unwrap(), None, "token 1 is stale");
        assert!(!t.release_idempotent(record("k"), 1).await.unwrap());
        assert!(t.release_idempotent(record("k"), 2).await.unwrap());
        assert_eq!(t.begin_idempotent(record("k"), fingerprint(2), NOW + 11_000, LIFETIMES).await.unwrap(), Begin::Proceed { token: 1, expires_at_ms: NOW + 11_000 + RETENTION_MS }, "a released key is free");
    }

    async fn expired_records_are_forgotten_and_purged(t: TestStore) {
        t.begin_idempotent(record("old"), fingerprint(1), NOW, LIFETIMES).await.unwrap();
        t.complete_idempotent(record("old"), 1, response()).await.unwrap();
        t.begin_idempotent(record("young"), fingerprint(1), NOW + 1_000_000, LIFETIMES).await.unwrap();
        let after = NOW + 3_600_000;
        assert_eq!(t.begin_idempotent(record("old"), fingerprint(9), after, LIFETIMES).await.unwrap(), Begin::Proceed { token: 1, expires_at_ms: after + RETENTION_MS }, "an expired record does not bind its key");
        t.release_idempotent(record("old"), 1).await.unwrap();
        t.begin_idempotent(record("gone"), fingerprint(1), NOW, LIFETIMES).await.unwrap();
        assert_eq!(t.purge_idempotency(after, 100).await.unwrap(), 1);
        assert_eq!(t.purge_idempotency(after, 100).await.unwrap(), 0);
        let young = t.begin_idempotent(record("young"), fingerprint(1), after, LIFETIMES).await.unwrap();
        assert_eq!(young, Begin::Proceed { token: 2, expires_at_ms: NOW + 1_000_000 + RETENTION_MS }, "kept by retention, but its lock expired: taken over");
    }

    async fn a_read_answers_only_repeats_of_a_completed_unexpired_record(t: TestStore) {
        assert_eq!(read(&t, record("k"), 1, NOW).await, None, "no record: begin");
        t.begin_idempotent(record("k"), fingerprint(1), NOW, LIFETIMES).await.unwrap();
        assert_eq!(read(&t, record("k"), 1, NOW + 1).await, None, "in flight: begin");
        assert_eq!(read(&t, record("k"), 2, NOW + 1).await, None, "in flight: begin decides");
        t.complete_idempotent(record("k"), 1, response()).await.unwrap();
        assert_eq!(read(&t, record("k"), 1, NOW + 2).await, Some(Begin::Replay(response())));
        assert_eq!(read(&t, record("k"), 2, NOW + 2).await, Some(Begin::Mismatch));
        let other_scope = RecordKey { scope: "caller-b".to_owned(), key: "k".to_owned() };
        assert_eq!(read(&t, other_scope, 1, NOW + 2).await, None, "scopes never meet");
        let expiry = NOW + 3_600_000;
        let completed = t.completed_idempotent(record("k"), expiry - 1).await.unwrap().expect("completed");
        assert_eq!(completed.expires_at_ms, expiry);
        assert_eq!(completed.answer(&fingerprint(1), expiry - 1), Some(Begin::Replay(response())));
        assert_eq!(completed.answer(&fingerprint(1), expiry), None, "a copy expires with the record");
        assert_eq!(read(&t, record("k"), 1, expiry).await, None, "expired: begin purges it");
        assert_eq!(t.begin_idempotent(record("k"), fingerprint(1), expiry, LIFETIMES).await.unwrap(), Begin::Proceed { token: 1, expires_at_ms: expiry + RETENTION_MS });
    }

    async fn a_taken_over_record_completes_with_its_first_expiry(t: TestStore) {
        t.begin_idempotent(record("k"), fingerprint(1), NOW, LIFETIMES).await.unwrap();
        let takeover = t.begin_idempotent(record("k"), fingerprint(1), NOW + 10_000, LIFETIMES).await.unwrap();
        assert_eq!(takeover, Begin::Proceed { token: 2, expires_at_ms: NOW + RETENTION_MS }, "a take-over keeps the record's expiry");
        let expiry = t.complete_idempotent(record("k"), 2, response()).await.unwrap();
        assert_eq!(expiry, Some(NOW + 3_600_000), "retention counts from the record's creation, not the take-over");
    }

    async fn concurrent_first_requests_with_one_key_let_exactly_one_proceed(t: TestStore) {
        let store = Arc::new(t.store.clone());
        let racers: Vec<_> = (0..24)
            .map(|_| {
                let store = Arc::clone(&store);
                tokio::spawn(async move { store.begin_idempotent(record("race"), fingerprint(1), NOW, LIFETIMES).await.unwrap() })
            })
            .collect();
        let mut proceeded = 0;
        for racer in racers {
            match racer.await.unwrap() {
                Begin::Proceed { token, .. } => {
                    assert_eq!(token, 1);
                    proceeded += 1;
                }
                Begin::InFlight { .. } => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(proceeded, 1);
    }
}
