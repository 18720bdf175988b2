//! The process interface of the contract: start-up errors, the first stdout line, the
//! `state` command and graceful stop.

use std::{
    io::{Read, Write},
    net::TcpStream,
    process::{Command, Stdio},
    time::Duration,
};

use crate::harness::{Counter, Delivery, counter_bin, event, temp_db};

fn start_fails(secret: Option<&str>, faults: Option<&str>) -> (bool, String) {
    let (_dir, db) = temp_db();
    let mut command = Command::new(counter_bin());
    command.args(["serve", "--listen", "127.0.0.1:0", "--db"]).arg(&db).env_remove("COUNTER_SECRET");
    if let Some(secret) = secret {
        command.env("COUNTER_SECRET", secret);
    }
    if let Some(faults) = faults {
        command.env("COUNTER_FAULTS", faults);
    }
    let output = command.stdin(Stdio::null()).output().unwrap();
    assert!(output.stdout.is_empty(), "printed {:?} before failing", String::from_utf8_lossy(&output.stdout));
    (output.status.success(), String::from_utf8(output.stderr).unwrap())
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
    let upper = crate::harness::SECRET_HEX.to_uppercase();
    let counter = Counter::start_env(&db, &[("COUNTER_SECRET", &upper)]);
    assert_eq!(counter.deliver(&event("evt-a", 3)).status(), 200, "the same key, written in capitals");
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
    let output = Command::new(counter_bin()).args(["state", "--db"]).arg(&db).output().unwrap();
    assert!(output.status.success());
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "{\"total\":7,\"receipts\":{\"evt-a\":7,\"evt-b\":4}}\n");
}

#[test]
fn state_on_a_missing_file_fails_and_creates_nothing() {
    let (dir, _) = temp_db();
    let missing = dir.path().join("nope.sqlite3");
    let output = Command::new(counter_bin()).args(["state", "--db"]).arg(&missing).output().unwrap();
    assert!(!output.status.success());
    assert!(!missing.exists());
}

#[test]
fn sigterm_and_sigint_stop_the_server_with_exit_0() {
    for signal in ["TERM", "INT"] {
        let (_dir, db) = temp_db();
        let counter = Counter::start(&db);
        counter.deliver(&event("evt-a", 3));
        assert!(counter.stop_with(signal).success(), "SIG{signal}");
    }
}

#[test]
fn a_request_in_flight_at_sigterm_is_finished_before_exit() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    let delivery = Delivery::signed(event("evt-slow", 4).as_bytes());
    let mut head = format!(
        "POST /webhook HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n",
        delivery.body.len()
    );
    for (name, value) in delivery.headers() {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = TcpStream::connect(counter.addr).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&delivery.body[..10]).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    counter.signal("TERM");
    std::thread::sleep(Duration::from_millis(200));
    assert!(TcpStream::connect(counter.addr).is_err(), "still accepting after SIGTERM");
    stream.write_all(&delivery.body[10..]).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
    assert!(answer.ends_with(r#"{"status":"applied","result":4}"#), "{answer:?}");
    let db = counter.db.clone();
    assert!(counter.wait().success());
    assert_eq!(crate::harness::state(&db).receipts.get("evt-slow"), Some(&4));
}

/// `idemgate bench counter` against `counter` with `args` and `--json`; asserts it succeeded
/// and returns its report.
fn bench_report(counter: &Counter, args: &[&str]) -> serde_json::Value {
    let output = Command::new(crate::gateway_harness::idemgate_bin())
        .args(["bench", "counter"])
        .args(args)
        .args(["--json", "--target"])
        .arg(format!("http://{}/webhook", counter.addr))
        .env("COUNTER_SECRET", crate::harness::SECRET_HEX)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_benchmark_smoke_run_applies_every_event_exactly_once() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    let pid = counter.pid().to_string();
    let report =
        bench_report(&counter, &["--events", "300", "--redeliver", "0.5", "--concurrency", "8", "--server-pid", &pid]);
    assert_eq!(report["exactly_once"], true);
    assert_eq!(report["outcomes"], serde_json::json!({"applied": 300, "duplicate": 150}));
    assert!(report["server_cpu_us_per_request"].as_f64().is_some_and(|us| us >= 0.0), "{report}");
    let threads = report["server_cpu_us_per_request_by_thread"].as_object().unwrap();
    assert!(threads.contains_key("idemgate-sqlite"), "the SQLite writer's share is named: {report}");
    assert!(threads.values().all(|us| us.as_f64().is_some_and(|us| us >= 0.0)), "{report}");
    assert_eq!(crate::harness::state(&db).receipts.len(), 300);
}

#[test]
fn the_open_loop_smoke_run_sends_every_request_once_at_its_rate() {
    let (_dir, db) = temp_db();
    let counter = Counter::start(&db);
    let report =
        bench_report(&counter, &["--events", "200", "--redeliver", "0.5", "--concurrency", "4", "--rate", "2000"]);
    assert_eq!(report["exactly_once"], true);
    assert_eq!(report["outcomes"], serde_json::json!({"applied": 200, "duplicate": 100}));
    assert!(report["late_p99_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "the pacer's lateness is reported: {report}");
    assert_eq!(crate::harness::state(&db).receipts.len(), 200);
}
