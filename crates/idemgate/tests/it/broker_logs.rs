//! What `idemgate serve` logs of a message RabbitMQ returns (a `mandatory` publish no
//! queue is bound for): one line of its own per attempt, naming the destination, the
//! outgoing id and the broker's reply, and nothing of the message's body or headers,
//! neither as text nor as the client library's decimal bytes. Against a real RabbitMQ.

use std::{
    fs::File,
    io::{BufRead, BufReader},
    net::SocketAddr,
    process::{Command, Stdio},
};

use crate::{
    broker_harness::{TestQueue, amqp_url, wait_until},
    gateway_harness::{Setup, Signer, idemgate_bin, inbox},
    harness::{post, unix_now},
};

const KEY: [u8; 32] = [36; 32];
const BODY_MARK: &str = "card-4111-payload-mark";
const TYPE_MARK: &str = "type.header-mark";
const TENANT_MARK: &str = "tenant-header-mark";

fn config(queue: &TestQueue) -> String {
    format!(
        "[worker]\npoll_interval = \"50ms\"\n\
         [sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\nevent_type = \"/type\"\n\
         forward_headers = [\"x-tenant\"]\ndestinations = [\"queue\"]\n\
         [destinations.queue]\nkind = \"rabbitmq\"\nurl = {url:?}\nexchange = \"\"\nrouting_key = {key:?}\n\
         timeout = \"5s\"\nretry_schedule = [\"100ms\", \"100ms\"]\njitter = 0.0\n",
        secret = Signer::Standard(KEY.to_vec()).config_secret(),
        url = amqp_url(),
        key = queue.name,
    )
}

/// `text` as lapin's `Debug` shows a byte vector: `99, 97, 114, …`.
fn decimal_bytes(text: &str) -> String {
    text.bytes().map(|b| b.to_string()).collect::<Vec<_>>().join(", ")
}

#[test]
fn a_returned_message_is_logged_as_one_line_of_ours_without_its_body_or_headers() {
    // No queue of this name exists: the default exchange returns the message (NO_ROUTE).
    let queue = TestQueue::undeclared(&amqp_url());
    let setup = Setup::new(&config(&queue));
    let log_path = setup.dir.path().join("serve.log");
    let mut child = Command::new(idemgate_bin())
        .args(["serve", "--config"])
        .arg(setup.config())
        .env_remove("IDEMGATE_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr: SocketAddr = line.trim().strip_prefix("listening on ").unwrap().parse().unwrap();

    let identity = "evt_returned";
    let body = format!(r#"{{"type":"{TYPE_MARK}","card":"{BODY_MARK}"}}"#);
    let mut headers = Signer::Standard(KEY.to_vec()).headers(identity, body.as_bytes(), unix_now());
    headers.push(("x-tenant".to_owned(), TENANT_MARK.to_owned()));
    assert_eq!(post(addr, "/in/hooks", &headers, body.as_bytes()).status(), 202);
    wait_until(std::time::Duration::from_secs(60), "the job is dead after its three attempts", || {
        inbox(&setup.db()).jobs.iter().any(|(_, _, state)| state == "dead")
    });
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(child.wait().unwrap().success());
    let log = std::fs::read_to_string(&log_path).unwrap();

    let ours: Vec<&str> = log.lines().filter(|l| l.contains("the broker returned the message")).collect();
    assert_eq!(ours.len(), 3, "one line per attempt: {log}");
    for line in &ours {
        assert!(line.contains(" WARN "), "{line}");
        assert!(
            line.contains(&format!("destination=queue outgoing_id={identity} reply_code=312 reply_text=\"NO_ROUTE\"")),
            "{line}"
        );
    }
    let marks = [BODY_MARK, TYPE_MARK, TENANT_MARK];
    let decimal = [BODY_MARK, TYPE_MARK, TENANT_MARK, &body].map(decimal_bytes);
    for secret in marks.iter().copied().chain(decimal.iter().map(String::as_str)) {
        assert!(!log.contains(secret), "{secret:?} in the log: {log}");
    }
    assert!(!log.contains("BasicReturnMessage") && !log.contains("data: ["), "{log}");
}
