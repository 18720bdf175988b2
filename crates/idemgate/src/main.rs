//! The `idemgate` command: `serve` runs the gateway, `verify` explains a captured delivery.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
};

use anyhow::{Context, anyhow};
use clap::{Parser, Subcommand};
use idemgate::{
    config::{self, Config},
    gateway, verify,
};
use idemgate_core::UnixTime;
use idemgate_http::{ServeOptions, serve, system_now, termination_signal};
use idemgate_store::{SqliteStore, StoreOptions};

#[derive(Parser)]
#[command(version, about = "Webhook inbox and idempotency gateway")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Receive webhooks for the configured sources.
    Serve {
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
}

/// Exit codes: 0 success, 1 runtime failure or failed check, 2 bad configuration or usage.
const EXIT_FAILED: u8 = 1;
const EXIT_CONFIG: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config_path = match &cli.command {
        Command::Serve { config } | Command::Verify { config, .. } => config.clone(),
    };
    let config = match load_config(&config_path) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("idemgate: config error: {err}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let result = match cli.command {
        Command::Serve { .. } => serve_gateway(config),
        Command::Verify {
            source,
            headers,
            body,
            at,
            ..
        } => verify_capture(&config, &source, &headers, &body, at),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("idemgate: {err:#}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

fn load_config(path: &Path) -> Result<Config, config::ConfigError> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("IDEMGATE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let (config, warnings) = config::load(path, std::env::vars())?;
    for warning in warnings {
        tracing::warn!("{}", warning.0);
    }
    Ok(config)
}

fn serve_gateway(config: Config) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
    runtime.block_on(async move {
        let store = open_store(&config)?;
        let listener = tokio::net::TcpListener::bind(config.server.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.server.listen))?;
        let address = listener.local_addr()?;
        let router = gateway::router(&config, &store);
        let options = ServeOptions {
            header_timeout: config.server.header_timeout,
            shutdown_grace: config.server.shutdown_grace,
            tls: config.server.tls.as_ref().map(|tls| tls.acceptor.clone()),
        };

        for source in &config.sources {
            tracing::info!(source = %source.id, scheme = source.scheme.name(), route = %format!("/in/{}", source.route), "source ready");
        }
        announce(address)?;
        serve(listener, router, options, termination_signal()).await?;
        if let Some(store) = Arc::into_inner(store) {
            store.close().await;
        }
        tracing::info!("stopped");
        Ok(ExitCode::SUCCESS)
    })
}

fn open_store(config: &Config) -> anyhow::Result<Arc<SqliteStore>> {
    let path = &config.store.path;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let options = StoreOptions {
        busy_timeout: config.store.busy_timeout,
        ..StoreOptions::default()
    };
    let store =
        SqliteStore::open(path, options).with_context(|| format!("cannot open the store {}", path.display()))?;
    Ok(Arc::new(store))
}

/// The first stdout line, so scripts and tests learn the real port of `127.0.0.1:0`.
fn announce(address: std::net::SocketAddr) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {address}")?;
    stdout.flush()?;
    Ok(())
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
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    })
}
