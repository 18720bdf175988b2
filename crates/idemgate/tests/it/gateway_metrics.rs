//! `/metrics` on the real binary: the counters say exactly what a known sequence of
//! deliveries did; the text parses as Prometheus text with `# HELP` and `# TYPE` for every
//! family and buckets (never quantiles) for every histogram; it is served where
//! `[metrics] listen` says, by `idemgate worker` too; and a scrape reads nothing from the
//! store (the queue's gauges are refreshed on an interval).

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader},
    net::SocketAddr,
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use idemgate_testkit::Destination;

use crate::{
    gateway_harness::{Gateway, Setup, Signer, body, idemgate_bin},
    harness::{try_send, unix_now},
    postgres_instances::{fresh_schema, query},
};

/// The value of the sample of `name` carrying every one of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|line| line.starts_with(name) && !line.starts_with('#'))
        .filter(|line| line[name.len()..].starts_with(['{', ' ']))
        .find(|line| labels.iter().all(|label| line.contains(label)))
        .and_then(|line| line.rsplit(' ').next()?.parse().ok())
}

/// Polls `what` until it holds, for at most 60 s.
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        thread::sleep(Duration::from_millis(50));
    }
}

/// `GET path` at `addr`: the status and the body.
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let answer = try_send(addr, "GET", path, &[], b"").unwrap();
    (answer.status, String::from_utf8(answer.body).unwrap())
}

/// Asserts that `text` is well-formed Prometheus text as idemgate promises it, and returns
/// each family's type: it parses; every sample belongs to a family with `# HELP` and
/// `# TYPE`; every histogram has buckets up to `+Inf`, a sum and a count; no summary, no
/// quantile.
fn well_formed(text: &str) -> BTreeMap<String, String> {
    let parsed = prometheus_parse::Scrape::parse(text.lines().map(|line| Ok(line.to_owned())))
        .unwrap_or_else(|err| panic!("not Prometheus text: {err}\n{text}"));
    assert!(!parsed.samples.is_empty(), "{text}");
    let mut types = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            types.insert(name.to_owned(), kind.to_owned());
        }
    }
    for line in text.lines().filter(|line| !line.starts_with('#') && !line.is_empty()) {
        let name = line.split(['{', ' ']).next().unwrap();
        let family = types.keys().find(|family| {
            name == family.as_str()
                || (types[*family] == "histogram"
                    && ["_bucket", "_sum", "_count"].iter().any(|end| name == format!("{family}{end}")))
        });
        let family = family.unwrap_or_else(|| panic!("{name} has no # TYPE\n{text}"));
        assert!(parsed.docs.contains_key(family.as_str()), "{family} has no # HELP\n{text}");
    }
    for (family, kind) in &types {
        assert!(["counter", "gauge", "histogram"].contains(&kind.as_str()), "{family} is a {kind}\n{text}");
        if family.ends_with("_total") {
            assert_eq!(kind, "counter", "{family}");
        }
        if kind == "histogram" {
            assert!(text.contains(&format!("{family}_bucket{{")), "{family} has no buckets\n{text}");
            assert!(sample(text, &format!("{family}_bucket"), &["le=\"+Inf\""]).is_some(), "{family}: no +Inf\n{text}");
            assert!(sample(text, &format!("{family}_sum"), &[]).is_some(), "{family} has no _sum\n{text}");
            assert!(sample(text, &format!("{family}_count"), &[]).is_some(), "{family} has no _count\n{text}");
        }
    }
    assert!(!text.contains("quantile"), "a summary's quantiles cannot be aggregated\n{text}");
    types
}

const SECRET_CONFIG: &str = "[worker]\nenabled = false\n[sources.hooks]\nscheme = \"standard-webhooks\"\n\
     destinations = [\"app\"]\n";

fn receive_only(key: &Signer, app: &str, metrics: &str) -> String {
    format!(
        "{SECRET_CONFIG}secrets = [{:?}]\n[destinations.app]\nurl = \"{app}\"\n[metrics]\n{metrics}",
        key.config_secret()
    )
}

fn send(gateway: &Gateway, signer: &Signer, id: &str, kind: &str) -> u16 {
    let event = body(id, kind);
    gateway.post("hooks", &signer.headers(id, &event, unix_now()), &event).status()
}

#[test]
fn the_counters_match_a_known_sequence_of_deliveries_in_well_formed_text() {
    let key = Signer::Standard(vec![1; 32]);
    let setup = Setup::new(&receive_only(&key, "http://127.0.0.1:9/app", "refresh_interval = \"50ms\"\n"));
    let gateway = setup.start();
    assert_eq!(send(&gateway, &key, "m1", "a"), 202);
    assert_eq!(send(&gateway, &key, "m2", "a"), 202);
    assert_eq!(send(&gateway, &key, "m1", "a"), 200);
    assert_eq!(send(&gateway, &key, "m1", "b"), 409);
    let forger = Signer::Standard(vec![2; 32]);
    assert_eq!(send(&gateway, &forger, "m3", "a"), 401);
    assert_eq!(send(&gateway, &forger, "m4", "a"), 401);

    wait_for("the queue's gauges refreshed", || {
        sample(&gateway.get_text("/metrics"), "idemgate_jobs", &["state=\"pending\""]) == Some(2.0)
    });
    let scrape = gateway.get_text("/metrics");
    let deliveries = |outcome: &str| {
        sample(&scrape, "idemgate_deliveries_total", &["source=\"hooks\"", &format!("outcome=\"{outcome}\"")])
    };
    assert_eq!(deliveries("applied"), Some(2.0), "{scrape}");
    assert_eq!(deliveries("duplicate"), Some(1.0));
    assert_eq!(deliveries("conflict"), Some(1.0));
    assert_eq!(deliveries("rejected"), Some(2.0));
    assert_eq!(sample(&scrape, "idemgate_rejections_total", &["reason=\"signature_mismatch\""]), Some(2.0));
    assert!(sample(&scrape, "idemgate_jobs", &["state=\"pending\""]).is_some(), "{scrape}");
    assert_eq!(sample(&scrape, "idemgate_jobs", &["state=\"succeeded\""]), None, "the history is not counted");
    assert!(sample(&scrape, "idemgate_commit_batch_writes_count", &[]).is_some_and(|n| n >= 3.0), "{scrape}");
    assert!(sample(&scrape, "idemgate_oldest_waiting_job_seconds", &[]).is_some());
    assert!(!scrape.contains("whsec_"), "no secret in the metrics");
    let types = well_formed(&scrape);
    for (family, kind) in [
        ("idemgate_commit_seconds", "histogram"),
        ("idemgate_commit_batch_writes", "histogram"),
        ("idemgate_deliveries_total", "counter"),
        ("idemgate_jobs", "gauge"),
    ] {
        assert_eq!(types.get(family).map(String::as_str), Some(kind), "{family}\n{scrape}");
    }
}

#[test]
fn metrics_move_to_the_admin_listener_when_configured_so() {
    let key = Signer::Standard(vec![1; 32]);
    let config = receive_only(&key, "http://127.0.0.1:9/app", "listen = \"admin\"\n");
    let setup = Setup::new(&format!("[admin]\ntoken = \"an-admin-token-of-some-length\"\n{config}"));
    let mut gateway = setup.start();
    let admin = gateway.admin_addr();
    assert_eq!(send(&gateway, &key, "m1", "a"), 202);
    assert_eq!(get(gateway.addr, "/metrics").0, 404, "not on the public port");
    let (status, text) = get(admin, "/metrics");
    assert_eq!(status, 200, "{text}");
    assert_eq!(sample(&text, "idemgate_deliveries_total", &["outcome=\"applied\""]), Some(1.0), "{text}");
    well_formed(&text);
    assert_eq!(get(admin, "/admin/v1/events").0, 401, "the admin API still wants its token");
}

#[test]
fn metrics_listen_admin_without_an_admin_api_is_a_config_error() {
    let key = Signer::Standard(vec![1; 32]);
    let setup = Setup::new(&receive_only(&key, "http://127.0.0.1:9/app", "listen = \"admin\"\n"));
    let out = setup.run(&["config", "check"], &[]);
    assert!(!out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("metrics.listen"), "{out:?}");
}

/// Reads the child's stdout until the line starting with `prefix`, and parses the rest.
fn announced(child: &mut Child, prefix: &str) -> SocketAddr {
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    loop {
        let mut line = String::new();
        assert_ne!(stdout.read_line(&mut line).unwrap(), 0, "no line {prefix:?}");
        if let Some(addr) = line.trim().strip_prefix(prefix) {
            return addr.parse().unwrap();
        }
    }
}

#[test]
fn a_worker_alone_serves_its_metrics_on_the_metrics_address() {
    let app = Destination::start(&[]);
    let key = Signer::Standard(vec![1; 32]);
    let setup = Setup::new(&receive_only(&key, &app.url(), "refresh_interval = \"50ms\"\n"));
    let gateway = setup.start();
    assert_eq!(send(&gateway, &key, "w1", "a"), 202);
    let worker_config = setup.dir.path().join("worker.toml");
    let config = std::fs::read_to_string(setup.config()).unwrap();
    std::fs::write(&worker_config, format!("{config}listen = \"127.0.0.1:0\"\n")).unwrap();
    let mut worker = Command::new(idemgate_bin())
        .args(["worker", "--config"])
        .arg(&worker_config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = announced(&mut worker, "metrics listening on ");
    wait_for("the worker's delivery in its metrics", || {
        let text = get(addr, "/metrics").1;
        sample(&text, "idemgate_delivery_seconds_count", &["destination=\"app\""]) == Some(1.0)
            && sample(&text, "idemgate_jobs", &["state=\"pending\""]) == Some(0.0)
            && sample(&text, "idemgate_jobs", &["state=\"running\""]) == Some(0.0)
    });
    assert_eq!(app.received().len(), 1);
    let text = get(addr, "/metrics").1;
    let types = well_formed(&text);
    assert_eq!(types.get("idemgate_delivery_seconds").map(String::as_str), Some("histogram"), "{text}");
    assert_eq!(sample(&text, "idemgate_attempts_total", &["destination=\"app\""]), Some(1.0), "{text}");
    worker.kill().unwrap();
    worker.wait().unwrap();
}

#[test]
fn a_scrape_reads_nothing_from_the_store() {
    let key = Signer::Standard(vec![1; 32]);
    let setup = Setup::new(&receive_only(&key, "http://127.0.0.1:9/app", "refresh_interval = \"1h\"\n"));
    let gateway = setup.start();
    wait_for("the gauges read at start", || {
        sample(&gateway.get_text("/metrics"), "idemgate_store_available", &[]) == Some(1.0)
    });
    assert_eq!(send(&gateway, &key, "s1", "a"), 202);
    for _ in 0..20 {
        let text = gateway.get_text("/metrics");
        assert_eq!(sample(&text, "idemgate_deliveries_total", &["outcome=\"applied\""]), Some(1.0), "{text}");
        assert_eq!(sample(&text, "idemgate_jobs", &["state=\"pending\""]), Some(0.0), "a scrape read the store");
    }
}

/// Connections of the instances at `url`'s `application_name`.
fn connections(url: &str, name: &str) -> usize {
    let sql = format!("SELECT count(*) FROM pg_stat_activity WHERE application_name = '{name}'");
    query(url, &sql)[0][0].parse().unwrap()
}

#[test]
fn scrapes_open_no_postgres_connection() {
    let name = format!("scrape_{}", std::process::id());
    let url = format!("{}&application_name={name}", fresh_schema("scrape"));
    let key = Signer::Standard(vec![1; 32]);
    let setup = Setup::new("");
    let config = receive_only(&key, "http://127.0.0.1:9/app", "refresh_interval = \"20ms\"\n");
    let config = format!("[server]\nlisten = \"127.0.0.1:0\"\n[store]\nurl = {url:?}\npool_size = 4\n{config}");
    std::fs::write(setup.config(), config).unwrap();
    let gateway = setup.start();
    assert_eq!(send(&gateway, &key, "p1", "a"), 202);
    wait_for("the gauges from PostgreSQL", || {
        sample(&gateway.get_text("/metrics"), "idemgate_jobs", &["state=\"pending\""]) == Some(1.0)
    });
    let before = connections(&url, &name);
    assert!((1..=4).contains(&before), "{before} connections");
    for _ in 0..20 {
        well_formed(&gateway.get_text("/metrics"));
    }
    assert_eq!(connections(&url, &name), before, "the pool's connections serve the refresh");
}
