//! Alerts end to end: the gateway run in-process on a `ManualClock`, over real HTTP, a
//! scripted destination failing (400, 410, 503) and another scripted destination as the
//! alert receiver, which checks each alert's Standard Webhooks signature with the core's
//! verifier. Every scenario runs on SQLite and on PostgreSQL (which must be reachable).

use std::{
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use idemgate::{
    clock::{Clock, ManualClock, UnixTime},
    config,
    core::{
        Secret, SecretSet,
        scheme::{RawDelivery, Scheme, StandardWebhooks},
    },
    run::{RunOptions, run},
};
use idemgate_testkit::{Destination, Received, Step};
use serde_json::Value;

use crate::{
    gateway_harness::{Signer, idemgate_bin},
    harness::{post, unix_now},
    postgres_instances::{fresh_schema, query},
};

const KEY: [u8; 32] = [21; 32];
const OPS_KEY: [u8; 32] = [22; 32];

#[derive(Clone, Copy)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

/// A gateway run in-process with `[alerts]` sending to `ops`.
struct Rig {
    runtime: tokio::runtime::Runtime,
    clock: Arc<ManualClock>,
    addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    gateway: Option<tokio::task::JoinHandle<Result<(), idemgate::run::RunError>>>,
    dir: tempfile::TempDir,
    postgres: Option<String>,
}

impl Rig {
    /// `billing` is the destination of source `hooks`, `ops` the alert receiver;
    /// `billing_extra` and `alerts_extra` are added to their tables.
    fn start(
        backend: Backend,
        billing: &Destination,
        billing_extra: &str,
        ops: &Destination,
        alerts_extra: &str,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (store, postgres) = match backend {
            Backend::Sqlite => (format!("path = {:?}", dir.path().join("idemgate.sqlite3")), None),
            Backend::Postgres => {
                let url = fresh_schema("alerts");
                (format!("url = {url:?}"), Some(url))
            }
        };
        let text = format!(
            r#"
[server]
listen = "127.0.0.1:0"
[store]
{store}
[worker]
poll_interval = "20ms"
# Longer than any jump of the manual clock below: a jump past a lease while a job is in
# hand would make that job due again, a second delivery that at-least-once allows but
# that these tests, which count every alert received, would see as a repeat.
lease = "2h"
[sources.hooks]
scheme = "standard-webhooks"
secrets = [{secret:?}]
destinations = ["billing"]
[destinations.billing]
url = "{billing}"
timeout = "2s"
jitter = 0.0
{billing_extra}
[destinations.ops]
url = "{ops}"
timeout = "2s"
secret = {ops_secret:?}
retry_schedule = ["1s", "1s", "1s", "1s"]
jitter = 0.0
[alerts]
destination = "ops"
check_interval = "30ms"
min_interval = "15m"
{alerts_extra}
"#,
            secret = Signer::Standard(KEY.to_vec()).config_secret(),
            ops_secret = Signer::Standard(OPS_KEY.to_vec()).config_secret(),
            billing = billing.url(),
            ops = ops.url(),
        );
        std::fs::write(dir.path().join("idemgate.toml"), text).unwrap();
        let (config, _) = config::load(&dir.path().join("idemgate.toml"), Vec::new()).unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let clock = Arc::new(ManualClock::at(UnixTime(unix_now())));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let options = RunOptions { public: Some(listener), clock: clock.clone(), ..RunOptions::default() };
        let gateway = runtime.spawn(run(config, options, async move {
            let _ = stopped.await;
        }));
        Self { runtime, clock, addr, stop: Some(stop), gateway: Some(gateway), dir, postgres }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("idemgate.toml")
    }

    /// Sends events `ids` to `hooks`, signed at the clock's time; each is accepted.
    fn send(&self, ids: impl IntoIterator<Item = String>) {
        let signer = Signer::Standard(KEY.to_vec());
        for id in ids {
            let body = format!(r#"{{"type":"order.created","id":"{id}"}}"#);
            let headers = signer.headers(&id, body.as_bytes(), self.clock.now().0);
            assert_eq!(post(self.addr, "/in/hooks", &headers, body.as_bytes()).status(), 202, "{id}");
        }
    }

    /// How many jobs are in each state, read from the store from outside the gateway.
    fn job_states(&self) -> Vec<(String, u64)> {
        let sql = "SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state";
        match &self.postgres {
            Some(url) => query(url, sql).into_iter().map(|row| (row[0].clone(), row[1].parse().unwrap())).collect(),
            None => {
                let conn = rusqlite::Connection::open(self.dir.path().join("idemgate.sqlite3")).unwrap();
                let mut stmt = conn.prepare(sql).unwrap();
                stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?))).unwrap().map(Result::unwrap).collect()
            }
        }
    }

    /// How many attempts to `destination` were recorded.
    fn attempts_to(&self, destination: &str) -> u64 {
        let sql = format!(
            "SELECT count(*) FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE j.destination = '{destination}'"
        );
        match &self.postgres {
            Some(url) => query(url, &sql)[0][0].parse().unwrap(),
            None => {
                let conn = rusqlite::Connection::open(self.dir.path().join("idemgate.sqlite3")).unwrap();
                conn.query_row(&sql, [], |row| row.get(0)).unwrap()
            }
        }
    }

    fn count(&self, state: &str) -> u64 {
        self.job_states().into_iter().find(|(s, _)| s == state).map_or(0, |(_, n)| n)
    }

    /// Waits until no job waits or runs: every alert stored so far has been delivered.
    fn wait_until_drained(&self) {
        wait_for("every job finished", || ["pending", "retrying", "running"].iter().all(|s| self.count(s) == 0));
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let (Some(stop), Some(gateway)) = (self.stop.take(), self.gateway.take()) {
            let _ = stop.send(());
            let _ = self.runtime.block_on(gateway);
        }
    }
}

/// Polls `done` until it holds, for at most 30 s.
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The alerts received, in order, each checked: signed with the ops secret (the core's
/// verifier at the request's own timestamp), from the reserved source, its event type the
/// body's type. Returns their bodies.
fn alerts(receiver: &Destination) -> Vec<Value> {
    let scheme = StandardWebhooks::default();
    let secrets = SecretSet::new(vec![Secret::new(OPS_KEY.to_vec())]).unwrap();
    receiver
        .received()
        .iter()
        .map(|request: &Received| {
            let ts: i64 = request.header("webhook-timestamp").parse().unwrap();
            let delivery = RawDelivery { headers: &request.headers, body: &request.body };
            let verified = scheme.verify(&secrets, delivery, UnixTime(ts));
            assert!(verified.is_ok(), "the alert is signed with the ops secret: {verified:?}");
            assert_eq!(request.header("idemgate-source"), "idemgate-alerts");
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            assert!(request.header("webhook-id").starts_with(body["condition"].as_str().unwrap()), "{body}");
            body
        })
        .collect()
}

/// `(type, condition, target)` of each alert.
fn kinds(bodies: &[Value]) -> Vec<(String, String, String)> {
    bodies
        .iter()
        .map(|b| {
            let text = |k: &str| b[k].as_str().unwrap().to_owned();
            (text("type"), text("condition"), text("target"))
        })
        .collect()
}

fn kind(kind: &str, condition: &str, target: &str) -> (String, String, String) {
    (kind.to_owned(), condition.to_owned(), target.to_owned())
}

fn many_dead_jobs_send_exactly_one_alert_then_one_recovery_notice(backend: Backend) {
    let billing = Destination::start(&[]);
    billing.otherwise(Step::Status(400));
    let ops = Destination::start(&[]);
    let rig = Rig::start(backend, &billing, "", &ops, "");
    rig.send((0..8).map(|i| format!("evt_{i}")));
    wait_for("eight dead jobs", || rig.count("dead") == 8);
    ops.wait_until("the opened alert", |r| !r.is_empty());
    rig.send((8..12).map(|i| format!("evt_{i}")));
    wait_for("four more dead jobs", || rig.count("dead") == 12);
    rig.wait_until_drained();

    // Nothing went dead for min_interval: the alert resolves.
    rig.clock.advance(16 * 60);
    ops.wait_until("the recovery notice", |r| r.len() >= 2);
    rig.wait_until_drained();
    let bodies = alerts(&ops);
    assert_eq!(
        kinds(&bodies),
        [kind("alert.opened", "dead-jobs", "billing"), kind("alert.resolved", "dead-jobs", "billing")],
        "{bodies:?}"
    );
    assert!(bodies[0]["details"]["dead_jobs"].as_i64().unwrap() >= 1, "{}", bodies[0]);
    assert_eq!(bodies[0]["since"], bodies[1]["since"]);
    assert_eq!(billing.received().len(), 12, "each event tried once: a 400 is final");
}

fn a_disabled_destination_alerts_once_and_its_enabling_sends_one_notice(backend: Backend) {
    let billing = Destination::start(&[Step::Status(410)]);
    let ops = Destination::start(&[]);
    let rig = Rig::start(backend, &billing, "", &ops, "dead_jobs = false");
    rig.send(["evt_gone".to_owned()]);
    ops.wait_until("the disabled alert", |r| !r.is_empty());
    rig.send(["evt_more".to_owned()]);
    let opened = alerts(&ops);
    assert_eq!(kinds(&opened), [kind("alert.opened", "destination-disabled", "billing")]);

    let enable = std::process::Command::new(idemgate_bin())
        .args(["destination", "enable", "billing", "--config"])
        .arg(rig.config())
        .output()
        .unwrap();
    assert!(enable.status.success(), "{}", String::from_utf8_lossy(&enable.stderr));
    // The command re-enabled at the wall clock's time; the gateway's clock catches up.
    rig.clock.advance(60);
    ops.wait_until("the recovery notice", |r| r.len() >= 2);
    wait_for("both events delivered", || rig.count("succeeded") == 4);
    rig.wait_until_drained();
    let bodies = alerts(&ops);
    assert_eq!(
        kinds(&bodies),
        [
            kind("alert.opened", "destination-disabled", "billing"),
            kind("alert.resolved", "destination-disabled", "billing")
        ]
    );
}

fn the_oldest_waiting_job_alerts_past_its_threshold_and_resolves_once_drained(backend: Backend) {
    let billing = Destination::start(&[]);
    billing.otherwise(Step::Status(503));
    let ops = Destination::start(&[]);
    let rig = Rig::start(backend, &billing, r#"retry_schedule = ["1h", "1h"]"#, &ops, "oldest_waiting = \"10m\"");
    rig.send(["evt_slow".to_owned()]);
    wait_for("the job retrying", || rig.count("retrying") == 1);
    rig.clock.advance(9 * 60);
    rig.send(["evt_later".to_owned()]);
    wait_for("both retrying", || rig.count("retrying") == 2);
    rig.clock.advance(2 * 60);
    ops.wait_until("the oldest-waiting alert", |r| !r.is_empty());
    let opened = alerts(&ops);
    assert_eq!(kinds(&opened), [kind("alert.opened", "oldest-waiting", "queue")]);
    assert!(opened[0]["details"]["age_seconds"].as_i64().unwrap() >= 600, "{}", opened[0]);

    billing.otherwise(Step::Status(200));
    rig.clock.advance(3600);
    wait_for("both delivered", || rig.count("succeeded") >= 2);
    ops.wait_until("the recovery notice", |r| r.len() >= 2);
    rig.wait_until_drained();
    assert_eq!(
        kinds(&alerts(&ops)),
        [kind("alert.opened", "oldest-waiting", "queue"), kind("alert.resolved", "oldest-waiting", "queue")]
    );
}

fn an_alert_reaches_a_receiver_that_was_down_at_first(backend: Backend) {
    let billing = Destination::start(&[Step::Status(410)]);
    let ops = Destination::start(&[Step::Close, Step::Status(503)]);
    let rig = Rig::start(backend, &billing, "", &ops, "");
    rig.send(["evt_gone".to_owned()]);
    wait_for("the first attempt recorded", || rig.attempts_to("ops") == 1);
    rig.clock.advance(2);
    wait_for("the second attempt recorded", || rig.attempts_to("ops") == 2);
    rig.clock.advance(2);
    ops.wait_until("the third attempt", |r| r.len() >= 3);
    wait_for("the alert delivered", || rig.count("succeeded") == 1);
    let received = ops.received();
    assert_eq!(received.len(), 3, "one alert, tried until it was taken");
    let ids: Vec<_> = received.iter().map(|r| r.header("webhook-id").to_owned()).collect();
    assert!(ids.iter().all(|id| *id == ids[0]) && ids[0].starts_with("destination-disabled:billing:"), "{ids:?}");
    assert_eq!(kinds(&alerts(&ops))[2], kind("alert.opened", "destination-disabled", "billing"));
}

fn a_paused_destination_alerts_once_and_its_resumption_sends_one_notice(backend: Backend) {
    let billing = Destination::start(&[]);
    billing.otherwise(Step::Status(503));
    let ops = Destination::start(&[]);
    let breaker = "retry_schedule = [\"1s\", \"1s\", \"1s\", \"1s\"]\n\
                   [destinations.billing.breaker]\npause_after_failures = 2\nprobe_interval = \"1m\"";
    let rig = Rig::start(backend, &billing, breaker, &ops, "dead_jobs = false");
    rig.send(["evt_down".to_owned()]);
    wait_for("the first attempt", || rig.attempts_to("billing") == 1);
    rig.clock.advance(2);
    wait_for("the second attempt", || rig.attempts_to("billing") == 2);
    ops.wait_until("the paused alert", |r| !r.is_empty());
    assert_eq!(kinds(&alerts(&ops)), [kind("alert.opened", "destination-paused", "billing")]);

    // The probe after the interval succeeds: the destination resumes by itself.
    billing.otherwise(Step::Status(200));
    rig.clock.advance(61);
    wait_for("the event delivered", || rig.count("succeeded") >= 2);
    ops.wait_until("the recovery notice", |r| r.len() >= 2);
    rig.wait_until_drained();
    assert_eq!(
        kinds(&alerts(&ops)),
        [
            kind("alert.opened", "destination-paused", "billing"),
            kind("alert.resolved", "destination-paused", "billing")
        ]
    );
    assert_eq!(billing.received().len(), 3, "two failures, then the one probe that resumed it");
}

macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn sqlite() {
                super::$name(super::Backend::Sqlite);
            }

            #[test]
            fn postgres() {
                super::$name(super::Backend::Postgres);
            }
        }
    )*};
}

on_both_backends!(
    many_dead_jobs_send_exactly_one_alert_then_one_recovery_notice,
    a_disabled_destination_alerts_once_and_its_enabling_sends_one_notice,
    the_oldest_waiting_job_alerts_past_its_threshold_and_resolves_once_drained,
    an_alert_reaches_a_receiver_that_was_down_at_first,
    a_paused_destination_alerts_once_and_its_resumption_sends_one_notice,
);

/// The checker's steps on a real store at chosen times, without the loop: a crash between
/// storing an alert and recording it, a flapping destination held for `min_interval`.
mod checks {
    use std::{sync::Arc, time::Duration};

    use idemgate::{
        alerts::check,
        config::AlertsConfig,
        core::{
            BodyHash, Identity, Outcome, ReceiptKey, SourceName, UnixTime,
            alert::{ALERT_SOURCE, Action, Rules},
            retry::Decision,
        },
        store::{
            PgOptions, PgStore, ReceiveRequest, SqliteStore, Store, StoreOptions, inbox::IncomingEvent,
            jobs::AttemptRecord,
        },
    };

    use super::Backend;
    use crate::postgres_instances::{fresh_schema, query};

    const T: i64 = 1_800_000_000;

    struct Opened {
        store: Store,
        dir: tempfile::TempDir,
        url: Option<String>,
    }

    async fn open(backend: Backend) -> Opened {
        let dir = tempfile::tempdir().unwrap();
        match backend {
            Backend::Sqlite => {
                let store = SqliteStore::open(&dir.path().join("s.sqlite3"), StoreOptions::default()).unwrap();
                Opened { store: Arc::new(store).into(), dir, url: None }
            }
            Backend::Postgres => {
                let url = tokio::task::spawn_blocking(|| fresh_schema("alert_checks")).await.unwrap();
                let options = PgOptions { pool_size: 4, wait_timeout: Duration::from_secs(10) };
                let store = PgStore::connect(&url, options).await.unwrap();
                Opened { store: store.into(), dir, url: Some(url) }
            }
        }
    }

    impl Opened {
        /// Forgets every alert record, as a crash right after storing an alert would.
        fn forget_records(&self) {
            match &self.url {
                Some(url) => {
                    let url = url.clone();
                    std::thread::spawn(move || query(&url, "DELETE FROM alerts")).join().unwrap();
                }
                None => {
                    let conn = rusqlite::Connection::open(self.dir.path().join("s.sqlite3")).unwrap();
                    conn.execute("DELETE FROM alerts", []).unwrap();
                }
            }
        }

        /// One event for billing whose attempt answers 410 at `at`.
        async fn disable_billing(&self, identity: &str, at: i64) {
            let body = format!(r#"{{"id":"{identity}"}}"#).into_bytes();
            let key =
                ReceiptKey { source: SourceName::new("hooks").unwrap(), identity: Identity::new(identity).unwrap() };
            let request =
                ReceiveRequest { key, body_hash: BodyHash::of(&body), received_at: UnixTime(at), dedupe_body: false };
            let event = IncomingEvent {
                result: serde_json::json!({}),
                outgoing_id: None,
                event_type: None,
                content_type: None,
                headers: Vec::new(),
                body: body.into(),
                ordering: None,
                destinations: Arc::from(["billing".to_owned()]),
                dead: Vec::new(),
                refusal: None,
            };
            assert!(matches!(self.store.accept(request, event).await, Outcome::Applied { .. }));
            let claimed = self.store.claim_jobs(at * 1000, Duration::from_secs(30), 10, Vec::new()).await.unwrap();
            let job = claimed.into_iter().find(|job| job.destination == "billing").unwrap();
            let attempt = AttemptRecord {
                started_at: UnixTime(at),
                latency: Duration::from_millis(1),
                status: Some(410),
                outcome: idemgate_core::retry::Attempted::Failed,
                error: None,
                response_prefix: None,
            };
            self.store.complete_job(job, attempt, Decision::DisableDestination, at * 1000).await.unwrap();
        }

        async fn alert_events(&self) -> Vec<String> {
            let receipts = self.store.receipts(SourceName::new(ALERT_SOURCE).unwrap()).await.unwrap();
            receipts.into_iter().map(|receipt| receipt.key.identity.to_string()).collect()
        }
    }

    fn config() -> AlertsConfig {
        AlertsConfig {
            destination: "ops".to_owned(),
            rules: Rules {
                dead_jobs: true,
                destination_disabled: true,
                destination_paused: true,
                oldest_waiting: None,
                min_interval: 900,
            },
            check_interval: Duration::from_secs(10),
        }
    }

    async fn identities(store: &Store, at: i64) -> Vec<String> {
        check(store, &config(), UnixTime(at)).await.unwrap().iter().map(Action::identity).collect()
    }

    async fn a_crash_before_the_record_and_a_flapping_destination_still_send_each_alert_once(backend: Backend) {
        let t = open(backend).await;
        t.disable_billing("evt_1", T).await;
        let opened = format!("destination-disabled:billing:{T}");
        assert_eq!(identities(&t.store, T + 1).await, std::slice::from_ref(&opened));
        assert!(identities(&t.store, T + 2).await.is_empty(), "open: nothing more");

        t.forget_records();
        assert_eq!(identities(&t.store, T + 3).await, std::slice::from_ref(&opened), "decided again after the crash");
        assert_eq!(t.alert_events().await, std::slice::from_ref(&opened), "but stored once: the receipt decides");
        let job = t.store.jobs(ReceiptKey {
            source: SourceName::new(ALERT_SOURCE).unwrap(),
            identity: Identity::new(opened.clone()).unwrap(),
        });
        assert_eq!(job.await.unwrap().iter().map(|j| j.destination.as_str()).collect::<Vec<_>>(), ["ops"]);
        assert!(identities(&t.store, T + 4).await.is_empty(), "and recorded then");

        assert!(t.store.enable_destination("billing".to_owned(), UnixTime(T + 10)).await.unwrap());
        assert_eq!(identities(&t.store, T + 11).await, [format!("{opened}:resolved")]);

        t.disable_billing("evt_2", T + 20).await;
        // The alert counts as opened when it was recorded: T + 3, after the crash.
        for at in [T + 21, T + 500, T + 902] {
            assert!(identities(&t.store, at).await.is_empty(), "back within min_interval of its alert: held at {at}");
        }
        let again = format!("destination-disabled:billing:{}", T + 20);
        assert_eq!(identities(&t.store, T + 903).await, std::slice::from_ref(&again));
        let mut expected = vec![opened.clone(), format!("{opened}:resolved"), again];
        expected.sort();
        assert_eq!(t.alert_events().await, expected);
    }

    mod on {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn sqlite() {
            super::a_crash_before_the_record_and_a_flapping_destination_still_send_each_alert_once(
                super::Backend::Sqlite,
            )
            .await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn postgres() {
            super::a_crash_before_the_record_and_a_flapping_destination_still_send_each_alert_once(
                super::Backend::Postgres,
            )
            .await;
        }
    }
}
