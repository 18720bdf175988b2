//! The gateway started in-process with `idemgate::run::run` on `127.0.0.1:0`: the same
//! routes and worker as `idemgate serve`, stopped by its shutdown future instead of a signal.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use idemgate::{
    clock::{ManualClock, UnixTime},
    config,
    run::{RunOptions, run},
};
use idemgate_testkit::Destination;

use crate::{
    gateway_harness::{Setup, Signer, forwarding, inbox},
    harness::{post, unix_now},
};

const KEY: [u8; 32] = [5; 32];

#[test]
fn run_forwards_a_signed_event_and_stops_when_its_shutdown_future_completes() {
    let recorder = Destination::start(&[]);
    let signer = Signer::Standard(KEY.to_vec());
    let setup = Setup::new(&forwarding(&signer, &recorder, "", &format!("secret = {:?}", signer.config_secret())));
    let (config, _) = config::load(&setup.config(), std::env::vars()).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let options = RunOptions { public: Some(listener), ..RunOptions::default() };
    let gateway = runtime.spawn(run(config, options, async move {
        let _ = stopped.await;
    }));

    let body = br#"{"type":"t","n":1}"#;
    let headers = signer.headers("msg_in_process", body, unix_now());
    assert_eq!(post(addr, "/in/hooks", &headers, body).status(), 202);
    recorder.wait_until("the event forwarded", |r| !r.is_empty());
    let received = recorder.received();
    assert_eq!(received[0].header("webhook-id"), "msg_in_process");
    assert_eq!(received[0].body, body);

    stop.send(()).unwrap();
    runtime.block_on(gateway).unwrap().unwrap();
    assert!(std::net::TcpStream::connect(addr).is_err(), "the listener is closed after shutdown");
}

/// Polls `done` until it holds, for at most 30 s.
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn every_part_of_run_reads_the_time_from_the_clock_it_was_given() {
    // Years away from the wall clock: a gateway reading that would refuse the signature,
    // stamp another webhook-timestamp and keep the receipt.
    const AT: i64 = 2_000_000_000;
    let recorder = Destination::start(&[]);
    let signer = Signer::Standard(KEY.to_vec());
    let setup = Setup::new(&forwarding(
        &signer,
        &recorder,
        "retention = \"1d\"",
        &format!("secret = {:?}", signer.config_secret()),
    ));
    let overrides = [
        ("IDEMGATE_STORE__PURGE_INTERVAL".to_owned(), "50ms".to_owned()),
        ("IDEMGATE_RETENTION__AUDIT".to_owned(), "1d".to_owned()),
    ];
    let (config, _) = config::load(&setup.config(), overrides).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    let clock = Arc::new(ManualClock::at(UnixTime(AT)));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let options = RunOptions { public: Some(listener), clock: clock.clone(), ..RunOptions::default() };
    let gateway = runtime.spawn(run(config, options, async move {
        let _ = stopped.await;
    }));

    let body = br#"{"type":"t","n":1}"#;
    let headers = Signer::Standard(KEY.to_vec()).headers("msg_on_the_clock", body, AT);
    assert_eq!(post(addr, "/in/hooks", &headers, body).status(), 202, "the signature is judged at the clock's time");
    recorder.wait_until("the event forwarded", |r| !r.is_empty());
    assert_eq!(recorder.received()[0].headers["webhook-timestamp"], AT.to_string(), "the worker signs at it");
    let delivered = |state: &str| inbox(&setup.db()).jobs.iter().any(|(_, _, s)| s == state);
    wait_for("the job recorded as succeeded", || delivered("succeeded"));
    assert_eq!(inbox(&setup.db()).receipts, ["msg_on_the_clock"], "within its retention on the clock");
    let audit_targets = || -> Vec<String> {
        let conn = rusqlite::Connection::open(setup.db()).unwrap();
        let mut stmt = conn.prepare("SELECT target FROM audit_log ORDER BY id").unwrap();
        stmt.query_map([], |row| row.get(0)).unwrap().map(Result::unwrap).collect()
    };
    let conn = rusqlite::Connection::open(setup.db()).unwrap();
    for (at, target) in [(AT, "destination old"), (AT + 2 * 86_400 - 3600, "destination recent")] {
        conn.execute(
            "INSERT INTO audit_log (at, token, action, target, affected) VALUES (?1, 'ops', 'enable', ?2, 1)",
            rusqlite::params![at, target],
        )
        .unwrap();
    }
    drop(conn);

    clock.advance(2 * 86_400);
    wait_for("the retention purge on the clock's time", || inbox(&setup.db()).receipts.is_empty());
    wait_for("the audit log's purge on the clock's time", || audit_targets().len() == 1);
    assert_eq!(audit_targets(), ["destination recent"], "[retention] audit = 1d on the clock");

    stop.send(()).unwrap();
    runtime.block_on(gateway).unwrap().unwrap();
}
