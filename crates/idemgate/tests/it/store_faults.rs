//! Store faults under a running counter: the disk filling up mid-run, and a lock held by
//! another process. While the fault lasts deliveries get 503 with `Retry-After` and
//! nothing partial is stored; afterwards service resumes by itself.

use std::{io::Write, path::PathBuf, process::Command};

use serde_json::json;

use crate::harness::{Counter, event, state};

/// A small tmpfs mounted for one test, unmounted when dropped. Needs root, as CI has.
struct SmallDisk {
    path: PathBuf,
}

impl SmallDisk {
    fn mount(size: &str) -> Self {
        let path = tempfile::tempdir().unwrap().keep();
        let status =
            Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(&path).status();
        assert!(status.is_ok_and(|s| s.success()), "mounting a tmpfs failed: this test needs root (as CI runs)");
        Self { path }
    }

    /// Writes a filler file until the disk is full.
    fn fill(&self) -> PathBuf {
        let filler = self.path.join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        while file.write_all(&chunk).is_ok() {}
        let mut byte = [0u8; 1];
        while file.write_all(&byte).is_ok() {
            byte[0] = byte[0].wrapping_add(1);
        }
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
        let _ = std::fs::remove_dir(&self.path);
    }
}

fn deliver_status(counter: &Counter, id: &str, value: i64) -> (u16, Option<String>) {
    let reply = counter.deliver(&event(id, value));
    (reply.status(), reply.header("retry-after").map(str::to_owned))
}

#[test]
fn a_full_disk_answers_503_stores_nothing_and_service_resumes_when_space_returns() {
    let disk = SmallDisk::mount("8m");
    let db: PathBuf = disk.path.join("counter.sqlite3");
    let counter = Counter::start(&db);
    for i in 0..20 {
        assert_eq!(deliver_status(&counter, &format!("evt-f{i}"), 1).0, 200);
    }
    let before = state(&db);
    let filler = disk.fill();
    let mut refused = 0;
    for i in 0..50 {
        let (status, retry_after) = deliver_status(&counter, &format!("evt-full{i}"), 1);
        match status {
            503 => {
                assert!(retry_after.is_some());
                refused += 1;
            }
            // A commit can still fit into pages SQLite had reserved; each one it answers is stored.
            200 => {}
            other => panic!("unexpected {other} on a full disk"),
        }
    }
    assert!(refused > 0, "the full disk was never noticed");
    std::fs::remove_file(&filler).unwrap();
    let during = state(&db);
    let answered_during: Vec<_> = during.receipts.keys().filter(|k| k.starts_with("evt-full")).collect();
    assert_eq!(answered_during.len(), 50 - refused, "exactly the 200-answered deliveries are stored");
    assert_eq!(during.total, before.total + (50 - refused) as i64, "no partial effect");
    let resumed = counter.deliver(&event("evt-after", 5));
    assert!(resumed.is(200, json!({"status": "applied", "result": during.total + 5})), "{resumed:?}");
    for i in 0..50 {
        assert_eq!(deliver_status(&counter, &format!("evt-full{i}"), 1).0, 200, "the refused ones apply on retry");
    }
    let after = state(&db);
    assert_eq!(after.receipts.len(), 20 + 50 + 1);
    assert_eq!(after.total, before.total + 50 + 5);
}

#[test]
fn a_lock_held_by_another_process_answers_503_until_it_is_released() {
    let (_dir, db) = crate::harness::temp_db();
    let counter = Counter::start(&db);
    assert_eq!(deliver_status(&counter, "evt-l1", 1).0, 200);
    let mut holder = Command::new("python3")
        .args(["-c", LOCK_HOLDER])
        .arg(&db)
        .stdout(std::process::Stdio::piped())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut ready).unwrap();
    assert_eq!(ready.trim(), "locked");
    let (status, retry_after) = deliver_status(&counter, "evt-l2", 1);
    assert_eq!((status, retry_after.is_some()), (503, true), "past busy_timeout while another process holds the lock");
    drop(holder.stdin.take());
    holder.wait().unwrap();
    assert_eq!(deliver_status(&counter, "evt-l2", 1).0, 200, "resumes by itself");
    assert_eq!(state(&db).total, 2);
}

/// Takes the write lock with BEGIN IMMEDIATE and holds it until stdin closes.
const LOCK_HOLDER: &str = "import sqlite3, sys\n\
con = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
con.execute('BEGIN IMMEDIATE')\n\
print('locked', flush=True)\n\
sys.stdin.read()\n\
con.execute('ROLLBACK')\n";
