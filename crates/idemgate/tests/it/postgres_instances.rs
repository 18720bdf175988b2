//! Several `idemgate serve` processes on one PostgreSQL: deliveries spread over all of
//! them, identical repeats racing on different instances, one instance SIGKILLed mid-run,
//! and one `Idempotency-Key` sent to two instances at once.
//!
//! PostgreSQL is found at `IDEMGATE_TEST_POSTGRES` (see the store's backend suite); each
//! test works in a fresh schema. These tests fail when PostgreSQL cannot be reached.

use std::{
    collections::{BTreeMap, BTreeSet},
    net::SocketAddr,
    process::{Child, Command, Stdio},
    sync::{
        Arc, Barrier, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use idemgate_testkit::Destination;

use crate::{
    gateway_harness::{Gateway, Signer},
    harness::{try_send, unix_now},
};

const KEY: [u8; 32] = [9; 32];
const EVENTS: usize = 480;
const SENDERS: usize = 16;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// A fresh schema on the test database, as a URL whose connections use it.
pub(crate) fn fresh_schema(prefix: &str) -> String {
    let base = std::env::var("IDEMGATE_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/idemgate_test".to_owned());
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let name = format!("{prefix}_{}_{nanos}", std::process::id());
    runtime()
        .block_on(idemgate::store::create_schema(&base, &name))
        .unwrap_or_else(|err| panic!("PostgreSQL is needed at {base} (set IDEMGATE_TEST_POSTGRES): {err}"))
}

/// Rows of `sql` on the schema at `url`, every column as text.
pub(crate) fn query(url: &str, sql: &str) -> Vec<Vec<String>> {
    runtime().block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        let rows = client.simple_query(sql).await.unwrap();
        rows.into_iter()
            .filter_map(|message| match message {
                tokio_postgres::SimpleQueryMessage::Row(row) => {
                    Some((0..row.len()).map(|i| row.get(i).unwrap_or("").to_owned()).collect())
                }
                _ => None,
            })
            .collect()
    })
}

/// One POST's status; `None` when the instance cannot be reached or gives no answer (killed).
fn try_post(addr: SocketAddr, path: &str, headers: &[(String, String)], body: &[u8]) -> Option<u16> {
    try_send(addr, "POST", path, headers, body).map(|answer| answer.status)
}

fn config(url: &str, app: &Destination, audit: &Destination) -> String {
    format!(
        r#"
[server]
listen = "127.0.0.1:0"
[store]
url = "{url}"
pool_size = 8
[worker]
lease = "3s"
batch = 16
poll_interval = "20ms"
[sources.hooks]
scheme = "standard-webhooks"
secrets = [{secret:?}]
destinations = ["app", "audit"]
[destinations.app]
url = "{app}"
timeout = "2s"
retry_schedule = ["1s", "1s", "1s", "1s", "1s"]
jitter = 0.0
[destinations.audit]
url = "{audit}"
timeout = "2s"
retry_schedule = ["1s", "1s", "1s", "1s", "1s"]
jitter = 0.0
"#,
        secret = Signer::Standard(KEY.to_vec()).config_secret(),
        app = app.url(),
        audit = audit.url(),
    )
}

/// Delivery counts by webhook-id.
fn counts(recorder: &Destination) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for request in recorder.received() {
        *counts.entry(request.header("webhook-id").to_owned()).or_insert(0) += 1;
    }
    counts
}

/// Sends `EVENTS` distinct events from `SENDERS` threads over every live instance; a
/// third of them are also sent again, at once, to another instance. A sender whose
/// instance is gone tries the next one, as a webhook provider would retry. Returns the
/// acknowledged identities. `kill` SIGKILLs the last instance a third of the way in.
fn drive(instances: &mut [Gateway], kill: bool) -> BTreeSet<String> {
    let addrs: Vec<SocketAddr> = instances.iter().map(|g| g.addr).collect();
    let signer = Signer::Standard(KEY.to_vec());
    let acknowledged = Mutex::new(BTreeSet::new());
    let sent = AtomicUsize::new(0);
    let killed = Mutex::new(false);
    thread::scope(|scope| {
        for sender in 0..SENDERS {
            let (addrs, signer, acknowledged, sent) = (&addrs, &signer, &acknowledged, &sent);
            scope.spawn(move || {
                for n in (sender..EVENTS).step_by(SENDERS) {
                    let identity = format!("evt_{n:05}");
                    let body = format!(r#"{{"type":"order.paid","n":{n}}}"#);
                    let headers = signer.headers(&identity, body.as_bytes(), unix_now());
                    let send = |first: usize| {
                        (0..addrs.len() * 4).find_map(|attempt| {
                            let addr = addrs[(first + attempt) % addrs.len()];
                            try_post(addr, "/in/hooks", &headers, body.as_bytes())
                                .filter(|status| matches!(status, 200 | 202))
                        })
                    };
                    let ok = if n % 3 == 0 {
                        thread::scope(|race| {
                            let again = race.spawn(|| send(n + 1));
                            let first = send(n);
                            first.or(again.join().unwrap())
                        })
                    } else {
                        send(n)
                    };
                    assert!(ok.is_some(), "{identity} was not acknowledged by any instance");
                    acknowledged.lock().unwrap().insert(identity);
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        if kill {
            while sent.load(Ordering::Relaxed) < EVENTS / 3 {
                thread::sleep(Duration::from_millis(5));
            }
            *killed.lock().unwrap() = true;
            instances.last_mut().unwrap().kill();
        }
    });
    assert_eq!(*killed.lock().unwrap(), kill);
    acknowledged.into_inner().unwrap()
}

fn every_event_delivered(recorders: &[&Destination], acknowledged: &BTreeSet<String>) {
    for recorder in recorders {
        recorder.wait_until("every acknowledged event", |received| {
            let ids: BTreeSet<&str> = received.iter().map(|r| r.header("webhook-id")).collect();
            acknowledged.iter().all(|id| ids.contains(id.as_str()))
        });
    }
}

/// Waits (bounded) until no job is left to do, and returns (identity, destination) → attempts.
fn settled_jobs(url: &str) -> BTreeMap<(String, String), usize> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let open = query(url, "SELECT count(*) FROM jobs WHERE state <> 'succeeded'");
        if open[0][0] == "0" {
            break;
        }
        assert!(Instant::now() < deadline, "jobs still open: {open:?}");
        thread::sleep(Duration::from_millis(50));
    }
    query(url, "SELECT e.identity, j.destination, j.attempts FROM jobs j JOIN events e ON e.id = j.event_id")
        .into_iter()
        .map(|row| ((row[0].clone(), row[1].clone()), row[2].parse().unwrap()))
        .collect()
}

fn start(url: &str, count: usize) -> (tempfile::TempDir, Destination, Destination, Vec<Gateway>) {
    let (app, audit) = (Destination::start(&[]), Destination::start(&[]));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idemgate.toml");
    std::fs::write(&path, config(url, &app, &audit)).unwrap();
    let instances = (0..count).map(|_| Gateway::start(&path, &[])).collect();
    (dir, app, audit, instances)
}

/// The receipts, events and jobs of `acknowledged`, one each (two jobs per event).
fn one_receipt_one_event_two_jobs(url: &str, acknowledged: &BTreeSet<String>) {
    let receipts: BTreeSet<String> =
        query(url, "SELECT identity FROM receipts").into_iter().map(|r| r[0].clone()).collect();
    assert!(acknowledged.is_subset(&receipts), "an acknowledged event has no receipt");
    let duplicated = query(url, "SELECT identity FROM events GROUP BY identity HAVING count(*) > 1");
    assert!(duplicated.is_empty(), "{duplicated:?}");
    let events = query(url, "SELECT count(*) FROM events")[0][0].parse::<usize>().unwrap();
    assert_eq!(events, receipts.len(), "one event per receipt");
    let jobs = query(url, "SELECT count(*) FROM jobs")[0][0].parse::<usize>().unwrap();
    assert_eq!(jobs, 2 * events, "one job per destination");
}

#[test]
fn three_instances_on_one_postgres_store_each_event_once_and_deliver_it_once() {
    let url = fresh_schema("three");
    let (_dir, app, audit, mut instances) = start(&url, 3);
    let acknowledged = drive(&mut instances, false);
    assert_eq!(acknowledged.len(), EVENTS);
    one_receipt_one_event_two_jobs(&url, &acknowledged);
    every_event_delivered(&[&app, &audit], &acknowledged);
    let attempts = settled_jobs(&url);
    for recorder in [&app, &audit] {
        let counts = counts(recorder);
        assert_eq!(counts.len(), EVENTS);
        let twice: Vec<_> = counts.iter().filter(|(_, n)| **n != 1).collect();
        assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    }
    assert!(attempts.values().all(|a| *a == 1), "no job needed a second claim");
}

#[test]
fn an_instance_sigkilled_mid_run_loses_nothing_it_acknowledged() {
    let url = fresh_schema("kill");
    let (_dir, app, audit, mut instances) = start(&url, 3);
    let acknowledged = drive(&mut instances, true);
    assert_eq!(acknowledged.len(), EVENTS, "the other instances took every event");
    one_receipt_one_event_two_jobs(&url, &acknowledged);
    every_event_delivered(&[&app, &audit], &acknowledged);
    let attempts = settled_jobs(&url);
    for (recorder, destination) in [(&app, "app"), (&audit, "audit")] {
        for (identity, delivered) in counts(recorder) {
            let claims = attempts[&(identity.clone(), destination.to_owned())];
            // A job in flight on the killed instance is delivered again once its lease
            // expires; every delivery is a claim, none comes from two live claims at once.
            assert!(delivered <= claims, "{identity} to {destination}: {delivered} deliveries for {claims} claim(s)");
        }
    }
}

/// The orders example as a plain upstream, behind two gateway instances' `[[proxy]]`.
#[test]
fn one_idempotency_key_sent_to_two_instances_at_once_calls_the_upstream_once() {
    let url = fresh_schema("idem");
    let orders = crate::harness::counter_bin().with_file_name("orders");
    let mut upstream = Command::new(orders)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let upstream_addr = first_line_addr(&mut upstream);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idemgate.toml");
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[store]\nurl = \"{url}\"\n\
         [[proxy]]\nprefix = \"/api\"\nupstream = \"http://{upstream_addr}\"\nlock = \"5s\"\n"
    );
    std::fs::write(&path, config).unwrap();
    let instances = [Gateway::start(&path, &[]), Gateway::start(&path, &[])];
    let barrier = Arc::new(Barrier::new(16));
    let statuses: Vec<u16> = thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let (barrier, addr) = (Arc::clone(&barrier), instances[i % 2].addr);
                scope.spawn(move || {
                    let headers = [
                        ("Content-Type".to_owned(), "application/json".to_owned()),
                        ("Idempotency-Key".to_owned(), "order-77".to_owned()),
                    ];
                    barrier.wait();
                    try_post(addr, "/api/slow?ms=300", &headers, b"{}").unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(statuses.iter().all(|s| matches!(s, 201 | 409)), "{statuses:?}");
    assert!(statuses.contains(&201));
    let calls = crate::harness::exchange(upstream_addr, b"GET /calls HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(calls.body()["slow"], 1, "the upstream ran once for the key, whichever instance took it");
    let _ = upstream.kill();
    let _ = upstream.wait();
}

fn first_line_addr(child: &mut Child) -> SocketAddr {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    line.trim().strip_prefix("listening on ").unwrap().parse().unwrap()
}

/// PostgreSQL drops every connection of an instance (a restart, a failover, an operator's
/// `pg_terminate_backend`): the pool notices closed connections and opens new ones; a
/// delivery caught in the cut is answered 503 (the sender retries), nothing acknowledged
/// is lost, and readiness comes back.
#[test]
fn connections_cut_by_the_database_are_replaced_and_nothing_acknowledged_is_lost() {
    let url = fresh_schema("cut");
    let name = format!("cut_{}", std::process::id());
    let url = format!("{url}&application_name={name}");
    let (_dir, app, audit, mut instances) = start(&url, 1);
    let gateway = instances.remove(0);
    let signer = Signer::Standard(KEY.to_vec());
    let send = |n: usize| {
        let identity = format!("evt_{n:05}");
        let body = format!(r#"{{"type":"order.paid","n":{n}}}"#);
        let headers = signer.headers(&identity, body.as_bytes(), unix_now());
        (identity, try_post(gateway.addr, "/in/hooks", &headers, body.as_bytes()))
    };
    let mut acknowledged = BTreeSet::new();
    for n in 0..20 {
        let (identity, status) = send(n);
        assert_eq!(status, Some(202));
        acknowledged.insert(identity);
    }
    let cut = query(
        &url,
        &format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '{name}' AND pid <> pg_backend_pid()"
        ),
    );
    assert_ne!(cut[0][0], "0", "the instance had connections to cut");
    let mut refused = 0;
    for n in 20..60 {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match send(n) {
                (identity, Some(202)) => {
                    acknowledged.insert(identity);
                    break;
                }
                (_, Some(503)) => refused += 1,
                (identity, other) => panic!("{identity}: unexpected answer {other:?}"),
            }
            assert!(Instant::now() < deadline, "the instance did not recover");
            thread::sleep(Duration::from_millis(20));
        }
    }
    one_receipt_one_event_two_jobs(&url, &acknowledged);
    every_event_delivered(&[&app, &audit], &acknowledged);
    let ready = crate::harness::exchange(gateway.addr, b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(ready.status(), 200);
    eprintln!("{refused} deliveries were refused with 503 while the pool reconnected");
}

/// A stopped-or-killed child process, whatever the test's outcome.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Receivers and workers scale apart: two `serve` instances with their worker off, two
/// `idemgate worker` processes alone, one PostgreSQL. Every event is delivered exactly
/// once to each destination, whichever worker took it.
#[test]
fn receivers_and_separate_workers_share_one_postgres_and_deliver_each_event_once() {
    let url = fresh_schema("split");
    let (app, audit) = (Destination::start(&[]), Destination::start(&[]));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idemgate.toml");
    let config = config(&url, &app, &audit).replace("[worker]\n", "[worker]\nenabled = false\n");
    std::fs::write(&path, config).unwrap();
    let receivers = [Gateway::start(&path, &[]), Gateway::start(&path, &[])];
    let _workers: Vec<Process> = (0..2)
        .map(|_| {
            let mut child = Command::new(crate::gateway_harness::idemgate_bin())
                .args(["worker", "--config"])
                .arg(&path)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut line = String::new();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
            assert_eq!(line.trim(), "worker running");
            Process(child)
        })
        .collect();
    let signer = Signer::Standard(KEY.to_vec());
    let mut acknowledged = BTreeSet::new();
    for n in 0..200 {
        let identity = format!("evt_{n:05}");
        let body = format!(r#"{{"type":"order.paid","n":{n}}}"#);
        let headers = signer.headers(&identity, body.as_bytes(), unix_now());
        assert_eq!(try_post(receivers[n % 2].addr, "/in/hooks", &headers, body.as_bytes()), Some(202));
        acknowledged.insert(identity);
    }
    one_receipt_one_event_two_jobs(&url, &acknowledged);
    every_event_delivered(&[&app, &audit], &acknowledged);
    let attempts = settled_jobs(&url);
    assert!(attempts.values().all(|a| *a == 1), "no job needed a second claim");
    for recorder in [&app, &audit] {
        let twice: Vec<_> = counts(recorder).into_iter().filter(|(_, n)| *n != 1).collect();
        assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    }
}
