//! `receive`: exactly one of applied / duplicate / conflict / failed, with the effect
//! committed together with the receipt or not at all.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use idemgate_core::{Outcome, outcome::FailureCause};
use idemgate_store::{Connection, HandlerError, SqliteStore, StoreOptions};
use serde_json::json;

use crate::{TestStore, open_store, request};

async fn with_effects_table(store: &SqliteStore) {
    store.write(|conn| conn.execute_batch("CREATE TABLE effects (identity TEXT NOT NULL)")).await.unwrap();
}

fn record_effect(identity: &'static str) -> impl FnOnce(&Connection) -> Result<serde_json::Value, HandlerError> {
    move |conn| {
        conn.execute("INSERT INTO effects VALUES (?1)", [identity])?;
        Ok(json!({ "effect": identity }))
    }
}

fn count(t: &TestStore, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(&t.path).unwrap();
    conn.query_row(sql, [], |row| row.get(0)).unwrap()
}

#[tokio::test]
async fn first_delivery_applies_and_a_repeat_gets_the_original_result() {
    let t = open_store();
    with_effects_table(&t.store).await;
    let applied = t.store.receive(request("e1", b"body"), record_effect("e1")).await;
    assert_eq!(applied, Outcome::Applied { result: json!({"effect": "e1"}) });
    let repeat = t.store.receive(request("e1", b"body"), |_| Ok(json!("never stored"))).await;
    assert_eq!(repeat, Outcome::Duplicate { result: json!({"effect": "e1"}) });
    assert_eq!(count(&t, "SELECT count(*) FROM effects"), 1);
    assert_eq!(count(&t, "SELECT count(*) FROM receipts"), 1);
}

#[tokio::test]
async fn other_bytes_under_the_same_identity_conflict_and_are_recorded() {
    let t = open_store();
    t.store.receive(request("e1", b"one"), |_| Ok(json!(1))).await;
    for _ in 0..2 {
        let outcome = t.store.receive(request("e1", b"two"), |_| Ok(json!(2))).await;
        assert_eq!(outcome, Outcome::Conflict);
    }
    let reader = t.reader();
    let receipt = reader.receipt(&request("e1", b"").key).unwrap().unwrap();
    assert_eq!((receipt.result, receipt.body_hash), (json!(1), request("e1", b"one").body_hash));
    let conflicts = reader.conflicts(&request("e1", b"").key.source).unwrap();
    assert_eq!(conflicts.len(), 1);
    assert_eq!((conflicts[0].seen_count, conflicts[0].body_hash), (2, request("e1", b"two").body_hash));
}

#[tokio::test]
async fn a_failing_handler_rolls_back_its_effect_and_stores_no_receipt() {
    let t = open_store();
    with_effects_table(&t.store).await;
    let failing = |conn: &Connection| {
        conn.execute("INSERT INTO effects VALUES ('e1')", [])?;
        Err(HandlerError::new("refused after writing"))
    };
    let outcome = t.store.receive(request("e1", b"body"), failing).await;
    assert_eq!(outcome, Outcome::Failed { cause: FailureCause::Handler });
    assert_eq!(count(&t, "SELECT count(*) FROM effects"), 0);
    assert_eq!(count(&t, "SELECT count(*) FROM receipts"), 0);
    let retry = t.store.receive(request("e1", b"body"), record_effect("e1")).await;
    assert!(matches!(retry, Outcome::Applied { .. }));
}

#[tokio::test]
async fn a_panicking_handler_rolls_back_and_the_writer_keeps_working() {
    let t = open_store();
    with_effects_table(&t.store).await;
    let panicking = |conn: &Connection| -> Result<serde_json::Value, HandlerError> {
        conn.execute("INSERT INTO effects VALUES ('e1')", [])?;
        panic!("handler bug");
    };
    let outcome = t.store.receive(request("e1", b"body"), panicking).await;
    assert_eq!(outcome, Outcome::Failed { cause: FailureCause::Handler });
    assert_eq!(count(&t, "SELECT count(*) FROM effects"), 0);
    let next = t.store.receive(request("e2", b"body"), record_effect("e2")).await;
    assert!(matches!(next, Outcome::Applied { .. }), "{next:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_deliveries_of_one_event_run_the_effect_once() {
    let t = open_store();
    let runs = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let (store, runs) = (Arc::clone(&t.store), Arc::clone(&runs));
            tokio::spawn(async move {
                store
                    .receive(request("same", b"body"), move |_| {
                        runs.fetch_add(1, Ordering::SeqCst);
                        Ok(json!("first"))
                    })
                    .await
            })
        })
        .collect();
    let mut applied = 0;
    for task in tasks {
        match task.await.unwrap() {
            Outcome::Applied { result } | Outcome::Duplicate { result } if result == json!("first") => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    applied += usize::from(runs.load(Ordering::SeqCst) == 1);
    assert_eq!(applied, 1, "the handler ran {} times", runs.load(Ordering::SeqCst));
    assert_eq!(count(&t, "SELECT count(*) FROM receipts"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_file_still_apply_each_event_once() {
    // Two writers on one file, as two processes would have: BEGIN IMMEDIATE serialises them.
    let t = open_store();
    let second = Arc::new(SqliteStore::open(&t.path, StoreOptions::default()).unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..40 {
        let store = if i % 2 == 0 { Arc::clone(&t.store) } else { Arc::clone(&second) };
        let runs = Arc::clone(&runs);
        let identity = format!("e{}", i % 10);
        tasks.push(tokio::spawn(async move {
            let mut req = request("x", b"body");
            req.key.identity = idemgate_core::Identity::new(identity).unwrap();
            store
                .receive(req, move |_| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(json!(null))
                })
                .await
        }));
    }
    for task in tasks {
        let outcome = task.await.unwrap();
        assert!(matches!(outcome, Outcome::Applied { .. } | Outcome::Duplicate { .. }), "{outcome:?}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 10);
    assert_eq!(count(&t, "SELECT count(*) FROM receipts"), 10);
}

#[tokio::test]
async fn a_lock_held_past_busy_timeout_fails_the_delivery_and_then_service_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.sqlite3");
    let options = StoreOptions { busy_timeout: Duration::from_millis(100), ..StoreOptions::default() };
    let store = SqliteStore::open(&path, options).unwrap();
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let blocked = store.receive(request("e1", b"body"), |_| Ok(json!(1))).await;
    assert_eq!(blocked, Outcome::Failed { cause: FailureCause::Store });
    holder.execute_batch("ROLLBACK").unwrap();
    let resumed = store.receive(request("e1", b"body"), |_| Ok(json!(1))).await;
    assert_eq!(resumed, Outcome::Applied { result: json!(1) });
}

#[tokio::test]
async fn the_write_connection_is_wal_with_full_sync() {
    let t = open_store();
    let (mode, sync): (String, i64) = t
        .store
        .write(|conn| {
            let mode = conn.query_row("PRAGMA journal_mode", [], |row| row.get(0))?;
            let sync = conn.query_row("PRAGMA synchronous", [], |row| row.get(0))?;
            Ok::<_, rusqlite::Error>((mode, sync))
        })
        .await
        .unwrap();
    assert_eq!((mode.as_str(), sync), ("wal", 2), "synchronous=FULL is 2");
}

#[tokio::test]
async fn receipts_outlive_the_store_that_wrote_them() {
    let t = open_store();
    t.store.receive(request("e1", b"body"), |_| Ok(json!("kept"))).await;
    let TestStore { store, path, _dir } = t;
    Arc::into_inner(store).unwrap().close().await;
    let reopened = SqliteStore::open(&path, StoreOptions::default()).unwrap();
    let repeat = reopened.receive(request("e1", b"body"), |_| Ok(json!("new"))).await;
    assert_eq!(repeat, Outcome::Duplicate { result: json!("kept") });
    let fresh = reopened.receive(request("e2", b"body"), |_| Ok(json!(1))).await;
    assert!(matches!(fresh, Outcome::Applied { .. }));
}

/// Under a steady stream of writes the WAL is checkpointed and restarted, so it stays
/// near SQLite's auto-checkpoint size instead of growing with every commit (a separate
/// PASSIVE checkpointer once let it grow to gigabytes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_stays_bounded_under_a_steady_stream_of_deliveries() {
    let t = open_store();
    let body = vec![b'x'; 2048];
    let senders: Vec<_> = (0..16)
        .map(|sender| {
            let (store, body) = (Arc::clone(&t.store), body.clone());
            tokio::spawn(async move {
                for n in 0..400 {
                    let identity = format!("e-{sender}-{n}");
                    let effect = {
                        let body = body.clone();
                        move |conn: &Connection| {
                            conn.execute_batch("CREATE TABLE IF NOT EXISTS blobs (b BLOB)")?;
                            conn.execute("INSERT INTO blobs VALUES (?1)", [&body])?;
                            Ok(json!({}))
                        }
                    };
                    let outcome = store.receive(request(&identity, &body), effect).await;
                    assert!(matches!(outcome, Outcome::Applied { .. }), "{outcome:?}");
                }
            })
        })
        .collect();
    for sender in senders {
        sender.await.unwrap();
    }
    let wal = std::fs::metadata(t.path.with_extension("sqlite3-wal")).unwrap().len();
    // 6,400 deliveries of 2 KiB each wrote well over 16 MiB of pages in all.
    assert!(wal < 16 << 20, "the WAL grew to {wal} bytes");
}
