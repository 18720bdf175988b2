//! Group commit: deliveries queued together commit in one transaction, and each keeps its
//! own exact outcome.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use idemgate_core::{Outcome, outcome::FailureCause};
use idemgate_store::{HandlerError, SqliteStore, StoreError};
use serde_json::json;

use crate::{open_store, request};

/// Waits (bounded) until `count` commands are queued behind the held writer.
async fn wait_for_queue(store: &SqliteStore, count: usize) {
    for _ in 0..2000 {
        if store.queued() >= count {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("only {} commands queued", store.queued());
}

/// Holds the writer until `release` is sent, so that deliveries queue up behind it.
async fn hold_writer(store: &Arc<SqliteStore>) -> (std::sync::mpsc::Sender<()>, tokio::task::JoinHandle<()>) {
    let (release, wait) = std::sync::mpsc::channel::<()>();
    let (started, running) = tokio::sync::oneshot::channel();
    let store = Arc::clone(store);
    let holder = tokio::spawn(async move {
        store
            .write(move |_| {
                let _ = started.send(());
                let _ = wait.recv();
                Ok::<_, StoreError>(())
            })
            .await
            .unwrap();
    });
    running.await.unwrap();
    (release, holder)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_delivery_rolls_back_alone_and_its_batch_neighbours_commit_together() {
    let t = open_store();
    t.store.write(|conn| conn.execute_batch("CREATE TABLE effects (identity TEXT NOT NULL)")).await.unwrap();
    let (release, holder) = hold_writer(&t.store).await;
    let before = t.store.stats().batches();
    let mut tasks = Vec::new();
    for i in 0..20 {
        let store = Arc::clone(&t.store);
        tasks.push(tokio::spawn(async move {
            let identity = format!("e{i}");
            let effect = identity.clone();
            store
                .receive(request(&identity, b"body"), move |conn| {
                    conn.execute("INSERT INTO effects VALUES (?1)", [&effect])?;
                    match i {
                        7 => Err(HandlerError::new("poisoned")),
                        13 => Err(HandlerError::Refused("refused")),
                        _ => Ok(json!(i)),
                    }
                })
                .await
        }));
        tokio::task::yield_now().await;
    }
    wait_for_queue(&t.store, 20).await;
    release.send(()).unwrap();
    holder.await.unwrap();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    for (i, outcome) in outcomes.iter().enumerate() {
        let expected = match i {
            7 => Outcome::Failed { cause: FailureCause::Handler },
            13 => Outcome::Refused { reason: "refused" },
            _ => Outcome::Applied { result: json!(i) },
        };
        assert_eq!(*outcome, expected, "delivery {i}");
    }
    assert_eq!(t.store.stats().batches() - before, 1, "all twenty committed in one transaction");
    let conn = rusqlite::Connection::open(&t.path).unwrap();
    let effects: i64 = conn.query_row("SELECT count(*) FROM effects", [], |r| r.get(0)).unwrap();
    let receipts: i64 = conn.query_row("SELECT count(*) FROM receipts", [], |r| r.get(0)).unwrap();
    assert_eq!((effects, receipts), (18, 18), "the poisoned and the refused delivery left nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_event_twice_in_one_batch_resolves_as_in_separate_transactions() {
    let t = open_store();
    let (release, holder) = hold_writer(&t.store).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for body in [&b"same"[..], b"same", b"other"] {
        let (store, runs) = (Arc::clone(&t.store), Arc::clone(&runs));
        tasks.push(tokio::spawn(async move {
            store
                .receive(request("twice", body), move |_| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(json!("first"))
                })
                .await
        }));
        // One at a time, so the three enter the queue in this order.
        wait_for_queue(&t.store, tasks.len()).await;
    }
    release.send(()).unwrap();
    holder.await.unwrap();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    assert_eq!(
        outcomes,
        [Outcome::Applied { result: json!("first") }, Outcome::Duplicate { result: json!("first") }, Outcome::Conflict]
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A handler that leaves a row its deferred foreign key refuses: its savepoint is released,
/// and the batch's `COMMIT` fails.
fn poison_the_commit(conn: &rusqlite::Connection) -> Result<serde_json::Value, HandlerError> {
    conn.execute(
        "INSERT INTO body_receipts (source, body_sha256, identity) VALUES ('test', zeroblob(32), 'no-such-receipt')",
        [],
    )?;
    Ok(json!("poison"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_commit_still_answers_a_conflict_with_an_earlier_receipt_and_fails_everything_else() {
    let t = open_store();
    let stored = t.store.receive(request("old", b"first"), |_| Ok(json!("first"))).await;
    assert_eq!(stored, Outcome::Applied { result: json!("first") });
    let (release, holder) = hold_writer(&t.store).await;
    let mut tasks = Vec::new();
    let members: [(&str, &[u8], bool); 4] =
        [("old", b"other", false), ("new", b"first", false), ("new", b"other", false), ("poison", b"x", true)];
    for (identity, body, poison) in members {
        let store = Arc::clone(&t.store);
        tasks.push(tokio::spawn(async move {
            store
                .receive(
                    request(identity, body),
                    move |conn| if poison { poison_the_commit(conn) } else { Ok(json!(1)) },
                )
                .await
        }));
        // One at a time, so the four enter the queue (and the batch) in this order.
        wait_for_queue(&t.store, tasks.len()).await;
    }
    release.send(()).unwrap();
    holder.await.unwrap();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    let failed = Outcome::Failed { cause: FailureCause::Store };
    assert_eq!(
        outcomes,
        [Outcome::Conflict, failed.clone(), failed.clone(), failed],
        "the conflict with a committed receipt stands; one with a receipt of the failed batch does not"
    );
    let conn = rusqlite::Connection::open(&t.path).unwrap();
    let receipts: i64 = conn.query_row("SELECT count(*) FROM receipts", [], |r| r.get(0)).unwrap();
    assert_eq!(receipts, 1, "nothing of the failed batch is stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_of_a_completed_key_is_answered_while_the_writer_is_busy() {
    use std::time::Duration;

    use idemgate_core::idempotency::Fingerprint;
    use idemgate_store::idempotency::{Begin, Lifetimes, RecordKey, StoredResponse};

    let t = open_store();
    let lifetimes = Lifetimes { lock: Duration::from_secs(10), retention: Duration::from_secs(3600) };
    let record = RecordKey { scope: "caller".to_owned(), key: "k".to_owned() };
    let now = 1_700_000_000_000;
    let response = StoredResponse { status: 201, headers: vec![], body: b"{}".to_vec(), body_omitted: false };
    t.shared().begin_idempotent(record.clone(), Fingerprint([1; 32]), now, lifetimes).await.unwrap();
    t.shared().complete_idempotent(record.clone(), 1, response.clone()).await.unwrap();

    let (release, holder) = hold_writer(&t.store).await;
    // With the writer held, only a read can answer; a lookup on the writer would wait for
    // the release below, which comes only after the answer.
    let completed = t.shared().completed_idempotent(record, now + 1).await.unwrap().expect("completed");
    assert_eq!(completed.answer(&Fingerprint([1; 32]), now + 1), Some(Begin::Replay(response)));
    assert_eq!(completed.answer(&Fingerprint([2; 32]), now + 1), Some(Begin::Mismatch));
    release.send(()).unwrap();
    holder.await.unwrap();
}
