//! `idemgate destination setup` on the machine's real brokers: it creates the RabbitMQ
//! queue (and exchange and binding) or the JetStream stream a destination publishes to,
//! events then flow to it, a second run changes nothing, and what exists otherwise (an
//! exchange of another type, a non-durable queue, a stream name taken for other
//! subjects), an HTTP destination and an unknown name are clear errors. Each test has
//! names of its own; the queues, exchanges and streams are deleted on drop.

use std::{process::Output, time::Duration};

use idemgate::worker::setup::stream_name;
use lapin::{
    Connection, ConnectionProperties, ExchangeKind,
    options::{ExchangeDeclareOptions, QueueDeclareOptions},
    types::FieldTable,
};

use crate::{
    broker_harness::{TestQueue, TestStream, amqp_url, nats_url, unique, wait_until},
    gateway_harness::{Setup, Signer, body, inbox, numbered},
    harness::unix_now,
};

const KEY: [u8; 32] = [7; 32];

/// Source `hooks` feeding `destination` (configured by `table`), the worker polling fast.
fn config(destination: &str, table: &str) -> String {
    format!(
        "[worker]\npoll_interval = \"50ms\"\n[sources.hooks]\nscheme = \"standard-webhooks\"\nsecrets = [{secret:?}]\n\
         event_type = \"/type\"\ndestinations = [{destination:?}]\n[destinations.{destination}]\n{table}\
         timeout = \"5s\"\nretry_schedule = [\"200ms\", \"200ms\", \"200ms\"]\njitter = 0.0\n",
        secret = Signer::Standard(KEY.to_vec()).config_secret(),
    )
}

fn rabbitmq(queue: &TestQueue) -> String {
    format!(
        "kind = \"rabbitmq\"\nurl = {:?}\nexchange = {:?}\nrouting_key = {:?}\n",
        amqp_url(),
        queue.exchange,
        queue.name
    )
}

fn nats(subject: &str) -> String {
    format!("kind = \"nats\"\nurl = {:?}\nsubject = {subject:?}\n", nats_url())
}

/// `destination setup NAME`: its stdout when it succeeds.
fn set_up(setup: &Setup, name: &str) -> String {
    let output = setup.run(&["destination", "setup", name], &[]);
    assert!(output.status.success(), "setup {name}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// `destination setup NAME` when it must fail: its stderr.
fn refused(setup: &Setup, name: &str) -> String {
    let output: Output = setup.run(&["destination", "setup", name], &[]);
    assert_eq!(output.status.code(), Some(1), "setup {name}: {output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    String::from_utf8(output.stderr).unwrap()
}

/// Sends `count` events through a gateway and waits until every job succeeded; their ids.
fn events_flow(setup: &Setup, count: usize) -> Vec<String> {
    let gateway = setup.start();
    let identities = numbered("evt_setup", count);
    for identity in &identities {
        let event = body(identity, "t");
        let headers = Signer::Standard(KEY.to_vec()).headers(identity, &event, unix_now());
        assert_eq!(gateway.post("hooks", &headers, &event).status(), 202, "{identity}");
    }
    wait_until(Duration::from_secs(60), "every job succeeded", || {
        let jobs = inbox(&setup.db()).jobs;
        jobs.len() == count && jobs.iter().all(|(_, _, state)| state == "succeeded")
    });
    gateway.stop();
    identities
}

fn amqp_ids(queue: &TestQueue) -> Vec<String> {
    let mut ids: Vec<String> = queue.take_all().into_iter().filter_map(|m| m.message_id).collect();
    ids.sort();
    ids
}

#[test]
fn setup_declares_the_queue_of_the_default_exchange_once_and_events_reach_it() {
    let queue = TestQueue::undeclared(&amqp_url());
    let setup = Setup::new(&config("queue", &rabbitmq(&queue)));
    let first = set_up(&setup, "queue");
    assert_eq!(first, format!("queue: queue {:?} (durable, on the default exchange): created\n", queue.name));
    let again = set_up(&setup, "queue");
    assert_eq!(again, format!("queue: queue {:?} (durable, on the default exchange): already there\n", queue.name));
    let sent = events_flow(&setup, 3);
    assert_eq!(amqp_ids(&queue), sent);
}

#[test]
fn setup_declares_an_exchange_of_its_own_and_a_queue_bound_with_the_routing_key() {
    let queue = TestQueue::undeclared_on_own_exchange(&amqp_url());
    let setup = Setup::new(&config("queue", &rabbitmq(&queue)));
    let (exchange, name) = (&queue.exchange, &queue.name);
    let lines = |found: &str| {
        format!(
            "queue: exchange {exchange:?} (durable, direct): {found}\nqueue: queue {name:?} (durable): {found}\n\
             queue: binding of queue {name:?} to exchange {exchange:?} with routing key {name:?}: in place\n"
        )
    };
    assert_eq!(set_up(&setup, "queue"), lines("created"));
    assert_eq!(set_up(&setup, "queue"), lines("already there"));
    let sent = events_flow(&setup, 3);
    assert_eq!(amqp_ids(&queue), sent);
}

#[test]
fn setup_creates_a_stream_for_the_subject_once_and_events_reach_it() {
    let subject = format!("idemgate.setup.{}", unique("s").replace('-', "_"));
    let stream = TestStream::named(&nats_url(), &stream_name(&subject), &subject);
    let setup = Setup::new(&config("stream", &nats(&subject)));
    // The schedule (3 x 200 ms, no jitter) is shorter than a minute: the window is one.
    let line = |found: &str| {
        format!("stream: stream {:?} for subject {subject:?}, duplicate window 1m: {found}\n", stream.name)
    };
    assert_eq!(set_up(&setup, "stream"), line("created"));
    assert_eq!(set_up(&setup, "stream"), line("already there"));
    let sent = events_flow(&setup, 3);
    let mut held: Vec<String> = stream.messages().iter().map(|m| m.header("Nats-Msg-Id").to_owned()).collect();
    held.sort();
    assert_eq!(held, sent);
}

#[test]
fn a_stream_that_already_covers_the_subject_is_kept_with_a_note_on_its_short_window() {
    let existing = TestStream::create(&nats_url());
    let setup = Setup::new(
        &config("stream", &nats(&existing.subject)).replace("[\"200ms\", \"200ms\", \"200ms\"]", "[\"2h\"]"),
    );
    let out = set_up(&setup, "stream");
    assert_eq!(
        out,
        format!(
            "stream: stream {:?} for subject {:?}, duplicate window 1h: already there; its duplicate window, 1h, is \
             shorter than 2h: a republish after it is stored twice\n",
            existing.name, existing.subject
        )
    );
}

/// Declares `exchange` as a durable fanout exchange and `queue` as a transient queue,
/// with lapin, as another tool would have.
fn declare_otherwise(exchange: &str, queue: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let connection = Connection::connect(&amqp_url(), ConnectionProperties::default()).await.unwrap();
        let channel = connection.create_channel().await.unwrap();
        let durable = ExchangeDeclareOptions { durable: true, ..ExchangeDeclareOptions::default() };
        channel.exchange_declare(exchange.into(), ExchangeKind::Fanout, durable, FieldTable::default()).await.unwrap();
        let transient = QueueDeclareOptions::default();
        channel.queue_declare(queue.into(), transient, FieldTable::default()).await.unwrap();
        let _ = connection.close(200, "done".into()).await;
    });
}

#[test]
fn what_exists_otherwise_an_http_destination_and_an_unknown_name_are_refused_clearly() {
    let on_exchange = TestQueue::undeclared_on_own_exchange(&amqp_url());
    let on_default = TestQueue::undeclared(&amqp_url());
    declare_otherwise(&on_exchange.exchange, &on_default.name);
    let subject = format!("idemgate.setup.{}", unique("t").replace('-', "_"));
    // A stream under the name setup would give the subject's stream, for another subject.
    let taken = TestStream::named(&nats_url(), &stream_name(&subject), &format!("{subject}.other"));
    taken.create_now();
    let tables = [
        config("exchange", &rabbitmq(&on_exchange)),
        config("queue", &rabbitmq(&on_default))
            .split_once("[destinations.")
            .map(|(_, d)| format!("[destinations.{d}"))
            .unwrap(),
        config("stream", &nats(&subject))
            .split_once("[destinations.")
            .map(|(_, d)| format!("[destinations.{d}"))
            .unwrap(),
        "[destinations.app]\nurl = \"http://127.0.0.1:9/hook\"\n".to_owned(),
    ];
    let setup = Setup::new(&tables.concat());

    let exchange = refused(&setup, "exchange");
    assert!(
        exchange.contains(&format!(
            "exchange {:?} (durable, direct) exists, but not as setup declares it: 406",
            on_exchange.exchange
        )),
        "{exchange}"
    );
    let queue = refused(&setup, "queue");
    assert!(
        queue.contains(&format!(
            "queue {:?} (durable, on the default exchange) exists, but not as setup declares it: 406",
            on_default.name
        )),
        "{queue}"
    );
    assert!(queue.contains("durable"), "the broker says what differs: {queue}");
    let stream = refused(&setup, "stream");
    assert!(stream.contains(&format!("stream {:?} exists, but not as setup declares it", taken.name)), "{stream}");
    let http = refused(&setup, "app");
    assert!(http.contains("app is not a queue destination"), "{http}");
    let unknown = refused(&setup, "nowhere");
    assert!(unknown.contains("no destination \"nowhere\""), "{unknown}");
    for text in [&exchange, &queue, &stream] {
        assert!(!text.contains(&amqp_url()) && !text.contains(&nats_url()), "no broker url in {text}");
    }
    assert_eq!(taken.messages().len(), 0, "the other stream is left as it was");
}
