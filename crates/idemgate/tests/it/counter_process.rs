//! The process interface of the contract: start-up errors, the first stdout line, the
//! `state` command and graceful stop.

use std::process::{Command, Stdio};

use crate::harness::{Counter, counter_bin, event, temp_db};

fn start_fails(secret: Option<&str>, faults: Option<&str>) -> (bool, String) {
    let (_dir, db) = temp_db();
    let mut command = Command::new(counter_bin());
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(&db)
        .env_remove("COUNTER_SECRET");
    if let Some(secret) = secret {
        command.env("COUNTER_SECRET", secret);
    }
    if let Some(faults) = faults {
        command.env("COUNTER_FAULTS", faults);
    }
    let output = command.stdin(Stdio::null()).output().unwrap();
    assert!(
        output.stdout.is_empty(),
        "printed {:?} before failing",
        String::from_utf8_lossy(&output.stdout)
    );
    (
        output.status.success(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn a_bad_secret_exits_non_zero_with_one_line_before_listening() {
    let good = crate::harness::SECRET_HEX;
    let cases = [
        None,
        Some("abcd"),
        Some(&good[..62]),
        Some("zz5f1c0e2a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d"),
        Some(" 5f1c0e2a9b8d7c6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2"),
    ];
    for secret in cases {
        let (ok, stderr) = start_fails(secret, None);
        assert!(!ok, "{secret:?} was accepted");
        assert_eq!(stderr.lines().count(), 1, "{secret:?}: {stderr:?}");
        assert!(stderr.contains("COUNTER_SECRET"), "{stderr:?}");
        if let Some(secret) = secret.filter(|s| s.len() > 8) {
            assert!(!stderr.contains(secret.trim()), "the secret was echoed");
        }
    }
}

#[test]
fn an_uppercase_secret_is_accepted() {
    let (_dir, db) = temp_db();
    let mut command = Command::new(counter_bin());
    let child = command
        .args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(&db)
        .env("COUNTER_SECRET", crate::harness::SECRET_HEX.to_uppercase())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = scopeguard(child);
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.0.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert!(line.starts_with("listening on 127.0.0.1:"), "{line:?}");
}

struct Guard(std::process::Child);
impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
fn scopeguard(child: std::process::Child) -> Guard {
    Guard(child)
}

#[test]
fn bad_fault_points_are_refused_at_start() {
    for faults in ["explode=evt-a", "fail-before-commit", "drop-after-commit="] {
        let (ok, stderr) = start_fails(Some(crate::harness::SECRET_HEX), Some(faults));
        assert!(!ok && stderr.lines().count() == 1, "{faults}: {stderr:?}");
    }
}

#[test]
fn state_prints_one_json_line_without_a_server() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    counter.deliver(&event("evt-b", 4));
    counter.deliver(&event("evt-a", 3));
    assert!(counter.sigterm().success(), "SIGTERM exits 0");
    let output = Command::new(counter_bin())
        .args(["state", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "{\"total\":7,\"receipts\":{\"evt-a\":7,\"evt-b\":4}}\n"
    );
}

#[test]
fn state_on_a_missing_file_fails_and_creates_nothing() {
    let (dir, _) = temp_db();
    let missing = dir.path().join("nope.sqlite3");
    let output = Command::new(counter_bin())
        .args(["state", "--db"])
        .arg(&missing)
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(!missing.exists());
}

#[test]
fn sigterm_and_sigint_stop_the_server_with_exit_0() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    counter.deliver(&event("evt-a", 3));
    assert!(counter.sigterm().success());
}
