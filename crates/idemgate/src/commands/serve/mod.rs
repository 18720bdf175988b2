//! `idemgate serve` and `idemgate worker`: bind the configured listeners, announce them on
//! stdout, and run the gateway ([`idemgate::run`]) until SIGTERM or SIGINT. On SIGHUP the
//! configuration file and the environment are loaded again, as at start-up, and handed to
//! the running gateway; a configuration that does not load is logged and changes nothing.
//! Both install the metrics recorder ([`telemetry`]) and bind `/metrics`' own
//! listener when `[metrics] listen` is an address.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::Context;
use idemgate::{
    config::{self, Config, MetricsListen, Uses},
    run::{RunError, RunOptions, run},
};
use idemgate_http::termination_signal;
use tokio::{
    net::TcpListener,
    signal::unix::{Signal, SignalKind, signal},
    sync::mpsc,
};

use super::{EXIT_CONFIG, print_line};

mod telemetry;

/// Runs the receiving side (`receive`), with the worker if enabled, or the worker alone.
pub(super) async fn serve(config: Config, receive: bool, path: &Path) -> anyhow::Result<ExitCode> {
    // Before anything is announced: from then on a SIGHUP reloads instead of killing.
    let hangups = signal(SignalKind::hangup()).context("cannot install the SIGHUP handler")?;
    let pid_file = PidFile::write(config.server.pid_file.clone())?;
    let (mut options, mut lines) =
        if receive { listen(&config).await? } else { (RunOptions::default(), vec!["worker running".to_owned()]) };
    options.metrics = Some(telemetry::install().context("cannot install the metrics recorder")?);
    if let MetricsListen::Address(address) = config.metrics.listen {
        let listener =
            TcpListener::bind(address).await.with_context(|| format!("cannot listen on {address} (metrics)"))?;
        lines.push(format!("metrics listening on {}", listener.local_addr()?));
        options.metrics_listener = Some(listener);
    } else if !receive {
        tracing::info!("metrics not served: `idemgate worker` serves them on [metrics] listen = \"HOST:PORT\"");
    }
    let (ready, announce) = tokio::sync::oneshot::channel();
    options.ready = Some(ready);
    options.reloads = Some(reloads(path.to_owned(), if receive { Uses::Serve } else { Uses::Worker }, hangups));
    tokio::spawn(async move {
        if announce.await.is_ok() {
            for line in lines {
                let _ = print_line(&line);
            }
        }
    });
    let result = run(config, options, termination_signal()).await;
    drop(pid_file);
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(err @ RunError::StoreConfig { .. }) => {
            eprintln!("idemgate: config error: {err}");
            Ok(ExitCode::from(EXIT_CONFIG))
        }
        Err(err) => Err(err.into()),
    }
}

/// Binds the public listener and the admin one; the lines announcing them are printed
/// once the gateway starts serving.
async fn listen(config: &Config) -> anyhow::Result<(RunOptions, Vec<String>)> {
    let public = TcpListener::bind(config.server.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.server.listen))?;
    let mut lines = vec![format!("listening on {}", public.local_addr()?)];
    let admin = match &config.admin {
        Some(admin) => {
            let listener = TcpListener::bind(admin.listen)
                .await
                .with_context(|| format!("cannot listen on {} (admin)", admin.listen))?;
            lines.push(format!("admin listening on {}", listener.local_addr()?));
            Some(listener)
        }
        None => None,
    };
    let mut smtp = Vec::new();
    for listener in &config.smtp {
        let bound = TcpListener::bind(listener.listen)
            .await
            .with_context(|| format!("cannot listen on {} (smtp {})", listener.listen, listener.listener.name))?;
        lines.push(format!("smtp {} listening on {}", listener.listener.name, bound.local_addr()?));
        smtp.push(bound);
    }
    Ok((RunOptions { public: Some(public), admin, smtp, ..RunOptions::default() }, lines))
}

/// Loads the configuration again on each SIGHUP and sends it to the running gateway.
fn reloads(path: PathBuf, uses: Uses, mut hangups: Signal) -> mpsc::Receiver<Config> {
    let (send, reloads) = mpsc::channel(1);
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            tracing::info!(signal = "SIGHUP", "reloading the configuration");
            match config::load_for(&path, std::env::vars(), uses) {
                Ok((config, warnings)) => {
                    for warning in warnings {
                        tracing::warn!("{}", warning.0);
                    }
                    if send.send(config).await.is_err() {
                        return;
                    }
                }
                Err(err) => tracing::error!("config error: {err}; the running configuration is kept"),
            }
        }
    });
    reloads
}

/// `[server] pid_file`: this process's id, written at start and removed at exit.
struct PidFile(Option<PathBuf>);

impl PidFile {
    fn write(path: Option<PathBuf>) -> anyhow::Result<Self> {
        if let Some(path) = &path {
            std::fs::write(path, format!("{}\n", std::process::id()))
                .with_context(|| format!("cannot write the pid file {}", path.display()))?;
        }
        Ok(Self(path))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        if let Some(path) = &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}
