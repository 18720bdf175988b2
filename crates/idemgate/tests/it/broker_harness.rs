//! Real brokers for the queue destinations' tests: a test queue on RabbitMQ and a test
//! stream on NATS JetStream (each with names of its own, on the machine's brokers at
//! `IDEMGATE_TEST_AMQP` and `IDEMGATE_TEST_NATS`, or on a private broker), read with the
//! brokers' own clients; and private brokers run as child processes on free ports, for
//! the tests that stop and start them (the machine's brokers serve other tests meanwhile).
//! A test fails when its broker cannot be reached.

use std::{
    collections::BTreeMap,
    net::{SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use lapin::{
    BasicProperties, Connection, ConnectionProperties, ExchangeKind,
    options::{
        BasicGetOptions, ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
        QueueDeleteOptions,
    },
    types::{AMQPValue, FieldTable},
};

pub fn amqp_url() -> String {
    std::env::var("IDEMGATE_TEST_AMQP").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned())
}

pub fn nats_url() -> String {
    std::env::var("IDEMGATE_TEST_NATS").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
}

/// A name no other test (nor another run) uses.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{prefix}-{}-{}", std::process::id(), nanos % 1_000_000_000_000)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

/// Waits until `done` holds, checking every 50 ms, and panics with `what` after `limit`.
pub fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A free port on 127.0.0.1 (free when asked).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn answers(port: u16) -> bool {
    TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_millis(200)).is_ok()
}

/// One message as a RabbitMQ consumer gets it.
#[derive(Debug, Clone)]
pub struct AmqpMessage {
    pub message_id: Option<String>,
    pub content_type: Option<String>,
    pub delivery_mode: Option<u8>,
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

/// A durable test queue, bound to a direct exchange of its own (routing key = the queue's
/// name) unless it is on the default exchange. Deleted on drop.
pub struct TestQueue {
    url: String,
    pub name: String,
    pub exchange: String,
    /// A queue that holds at most this many messages and nacks a publish beyond them.
    max_length: Option<i64>,
}

impl TestQueue {
    /// A queue on the default exchange.
    pub fn on_default_exchange(url: &str) -> Self {
        let queue = Self { url: url.to_owned(), name: unique("idemgate-q"), exchange: String::new(), max_length: None };
        queue.declare();
        queue
    }

    /// A queue on the default exchange that holds at most `max_length` messages and
    /// nacks every publish beyond them (`x-overflow = reject-publish`).
    pub fn bounded(url: &str, max_length: i64) -> Self {
        let name = unique("idemgate-q");
        let queue = Self { url: url.to_owned(), name, exchange: String::new(), max_length: Some(max_length) };
        queue.declare();
        queue
    }

    /// A queue bound to a new direct exchange.
    pub fn on_own_exchange(url: &str) -> Self {
        let queue =
            Self { url: url.to_owned(), name: unique("idemgate-q"), exchange: unique("idemgate-x"), max_length: None };
        queue.declare();
        queue
    }

    /// The names, no queue declared yet (see [`Self::declare`]).
    pub fn undeclared(url: &str) -> Self {
        Self { url: url.to_owned(), name: unique("idemgate-q"), exchange: String::new(), max_length: None }
    }

    /// The names of a queue on an exchange of its own, neither declared yet (both deleted
    /// on drop, whoever declared them).
    pub fn undeclared_on_own_exchange(url: &str) -> Self {
        Self { url: url.to_owned(), name: unique("idemgate-q"), exchange: unique("idemgate-x"), max_length: None }
    }

    pub fn declare(&self) {
        runtime().block_on(async {
            let connection = connect(&self.url).await;
            let channel = connection.create_channel().await.unwrap();
            let durable = QueueDeclareOptions { durable: true, ..QueueDeclareOptions::default() };
            let mut arguments = FieldTable::default();
            if let Some(max_length) = self.max_length {
                arguments.insert("x-max-length".into(), AMQPValue::LongLongInt(max_length));
                arguments.insert("x-overflow".into(), AMQPValue::LongString("reject-publish".into()));
            }
            channel.queue_declare(self.name.as_str().into(), durable, arguments).await.unwrap();
            if !self.exchange.is_empty() {
                let options = ExchangeDeclareOptions { durable: true, ..ExchangeDeclareOptions::default() };
                let (exchange, name) = (self.exchange.as_str(), self.name.as_str());
                channel
                    .exchange_declare(exchange.into(), ExchangeKind::Direct, options, FieldTable::default())
                    .await
                    .unwrap();
                let bind = QueueBindOptions::default();
                channel
                    .queue_bind(name.into(), exchange.into(), name.into(), bind, FieldTable::default())
                    .await
                    .unwrap();
            }
            let _ = connection.close(200, "done".into()).await;
        });
    }

    /// Every message in the queue now, taken (acknowledged) one by one.
    pub fn take_all(&self) -> Vec<AmqpMessage> {
        runtime().block_on(async {
            let connection = connect(&self.url).await;
            let channel = connection.create_channel().await.unwrap();
            let mut messages = Vec::new();
            let options = BasicGetOptions { no_ack: true };
            while let Some(got) = channel.basic_get(self.name.as_str().into(), options).await.unwrap() {
                messages.push(message(&got.delivery.properties, got.delivery.data.clone()));
            }
            let _ = connection.close(200, "done".into()).await;
            messages
        })
    }
}

impl Drop for TestQueue {
    fn drop(&mut self) {
        let (url, name, exchange) = (self.url.clone(), self.name.clone(), self.exchange.clone());
        runtime().block_on(async move {
            let Ok(connection) = Connection::connect(&url, ConnectionProperties::default()).await else { return };
            if let Ok(channel) = connection.create_channel().await {
                let _ = channel.queue_delete(name.as_str().into(), QueueDeleteOptions::default()).await;
                if !exchange.is_empty() {
                    let _ = channel.exchange_delete(exchange.as_str().into(), ExchangeDeleteOptions::default()).await;
                }
            }
            let _ = connection.close(200, "done".into()).await;
        });
    }
}

async fn connect(url: &str) -> Connection {
    Connection::connect(url, ConnectionProperties::default())
        .await
        .unwrap_or_else(|err| panic!("RabbitMQ is needed at {url} (set IDEMGATE_TEST_AMQP): {err}"))
}

fn message(properties: &BasicProperties, body: Vec<u8>) -> AmqpMessage {
    let headers = properties
        .headers()
        .as_ref()
        .map(|table| {
            table
                .inner()
                .iter()
                .filter_map(|(name, value)| match value {
                    AMQPValue::LongString(text) => Some((name.to_string(), text.to_string())),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    AmqpMessage {
        message_id: properties.message_id().as_ref().map(ToString::to_string),
        content_type: properties.content_type().as_ref().map(ToString::to_string),
        delivery_mode: *properties.delivery_mode(),
        headers,
        body,
    }
}

/// One message as the stream holds it.
#[derive(Debug, Clone)]
pub struct NatsMessage {
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

impl NatsMessage {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }
}

/// A JetStream stream of its own on a subject of its own, with a one-hour duplicate
/// window. Deleted on drop.
pub struct TestStream {
    url: String,
    pub name: String,
    pub subject: String,
}

impl TestStream {
    pub fn create(url: &str) -> Self {
        let stream = Self::uncreated(url);
        stream.create_now();
        stream
    }

    /// The names, no stream created yet (see [`Self::create_now`]).
    pub fn uncreated(url: &str) -> Self {
        let name = unique("idemgate_s").replace('-', "_");
        Self { url: url.to_owned(), subject: format!("idemgate.test.{name}"), name }
    }

    /// A stream `name` for `subject`, not created yet (deleted on drop, whoever created it).
    pub fn named(url: &str, name: &str, subject: &str) -> Self {
        Self { url: url.to_owned(), name: name.to_owned(), subject: subject.to_owned() }
    }

    pub fn create_now(&self) {
        runtime().block_on(async {
            let context = jetstream(&self.url).await;
            let config = async_nats::jetstream::stream::Config {
                name: self.name.clone(),
                subjects: vec![self.subject.clone()],
                duplicate_window: Duration::from_secs(3600),
                ..Default::default()
            };
            context.create_stream(config).await.unwrap();
        });
    }

    /// Every message the stream holds, in order.
    pub fn messages(&self) -> Vec<NatsMessage> {
        runtime().block_on(async {
            let context = jetstream(&self.url).await;
            let mut stream = context.get_stream(&self.name).await.unwrap();
            let state = stream.info().await.unwrap().state.clone();
            let mut messages = Vec::new();
            if state.messages == 0 {
                return messages;
            }
            for sequence in state.first_sequence..=state.last_sequence {
                let Ok(raw) = stream.get_raw_message(sequence).await else { continue };
                let headers = raw
                    .headers
                    .iter()
                    .filter_map(|(name, values)| Some((name.to_string(), values.first()?.to_string())))
                    .collect();
                messages.push(NatsMessage { headers, body: raw.payload.to_vec() });
            }
            messages
        })
    }
}

impl Drop for TestStream {
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        runtime().block_on(async move {
            if let Ok(client) = async_nats::connect(url.as_str()).await {
                let _ = async_nats::jetstream::new(client).delete_stream(&name).await;
            }
        });
    }
}

async fn jetstream(url: &str) -> async_nats::jetstream::Context {
    let client = async_nats::connect(url)
        .await
        .unwrap_or_else(|err| panic!("NATS is needed at {url} (set IDEMGATE_TEST_NATS): {err}"));
    async_nats::jetstream::new(client)
}

/// A NATS server with JetStream of this test's own, on a free port with a store folder
/// that outlives a stop, so that it can be started again as it was.
pub struct PrivateNats {
    child: Option<Child>,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl PrivateNats {
    pub fn start() -> Self {
        let mut nats = Self { child: None, port: free_port(), dir: tempfile::tempdir().unwrap() };
        nats.start_again();
        nats
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Starts the server (again) on its port and store folder, and waits until it answers.
    pub fn start_again(&mut self) {
        let child = Command::new(binary("nats-server", &["/usr/sbin/nats-server"]))
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string(), "-js", "-sd"])
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("nats-server is needed (the nats-server package): {err}"));
        self.child = Some(child);
        let port = self.port;
        wait_until(Duration::from_secs(30), "the private nats-server answers", || answers(port));
    }

    /// SIGKILL: the server keeps nothing it had not written.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for PrivateNats {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A RabbitMQ node of this test's own (its own node name, ports, database and logs in a
/// temporary folder, no plugins), run as a child process, stopped and started again on
/// the same database.
pub struct PrivateRabbit {
    child: Option<Child>,
    pub port: u16,
    dist_port: u16,
    node: String,
    dir: tempfile::TempDir,
}

impl PrivateRabbit {
    pub fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (port, dist_port) = (free_port(), free_port());
        let config = format!("listeners.tcp.1 = 127.0.0.1:{port}\n");
        std::fs::write(dir.path().join("rabbitmq.conf"), config).unwrap();
        std::fs::write(dir.path().join("enabled_plugins"), "[].\n").unwrap();
        let node = format!("idemgate-test-{}-{port}@localhost", std::process::id());
        let mut rabbit = Self { child: None, port, dist_port, node, dir };
        rabbit.start_again();
        rabbit
    }

    pub fn url(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/%2f", self.port)
    }

    fn command(&self, program: &str) -> Command {
        let path = self.dir.path();
        // The scripts under /usr/lib/rabbitmq/bin run as the caller; the ones in /usr/sbin
        // switch to the rabbitmq user, who cannot write this folder.
        let mut command = Command::new(binary(program, &[&format!("/usr/lib/rabbitmq/bin/{program}")]));
        command
            .env("HOME", path)
            .env("RABBITMQ_NODENAME", &self.node)
            .env("RABBITMQ_NODE_PORT", self.port.to_string())
            .env("RABBITMQ_DIST_PORT", self.dist_port.to_string())
            .env("RABBITMQ_CONFIG_FILE", path.join("rabbitmq.conf"))
            .env("RABBITMQ_MNESIA_BASE", path.join("mnesia"))
            .env("RABBITMQ_LOG_BASE", path.join("log"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", path.join("enabled_plugins"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    }

    /// Starts the node (again) and waits until it answers AMQP.
    pub fn start_again(&mut self) {
        let child = self
            .command("rabbitmq-server")
            .spawn()
            .unwrap_or_else(|err| panic!("rabbitmq-server is needed (the rabbitmq-server package): {err}"));
        self.child = Some(child);
        let port = self.port;
        wait_until(Duration::from_secs(90), "the private RabbitMQ node answers", || answers(port));
    }

    /// Stops the node as an operator would (`rabbitmqctl stop`) and waits for it to exit.
    pub fn stop(&mut self) {
        let status = self.command("rabbitmqctl").args(["-n", &self.node, "stop"]).status().unwrap();
        assert!(status.success(), "rabbitmqctl stop: {status}");
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        let port = self.port;
        wait_until(Duration::from_secs(30), "the private RabbitMQ node stops listening", || !answers(port));
    }
}

impl Drop for PrivateRabbit {
    fn drop(&mut self) {
        if self.child.is_some() {
            let _ = self.command("rabbitmqctl").args(["-n", &self.node, "stop"]).status();
            if let Some(mut child) = self.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// `name`'s first existing path among `preferred`, else `name` on the PATH.
fn binary(name: &str, preferred: &[&str]) -> PathBuf {
    preferred.iter().map(Path::new).find(|path| path.exists()).map_or_else(|| PathBuf::from(name), Path::to_path_buf)
}
