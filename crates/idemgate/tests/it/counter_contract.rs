//! The seed's table "Die geprüften Fehlerorte unterscheiden", row by row, for real.

use std::{sync::Barrier, thread};

use serde_json::json;

use crate::harness::{Counter, Delivery, Reply, event, state, temp_db};

#[test]
fn the_first_valid_event_is_applied_with_its_receipt() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    let reply = counter.deliver(&event("evt-a", 3));
    assert!(reply.is(200, json!({"status": "applied", "result": 3})), "{reply:?}");
    assert_eq!(reply.header("content-type"), Some("application/json"));
    let after = state(&db);
    assert_eq!((after.total, after.receipts.get("evt-a")), (3, Some(&3)));
}

#[test]
fn an_identical_repeat_with_a_new_delivery_id_and_timestamp_is_a_duplicate() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    let body = event("evt-a", 3);
    let first = Delivery::signed_at(body.as_bytes(), crate::harness::unix_now() - 5);
    let again = Delivery::signed(body.as_bytes());
    assert_ne!(first.delivery_id, again.delivery_id);
    assert_ne!(first.timestamp, again.timestamp);
    assert_eq!(counter.post(&first).status(), 200);
    let reply = counter.post(&again);
    assert!(reply.is(200, json!({"status": "duplicate", "result": 3})), "{reply:?}");
    assert_eq!(state(&db).total, 3);
}

#[test]
fn the_same_event_id_with_other_bytes_is_a_conflict_and_changes_nothing() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    counter.deliver(&event("evt-a", 3));
    let before = state(&db);
    let reply = counter.deliver(&event("evt-a", 5));
    assert!(reply.is(409, json!({"error": "event_conflict"})), "{reply:?}");
    // Whitespace is "other bytes" too.
    let spaced = r#"{"event_id": "evt-a","kind":"increment","value":3}"#;
    assert_eq!(counter.deliver(spaced).status(), 409);
    let after = state(&db);
    assert_eq!((after.total, &after.receipts), (before.total, &before.receipts));
    assert_eq!(after.conflicts, 2, "conflicts are recorded for the operator");
    let original = counter.deliver(&event("evt-a", 3));
    assert!(original.is(200, json!({"status": "duplicate", "result": 3})));
}

#[test]
fn a_repeat_returns_the_original_result_not_todays_total() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    assert_eq!(counter.deliver(&event("evt-a", 3)).body()["result"], 3);
    assert_eq!(counter.deliver(&event("evt-b", 4)).body()["result"], 7);
    let again = counter.deliver(&event("evt-a", 3));
    assert!(again.is(200, json!({"status": "duplicate", "result": 3})), "{again:?}");
    assert_eq!(state(&db).total, 7);
}

#[test]
fn sixteen_parallel_identical_deliveries_have_one_effect_and_one_receipt() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    let body = event("evt-par", 5);
    let deliveries: Vec<Delivery> = (0..16).map(|_| Delivery::signed(body.as_bytes())).collect();
    let barrier = Barrier::new(deliveries.len());
    let replies: Vec<Reply> = thread::scope(|scope| {
        let handles: Vec<_> = deliveries
            .iter()
            .map(|delivery| {
                let (counter, barrier) = (&counter, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    counter.post(delivery)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let applied = replies.iter().filter(|r| r.is(200, json!({"status": "applied", "result": 5}))).count();
    let duplicate = replies.iter().filter(|r| r.is(200, json!({"status": "duplicate", "result": 5}))).count();
    assert_eq!((applied, duplicate), (1, 15), "{replies:?}");
    let after = state(&db);
    assert_eq!((after.total, after.receipts.len()), (5, 1));
}

#[test]
fn an_8192_byte_body_is_accepted() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    let mut body = event("evt-big", 2);
    body.push_str(&" ".repeat(8192 - body.len()));
    assert_eq!(body.len(), 8192);
    let reply = counter.deliver(&body);
    assert!(reply.is(200, json!({"status": "applied", "result": 2})), "{reply:?}");
}

#[test]
fn other_paths_and_methods_get_json_errors_and_store_nothing() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    let delivery = Delivery::signed(event("evt-a", 3).as_bytes());
    let elsewhere = crate::harness::post(counter.addr, "/other", &delivery.headers(), &delivery.body);
    assert!(elsewhere.is(404, json!({"error": "not_found"})), "{elsewhere:?}");
    let get = crate::harness::exchange(counter.addr, b"GET /webhook HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(get.is(405, json!({"error": "method_not_allowed"})), "{get:?}");
    assert_eq!(state(&db).total, 0);
    assert!(state(&db).receipts.is_empty());
}
