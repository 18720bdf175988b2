//! Failure before the commit, a response lost after it, and a killed process.

use serde_json::json;

use crate::harness::{Counter, Delivery, Reply, event, state, temp_db};

#[test]
fn a_failure_before_commit_rolls_back_and_the_retry_applies() {
    let (_dir, db) = temp_db();
    let counter = Counter::start_with(&db, "fail-before-commit=evt-f");
    counter.deliver(&event("evt-a", 3));
    let reply = counter.deliver(&event("evt-f", 4));
    assert!(reply.is(503, json!({"error": "temporary_processing_failure"})), "{reply:?}");
    assert!(reply.header("retry-after").is_some());
    let after_failure = state(&db);
    assert_eq!(after_failure.total, 3, "the counter update was rolled back");
    assert!(!after_failure.receipts.contains_key("evt-f"), "no receipt for a failed delivery");
    let retry = counter.deliver(&event("evt-f", 4));
    assert!(retry.is(200, json!({"status": "applied", "result": 7})), "{retry:?}");
    assert_eq!(state(&db).receipts.get("evt-f"), Some(&7));
}

#[test]
fn a_response_lost_after_commit_leaves_the_effect_and_the_retry_is_a_duplicate() {
    let (_dir, db) = temp_db();
    let counter = Counter::start_with(&db, "drop-after-commit=evt-d");
    let body = event("evt-d", 6);
    assert_eq!(counter.post(&Delivery::signed(body.as_bytes())), Reply::Dropped);
    let committed = state(&db);
    assert_eq!((committed.total, committed.receipts.get("evt-d")), (6, Some(&6)));
    let retry = counter.post(&Delivery::signed(body.as_bytes()));
    assert!(retry.is(200, json!({"status": "duplicate", "result": 6})), "{retry:?}");
    assert_eq!(state(&db).total, 6);
}

#[test]
fn receipts_survive_a_restart_on_the_same_file() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    counter.deliver(&event("evt-a", 3));
    counter.deliver(&event("evt-b", 4));
    assert!(counter.sigterm().success());
    let restarted = Counter::start(&db);
    let again = restarted.deliver(&event("evt-a", 3));
    assert!(again.is(200, json!({"status": "duplicate", "result": 3})), "{again:?}");
    assert_eq!(restarted.deliver(&event("evt-a", 9)).status(), 409);
    assert_eq!(restarted.deliver(&event("evt-c", 1)).body()["result"], 8);
}

#[test]
fn every_answered_event_survives_sigkill() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    let mut expected = std::collections::BTreeMap::new();
    for i in 1..=20 {
        let reply = counter.deliver(&event(&format!("evt-k{i}"), 1));
        assert_eq!(reply.status(), 200);
        expected.insert(format!("evt-k{i}"), reply.body()["result"].as_i64().unwrap());
    }
    counter.sigkill();
    let after = state(&db);
    assert_eq!((after.total, &after.receipts), (20, &expected));
    let restarted = Counter::start(&db);
    let again = restarted.deliver(&event("evt-k7", 1));
    assert!(again.is(200, json!({"status": "duplicate", "result": 7})), "{again:?}");
}
