//! The `idemgate` command: `serve` runs the gateway, `verify` explains a captured delivery.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
    time::Duration,
};

use anyhow::{Context, anyhow};
use clap::{Parser, Subcommand};
use idemgate::{
    availability::{self, Availability},
    bench,
    config::{self, Config},
    gateway, operator, outbound, send, verify,
};
use idemgate_clock::{Clock, SystemClock};
use idemgate_core::{Secret, UnixTime, job::JobState};
use idemgate_http::{ServeOptions, idempotency, serve, system_now, termination_signal};
use idemgate_store::{SqliteReader, Store, jobs::ReplayFilter, maintenance, views};
use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::watch;

/// mimalloc instead of the system allocator: the gateway allocates per request (bodies,
/// headers, futures), and glibc's malloc and free were about a tenth of its CPU time under
/// load (BENCHMARKS.md, "Profile").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(version, about = "Webhook inbox and idempotency gateway")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Receive webhooks for the configured sources (and deliver them, unless
    /// `[worker] enabled = false`).
    Serve {
        /// The TOML configuration file.
        #[arg(long, default_value = "idemgate.toml")]
        config: PathBuf,
    },
    /// Deliver stored events to their destinations, without receiving any.
    Worker {
        /// The TOML configuration file.
        #[arg(long, default_value = "idemgate.toml")]
        config: PathBuf,
    },
    /// Check a captured request offline against a source's configuration.
    Verify {
        /// The TOML configuration file.
        #[arg(long, default_value = "idemgate.toml")]
        config: PathBuf,
        /// The source id (its `[sources.<id>]` table).
        #[arg(long)]
        source: String,
        /// File with the request's headers, one `Name: value` per line.
        #[arg(long)]
        headers: PathBuf,
        /// File with the raw body bytes.
        #[arg(long)]
        body: PathBuf,
        /// Judge the timestamp as of this unix time instead of now.
        #[arg(long)]
        at: Option<i64>,
    },
    /// Work with stored events.
    Events {
        #[command(subcommand)]
        command: EventsCommand,
    },
    /// Work with destinations.
    Destination {
        #[command(subcommand)]
        command: DestinationCommand,
    },
    /// Retention and backups.
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Send one request and retry it safely (or, with --repeat, many).
    Send(SendArgs),
    /// Drive a server with load over real HTTP and report throughput and latency.
    Bench {
        #[command(subcommand)]
        workload: BenchWorkload,
    },
}

#[derive(clap::Args)]
struct SendArgs {
    /// Where to send it.
    url: String,
    /// The HTTP method.
    #[arg(long, short = 'X', default_value = "POST")]
    method: String,
    /// A header, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H')]
    headers: Vec<String>,
    /// The body, sent byte for byte.
    #[arg(long, short = 'd', conflicts_with = "data_file")]
    data: Option<String>,
    /// Read the body from this file (`-` for standard input).
    #[arg(long)]
    data_file: Option<PathBuf>,
    /// Sign as a webhook with this scheme (standard-webhooks, demo-webhook-v1, github,
    /// stripe, shopify, slack).
    #[arg(long, requires = "secret")]
    scheme: Option<String>,
    /// The signing secret: `env:NAME` or `file:PATH` (a literal works but shows in `ps`).
    #[arg(long)]
    secret: Option<String>,
    /// The webhook's event identity (`webhook-id`, `X-GitHub-Delivery`, ...); generated
    /// once when absent, and kept on every retry.
    #[arg(long)]
    event_id: Option<String>,
    /// The Idempotency-Key, so separate invocations share one operation; generated once
    /// per operation for POST, PATCH and DELETE when absent.
    #[arg(long)]
    idempotency_key: Option<String>,
    /// Attempts in all, the first included.
    #[arg(long, default_value_t = 5)]
    max_attempts: u32,
    /// Timeout of one attempt.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// Show every attempt on stderr.
    #[arg(long, short)]
    verbose: bool,
    /// Send this many operations (each with its own key or event id unless one is given).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Operations in flight at once with --repeat.
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
}

#[derive(Subcommand)]
enum BenchWorkload {
    /// Signed increments against a server speaking the counter contract
    /// (`shared/contracts/counter-example.md`); checks exactly-once at the end.
    Counter {
        /// The webhook URL, e.g. http://127.0.0.1:8081/webhook.
        #[arg(long)]
        target: String,
        /// Environment variable holding the 64-hex-character secret.
        #[arg(long, default_value = "COUNTER_SECRET")]
        secret_env: String,
        /// Distinct events.
        #[arg(long, default_value_t = 10_000)]
        events: usize,
        /// Redeliveries, as a share of the events (0.2 = one in five is sent twice).
        #[arg(long, default_value_t = 0.2)]
        redeliver: f64,
        #[command(flatten)]
        run: BenchRun,
    },
    /// Signed webhook events against a gateway source (`POST /in/<route>`); checks that
    /// every event was accepted exactly once.
    Webhooks {
        /// The source's URL, e.g. http://127.0.0.1:8080/in/demo; several, comma-separated,
        /// share the connections round-robin (instances on one store).
        #[arg(long)]
        target: String,
        /// The source's scheme.
        #[arg(long, default_value = "standard-webhooks")]
        scheme: String,
        /// The signing secret: `env:NAME`, `file:PATH` or a literal.
        #[arg(long)]
        secret: String,
        /// Distinct events.
        #[arg(long, default_value_t = 10_000)]
        events: usize,
        /// Redeliveries, as a share of the events.
        #[arg(long, default_value_t = 0.2)]
        redeliver: f64,
        #[command(flatten)]
        run: BenchRun,
    },
    /// Fill a store with synthetic receipts, to measure throughput on a large store.
    Seed {
        /// The SQLite file (created if missing).
        #[arg(long)]
        db: PathBuf,
        /// The source id the receipts belong to.
        #[arg(long, default_value = "demo-source")]
        source: String,
        /// How many.
        #[arg(long, default_value_t = 10_000_000)]
        receipts: u64,
    },
    /// POSTs against an API, optionally with Idempotency-Keys.
    Api {
        /// The URL to POST to, e.g. http://127.0.0.1:7000/orders.
        #[arg(long)]
        target: String,
        /// Requests in the measured round.
        #[arg(long, default_value_t = 10_000)]
        requests: usize,
        /// `none`: no key; `unique`: a fresh key each; `replay`: the keys of an unmeasured
        /// first round, sent again.
        #[arg(long, default_value = "unique")]
        keys: String,
        #[command(flatten)]
        run: BenchRun,
    },
}

#[derive(clap::Args)]
struct BenchRun {
    /// Keep-alive connections sending at once.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Open loop: send this many requests per second whatever the answers, and count each
    /// latency from the moment its request was due (default: as fast as answers come).
    #[arg(long)]
    rate: Option<f64>,
    /// Seed for event ids, keys and shuffling (change it to run again on the same store).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum EventsCommand {
    /// List events, newest first, with their jobs' states.
    List {
        /// The TOML configuration file.
        #[arg(long, default_value = "idemgate.toml")]
        config: PathBuf,
        /// Only this source id.
        #[arg(long)]
        source: Option<String>,
        /// Only events with a job in this state (e.g. dead).
        #[arg(long)]
        state: Option<JobState>,
        /// Only events with a job for this destination.
        #[arg(long)]
        destination: Option<String>,
        /// Received at or after this unix time.
        #[arg(long)]
        since: Option<i64>,
        /// Received before this unix time.
        #[arg(long)]
        until: Option<i64>,
        /// The next page: events with an id below this.
        #[arg(long)]
        before: Option<i64>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One event: its receipt, jobs and every delivery attempt.
    Show {
        /// The TOML configuration file.
        #[arg(long, default_value = "idemgate.toml")]
        config: PathBuf,
        /// The source id.
        source: String,
        /// The event identity.
        identity: String,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Counts per source: receipts, conflicts, jobs by state.
    Stats {
        /// The TOML configuration file.
        #[arg(long, default_value = "idemgate.toml")]
        config: PathBuf,
        /// Only what arrived at or after this unix time.
        #[arg(long)]
        since: Option<i64>,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Send finished jobs again (default: the dead ones), with the same `webhook-id`.
    Replay {
        /// The TOML configuration file.
        #[arg(long, default_value = "idemgate.toml")]
        config: PathBuf,
        #[command(flatten)]
        filter: ReplayArgs,
    },
}

#[derive(clap::Args)]
struct ReplayArgs {
    /// Only this source id.
    #[arg(long)]
    source: Option<String>,
    /// Only this event identity.
    #[arg(long)]
    identity: Option<String>,
    /// Only this destination.
    #[arg(long)]
    destination: Option<String>,
    /// Jobs in this state: dead (default), superseded (forced delivery) or succeeded (resend).
    #[arg(long, default_value = "dead")]
    state: JobState,
    /// Only events received at or after this unix time.
    #[arg(long)]
    since: Option<i64>,
    /// Only events received before this unix time.
    #[arg(long)]
    until: Option<i64>,
}

#[derive(Subcommand)]
enum StoreCommand {
    /// Forget what every source's retention allows (never unfinished work).
    Purge {
        /// The TOML configuration file.
        #[arg(long, default_value = "idemgate.toml")]
        config: PathBuf,
        /// Only count what would go.
        #[arg(long)]
        dry_run: bool,
    },
    /// Write a consistent copy of the store to a new file, while servers run.
    Backup {
        /// The TOML configuration file.
        #[arg(long, default_value = "idemgate.toml")]
        config: PathBuf,
        /// The new file.
        #[arg(long)]
        to: PathBuf,
    },
    /// Replace the store with a backup; refused while any idemgate process has it open.
    Restore {
        /// The TOML configuration file.
        #[arg(long, default_value = "idemgate.toml")]
        config: PathBuf,
        /// The backup file.
        #[arg(long)]
        from: PathBuf,
    },
}

#[derive(Subcommand)]
enum DestinationCommand {
    /// Resume deliveries to a destination disabled by a `410 Gone`.
    Enable {
        /// The TOML configuration file.
        #[arg(long, default_value = "idemgate.toml")]
        config: PathBuf,
        /// The destination's name.
        name: String,
    },
}

impl Command {
    /// The configuration file, for the commands that read one.
    fn config(&self) -> Option<&Path> {
        Some(match self {
            Self::Serve { config }
            | Self::Worker { config }
            | Self::Verify { config, .. }
            | Self::Events { command: EventsCommand::Replay { config, .. } }
            | Self::Events { command: EventsCommand::List { config, .. } }
            | Self::Events { command: EventsCommand::Show { config, .. } }
            | Self::Events { command: EventsCommand::Stats { config, .. } }
            | Self::Destination { command: DestinationCommand::Enable { config, .. } }
            | Self::Store { command: StoreCommand::Purge { config, .. } }
            | Self::Store { command: StoreCommand::Backup { config, .. } }
            | Self::Store { command: StoreCommand::Restore { config, .. } } => config,
            Self::Bench { .. } | Self::Send(_) => return None,
        })
    }
}

/// Exit codes: 0 success, 1 runtime failure or failed check, 2 bad configuration or usage.
const EXIT_FAILED: u8 = 1;
const EXIT_CONFIG: u8 = 2;
/// Jobs replayed per write transaction.
const REPLAY_BATCH: usize = 500;

fn main() -> ExitCode {
    let command = Cli::parse().command;
    let result = match command.config() {
        None => run(command, None),
        Some(path) => match load_config(path, matches!(command, Command::Serve { .. } | Command::Worker { .. })) {
            Ok(config) => run(command, Some(config)),
            Err(err) => {
                eprintln!("idemgate: config error: {err}");
                return ExitCode::from(EXIT_CONFIG);
            }
        },
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("idemgate: {err:#}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// Runs `command`; `config` is loaded for every command that names one.
fn run(command: Command, config: Option<Config>) -> anyhow::Result<ExitCode> {
    let config = || config.ok_or_else(|| anyhow!("this command needs --config"));
    match command {
        Command::Serve { .. } => serve_gateway(config()?, true),
        Command::Worker { .. } => serve_gateway(config()?, false),
        Command::Verify { source, headers, body, at, .. } => verify_capture(&config()?, &source, &headers, &body, at),
        Command::Events { command: EventsCommand::Replay { filter, .. } } => replay(&config()?, filter, &SystemClock),
        Command::Events { command } => events_view(&config()?, command),
        Command::Destination { command: DestinationCommand::Enable { name, .. } } => {
            enable(&config()?, name, &SystemClock)
        }
        Command::Bench { workload } => bench(workload),
        Command::Send(args) => send_command(args),
        Command::Store { command } => store_command(&config()?, command),
    }
}

/// Loads the configuration; `long_running` commands log its warnings (the short ones
/// would repeat them on every invocation).
fn load_config(path: &Path, long_running: bool) -> Result<Config, config::ConfigError> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("IDEMGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter);
    // IDEMGATE_LOG_FORMAT=json: one JSON object per line, for log pipelines.
    if std::env::var("IDEMGATE_LOG_FORMAT").is_ok_and(|f| f == "json") {
        logs.json().init();
    } else {
        logs.init();
    }
    let (config, warnings) = config::load(path, std::env::vars())?;
    for warning in warnings.iter().filter(|_| long_running) {
        tracing::warn!("{}", warning.0);
    }
    Ok(config)
}

/// Runs the receiving side (`receive`), the worker (if enabled), or the worker alone. A
/// store that cannot be opened yet is opened in the background (`availability`).
fn serve_gateway(config: Config, receive: bool) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
    runtime.block_on(async move {
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(async move {
            termination_signal().await;
            let _ = stop.send(true);
        });
        let availability = match Availability::open(&config.store, stopped.clone()).await {
            Ok(availability) => Arc::new(availability),
            Err(err) if err.is_config() => {
                let key = if config.store.postgres.is_some() { "store.url" } else { "store.path" };
                eprintln!("idemgate: config error: {key}: {err}");
                return Ok(ExitCode::from(EXIT_CONFIG));
            }
            Err(err) => return Err(err.into()),
        };
        let store = availability.store.clone();
        let worker = (config.worker.enabled || !receive).then(|| outbound::worker(&config, &store)).transpose()?;
        let worker = worker.map(|worker| {
            let (availability, stopped) = (Arc::clone(&availability), stopped.clone());
            tokio::spawn(async move {
                if availability.until_open(stopped.clone()).await {
                    worker.run(stopped).await;
                }
            })
        });
        if receive {
            receive_until_stopped(&config, &availability, stopped).await?;
        } else {
            tracing::info!(destinations = config.destinations.len(), "worker running");
            print_line("worker running")?;
        }
        if let Some(worker) = worker {
            let _ = worker.await;
        }
        store.close().await;
        tracing::info!("stopped");
        Ok(ExitCode::SUCCESS)
    })
}

async fn receive_until_stopped(
    config: &Config,
    availability: &Arc<Availability>,
    mut stopped: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let store = &availability.store;
    let listener = tokio::net::TcpListener::bind(config.server.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.server.listen))?;
    let address = listener.local_addr()?;
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .context("cannot install the metrics recorder")?;
    let rejections: Arc<idemgate_http::RejectionCounts> = Arc::default();
    let observers = gateway::Observers { metrics: Some(metrics), rejections: Arc::clone(&rejections) };
    let router = gateway::router(config, store, observers).context("cannot build the proxy's http client")?;
    let purges = {
        let (availability, stopped) = (Arc::clone(availability), stopped.clone());
        let (policies, interval, proxies) =
            (config.retention(), config.store.purge_interval, !config.proxies.is_empty());
        async move {
            if !availability.until_open(stopped).await {
                return;
            }
            let store = availability.store.clone();
            if proxies {
                let clock = Arc::new(SystemClock);
                tokio::spawn(idempotency::purge_expired_every(store.clone(), clock, Duration::from_secs(60)));
            }
            purge_every(store, policies, interval).await;
        }
    };
    tokio::spawn(purges);
    let options = ServeOptions {
        header_timeout: config.server.header_timeout,
        shutdown_grace: config.server.shutdown_grace,
        tls: config.server.tls.as_ref().map(|tls| tls.acceptor.clone()),
    };
    for source in &config.sources {
        tracing::info!(source = %source.id, scheme = source.scheme.name(), route = %format!("/in/{}", source.route), "source ready");
    }
    print_line(&format!("listening on {address}"))?;
    let admin = match &config.admin {
        Some(admin) => Some(serve_admin(admin, &config.server, store, rejections, stopped.clone()).await?),
        None => {
            tracing::info!("admin API off: no [admin] token configured");
            None
        }
    };
    let shutdown = async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    serve(listener, router, options, shutdown).await?;
    if let Some(admin) = admin {
        let _ = admin.await;
    }
    Ok(())
}

/// Starts the admin API on its own listener, with the public listener's timeouts and TLS
/// (`[admin.tls]` or `[server.tls]`); prints `admin listening on ADDR` second.
async fn serve_admin(
    admin: &config::AdminConfig,
    server: &config::ServerConfig,
    store: &Store,
    rejections: Arc<idemgate_http::RejectionCounts>,
    mut stopped: watch::Receiver<bool>,
) -> anyhow::Result<tokio::task::JoinHandle<std::io::Result<()>>> {
    let listener = tokio::net::TcpListener::bind(admin.listen)
        .await
        .with_context(|| format!("cannot listen on {} (admin)", admin.listen))?;
    print_line(&format!("admin listening on {}", listener.local_addr()?))?;
    let state = idemgate_http::admin::AdminState {
        store: store.clone(),
        token: admin.token.clone(),
        rejections,
        sessions: Arc::new(idemgate_http::session::Sessions::new(admin.session_lifetime)),
        tls: admin.tls.is_some(),
        body_timeout: server.body_timeout,
        clock: Arc::new(SystemClock),
    };
    let options = ServeOptions {
        header_timeout: server.header_timeout,
        shutdown_grace: server.shutdown_grace,
        tls: admin.tls.as_ref().map(|tls| tls.acceptor.clone()),
    };
    let shutdown = async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    Ok(tokio::spawn(serve(listener, idemgate_http::admin::router(state), options, shutdown)))
}

/// The configured store for a command that needs it now.
async fn open_store(config: &Config) -> anyhow::Result<Store> {
    Ok(availability::open(&config.store).await?)
}

/// The first stdout line (`listening on ADDR`, so scripts and tests learn the real port
/// of `127.0.0.1:0`, or `worker running`).
fn print_line(line: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")?;
    stdout.flush()?;
    Ok(())
}

/// Replays the jobs matching at the start, in batches, so a large replay shows its progress
/// and never holds the write lock for long.
fn replay(config: &Config, args: ReplayArgs, clock: &dyn Clock) -> anyhow::Result<ExitCode> {
    let filter = ReplayFilter {
        source: args.source,
        identity: args.identity,
        destination: args.destination,
        state: Some(args.state),
        since: args.since.map(UnixTime),
        until: args.until.map(UnixTime),
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
    runtime.block_on(async move {
        let store = open_store(config).await?;
        let progress = ProgressBar::new(0).with_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} jobs replayed")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let replayed = store
            .replay_all(filter, clock.now(), REPLAY_BATCH, |done, total| {
                progress.set_length(total as u64);
                progress.set_position(done as u64);
                std::future::ready(())
            })
            .await?;
        progress.finish_and_clear();
        print_line(&format!("replayed {replayed} job(s); the worker delivers them with their original webhook-id"))?;
        Ok(ExitCode::SUCCESS)
    })
}

fn enable(config: &Config, name: String, clock: &dyn Clock) -> anyhow::Result<ExitCode> {
    if !config.destinations.contains_key(&name) {
        return Err(anyhow!("no destination {name:?} in the configuration"));
    }
    let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
    runtime.block_on(async move {
        let store = open_store(config).await?;
        let was_disabled = store.enable_destination(name.clone(), clock.now()).await?;
        print_line(&format!(
            "{name}: {}",
            if was_disabled { "enabled; waiting jobs are due now" } else { "was not disabled" }
        ))?;
        Ok(ExitCode::SUCCESS)
    })
}

fn verify_capture(
    config: &Config,
    source: &str,
    headers: &Path,
    body: &Path,
    at: Option<i64>,
) -> anyhow::Result<ExitCode> {
    let source = config
        .sources
        .iter()
        .find(|s| s.id.as_str() == source)
        .ok_or_else(|| anyhow!("no source {source:?} in the configuration"))?;
    let head = std::fs::read_to_string(headers).with_context(|| format!("cannot read {}", headers.display()))?;
    let headers = verify::parse_headers(&head).map_err(|err| anyhow!("{}: {err}", headers.display()))?;
    let body = std::fs::read(body).with_context(|| format!("cannot read {}", body.display()))?;
    let now = at.map_or_else(system_now, UnixTime);
    let checks = verify::verify_capture(source, &headers, &body, now);
    let mut stdout = std::io::stdout().lock();
    for check in &checks {
        match &check.result {
            Ok(found) => writeln!(stdout, "{:<9} ok      {found}", check.name)?,
            Err(why) => writeln!(stdout, "{:<9} FAILED  {why}", check.name)?,
        }
    }
    let passed = checks.iter().all(|c| c.result.is_ok());
    Ok(if passed { ExitCode::SUCCESS } else { ExitCode::from(EXIT_FAILED) })
}

/// Builds the workload, drives it, prints the report; exit 1 if exactly-once failed.
fn bench(workload: BenchWorkload) -> anyhow::Result<ExitCode> {
    let (target, work, run) = match workload {
        BenchWorkload::Seed { db, source, receipts } => {
            let started = std::time::Instant::now();
            let written = maintenance::seed_receipts(&db, &source, receipts, system_now())?;
            print_line(&format!("seeded {written} receipts of {source} in {:.1} s", started.elapsed().as_secs_f64()))?;
            return Ok(ExitCode::SUCCESS);
        }
        BenchWorkload::Counter { target, secret_env, events, redeliver, run } => {
            let text = std::env::var(&secret_env).with_context(|| format!("{secret_env} is not set"))?;
            let secret = Secret::from_hex(&text, 32).map_err(|err| anyhow!("{secret_env}: {err}"))?;
            (target, bench::counter_workload(&secret, events, redeliver, run.seed), run)
        }
        BenchWorkload::Webhooks { target, scheme, secret, events, redeliver, run } => {
            let text = config::secrets::resolve("--secret", &secret, Path::new("."), &mut Vec::new())?;
            let signer = send::signer(&scheme, &text)?;
            (target, bench::webhook_workload(&signer, events, redeliver, run.seed), run)
        }
        BenchWorkload::Api { target, requests, keys, run } => {
            let work = match keys.as_str() {
                "none" => bench::api_workload(requests, false, run.seed),
                "unique" | "replay" => bench::api_workload(requests, true, run.seed),
                other => return Err(anyhow!("--keys must be none, unique or replay, not {other:?}")),
            };
            if keys == "replay" {
                let runtime = tokio::runtime::Runtime::new()?;
                runtime.block_on(bench::drive(&target, work.clone(), run.concurrency, !run.json, None))?;
            }
            (target, work, run)
        }
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
    let report = runtime.block_on(bench::drive(&target, work, run.concurrency, !run.json, run.rate))?;
    print_line(&if run.json { report.to_json().to_string() } else { report.to_text() })?;
    Ok(if report.exactly_once == Some(false) { ExitCode::from(EXIT_FAILED) } else { ExitCode::SUCCESS })
}

fn send_command(args: SendArgs) -> anyhow::Result<ExitCode> {
    let body = match (&args.data, &args.data_file) {
        (Some(data), _) => data.clone().into_bytes(),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut body = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut body).context("cannot read standard input")?;
            body
        }
        (None, Some(path)) => std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?,
        (None, None) => Vec::new(),
    };
    let method = http::Method::from_bytes(args.method.to_ascii_uppercase().as_bytes())
        .map_err(|_| anyhow!("{:?} is not an HTTP method", args.method))?;
    let headers = args.headers.iter().map(|h| send::header(h)).collect::<Result<Vec<_>, _>>()?;
    let signer = match (&args.scheme, &args.secret) {
        (Some(scheme), Some(reference)) => {
            let mut warnings = Vec::new();
            let text = config::secrets::resolve("--secret", reference, Path::new("."), &mut warnings)?;
            Some(send::signer(scheme, &text)?)
        }
        _ => None,
    };
    let client = idemgate_client::Client::new(idemgate_client::ClientOptions {
        max_attempts: args.max_attempts.max(1),
        timeout: args.timeout,
        ..Default::default()
    })?;
    let (url, key, event_id) = (args.url.clone(), args.idempotency_key.clone(), args.event_id.clone());
    let make = Arc::new(move |i: usize| {
        let mut request = idemgate_client::Request::new(method.clone(), url.clone()).body(body.clone());
        if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-type")) && !body.is_empty() {
            request = request.header("content-type", "application/json");
        }
        for (name, value) in &headers {
            request = request.header(name.clone(), value.clone());
        }
        if let Some(key) = &key {
            request = request.idempotency_key(key.clone());
        }
        if let Some(signer) = &signer {
            let identity =
                event_id.clone().unwrap_or_else(|| format!("evt_{:016x}{:04x}", fastrand::u64(..), i % 0xffff));
            request = request.webhook(signer.clone(), identity);
        }
        request
    });
    let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
    if args.repeat > 1 {
        let (outcomes, statuses, elapsed) =
            runtime.block_on(send::repeat(&client, make, args.repeat, args.concurrency));
        let rate = args.repeat as f64 / elapsed.as_secs_f64().max(f64::EPSILON);
        print_line(&format!(
            "{} operations in {:.2} s ({rate:.0}/s): {outcomes:?}, statuses {statuses:?}",
            args.repeat,
            elapsed.as_secs_f64()
        ))?;
        let worst = if outcomes.contains_key("gave up") {
            send::EXIT_GAVE_UP
        } else if outcomes.contains_key("rejected") {
            send::EXIT_REJECTED
        } else {
            0
        };
        return Ok(ExitCode::from(worst));
    }
    let sent = runtime.block_on(client.send(make(0)))?;
    if args.verbose {
        eprint!("{}", send::describe_attempts(&sent));
    }
    print_line(&format!("{}\n{}", sent.status, String::from_utf8_lossy(&sent.body)))?;
    Ok(ExitCode::from(send::exit_code(sent.outcome)))
}

/// Purges what retention allows, every `interval`, for as long as the server runs.
async fn purge_every(store: Store, policies: Vec<maintenance::Retention>, interval: Duration) {
    loop {
        tokio::time::sleep(interval).await;
        match store.purge(system_now(), policies.clone()).await {
            Ok(report) => tracing::info!(?report, "retention purge"),
            Err(err) => tracing::warn!(error = %err, "retention purge failed"),
        }
    }
}

fn store_command(config: &Config, command: StoreCommand) -> anyhow::Result<ExitCode> {
    let path = &config.store.path;
    let line = match command {
        StoreCommand::Purge { dry_run, .. } => {
            let report = match &config.store.postgres {
                Some(_) => {
                    let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
                    runtime.block_on(async {
                        let store = open_store(config).await?;
                        let report = if dry_run {
                            store.purge_dry_run(system_now(), config.retention()).await
                        } else {
                            store.purge(system_now(), config.retention()).await
                        };
                        store.close().await;
                        anyhow::Ok(report?)
                    })?
                }
                None => maintenance::purge_file(path, system_now(), &config.retention(), dry_run)?,
            };
            let verb = if dry_run { "would purge" } else { "purged" };
            format!(
                "{verb} {} receipt(s), {} event(s) with their jobs, {} payload(s), {} conflict record(s)",
                report.receipts, report.events, report.payloads, report.conflicts
            )
        }
        StoreCommand::Backup { .. } | StoreCommand::Restore { .. } if config.store.postgres.is_some() => {
            return Err(anyhow!(
                "store backup and restore work on the SQLite file; back up PostgreSQL with pg_dump or a base backup"
            ));
        }
        StoreCommand::Backup { to, .. } => {
            let summary = maintenance::backup(path, &to)?;
            format!(
                "backup {}: {} receipt(s), {} event(s), {} job(s), one consistent snapshot",
                to.display(),
                summary.receipts,
                summary.events,
                summary.jobs
            )
        }
        StoreCommand::Restore { from, .. } => {
            let restored = maintenance::restore(&from, path)?;
            let kept = restored.kept.map(|kept| format!("; the replaced store is kept as {}", kept.display()));
            format!(
                "restored {} from {}: {} receipt(s){}; events received after the backup are forgotten (see the README)",
                path.display(),
                from.display(),
                restored.summary.receipts,
                kept.unwrap_or_default()
            )
        }
    };
    print_line(&line)?;
    Ok(ExitCode::SUCCESS)
}

fn events_view(config: &Config, command: EventsCommand) -> anyhow::Result<ExitCode> {
    if config.store.postgres.is_none() {
        // A view never creates a store: a missing or foreign file is an error.
        SqliteReader::open(&config.store.path)
            .with_context(|| format!("cannot read the store {}", config.store.path.display()))?;
    }
    let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
    let text = runtime.block_on(async {
        let store = open_store(config).await?;
        let text = match command {
            EventsCommand::List { source, state, destination, since, until, before, limit, json, .. } => {
                let filter = views::EventFilter {
                    source,
                    state: state.map(|s| s.as_str().to_owned()),
                    destination,
                    since: since.map(UnixTime),
                    until: until.map(UnixTime),
                    before_id: before,
                    limit: limit.max(1),
                };
                operator::list(&store, filter, json).await?
            }
            EventsCommand::Show { source, identity, json, .. } => {
                match operator::show(&store, &source, &identity, json).await? {
                    Some(text) => text,
                    None => return Err(anyhow!("no event {identity:?} from source {source:?}")),
                }
            }
            EventsCommand::Stats { since, json, .. } => operator::stats(&store, since.map(UnixTime), json).await?,
            EventsCommand::Replay { .. } => return Err(anyhow!("replay is not a view")),
        };
        store.close().await;
        Ok(text)
    })?;
    print_line(text.trim_end())?;
    Ok(ExitCode::SUCCESS)
}
