//! Retention and backups: purge forgets only what may be forgotten, on an injected clock;
//! a backup taken during writes holds every receipt together with its event and jobs.

use std::{sync::Arc, time::Duration};

use idemgate_core::{Identity, ReceiptKey, SourceName, UnixTime};
use idemgate_store::{
    HandlerError, ReceiveRequest, SqliteStore,
    maintenance::Retention,
    sqlite::{
        inbox::{NewEvent, accept_event},
        maintenance,
    },
};
use serde_json::json;

use crate::open_store;

const DAY: i64 = 86_400;
const T0: i64 = 1_800_000_000;

async fn accept(store: &SqliteStore, identity: &str, at: i64) {
    let key = ReceiptKey { source: SourceName::new("src").unwrap(), identity: Identity::new(identity).unwrap() };
    let request = ReceiveRequest {
        key: key.clone(),
        body_hash: idemgate_core::BodyHash::of(b"{}"),
        received_at: UnixTime(at),
        dedupe_body: false,
    };
    let outcome = store
        .receive(request, move |conn| {
            let event = NewEvent {
                key: &key,
                outgoing_id: None,
                event_type: None,
                content_type: None,
                headers: &[],
                body: b"{}",
                ordering: None,
                received_at: UnixTime(at),
            };
            accept_event(conn, &event, &["app", "audit"]).map_err(HandlerError::from)?;
            Ok(json!(null))
        })
        .await;
    assert!(matches!(outcome, idemgate_core::Outcome::Applied { .. }));
}

fn finish_jobs(path: &std::path::Path, identity: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute(
        "UPDATE jobs SET state = 'succeeded' WHERE event_id = (SELECT id FROM events WHERE identity = ?1)",
        [identity],
    )
    .unwrap();
}

fn identities(path: &std::path::Path, table: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn.prepare(&format!("SELECT identity FROM {table} ORDER BY identity")).unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

fn policy(receipts_days: u64, payload_days: u64) -> Vec<Retention> {
    vec![Retention {
        source: "src".into(),
        receipts: Duration::from_secs(receipts_days * DAY as u64),
        payloads: Duration::from_secs(payload_days * DAY as u64),
    }]
}

#[tokio::test]
async fn purge_keeps_young_receipts_and_unfinished_work() {
    let t = open_store();
    accept(&t.store, "old_done", T0).await;
    accept(&t.store, "old_pending", T0).await;
    accept(&t.store, "young_done", T0 + 20 * DAY).await;
    finish_jobs(&t.path, "old_done");
    finish_jobs(&t.path, "young_done");
    let now = UnixTime(T0 + 31 * DAY);

    let dry = maintenance::purge_file(&t.path, now, &policy(30, 7), true).unwrap();
    assert_eq!((dry.receipts, dry.events, dry.payloads), (1, 1, 2));
    assert_eq!(identities(&t.path, "receipts").len(), 3, "a dry run changes nothing");

    let done = t.shared().purge(now, policy(30, 7)).await.unwrap();
    assert_eq!(done, dry, "the dry run said what would go");
    assert_eq!(identities(&t.path, "receipts"), ["old_pending", "young_done"]);
    let conn = rusqlite::Connection::open(&t.path).unwrap();
    let purged: Vec<(String, i64)> = conn
        .prepare("SELECT identity, payload_purged FROM events ORDER BY identity")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(purged, [("old_pending".into(), 0), ("young_done".into(), 1)], "payloads of finished events only");
    let young_too_early = t.shared().purge(UnixTime(T0 + 49 * DAY), policy(30, 7)).await.unwrap();
    assert_eq!(young_too_early.receipts, 0, "29 days old is younger than 30");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_during_writes_holds_every_receipt_with_its_event_and_jobs() {
    let t = open_store();
    let writer = {
        let store = Arc::clone(&t.store);
        tokio::spawn(async move {
            for i in 0..400 {
                accept(&store, &format!("e{i:03}"), T0 + i).await;
            }
        })
    };
    while identities(&t.path, "receipts").len() < 100 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let copy = t.path.with_file_name("backup.sqlite3");
    let (path, target) = (t.path.clone(), copy.clone());
    let summary = tokio::task::spawn_blocking(move || maintenance::backup(&path, &target)).await.unwrap().unwrap();
    writer.await.unwrap();
    assert!(summary.receipts >= 100 && summary.receipts < 400, "taken mid-run: {summary:?}");
    assert_eq!(
        (summary.events, summary.jobs),
        (summary.receipts, 2 * summary.receipts),
        "every receipt with its event and jobs"
    );
    assert!(maintenance::backup(&t.path, &copy).is_err(), "an existing backup is never overwritten");

    let in_use = maintenance::restore(&copy, &t.path, UnixTime(T0)).unwrap_err();
    assert!(matches!(in_use, idemgate_store::StoreError::Sqlite(idemgate_store::SqliteError::InUse(_))), "{in_use}");
    let restored = t.path.with_file_name("restored.sqlite3");
    let restored_summary = maintenance::restore(&copy, &restored, UnixTime(T0)).unwrap();
    assert_eq!((restored_summary.summary, restored_summary.kept), (summary, None));
    let reopened = SqliteStore::open(&restored, Default::default()).unwrap();
    accept(&reopened, "after_restore", T0 + 1000).await;
}

/// Another process holding the writers' lock as `mode` (`-s` shared, `-x` exclusive),
/// with util-linux `flock` (`-o`: only `flock` itself holds it); returned once it is held.
fn lock_holder(store: &std::path::Path, mode: &str) -> std::process::Child {
    let lock = idemgate_store::lock_path(store);
    let mut holder = std::process::Command::new("flock")
        .args([mode, "-o", lock.to_str().unwrap(), "-c", "echo held; exec sleep 30"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut line).unwrap();
    assert_eq!(line, "held\n");
    holder
}

#[tokio::test]
async fn restore_names_the_process_holding_the_store_and_a_store_under_restore_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite3");
    drop(SqliteStore::open(&path, Default::default()).unwrap());
    let copy = dir.path().join("copy.sqlite3");
    maintenance::backup(&path, &copy).unwrap();

    let mut writer = lock_holder(&path, "-s");
    let refused = maintenance::restore(&copy, &path, UnixTime(T0)).unwrap_err();
    assert_eq!(
        refused.to_string().split(';').next().unwrap(),
        format!("the store is in use by process {}", writer.id())
    );
    writer.kill().unwrap();
    writer.wait().unwrap();

    let mut restoring = lock_holder(&path, "-x");
    let unavailable = SqliteStore::open(&path, Default::default()).unwrap_err();
    assert!(
        matches!(unavailable, idemgate_store::StoreError::Sqlite(idemgate_store::SqliteError::Restoring)),
        "{unavailable}"
    );
    assert_eq!(unavailable.kind(), idemgate_store::ErrorKind::Unavailable);
    restoring.kill().unwrap();
    restoring.wait().unwrap();
    // Closed, not dropped: the writer holds the lock until it has finished.
    SqliteStore::open(&path, Default::default()).unwrap().close().await;
    assert!(maintenance::restore(&copy, &path, UnixTime(T0)).unwrap().kept.is_some());
}

/// The permission bits of `path`.
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn the_store_its_side_files_and_its_backups_are_created_for_their_owner_alone() {
    let t = open_store();
    accept(&t.store, "e1", T0).await;
    let sibling = |suffix: &str| t.path.with_file_name(format!("store.sqlite3{suffix}"));
    for file in [t.path.clone(), sibling("-wal"), sibling("-shm"), sibling("-lock")] {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    let copy = t.path.with_file_name("backup.sqlite3");
    maintenance::backup(&t.path, &copy).unwrap();
    assert_eq!(mode(&copy), 0o600);
    // A backup opened up by hand is still restored as a store its owner alone reads.
    std::fs::set_permissions(&copy, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let restored = t.path.with_file_name("restored.sqlite3");
    maintenance::restore(&copy, &restored, UnixTime(T0)).unwrap();
    assert_eq!(mode(&restored), 0o600);
}
