//! Destinations that are not HTTP, seen by the operator once every event arrived: a
//! RabbitMQ exchange (publisher confirms) and a NATS JetStream subject, on SQLite and on
//! PostgreSQL, and an SMTP smarthost (the aiosmtpd recording upstream). A confirm or a
//! `250` has no HTTP status; each attempt is still stored as succeeded, so
//! `idemgate destination list` (text and `--json`), the admin API's destinations and
//! series and the dashboard all show the destination healthy with every attempt succeeded.

use std::{net::SocketAddr, path::Path, process::Command, time::Duration};

use idemgate_testkit::smtp::{Options, Upstream, python};
use serde_json::Value;

use crate::{
    broker_harness::{TestQueue, TestStream, amqp_url, free_port, nats_url, wait_until},
    gateway_dashboard::{TOKEN, send as dashboard_get, sign_in},
    gateway_harness::{Gateway, Setup, Signer, body},
    harness::{exchange, unix_now},
    postgres_instances::fresh_schema,
};

const KEY: [u8; 32] = [35; 32];
const LONG: Duration = Duration::from_secs(60);
const ADMIN: &str = "[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"env:ADMIN_TOKEN\"\n";

fn admin_get(admin: SocketAddr, path: &str) -> Value {
    let head = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
    let reply = exchange(admin, head.as_bytes());
    assert_eq!(reply.status(), 200, "{path}: {reply:?}");
    reply.body().clone()
}

fn cli(setup: &Setup, args: &[&str]) -> String {
    let output = setup.run(args, &[]);
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

fn listed(setup: &Setup) -> Value {
    serde_json::from_str::<Value>(&cli(setup, &["destination", "list", "--json"])).unwrap()["destinations"].clone()
}

fn named<'a>(all: &'a Value, name: &str) -> &'a Value {
    all.as_array().unwrap().iter().find(|d| d["name"] == name).unwrap_or_else(|| panic!("no {name} in {all}"))
}

/// Waits until `name` has `expected` jobs, all succeeded.
fn wait_succeeded(setup: &Setup, name: &str, expected: u64) {
    wait_until(LONG, &format!("every job of {name} succeeded"), || {
        let all = listed(setup);
        all.as_array()
            .unwrap()
            .iter()
            .any(|d| d["name"] == name && d["jobs"] == serde_json::json!({"succeeded": expected}))
    });
}

/// What every view says of `name`, which took each of its `expected` attempts: health
/// `ok`, a last success and no failure, a series with every attempt succeeded.
fn assert_healthy(setup: &Setup, admin: SocketAddr, name: &str, expected: u64) {
    let all = listed(setup);
    let listed = named(&all, name);
    assert_eq!(listed["health"], "ok", "{listed}");
    assert!(listed["last_success_at"].as_i64().is_some_and(|at| at >= unix_now() - 600), "{listed}");
    assert!(listed["last_failure"].is_null(), "{listed}");
    let api = admin_get(admin, "/admin/v1/destinations");
    assert_eq!(named(&api, name), listed, "the API's view is the CLI's");

    let text = cli(setup, &["destination", "list"]);
    let block: Vec<&str> = text.split_once(&format!("{name}\n")).unwrap().1.lines().take(5).collect();
    assert!(block.contains(&"  health        ok"), "{text}");
    assert!(block.contains(&"  last failure  -") && !block.contains(&"  last success  -"), "{text}");

    let series = admin_get(admin, &format!("/admin/v1/destinations/{name}/series"));
    let buckets = series["buckets"].as_array().unwrap();
    let sum = |field: &str| buckets.iter().map(|b| b[field].as_u64().unwrap()).sum::<u64>();
    assert_eq!((sum("succeeded"), sum("failed")), (expected, 0), "{series}");

    let session = sign_in(admin).session();
    let page =
        dashboard_get(admin, "GET", "/admin/destinations", &[("Cookie", format!("idemgate_admin={session}"))], "");
    let row =
        page.body.split(&format!("<tr data-destination=\"{name}\">")).nth(1).unwrap().split("</tr>").next().unwrap();
    assert!(row.contains("<td class=\"health\" data-label=\"health\">ok</td>"), "{row}");
    assert!(row.contains(&format!("{expected} attempts, 100% succeeded")), "{row}");
}

/// A webhook source feeding a RabbitMQ exchange and a NATS subject, with `store`.
fn brokers_config(store: &str, queue: &TestQueue, stream: &TestStream) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{store}[worker]\npoll_interval = \"50ms\"\n{ADMIN}\
         [sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\n\
         destinations = [\"queue\", \"stream\"]\n\
         [destinations.queue]\nkind = \"rabbitmq\"\nurl = {amqp:?}\nexchange = {exchange:?}\nrouting_key = {key:?}\n\
         timeout = \"5s\"\n\
         [destinations.stream]\nkind = \"nats\"\nurl = {nats:?}\nsubject = {subject:?}\ntimeout = \"5s\"\n",
        secret = Signer::Standard(KEY.to_vec()).config_secret(),
        amqp = amqp_url(),
        exchange = queue.exchange,
        key = queue.name,
        nats = nats_url(),
        subject = stream.subject,
    )
}

fn brokers_report_every_confirmed_attempt_as_a_success(store: impl FnOnce(&Setup) -> String) {
    let (queue, stream) = (TestQueue::on_own_exchange(&amqp_url()), TestStream::create(&nats_url()));
    let setup = Setup::new("");
    std::fs::write(setup.config(), brokers_config(&store(&setup), &queue, &stream)).unwrap();
    let mut gateway = Gateway::start(&setup.config(), &[("ADMIN_TOKEN", TOKEN)]);
    let admin = gateway.admin_addr();
    for n in 0..6 {
        let identity = format!("evt_confirmed_{n}");
        let event = body(&identity, "t");
        let headers = Signer::Standard(KEY.to_vec()).headers(&identity, &event, unix_now());
        assert_eq!(gateway.post("hooks", &headers, &event).status(), 202);
    }
    wait_succeeded(&setup, "queue", 6);
    wait_succeeded(&setup, "stream", 6);
    assert_eq!(queue.take_all().len(), 6, "every event is in the queue");
    assert_eq!(stream.messages().len(), 6, "every event is in the stream");
    assert_healthy(&setup, admin, "queue", 6);
    assert_healthy(&setup, admin, "stream", 6);
    gateway.stop();
}

#[test]
fn a_queue_and_a_stream_that_confirmed_every_event_are_healthy_with_every_attempt_succeeded() {
    brokers_report_every_confirmed_attempt_as_a_success(|setup| {
        format!("[store]\npath = {:?}\n", setup.db().display().to_string())
    });
}

#[test]
fn on_postgres_a_queue_and_a_stream_that_confirmed_every_event_are_healthy_with_every_attempt_succeeded() {
    let url = fresh_schema("outcome");
    brokers_report_every_confirmed_attempt_as_a_success(|_| format!("[store]\nurl = {url:?}\n"));
}

/// An SMTP submission listener relaying to the recording upstream.
fn mail_config(setup: &Setup, upstream: &Upstream, listen: u16) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[store]\npath = {db:?}\n[worker]\npoll_interval = \"50ms\"\n{ADMIN}\
         [destinations.relay]\nkind = \"smtp\"\nurl = \"smtp://127.0.0.1:{port}\"\nstarttls = \"never\"\ntimeout = \"5s\"\n\
         [smtp.mail]\nlisten = \"127.0.0.1:{listen}\"\ndestinations = [\"relay\"]\nusers = {{ alice = \"env:SMTP_PW\" }}\n",
        db = setup.db().display().to_string(),
        port = upstream.port(),
    )
}

fn submit(listen: u16, file: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/smtp/submit.py");
    let output = Command::new(python())
        .arg(script)
        .args(["--port", &listen.to_string(), "--user", "alice", "--password", "alice-pw"])
        .args(["--from", "app@example.com", "--to", "b@example.com", "--file"])
        .arg(file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().next().unwrap_or_else(|| panic!("submit.py printed nothing: {output:?}")))
        .unwrap()
}

#[test]
fn a_smarthost_that_took_every_message_is_healthy_with_every_attempt_succeeded() {
    let upstream = Upstream::start(Options::default());
    let setup = Setup::new("");
    let listen = free_port();
    std::fs::write(setup.config(), mail_config(&setup, &upstream, listen)).unwrap();
    let mut gateway = Gateway::start(&setup.config(), &[("ADMIN_TOKEN", TOKEN), ("SMTP_PW", "alice-pw")]);
    let lines = [gateway.next_line(), gateway.next_line()];
    let admin: SocketAddr = lines
        .iter()
        .find_map(|line| line.trim().strip_prefix("admin listening on "))
        .unwrap_or_else(|| panic!("no admin line in {lines:?}"))
        .parse()
        .unwrap();
    for n in 0..3 {
        let file = setup.dir.path().join(format!("m{n}.eml"));
        std::fs::write(&file, format!("Subject: invoice {n}\r\nIdempotency-Key: order-{n}\r\n\r\nHello.\r\n")).unwrap();
        assert_eq!(submit(listen, &file)["code"], 250);
    }
    upstream.wait_until(|received| received.len() == 3);
    wait_succeeded(&setup, "relay", 3);
    assert_healthy(&setup, admin, "relay", 3);
    gateway.stop();
}
