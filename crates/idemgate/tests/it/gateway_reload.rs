//! Reloading the configuration of a running `idemgate serve` (SIGHUP and `idemgate reload`):
//! a secret rotated under continuous load refuses no valid delivery, an invalid file and a
//! moved listener keep what runs, a destination added by reload gets the next events, and
//! admin tokens and roles changed by reload apply to the next request.
//! Each test waits for the server's own log line saying the reload was applied.

use std::{
    io::{BufRead, BufReader},
    net::SocketAddr,
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use idemgate_testkit::Destination;

use crate::{
    gateway_harness::{Signer, idemgate_bin},
    harness::{exchange, post, unix_now},
};

const OLD: [u8; 32] = [4; 32];
const NEW: [u8; 32] = [5; 32];

/// A gateway whose log lines (stderr) are kept for the test to wait on.
struct Reloading {
    child: Child,
    addr: SocketAddr,
    logs: Arc<Mutex<Vec<String>>>,
    dir: tempfile::TempDir,
}

impl Reloading {
    fn start(sources: &str) -> Self {
        Self::spawn(sources, false).0
    }

    /// [`Self::start`] for a configuration with `[admin]`; also its address.
    fn start_with_admin(sources: &str) -> (Self, SocketAddr) {
        let (gateway, admin) = Self::spawn(sources, true);
        (gateway, admin.unwrap())
    }

    fn spawn(sources: &str, admin: bool) -> (Self, Option<SocketAddr>) {
        let dir = tempfile::tempdir().unwrap();
        write_config(&dir, "127.0.0.1:0", sources);
        let mut child = Command::new(idemgate_bin())
            .args(["serve", "--config"])
            .arg(dir.path().join("idemgate.toml"))
            .env("IDEMGATE_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let logs = Arc::new(Mutex::new(Vec::new()));
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let kept = Arc::clone(&logs);
        thread::spawn(move || stderr.lines().map_while(Result::ok).for_each(|line| kept.lock().unwrap().push(line)));
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let addr = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("first line {line:?}"));
        let admin = admin.then(|| {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            let admin = line.trim().strip_prefix("admin listening on ").unwrap_or_else(|| panic!("{line:?}"));
            admin.parse().unwrap()
        });
        (Self { addr: addr.parse().unwrap(), child, logs, dir }, admin)
    }

    fn rewrite(&self, listen: &str, sources: &str) {
        write_config(&self.dir, listen, sources);
    }

    fn hangup(&self) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-HUP", &pid]).status().unwrap().success());
    }

    /// The log lines containing `text`, once there are `count` of them (bounded wait).
    fn wait_for_log(&self, text: &str, count: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let found: Vec<String> = self.logs.lock().unwrap().iter().filter(|l| l.contains(text)).cloned().collect();
            if found.len() >= count {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "no {count} log lines with {text:?}; logs: {:#?}",
                self.logs.lock().unwrap()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn logged(&self, text: &str) -> bool {
        self.logs.lock().unwrap().iter().any(|l| l.contains(text))
    }

    fn send(&self, signer: &Signer, identity: &str) -> u16 {
        send(self.addr, signer, identity)
    }
}

impl Drop for Reloading {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write_config(dir: &tempfile::TempDir, listen: &str, sources: &str) {
    let store = dir.path().join("idemgate.sqlite3");
    let config = format!(
        "[server]\nlisten = \"{listen}\"\npid_file = \"idemgate.pid\"\n[store]\npath = {:?}\n{sources}",
        store.display().to_string()
    );
    std::fs::write(dir.path().join("idemgate.toml"), config).unwrap();
}

fn send(addr: SocketAddr, signer: &Signer, identity: &str) -> u16 {
    let body = format!(r#"{{"type":"t","id":"{identity}"}}"#);
    post(addr, "/in/hooks", &signer.headers(identity, body.as_bytes(), unix_now()), body.as_bytes()).status()
}

fn source(secrets: &[[u8; 32]], destinations: &str) -> String {
    let secrets: Vec<String> = secrets.iter().map(|key| Signer::Standard(key.to_vec()).config_secret()).collect();
    format!(
        "[worker]\npoll_interval = \"50ms\"\n[sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = {secrets:?}\n{destinations}"
    )
}

/// Senders that post deliveries back to back, each signed with the secret of the phase it
/// reads when it signs (0: the old secret, 1: the new one), recording every answer.
struct Load {
    stop: Arc<AtomicBool>,
    phase: Arc<AtomicUsize>,
    /// Per sender: the phase of the last delivery answered.
    answered: Vec<Arc<AtomicUsize>>,
    answers: Arc<Mutex<Vec<(usize, String, u16)>>>,
    senders: Vec<thread::JoinHandle<()>>,
}

impl Load {
    fn start(addr: SocketAddr, senders: usize) -> Self {
        let (stop, phase) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let answers = Arc::new(Mutex::new(Vec::new()));
        let answered: Vec<_> = (0..senders).map(|_| Arc::new(AtomicUsize::new(usize::MAX))).collect();
        let senders = answered
            .iter()
            .enumerate()
            .map(|(n, answered)| {
                let (stop, phase, answers, answered) =
                    (Arc::clone(&stop), Arc::clone(&phase), Arc::clone(&answers), Arc::clone(answered));
                thread::spawn(move || {
                    for i in 0.. {
                        if stop.load(Ordering::SeqCst) {
                            return;
                        }
                        let now = phase.load(Ordering::SeqCst);
                        let signer = Signer::Standard(if now == 0 { OLD } else { NEW }.to_vec());
                        let identity = format!("evt_{n}_{i}");
                        let status = send(addr, &signer, &identity);
                        answers.lock().unwrap().push((now, identity, status));
                        answered.store(now, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        Self { stop, phase, answered, answers, senders }
    }

    /// Waits (bounded) until every sender has had `more` further answers and the last one
    /// was of `phase`.
    fn wait_for(&self, phase: usize, more: usize) {
        let start = self.answers.lock().unwrap().len();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.answers.lock().unwrap().len() < start + more
            || self.answered.iter().any(|a| a.load(Ordering::SeqCst) != phase)
        {
            assert!(Instant::now() < deadline, "the senders stalled");
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn stop(self) -> Vec<(usize, String, u16)> {
        self.stop.store(true, Ordering::SeqCst);
        for sender in self.senders {
            sender.join().unwrap();
        }
        Arc::try_unwrap(self.answers).unwrap().into_inner().unwrap()
    }
}

#[test]
fn a_secret_rotated_by_reload_under_continuous_load_refuses_no_valid_delivery() {
    let gateway = Reloading::start(&source(&[OLD], ""));
    let load = Load::start(gateway.addr, 2);
    load.wait_for(0, 10);

    // [old, new]: both verify. Sent with `idemgate reload`, which signals the pid file's process.
    gateway.rewrite("127.0.0.1:0", &source(&[OLD, NEW], ""));
    let reload = Command::new(idemgate_bin())
        .args(["reload", "--config"])
        .arg(gateway.dir.path().join("idemgate.toml"))
        .output()
        .unwrap();
    assert!(reload.status.success(), "{}", String::from_utf8_lossy(&reload.stderr));
    let applied = gateway.wait_for_log("reloaded configuration", 1);
    assert!(applied[0].contains("sources changed: hooks"), "{applied:?}");
    load.wait_for(0, 10);

    // The senders switch; once every one has been answered on the new secret, none has an
    // old-signed delivery in flight, and the old secret can go.
    load.phase.store(1, Ordering::SeqCst);
    load.wait_for(1, 10);
    gateway.rewrite("127.0.0.1:0", &source(&[NEW], ""));
    gateway.hangup();
    gateway.wait_for_log("reloaded configuration", 2);
    load.wait_for(1, 10);
    let answers = load.stop();

    let refused: Vec<_> = answers.iter().filter(|(_, _, status)| *status != 202).collect();
    assert!(refused.is_empty(), "valid deliveries refused: {refused:?}");
    assert!(answers.iter().any(|(phase, ..)| *phase == 0) && answers.iter().any(|(phase, ..)| *phase == 1));
    assert_eq!(gateway.send(&Signer::Standard(OLD.to_vec()), "evt_old_after"), 401);
    assert_eq!(gateway.send(&Signer::Standard(NEW.to_vec()), "evt_new_after"), 202);
    assert!(gateway.logged("SIGHUP"), "the signal is logged");
    assert!(!gateway.logs.lock().unwrap().iter().any(|l| l.contains(&Signer::Standard(NEW.to_vec()).config_secret())));

    let pid_file = gateway.dir.path().join("idemgate.pid");
    assert_eq!(std::fs::read_to_string(&pid_file).unwrap().trim(), gateway.child.id().to_string());
    let mut gateway = gateway;
    assert!(Command::new("kill").args(["-TERM", &gateway.child.id().to_string()]).status().unwrap().success());
    assert!(gateway.child.wait().unwrap().success());
    assert!(!pid_file.exists(), "the pid file is removed at exit");
}

#[test]
fn an_invalid_configuration_on_reload_is_logged_and_the_running_one_keeps_serving() {
    let gateway = Reloading::start(&source(&[OLD], ""));
    gateway.rewrite("127.0.0.1:0", "[sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [\"whsec_%%%\"]\n");
    gateway.hangup();
    let errors = gateway.wait_for_log("config error: sources.hooks.secrets", 1);
    assert!(errors[0].contains("ERROR") && errors[0].contains("running configuration is kept"), "{errors:?}");
    assert_eq!(gateway.send(&Signer::Standard(OLD.to_vec()), "evt_1"), 202);
    assert!(!gateway.logged("reloaded configuration"));
}

#[test]
fn a_moved_listener_is_logged_as_needing_a_restart_and_the_old_one_keeps_serving() {
    let gateway = Reloading::start(&source(&[OLD], ""));
    gateway.rewrite("127.0.0.1:1", &source(&[OLD, NEW], ""));
    gateway.hangup();
    let warnings = gateway.wait_for_log("need a restart", 1);
    assert!(warnings[0].contains("WARN") && warnings[0].contains("server.listen"), "{warnings:?}");
    gateway.wait_for_log("reloaded configuration", 1);
    assert_eq!(gateway.send(&Signer::Standard(NEW.to_vec()), "evt_1"), 202, "the rest was applied");
}

#[test]
fn a_destination_added_by_reload_receives_the_events_accepted_after_it() {
    let (first, added) = (Destination::start(&[]), Destination::start(&[]));
    let destination =
        |name: &str, recorder: &Destination| format!("[destinations.{name}]\nurl = \"{}\"\n", recorder.url());
    let gateway = Reloading::start(&source(&[OLD], &format!("destinations = [\"a\"]\n{}", destination("a", &first))));
    assert_eq!(gateway.send(&Signer::Standard(OLD.to_vec()), "evt_before"), 202);
    first.wait_until("the first event", |r| r.len() == 1);

    let both = format!("destinations = [\"a\", \"b\"]\n{}{}", destination("a", &first), destination("b", &added));
    gateway.rewrite("127.0.0.1:0", &source(&[OLD], &both));
    gateway.hangup();
    let applied = gateway.wait_for_log("reloaded configuration", 1);
    assert!(applied[0].contains("destinations added: b"), "{applied:?}");
    assert_eq!(gateway.send(&Signer::Standard(OLD.to_vec()), "evt_after"), 202);
    added.wait_until("the event accepted after the reload", |r| !r.is_empty());
    first.wait_until("the second event", |r| r.len() == 2);
    let ids: Vec<String> = added.received().iter().map(|r| r.header("webhook-id").to_owned()).collect();
    assert_eq!(ids, ["evt_after"]);
}

#[test]
fn an_invalid_filter_on_reload_names_its_key_and_the_running_subscriptions_stay() {
    let app = Destination::start(&[]);
    let destinations = |filter: &str| {
        format!(
            "destinations = [{{ name = \"app\", filter = '{filter}' }}]\n[destinations.app]\nurl = \"{}\"\n",
            app.url()
        )
    };
    let gateway = Reloading::start(&source(&[OLD], &destinations(r#".type == "t""#)));
    gateway.rewrite("127.0.0.1:0", &source(&[OLD], &destinations(".type ==")));
    gateway.hangup();
    let errors = gateway.wait_for_log("config error: sources.hooks.destinations[0].filter", 1);
    assert!(errors[0].contains("running configuration is kept"), "{errors:?}");
    assert_eq!(gateway.send(&Signer::Standard(OLD.to_vec()), "evt_1"), 202);
    app.wait_until("the event the running filter matches", |r| r.len() == 1);
    assert!(!gateway.logged("reloaded configuration"));
}

/// The status of a bearer request to the admin API.
fn admin_status(admin: SocketAddr, method: &str, path: &str, token: &str) -> u16 {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    exchange(admin, head.as_bytes()).status()
}

#[test]
fn admin_tokens_and_roles_changed_by_reload_apply_to_the_next_request() {
    const OPS: &str = "ops-token-of-some-length";
    const VIEWER: &str = "viewer-token-of-some-length";
    let admin = |tokens: &str| format!("{}[admin]\nlisten = \"127.0.0.1:0\"\n{tokens}", source(&[OLD], ""));
    let ops = |role: &str| format!("[admin.tokens.ops]\ntoken = \"{OPS}\"\nrole = \"{role}\"\n");
    let (gateway, addr) = Reloading::start_with_admin(&admin(&ops("read")));
    assert_eq!(admin_status(addr, "GET", "/admin/v1/events", OPS), 200);
    assert_eq!(admin_status(addr, "POST", "/admin/v1/retry", OPS), 403, "read only");
    assert_eq!(admin_status(addr, "GET", "/admin/v1/events", VIEWER), 401, "not configured yet");

    let viewer = format!("[admin.tokens.viewer]\ntoken = \"{VIEWER}\"\n");
    gateway.rewrite("127.0.0.1:0", &admin(&format!("{}{viewer}", ops("operate"))));
    gateway.hangup();
    let applied = gateway.wait_for_log("reloaded configuration", 1);
    assert!(applied[0].contains("admin tokens changed"), "{applied:?}");
    assert!(!applied[0].contains(OPS) && !applied[0].contains(VIEWER), "{applied:?}");
    assert_eq!(admin_status(addr, "POST", "/admin/v1/retry", OPS), 200, "now operate");
    assert_eq!(admin_status(addr, "GET", "/admin/v1/events", VIEWER), 200);
    assert_eq!(admin_status(addr, "POST", "/admin/v1/retry", VIEWER), 403);
}
