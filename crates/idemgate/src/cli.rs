//! The command line: clap's types for every subcommand, kept apart from what the commands
//! do (`commands`). `--config` is global, so it goes before or after the subcommand.

use std::{path::PathBuf, time::Duration};

use clap::{Parser, Subcommand};
use idemgate_core::{job::JobState, time::TimeSpec};
#[derive(Parser)]
#[command(
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("IDEMGATE_GIT_COMMIT"), ")"),
    about = "Webhook inbox and idempotency gateway"
)]
pub(crate) struct Cli {
    /// The TOML configuration file.
    #[arg(global = true, long, env = "IDEMGATE_CONFIG", default_value = "idemgate.toml")]
    pub(crate) config: PathBuf,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Receive webhooks for the configured sources (and deliver them, unless
    /// `[worker] enabled = false`).
    Serve,
    /// Deliver stored events to their destinations, without receiving any.
    Worker,
    /// Make the running `serve` or `worker` reload its configuration: sends SIGHUP to the
    /// process named in `[server] pid_file`.
    Reload,
    /// Check a captured request offline against a source's configuration.
    Verify {
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
    /// The sending side's applications and their endpoints (read-only: they are changed
    /// through the outbound API, `/api/v1`).
    Apps {
        #[command(subcommand)]
        command: AppsCommand,
    },
    /// Retention and backups.
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Send one request and retry it safely (or, with --repeat, many).
    Send(Box<SendArgs>),
    /// Drive a server with load over real HTTP and report throughput and latency.
    Bench {
        #[command(subcommand)]
        workload: BenchWorkload,
    },
    /// Work with the configuration itself.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Print a shell completion script to stdout.
    Completions {
        /// The shell.
        shell: clap_complete::aot::Shell,
    },
    /// Print a man page (roff) to stdout: idemgate(1), or one command's page.
    Man {
        /// The command, e.g. `send` or `events list`.
        command: Vec<String>,
    },
}

#[derive(Subcommand)]
pub(crate) enum ConfigCommand {
    /// Validate the configuration as `serve` would (every secret resolved) and print the
    /// values in effect, each with where it came from; secrets are never shown. Exit 1 with
    /// the first problem when it is not valid.
    Check,
}

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("signing").args(["scheme", "source"])))]
pub(crate) struct SendArgs {
    /// Where to send it: an http(s):// URL, or smtp://host[:port] (STARTTLS per
    /// --starttls) or smtps://host[:port] (implicit TLS) to submit the --data-file message.
    /// Not with --api.
    #[arg(required_unless_present = "api", conflicts_with = "api")]
    pub(crate) url: Option<String>,
    /// The HTTP method.
    #[arg(long, short = 'X', default_value = "POST")]
    pub(crate) method: String,
    /// A header, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H')]
    pub(crate) headers: Vec<String>,
    /// The body, sent byte for byte.
    #[arg(long, short = 'd', conflicts_with = "data_file")]
    pub(crate) data: Option<String>,
    /// Read the body (for mail: the message) from this file (`-` for standard input).
    #[arg(long)]
    pub(crate) data_file: Option<PathBuf>,
    /// Sign as a webhook with this scheme: any source scheme whose secret also signs.
    #[arg(long, requires = "secret", value_parser = signing_schemes())]
    pub(crate) scheme: Option<String>,
    /// Sign as the provider of this source of the --config file signs: its scheme as
    /// configured (an `hmac`, `token` or `basic` table, a catalog provider, its
    /// `signed_url`), with its first secret unless --secret gives one.
    #[arg(long, value_name = "NAME", conflicts_with = "scheme")]
    pub(crate) source: Option<String>,
    /// The signing secret: `env:NAME` or `file:PATH` (a literal works but shows in `ps`).
    #[arg(long, requires = "signing")]
    pub(crate) secret: Option<String>,
    /// The webhook's event identity (`webhook-id`, `X-GitHub-Delivery`, ...); generated
    /// once when absent, and kept on every retry. With --api, the message's `eventId`.
    #[arg(long)]
    pub(crate) event_id: Option<String>,
    /// The Idempotency-Key, so separate invocations share one operation; generated once
    /// per operation for POST, PATCH and DELETE (and every mail) when absent. For mail it
    /// goes into the message's --key-header.
    #[arg(long)]
    pub(crate) idempotency_key: Option<String>,
    /// Attempts in all, the first included.
    #[arg(long, default_value_t = 5)]
    pub(crate) max_attempts: u32,
    /// Timeout of one attempt.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub(crate) timeout: Duration,
    /// Show every attempt on stderr.
    #[arg(long, short)]
    pub(crate) verbose: bool,
    /// Send this many operations (each with its own key or event id unless one is given).
    #[arg(long, default_value_t = 1)]
    pub(crate) repeat: usize,
    /// Operations in flight at once with --repeat.
    #[arg(long, default_value_t = 1)]
    pub(crate) concurrency: usize,
    /// Print one JSON object: the answer, or with --repeat the counts.
    #[arg(long)]
    pub(crate) json: bool,
    /// Publish a message to this Svix-compatible API (e.g. http://127.0.0.1:8080, idemgate's
    /// `[api]`): POST /api/v1/app/APP/msg with the --data or --data-file JSON object as its
    /// payload; prints the message's id and whether the answer was a replay.
    #[arg(long, value_name = "URL", requires_all = ["app", "event_type", "token"], help_heading = "API")]
    pub(crate) api: Option<String>,
    /// API: the application, by id or uid.
    #[arg(long, requires = "api", help_heading = "API")]
    pub(crate) app: Option<String>,
    /// API: the message's event type.
    #[arg(long, requires = "api", help_heading = "API")]
    pub(crate) event_type: Option<String>,
    /// API: the bearer token, `env:NAME` or `file:PATH` (never a literal: it would show in `ps`).
    #[arg(long, requires = "api", help_heading = "API")]
    pub(crate) token: Option<String>,
    /// API: a channel the message is sent on (repeatable).
    #[arg(long = "channel", requires = "api", help_heading = "API")]
    pub(crate) channels: Vec<String>,
    /// Mail (smtp:// and smtps:// only): the envelope sender, MAIL FROM.
    #[arg(long, help_heading = "Mail")]
    pub(crate) from: Option<String>,
    /// Mail: an envelope recipient, RCPT TO (repeatable).
    #[arg(long, help_heading = "Mail")]
    pub(crate) to: Vec<String>,
    /// Mail: the user to AUTH as (PLAIN or LOGIN); needs --password.
    #[arg(long, requires = "password", help_heading = "Mail")]
    pub(crate) user: Option<String>,
    /// Mail: the password, `env:NAME` or `file:PATH` (never a literal: it would show in `ps`).
    #[arg(long, requires = "user", help_heading = "Mail")]
    pub(crate) password: Option<String>,
    /// Mail: the message header that carries the idempotency key (one already in the
    /// message is kept and used).
    #[arg(long, default_value = "Idempotency-Key", help_heading = "Mail")]
    pub(crate) key_header: String,
    /// Mail: STARTTLS on smtp:// (smtps:// is TLS from the start).
    #[arg(long, value_enum, default_value_t = StartTlsArg::Required, help_heading = "Mail")]
    pub(crate) starttls: StartTlsArg,
    /// Mail: trust only the CA certificates in this PEM file for the server's TLS.
    #[arg(long, help_heading = "Mail")]
    pub(crate) ca_file: Option<PathBuf>,
}

/// `--starttls`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum StartTlsArg {
    /// Upgrade, or fail when the server does not offer STARTTLS.
    Required,
    /// Upgrade when offered, otherwise send in clear.
    Opportunistic,
    /// Never upgrade.
    Never,
}

/// The registry's schemes whose verifying secret also signs, so `send` can sign with it.
fn signing_schemes() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        idemgate_core::scheme::SCHEMES.iter().filter(|scheme| scheme.secret_signs()).map(|scheme| scheme.name()),
    )
}

#[derive(Subcommand)]
pub(crate) enum BenchWorkload {
    /// Signed increments against a server speaking the counter contract
    /// (`docs/counter-contract.md`); checks exactly-once at the end.
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
        #[arg(long, default_value = idemgate_core::scheme::standard::NAME)]
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
    /// Keyed publishes to the outbound API (`POST /api/v1/app/<app>/msg`), a share of them
    /// repeated later with the same key and body; checks that every key was answered 202
    /// once and replayed otherwise.
    Outbound {
        /// The application's message URL, e.g. http://127.0.0.1:8080/api/v1/app/bench/msg.
        #[arg(long)]
        target: String,
        /// The API token (`publish` role or above): `env:NAME`, `file:PATH` or a literal.
        #[arg(long)]
        token: String,
        /// Publishes in all, repeats included.
        #[arg(long, default_value_t = 20_000)]
        messages: usize,
        /// Repeats, as a share of the publishes (0.1 = 18,000 messages and 2,000 repeats of 20,000).
        #[arg(long, default_value_t = 0.1)]
        repeat: f64,
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
        #[arg(long, value_enum, default_value_t = Keys::Unique)]
        keys: Keys,
        #[command(flatten)]
        run: BenchRun,
    },
}

/// Idempotency-Keys in `bench api`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Keys {
    /// No key.
    None,
    /// A fresh key each.
    Unique,
    /// The keys of an unmeasured first round, sent again.
    Replay,
}

#[derive(clap::Args)]
pub(crate) struct BenchRun {
    /// Keep-alive connections sending at once.
    #[arg(long, default_value_t = 32)]
    pub(crate) concurrency: usize,
    /// Open loop: send this many requests per second whatever the answers, and count each
    /// latency from the moment its request was due (default: as fast as answers come).
    #[arg(long)]
    pub(crate) rate: Option<f64>,
    /// Seed for event ids, keys and shuffling (change it to run again on the same store).
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// The server's process id (several, comma-separated, for instances): its CPU time
    /// (user + system, from /proc/PID/stat) over the run is reported per request.
    #[arg(long, value_delimiter = ',')]
    pub(crate) server_pid: Vec<u32>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Subcommand)]
pub(crate) enum EventsCommand {
    /// List events, newest first, with their jobs' states.
    List {
        /// Only this source id.
        #[arg(long)]
        source: Option<String>,
        /// Only events with a job in this state (e.g. dead); `unmatched`: only events that
        /// no destination's subscription matched (no job; with --destination, none for it).
        #[arg(long, value_parser = listed_state)]
        state: Option<String>,
        /// Only events with a job for this destination.
        #[arg(long)]
        destination: Option<String>,
        /// Received at or after this time: RFC 3339 (2026-12-01T22:54:01Z), a date
        /// (2026-12-01, midnight UTC) or a duration back from now (30m, 1h, 2d).
        #[arg(long)]
        since: Option<TimeSpec>,
        /// Received before this time (the same forms as --since).
        #[arg(long)]
        until: Option<TimeSpec>,
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
    /// One event: its receipt, jobs, every delivery attempt, and the conflicting bodies
    /// seen under its identity (each answered 409: hash, count, first and last seen).
    Show {
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
        /// Only what arrived at or after this time: RFC 3339, a date (midnight UTC) or a
        /// duration back from now (30m, 1h, 2d).
        #[arg(long)]
        since: Option<TimeSpec>,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Send finished jobs again (default: the dead ones), with the same `webhook-id`.
    Replay {
        #[command(flatten)]
        filter: ReplayArgs,
    },
    /// Make waiting (pending or retrying) jobs due now: their next attempt is not waited
    /// for, the attempts so far still count.
    Retry {
        #[command(flatten)]
        filter: RetryArgs,
    },
}

#[derive(clap::Args)]
pub(crate) struct RetryArgs {
    /// Only jobs in this state: pending or retrying (default: both).
    #[arg(long, value_parser = waiting_state)]
    pub(crate) state: Option<JobState>,
    #[command(flatten)]
    pub(crate) jobs: JobFilterArgs,
}

/// A state `events replay` takes: a finished one. A waiting job is not replayed but
/// hurried, and the refusal says with what.
fn finished_state(text: &str) -> Result<JobState, String> {
    let state: JobState = text.parse().map_err(|_| "one of dead, superseded, succeeded".to_owned())?;
    match state {
        s if s.is_replayable() => Ok(s),
        s if s.is_claimable() => Err(format!(
            "{s} jobs are not finished, so there is nothing to replay; `idemgate events retry --state {s}` makes \
             their next attempt due now"
        )),
        s => Err(format!("{s} jobs are being delivered now; only dead, superseded or succeeded jobs are replayed")),
    }
}

/// A state `events retry` takes: a waiting one.
fn waiting_state(text: &str) -> Result<JobState, String> {
    let state: JobState = text.parse().map_err(|_| "one of pending, retrying".to_owned())?;
    match state {
        s if s.is_claimable() => Ok(s),
        s if s.is_replayable() => {
            Err(format!("{s} jobs are finished; `idemgate events replay --state {s}` sends them again"))
        }
        s => Err(format!("{s} jobs are being delivered now; only pending or retrying jobs are retried")),
    }
}

/// A state `events list` filters on: a job's, or `unmatched` (no job).
fn listed_state(text: &str) -> Result<String, String> {
    if text == idemgate_store::views::UNMATCHED {
        return Ok(text.to_owned());
    }
    let state: JobState = text
        .parse()
        .map_err(|_| "one of pending, running, retrying, succeeded, dead, superseded, unmatched".to_owned())?;
    Ok(state.as_str().to_owned())
}

/// What `events replay --state` selects: jobs in a finished state, or (with `--to`) the
/// unmatched events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplayState {
    /// Finished jobs in this state.
    Jobs(JobState),
    /// Events with no job at all.
    Unmatched,
}

fn replay_state(text: &str) -> Result<ReplayState, String> {
    if text == idemgate_store::views::UNMATCHED {
        return Ok(ReplayState::Unmatched);
    }
    finished_state(text).map(ReplayState::Jobs)
}

#[derive(clap::Args)]
pub(crate) struct ReplayArgs {
    /// Jobs in this state: dead (the default without --to), superseded (forced delivery) or
    /// succeeded (resend); with --to, `unmatched` for only the events no destination's
    /// subscription matched.
    #[arg(long, value_parser = replay_state)]
    pub(crate) state: Option<ReplayState>,
    /// Send the selected events to this destination: the job an event lacks for it is
    /// created, a finished one is replayed (whatever the subscription decided).
    #[arg(long, value_name = "DEST", conflicts_with = "destination")]
    pub(crate) to: Option<String>,
    #[command(flatten)]
    pub(crate) jobs: JobFilterArgs,
}

/// Which jobs `events replay` and `events retry` act on, besides their state.
#[derive(clap::Args)]
pub(crate) struct JobFilterArgs {
    /// Only this source id.
    #[arg(long)]
    pub(crate) source: Option<String>,
    /// Only this event identity.
    #[arg(long)]
    pub(crate) identity: Option<String>,
    /// Only this destination.
    #[arg(long)]
    pub(crate) destination: Option<String>,
    /// Only events received at or after this time: RFC 3339 (2026-12-01T22:54:01Z), a
    /// date (2026-12-01, midnight UTC) or a duration back from now (30m, 1h, 2d).
    #[arg(long)]
    pub(crate) since: Option<TimeSpec>,
    /// Only events received before this time (the same forms as --since).
    #[arg(long)]
    pub(crate) until: Option<TimeSpec>,
}

#[derive(Subcommand)]
pub(crate) enum StoreCommand {
    /// Forget what every source's retention allows (never unfinished work).
    Purge {
        /// Only count what would go.
        #[arg(long)]
        dry_run: bool,
    },
    /// Write a consistent copy of the store to a new file, while servers run.
    Backup {
        /// The new file.
        #[arg(long)]
        to: PathBuf,
    },
    /// Replace the store with a backup; refused while any idemgate process has it open.
    Restore {
        /// The backup file.
        #[arg(long)]
        from: PathBuf,
    },
}

#[derive(Subcommand)]
pub(crate) enum AppsCommand {
    /// The applications, by id, each with how many endpoints it has, how many of them are
    /// disabled or paused, and how many have retrying or dead jobs.
    List {
        /// The next page: applications with an id after this.
        #[arg(long)]
        after: Option<String>,
        /// At most this many (1 to 250).
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One application and its endpoints: URL, state, health, jobs by state, filters, rate
    /// limit, custom header names (never values or secrets), latest success and failure.
    Show {
        /// The application's id (`app_…`) or uid.
        app: String,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum DestinationCommand {
    /// Every destination with jobs or disabled: enabled, disabled or paused since when,
    /// health from the last hour's attempts, jobs by state, latest success and failure,
    /// and its circuit breaker.
    List {
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Resume deliveries to a destination disabled by a `410 Gone` or paused by its
    /// circuit breaker.
    Enable {
        /// The destination's name.
        name: String,
    },
    /// Create what a queue destination publishes to, as configured: on RabbitMQ the
    /// exchange (unless the default one), a durable queue named by the routing key and its
    /// binding; on NATS a JetStream stream for the subject. What exists is left as it is,
    /// so running it again changes nothing; what exists but differs is an error.
    Setup {
        /// The destination's name (kind "rabbitmq" or "nats").
        name: String,
    },
}
