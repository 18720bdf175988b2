//! `idemgate serve` at start-up: secrets that never show in its output whatever their
//! shape, proxy prefixes and forwarded headers that would collide with the gateway's own,
//! and a store that is unavailable when the gateway starts (a blocked SQLite folder, a
//! PostgreSQL server down, then up, down and up again mid-run), which the gateway rides
//! out without a restart and without losing an acknowledged event.

use std::{
    collections::BTreeSet,
    net::SocketAddr,
    path::Path,
    process::{Command, ExitStatus, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use idemgate_testkit::Destination;

use crate::{
    gateway_harness::{Gateway, Setup, Signer, idemgate_bin},
    harness::{RawAnswer, try_send, unix_now},
    pg_cluster::Cluster,
};

const KEY: [u8; 32] = [5; 32];

fn get(addr: SocketAddr, path: &str) -> u16 {
    try_send(addr, "GET", path, &[], b"").map_or(0, |a| a.status)
}

/// A signed delivery of event `id` to `/in/hooks`.
fn deliver(addr: SocketAddr, id: &str) -> Option<RawAnswer> {
    let body = format!(r#"{{"type":"t","id":"{id}"}}"#);
    let mut headers = Signer::Standard(KEY.to_vec()).headers(id, body.as_bytes(), unix_now());
    headers.push(("content-type".into(), "application/json".into()));
    try_send(addr, "POST", "/in/hooks", &headers, body.as_bytes())
}

/// Polls `what` until it holds, for at most 60 s.
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        thread::sleep(Duration::from_millis(50));
    }
}

/// Starts `idemgate serve` and lets it either fail or come up (then stops it): its exit
/// status if it failed, and everything it wrote to stdout and stderr.
fn start_up(config: &Path, env: &[(&str, &str)]) -> (Option<ExitStatus>, String) {
    let dir = config.parent().unwrap();
    let (out, err) = (dir.join("stdout.txt"), dir.join("stderr.txt"));
    let mut child = Command::new(idemgate_bin())
        .args(["serve", "--config"])
        .arg(config)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let failed = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if std::fs::read_to_string(&out).unwrap().contains("listening on") {
            Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
            child.wait().unwrap();
            break None;
        }
        assert!(Instant::now() < deadline, "serve neither failed nor came up");
        thread::sleep(Duration::from_millis(10));
    };
    let output = std::fs::read_to_string(&out).unwrap() + &std::fs::read_to_string(&err).unwrap();
    (failed, output)
}

/// Values a TOML parser would read as numbers, dates or floats, long enough not to occur
/// in a log line by chance.
const ODD_SECRETS: [&str; 5] = [
    "123456789012345678",
    "12345678901234567890123456789",
    "0x1234567890abcdef",
    "1979-05-27T07:32:00Z",
    "314159265358979e10",
];

/// Where one test puts a secret: the lines of `[store]`, `[admin]`, `[sources.hooks]` and
/// `[destinations.app]`, and the environment.
#[derive(Debug, Default)]
struct Placement {
    store: String,
    admin: String,
    source: String,
    destination: String,
    env: Vec<(&'static str, String)>,
}

impl Placement {
    fn config(&self) -> String {
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[store]\n{}\n[admin]\nlisten = \"127.0.0.1:0\"\n{}\n\
             [sources.hooks]\n{}\ndestinations = [\"app\"]\n[destinations.app]\nurl = \"http://127.0.0.1:9/\"\n{}\n",
            self.store, self.admin, self.source, self.destination
        )
    }
}

/// Every position a secret can take, with `value` in it, in the file and from the environment.
fn placements(value: &str, sqlite: &str) -> Vec<Placement> {
    let github = || "scheme = \"github\"\nsecrets = [\"gh-secret\"]".to_owned();
    let standard =
        || format!("scheme = \"standard-webhooks\"\nsecrets = [{:?}]", Signer::Standard(KEY.to_vec()).config_secret());
    let password_url = format!("postgres://idemgate:{value}@127.0.0.1:1/idemgate");
    let with = |store: &str, admin: String, source: String, destination: String, env: Vec<(&'static str, String)>| {
        let store = if store.is_empty() { sqlite.to_owned() } else { store.to_owned() };
        Placement { store, admin, source, destination, env }
    };
    let none = String::new;
    vec![
        with("", format!("token = {value}"), github(), none(), vec![]),
        with("", format!("token = {value:?}"), github(), none(), vec![]),
        with("", "token = \"env:TOKEN\"".into(), github(), none(), vec![("TOKEN", value.into())]),
        with("", none(), github(), none(), vec![("IDEMGATE_ADMIN__TOKEN", value.into())]),
        with("", none(), format!("scheme = \"github\"\nsecrets = [{value}]"), none(), vec![]),
        with("", none(), format!("scheme = \"github\"\nsecrets = {value}"), none(), vec![]),
        with("", none(), format!("scheme = \"standard-webhooks\"\nsecrets = [{value:?}]"), none(), vec![]),
        with("", none(), "scheme = \"demo-webhook-v1\"\nsecrets = [\"file:secret.txt\"]".into(), none(), vec![]),
        with("", none(), github(), none(), vec![("IDEMGATE_SOURCES__HOOKS__SECRETS", value.into())]),
        with(
            "",
            none(),
            "scheme = \"standard-webhooks\"".into(),
            none(),
            vec![("IDEMGATE_SOURCES__HOOKS__SECRETS", value.into())],
        ),
        with("", none(), standard(), format!("secret = {value}"), vec![]),
        with("", none(), standard(), format!("secret = {value:?}"), vec![]),
        with("", none(), standard(), none(), vec![("IDEMGATE_DESTINATIONS__APP__SECRET", value.into())]),
        with(&format!("url = {value}"), none(), github(), none(), vec![]),
        with(&format!("url = {password_url:?}"), none(), github(), none(), vec![]),
        with("url = \"env:DATABASE\"", none(), github(), none(), vec![("DATABASE", password_url.clone())]),
        with("url = \"file:database.txt\"", none(), github(), none(), vec![]),
        with("#", none(), github(), none(), vec![("IDEMGATE_STORE__URL", value.into())]),
        with("#", none(), github(), none(), vec![("IDEMGATE_STORE__URL", password_url)]),
    ]
}

#[test]
fn a_secret_of_any_shape_in_any_position_never_shows_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("idemgate.toml");
    let sqlite = format!("path = {:?}", dir.path().join("data/idemgate.sqlite3").display().to_string());
    for value in ODD_SECRETS {
        std::fs::write(dir.path().join("secret.txt"), format!("{value}\n")).unwrap();
        let password_url = format!("postgres://idemgate:{value}@127.0.0.1:1/idemgate");
        std::fs::write(dir.path().join("database.txt"), format!("{password_url}\n")).unwrap();
        for placement in placements(value, &sqlite) {
            std::fs::write(&config, placement.config()).unwrap();
            let env: Vec<(&str, &str)> = placement.env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let (failed, output) = start_up(&config, &env);
            assert!(!output.contains(value), "the secret {value} shows ({failed:?}) with {placement:?}:\n{output}");
            if let Some(status) = failed {
                assert_eq!(status.code(), Some(2), "{output}");
            }
        }
    }
}

fn proxy_config(prefix: &str) -> String {
    format!(
        "[sources.hooks]\nscheme = \"github\"\nsecrets = [\"s\"]\n[[proxy]]\nprefix = \"/api\"\nupstream = \"http://127.0.0.1:9\"\n\
         [[proxy]]\nprefix = {prefix:?}\nupstream = \"http://127.0.0.1:9\"\n"
    )
}

/// Exit 2 and one line that names `key`.
fn assert_config_error(setup: &Setup, key: &str) {
    let (failed, output) = start_up(&setup.config(), &[]);
    assert_eq!(failed.and_then(|s| s.code()), Some(2), "{output}");
    let line = output.lines().find(|l| l.starts_with("idemgate: config error:")).unwrap_or_else(|| panic!("{output}"));
    assert!(line.contains(key), "{line}");
    assert!(!output.contains("panicked"), "{output}");
}

#[test]
fn a_proxy_prefix_on_one_of_the_gateways_routes_is_a_config_error() {
    let setup = Setup::new("");
    for prefix in ["/metrics", "/healthz", "/readyz", "/in", "/in/hooks", "/metrics/x", "/api", "/{x}", "/a/{*rest}"] {
        setup.write_config(&proxy_config(prefix));
        assert_config_error(&setup, "proxy[1].prefix");
    }
    setup.write_config(&proxy_config("/api/v2"));
    assert_eq!(start_up(&setup.config(), &[]).0, None, "a prefix below another proxy's is served");
}

#[test]
fn forward_headers_the_worker_sets_itself_are_a_config_error() {
    let setup = Setup::new("");
    let names = [
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "Webhook-Anything",
        "content-type",
        "content-length",
        "transfer-encoding",
        "idempotency-key",
        "user-agent",
        "host",
        "connection",
        "keep-alive",
        "te",
        "trailer",
        "upgrade",
        "proxy-authorization",
        "proxy-connection",
    ];
    for name in names {
        setup.write_config(&format!(
            "[sources.hooks]\nscheme = \"github\"\nsecrets = [\"s\"]\nforward_headers = [\"x-ok\", {name:?}]\n"
        ));
        assert_config_error(&setup, "sources.hooks.forward_headers[1]");
    }
    setup.write_config(
        "[sources.hooks]\nscheme = \"github\"\nsecrets = [\"s\"]\nforward_headers = [\"x-github-event\"]\n",
    );
    assert_eq!(start_up(&setup.config(), &[]).0, None, "an ordinary header may be forwarded");
}

#[test]
fn a_store_value_the_database_cannot_take_still_stops_start_up() {
    let setup = Setup::new("");
    let text = "[sources.hooks]\nscheme = \"github\"\nsecrets = [\"s\"]\n";
    std::fs::write(
        setup.config(),
        format!("[server]\nlisten = \"127.0.0.1:0\"\n[store]\nurl = \"postgres://u@127.0.0.1:notaport/db\"\n{text}"),
    )
    .unwrap();
    assert_config_error(&setup, "store.url");
}

/// `[sources.hooks]` to the recorder `app`, and two proxies to `api`: one that refuses
/// while the store is unavailable, one that passes requests through unprotected.
fn degraded_config(app: &Destination, api: &Destination) -> String {
    format!(
        r#"
[worker]
lease = "3s"
poll_interval = "50ms"
[sources.hooks]
scheme = "standard-webhooks"
secrets = [{secret:?}]
destinations = ["app"]
[destinations.app]
url = "{app}"
timeout = "2s"
retry_schedule = ["1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s"]
jitter = 0.0
[[proxy]]
prefix = "/strict"
upstream = "http://{api}"
[[proxy]]
prefix = "/loose"
upstream = "http://{api}"
when_unavailable = "pass-through"
[metrics]
refresh_interval = "50ms"
"#,
        secret = Signer::Standard(KEY.to_vec()).config_secret(),
        app = app.url(),
        api = api.addr,
    )
}

fn keyed(key: &str) -> Vec<(String, String)> {
    vec![("idempotency-key".into(), key.into()), ("content-type".into(), "application/json".into())]
}

#[test]
fn serve_starts_without_its_sqlite_store_and_recovers_alone() {
    let (app, api) = (Destination::start(&[]), Destination::start(&[]));
    let setup = Setup::new(&degraded_config(&app, &api));
    let folder = setup.db().parent().unwrap().to_owned();
    // The store's folder is blocked by a file: the store cannot be opened.
    std::fs::write(&folder, "not a folder").unwrap();
    let gateway = setup.start();
    let addr = gateway.addr;

    assert_eq!(get(addr, "/healthz"), 200);
    assert_eq!(get(addr, "/readyz"), 503);
    let refused = deliver(addr, "evt_1").unwrap();
    assert_eq!(refused.status, 503, "{refused:?}");
    assert!(refused.headers.contains_key("retry-after"), "{refused:?}");
    assert_eq!(try_send(addr, "POST", "/strict/orders", &keyed("k1"), b"{}").unwrap().status, 503);
    assert!(api.received().is_empty(), "a refusing proxy forwarded while the store was unavailable");
    let passed = try_send(addr, "POST", "/loose/orders", &keyed("k2"), b"{}").unwrap();
    assert_eq!(passed.status, 200, "{passed:?}");
    assert_eq!(api.received().len(), 1, "the pass-through proxy forwards unprotected");
    let metrics = String::from_utf8(try_send(addr, "GET", "/metrics", &[], b"").unwrap().body).unwrap();
    assert!(metrics.contains("idemgate_idempotency_unprotected_total 1"), "{metrics}");
    assert!(metrics.contains("idemgate_store_available 0"), "{metrics}");
    thread::sleep(Duration::from_millis(500));
    assert!(app.received().is_empty(), "the worker ran without a store");

    std::fs::remove_file(&folder).unwrap();
    wait_for("readiness after the folder was unblocked", || get(addr, "/readyz") == 200);
    let accepted = deliver(addr, "evt_1").unwrap();
    assert_eq!(accepted.status, 202, "{accepted:?}");
    assert_eq!(deliver(addr, "evt_1").unwrap().status, 200, "a repeat is a duplicate");
    app.wait_until("the event forwarded", |r| r.iter().any(|r| r.header("webhook-id") == "evt_1"));
    let first = try_send(addr, "POST", "/strict/orders", &keyed("k3"), b"{}").unwrap();
    assert_eq!(first.status, 200);
    let again = try_send(addr, "POST", "/strict/orders", &keyed("k3"), b"{}").unwrap();
    assert_eq!(again.headers.get("idempotency-replay").map(String::as_str), Some("true"), "{again:?}");
    assert_eq!(api.received().len(), 2, "a replayed key does not reach the upstream again");
    let scrape = || String::from_utf8(try_send(addr, "GET", "/metrics", &[], b"").unwrap().body).unwrap();
    wait_for("the queue's gauges refreshed from the recovered store", || {
        let metrics = scrape();
        // The queue's states are set only once the store was read.
        metrics.contains("idemgate_store_available 1") && metrics.contains("idemgate_jobs{state=\"pending\"} 0")
    });
    let replays = scrape();
    assert!(
        replays.contains("idemgate_idempotency_replays_total{from=\"memory\"} 1"),
        "kept when it completed: {replays}"
    );
    let inbox = crate::gateway_harness::inbox(&setup.db());
    assert_eq!(inbox.receipts, ["evt_1"], "the receipt is in the file");
    assert_eq!(inbox.events, ["evt_1"]);
    gateway.stop();
}

/// The receipts table of the cluster's database, as identities.
fn stored_identities(url: &str) -> BTreeSet<String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        let rows = client.query("SELECT identity FROM receipts WHERE source = 'hooks'", &[]).await.unwrap();
        rows.iter().map(|row| row.get::<_, String>(0)).collect()
    })
}

/// Events sent one after another, each retried until acknowledged (2xx), while the
/// database goes down and up; what was acknowledged and how many were refused with 503.
#[derive(Default)]
struct Traffic {
    acknowledged: Mutex<Vec<String>>,
    unavailable: Mutex<usize>,
    without_retry_after: Mutex<usize>,
}

fn send_until_stopped(addr: SocketAddr, traffic: &Traffic, stop: &AtomicBool) {
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let id = format!("evt_{n}");
        loop {
            match deliver(addr, &id) {
                Some(answer) if (200..300).contains(&answer.status) => {
                    traffic.acknowledged.lock().unwrap().push(id);
                    break;
                }
                Some(answer) if answer.status == 503 => {
                    *traffic.unavailable.lock().unwrap() += 1;
                    if !answer.headers.contains_key("retry-after") {
                        *traffic.without_retry_after.lock().unwrap() += 1;
                    }
                }
                other => panic!("{id}: {other:?}"),
            }
            if stop.load(Ordering::SeqCst) {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn serve_starts_without_postgres_and_rides_out_its_restarts() {
    let cluster = Cluster::init();
    let app = Destination::start(&[]);
    let api = Destination::start(&[]);
    let setup = Setup::new("");
    let config = degraded_config(&app, &api);
    std::fs::write(
        setup.config(),
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[store]\nurl = {:?}\npool_size = 4\npool_wait = \"1s\"\n{config}",
            cluster.url()
        ),
    )
    .unwrap();
    // The database server is down when the gateway starts.
    let gateway = Gateway::start(&setup.config(), &[]);
    let addr = gateway.addr;
    assert_eq!(get(addr, "/healthz"), 200);
    assert_eq!(get(addr, "/readyz"), 503);
    assert_eq!(try_send(addr, "POST", "/strict/orders", &keyed("k1"), b"{}").unwrap().status, 503);
    assert_eq!(try_send(addr, "POST", "/loose/orders", &keyed("k2"), b"{}").unwrap().status, 200);

    let traffic = Arc::new(Traffic::default());
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (traffic, stop) = (Arc::clone(&traffic), Arc::clone(&stop));
        thread::spawn(move || send_until_stopped(addr, &traffic, &stop))
    };
    let acknowledged = || traffic.acknowledged.lock().unwrap().len();
    let unavailable = || *traffic.unavailable.lock().unwrap();
    wait_for("503s while the database is down", || unavailable() >= 3);
    assert_eq!(acknowledged(), 0);

    cluster.start();
    wait_for("acknowledgements once the database is up", || acknowledged() >= 20);
    assert_eq!(get(addr, "/readyz"), 200);
    assert_eq!(get(addr, "/healthz"), 200);

    cluster.stop();
    let (before, refused) = (acknowledged(), unavailable());
    wait_for("503s while the database is down again", || unavailable() >= refused + 3);
    assert_eq!(get(addr, "/readyz"), 503);
    assert_eq!(get(addr, "/healthz"), 200);
    assert!(acknowledged() <= before + 1, "acknowledged while the database was down");

    cluster.start();
    let resumed = acknowledged();
    wait_for("acknowledgements after the second start", || acknowledged() >= resumed + 20);
    stop.store(true, Ordering::SeqCst);
    sender.join().unwrap();
    assert_eq!(*traffic.without_retry_after.lock().unwrap(), 0, "every 503 carries Retry-After");

    let acknowledged: BTreeSet<String> = traffic.acknowledged.lock().unwrap().iter().cloned().collect();
    let stored = stored_identities(&cluster.url());
    let lost: Vec<_> = acknowledged.difference(&stored).collect();
    assert!(lost.is_empty(), "acknowledged but not stored: {lost:?}");
    app.wait_until("every acknowledged event forwarded", |received| {
        let forwarded: BTreeSet<&str> = received.iter().map(|r| r.header("webhook-id")).collect();
        acknowledged.iter().all(|id| forwarded.contains(id.as_str()))
    });
    assert_eq!(try_send(addr, "POST", "/strict/orders", &keyed("k3"), b"{}").unwrap().status, 200);
    gateway.stop();
}
