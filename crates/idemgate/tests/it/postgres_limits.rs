//! A destination's rate limit and in-flight cap held over three `idemgate serve` processes
//! on one PostgreSQL schema: the destination never sees more than its cap at once, nor more
//! than its rate and burst in any second, and each event once.
//!
//! Each instance alone would allow the whole limit, so three instances that kept their
//! limits per process would send it up to three times as much (the check that breaks with
//! it). The windows are counted on the destination's arrival times; nothing here bounds
//! how fast the gateway is.

use std::{collections::BTreeMap, time::Duration};

use idemgate_testkit::Destination;

use crate::{
    gateway_harness::{Gateway, Signer},
    harness::unix_now,
    postgres_instances::{fresh_schema, query},
};

const KEY: [u8; 32] = [41; 32];
const EVENTS: usize = 24;
/// The destination's limits: attempts per second, burst, attempts in flight.
const RATE: usize = 3;
const BURST: usize = 2;
const IN_FLIGHT: usize = 2;

fn config(url: &str, app: &Destination) -> String {
    format!(
        r#"
[server]
listen = "127.0.0.1:0"
[store]
url = "{url}"
pool_size = 4
[worker]
lease = "10s"
poll_interval = "20ms"
[sources.hooks]
scheme = "standard-webhooks"
secrets = [{secret:?}]
destinations = ["app"]
[destinations.app]
url = "{app}"
timeout = "5s"
rate_limit = {RATE}
burst = {BURST}
max_in_flight = {IN_FLIGHT}
"#,
        secret = Signer::Standard(KEY.to_vec()).config_secret(),
        app = app.url(),
    )
}

#[test]
fn three_instances_on_one_postgres_store_hold_a_destination_to_one_rate_and_one_cap() {
    let url = fresh_schema("limits");
    let app = Destination::start(&[]);
    // Long enough that attempts overlap, short enough that the rate, not the cap, paces them.
    app.delay(Duration::from_millis(200));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idemgate.toml");
    std::fs::write(&path, config(&url, &app)).unwrap();
    let instances: Vec<Gateway> = (0..3).map(|_| Gateway::start(&path, &[])).collect();

    let signer = Signer::Standard(KEY.to_vec());
    for n in 0..EVENTS {
        let identity = format!("evt_{n:03}");
        let body = format!(r#"{{"type":"order.paid","n":{n}}}"#);
        let headers = signer.headers(&identity, body.as_bytes(), unix_now());
        let reply = instances[n % 3].post("hooks", &headers, body.as_bytes());
        assert_eq!(reply.status(), 202, "{identity}: {reply:?}");
    }
    app.wait_until("every event", |received| received.len() >= EVENTS);
    // Any late duplicate would have arrived by the time every job is recorded.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while query(&url, "SELECT count(*) FROM jobs WHERE state <> 'succeeded'")[0][0] != "0" {
        assert!(std::time::Instant::now() < deadline, "jobs still open");
        std::thread::sleep(Duration::from_millis(50));
    }

    let received = app.received();
    let mut counts = BTreeMap::new();
    for request in &received {
        *counts.entry(request.header("webhook-id").to_owned()).or_insert(0_usize) += 1;
    }
    assert_eq!(counts.len(), EVENTS, "every event arrived");
    assert!(counts.values().all(|n| *n == 1), "each exactly once: {counts:?}");

    assert!(app.most_in_flight() <= IN_FLIGHT, "{} attempts at once, the cap is {IN_FLIGHT}", app.most_in_flight());
    let mut arrivals: Vec<_> = received.iter().map(|r| r.at).collect();
    arrivals.sort_unstable();
    for (i, from) in arrivals.iter().enumerate() {
        let within = arrivals[i..].iter().take_while(|at| at.duration_since(*from) < Duration::from_secs(1)).count();
        assert!(within <= RATE + BURST, "{within} arrivals within a second, the limit allows {}", RATE + BURST);
    }
    let rows = query(&url, "SELECT bucket_level IS NOT NULL FROM destinations WHERE name = 'app'");
    assert_eq!(rows, [["t"]], "the bucket is the store's");
}
