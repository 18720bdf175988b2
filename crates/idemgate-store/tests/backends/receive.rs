//! Receipts: the first delivery applies with its event and jobs, a repeat gets the
//! original result, other bytes conflict, a refusal stores nothing, races resolve once.

use std::sync::Arc;

use idemgate_core::Outcome;
use idemgate_store::inbox::Version;
use serde_json::json;

use crate::{TestStore, event, key, on_both, ordered, request, source};

on_both! {
    async fn first_delivery_applies_with_its_event_and_jobs_and_a_repeat_is_a_duplicate(t: TestStore) {
        let first = t.accept(request("e1", b"{}"), event("e1", b"{}", &["app", "audit"])).await;
        assert_eq!(first, Outcome::Applied { result: json!({"event": "e1"}) });
        let repeat = t.accept(request("e1", b"{}"), event("e1", b"{}", &["app", "audit"])).await;
        assert_eq!(repeat, Outcome::Duplicate { result: json!({"event": "e1"}) });

        let receipt = t.receipt(key("e1")).await.unwrap().unwrap();
        assert_eq!(receipt.outcome, "applied");
        assert_eq!(receipt.result, json!({"event": "e1"}));
        let stored = t.event(key("e1")).await.unwrap().unwrap();
        assert_eq!((stored.event_type.as_deref(), stored.body_len), (Some("order.created"), 2));
        let jobs = t.jobs(key("e1")).await.unwrap();
        let summary: Vec<_> = jobs.iter().map(|j| (j.destination.as_str(), j.state.as_str(), j.attempts)).collect();
        assert_eq!(summary, [("app", "pending", 0), ("audit", "pending", 0)]);
    }

    async fn other_bytes_under_the_same_identity_conflict_and_are_counted(t: TestStore) {
        t.accept(request("e1", b"{\"a\":1}"), event("e1", b"{\"a\":1}", &["app"])).await;
        for _ in 0..2 {
            let outcome = t.accept(request("e1", b"{\"a\":2}"), event("e1", b"{\"a\":2}", &["app"])).await;
            assert_eq!(outcome, Outcome::Conflict);
        }
        let conflicts = t.conflicts(source()).await.unwrap();
        assert_eq!(conflicts.len(), 1);
        assert_eq!(conflicts[0].seen_count, 2);
        assert_eq!(t.jobs(key("e1")).await.unwrap().len(), 1, "a conflict adds no work");
        let receipt = t.receipt(key("e1")).await.unwrap().unwrap();
        assert_eq!(receipt.body_hash, idemgate_core::BodyHash::of(b"{\"a\":1}"));
    }

    async fn a_conflict_that_cannot_be_recorded_is_still_answered_as_a_conflict(t: TestStore) {
        t.accept(request("e1", b"{\"a\":1}"), event("e1", b"{\"a\":1}", &["app"])).await;
        t.execute_raw(
            "CREATE TRIGGER no_conflicts BEFORE INSERT ON conflicts BEGIN SELECT RAISE(ABORT, 'injected'); END;",
            "CREATE FUNCTION no_conflicts() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected'; END $$;
             CREATE TRIGGER no_conflicts BEFORE INSERT ON conflicts FOR EACH ROW EXECUTE FUNCTION no_conflicts();",
        )
        .await;
        let plain = t.accept(request("e1", b"{\"a\":2}"), event("e1", b"{\"a\":2}", &["app"])).await;
        assert_eq!(plain, Outcome::Conflict, "the receipt decides the answer, not its bookkeeping");
        let guarded = ordered("e1", b"{\"a\":3}", "k", Version::Int(1));
        assert_eq!(t.accept(request("e1", b"{\"a\":3}"), guarded).await, Outcome::Conflict);
        assert!(t.conflicts(source()).await.unwrap().is_empty(), "the fault held");
        let receipt = t.receipt(key("e1")).await.unwrap().unwrap();
        assert_eq!(receipt.body_hash, idemgate_core::BodyHash::of(b"{\"a\":1}"));
        let repeat = t.accept(request("e1", b"{\"a\":1}"), event("e1", b"{\"a\":1}", &["app"])).await;
        assert_eq!(repeat, Outcome::Duplicate { result: json!({"event": "e1"}) });
    }

    async fn a_refused_first_delivery_stores_nothing_and_may_be_corrected(t: TestStore) {
        let refused = idemgate_store::inbox::IncomingEvent { refusal: Some("not accepted"), ..event("e1", b"{}", &["app"]) };
        assert_eq!(t.accept(request("e1", b"{}"), refused).await, Outcome::Refused { reason: "not accepted" });
        assert!(t.receipt(key("e1")).await.unwrap().is_none());
        assert!(t.event(key("e1")).await.unwrap().is_none());
        assert!(matches!(t.accept(request("e1", b"{}"), event("e1", b"{}", &["app"])).await, Outcome::Applied { .. }));
    }

    async fn a_repeat_of_an_accepted_event_stays_a_duplicate_when_it_would_now_be_refused(t: TestStore) {
        t.accept(request("e1", b"{}"), event("e1", b"{}", &["app"])).await;
        let refused = idemgate_store::inbox::IncomingEvent { refusal: Some("not accepted"), ..event("e1", b"{}", &["app"]) };
        assert!(matches!(t.accept(request("e1", b"{}"), refused).await, Outcome::Duplicate { .. }));
    }

    async fn concurrent_identical_deliveries_apply_once_and_the_rest_are_duplicates(t: TestStore) {
        let store = Arc::new(t.store.clone());
        let racers: Vec<_> = (0..32)
            .map(|_| {
                let store = Arc::clone(&store);
                tokio::spawn(async move { store.accept(request("race", b"{}"), event("race", b"{}", &["a", "b"])).await })
            })
            .collect();
        let mut applied = 0;
        for racer in racers {
            match racer.await.unwrap() {
                Outcome::Applied { .. } => applied += 1,
                Outcome::Duplicate { result } => assert_eq!(result, json!({"event": "race"})),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(applied, 1);
        assert_eq!(t.jobs(key("race")).await.unwrap().len(), 2);
    }

    async fn an_event_older_than_its_ordering_key_is_stored_superseded(t: TestStore) {
        t.accept(request("v2", b"2"), ordered("v2", b"2", "order-1", Version::Int(2))).await;
        t.accept(request("v1", b"1"), ordered("v1", b"1", "order-1", Version::Int(1))).await;
        t.accept(request("v3", b"3"), ordered("v3", b"3", "order-1", Version::Int(3))).await;
        // Text versions compare by bytes on both backends, whatever the collation.
        t.accept(request("tb", b"b"), ordered("tb", b"b", "order-2", Version::Text("B".to_owned()))).await;
        t.accept(request("ta", b"a"), ordered("ta", b"a", "order-2", Version::Text("a".to_owned()))).await;
        // An integer and a text version never compare: neither supersedes the other.
        t.accept(request("mx", b"m"), ordered("mx", b"m", "order-2", Version::Int(0))).await;
        for (identity, state) in [("v2", "pending"), ("v1", "superseded"), ("v3", "pending"), ("tb", "pending"), ("ta", "pending"), ("mx", "pending")] {
            assert_eq!(t.jobs(key(identity)).await.unwrap()[0].state, state, "{identity}");
        }
        let late = t.accept(request("tz", b"z"), ordered("tz", b"z", "order-2", Version::Text("A".to_owned()))).await;
        assert!(matches!(late, Outcome::Applied { .. }));
        assert_eq!(t.jobs(key("tz")).await.unwrap()[0].state, "pending", "after an integer version, text is not older");
    }
}

/// PostgreSQL's group commit: deliveries offered at the same moment are written by fewer
/// transactions than there are deliveries (each receipt's `xmin` is the transaction that
/// inserted it), and each still gets its own outcome, its event and its jobs; a repeat in
/// the same batch as its first delivery is a duplicate of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_deliveries_arriving_together_share_one_transaction() {
    let t = crate::postgres().await;
    let store = Arc::new(t.store.clone());
    let offers: Vec<_> = (0..64)
        .map(|n| {
            let store = Arc::clone(&store);
            // Every eighth delivery repeats the one before it.
            let identity = format!("g{}", if n % 8 == 7 { n - 1 } else { n });
            tokio::spawn(async move {
                let outcome = store.accept(request(&identity, b"{}"), event(&identity, b"{}", &["a", "b"])).await;
                (identity, outcome)
            })
        })
        .collect();
    let (mut applied, mut duplicates) = (std::collections::BTreeSet::new(), 0);
    for offer in offers {
        match offer.await.unwrap() {
            (identity, Outcome::Applied { result }) => {
                assert_eq!(result, json!({ "event": identity }));
                assert!(applied.insert(identity));
            }
            (identity, Outcome::Duplicate { result }) => {
                assert_eq!(result, json!({ "event": identity }));
                duplicates += 1;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((applied.len(), duplicates), (56, 8));
    for identity in &applied {
        assert_eq!(t.jobs(key(identity)).await.unwrap().len(), 2, "{identity}");
    }
    let transactions = t.count_raw("SELECT count(DISTINCT xmin::text) FROM receipts").await;
    assert!(transactions < 56, "56 receipts written by {transactions} transactions: no group commit");
}

/// A group commit that fails is rolled back whole, and each of its deliveries is written
/// again on its own: the one that cannot be written fails and stores nothing, the others
/// apply with their events and jobs. (A destination named twice breaks the jobs' unique
/// key, a failure no retry mends.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_failed_group_commit_writes_each_delivery_again_alone() {
    let t = crate::postgres().await;
    let store = Arc::new(t.store.clone());
    let offers: Vec<_> = (0..16)
        .map(|n| {
            let store = Arc::clone(&store);
            let identity = format!("f{n}");
            let destinations: &[&str] = if n == 5 { &["a", "a"] } else { &["a", "b"] };
            tokio::spawn(async move {
                (n, store.accept(request(&identity, b"{}"), event(&identity, b"{}", destinations)).await)
            })
        })
        .collect();
    for offer in offers {
        match offer.await.unwrap() {
            (5, outcome) => assert!(matches!(outcome, Outcome::Failed { .. }), "{outcome:?}"),
            (n, outcome) => {
                assert_eq!(outcome, Outcome::Applied { result: json!({ "event": format!("f{n}") }) });
                assert_eq!(t.jobs(key(&format!("f{n}"))).await.unwrap().len(), 2, "f{n}");
            }
        }
    }
    assert_eq!(t.count_raw("SELECT count(*) FROM receipts WHERE identity = 'f5'").await, 0);
    assert_eq!(t.count_raw("SELECT count(*) FROM events WHERE identity = 'f5'").await, 0);
    assert_eq!(t.count_raw("SELECT count(*) FROM receipts").await, 15);
}
