//! `idemgate serve` and `idemgate worker`: bind the configured listeners, announce them on
//! stdout, and run the gateway ([`idemgate::run`]) until SIGTERM or SIGINT.

use std::process::ExitCode;

use anyhow::Context;
use idemgate::{
    config::Config,
    run::{RunError, RunOptions, run},
};
use idemgate_http::termination_signal;
use tokio::net::TcpListener;

use super::{EXIT_CONFIG, print_line};

/// Runs the receiving side (`receive`), with the worker if enabled, or the worker alone.
pub(super) async fn serve(config: Config, receive: bool) -> anyhow::Result<ExitCode> {
    let (mut options, lines) =
        if receive { listen(&config).await? } else { (RunOptions::default(), vec!["worker running".to_owned()]) };
    let (ready, announce) = tokio::sync::oneshot::channel();
    options.ready = Some(ready);
    tokio::spawn(async move {
        if announce.await.is_ok() {
            for line in lines {
                let _ = print_line(&line);
            }
        }
    });
    match run(config, options, termination_signal()).await {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(err @ RunError::StoreConfig { .. }) => {
            eprintln!("idemgate: config error: {err}");
            Ok(ExitCode::from(EXIT_CONFIG))
        }
        Err(err) => Err(err.into()),
    }
}

/// Binds the public listener and the admin one, and installs the metrics recorder; the
/// lines announcing them are printed once the gateway starts serving.
async fn listen(config: &Config) -> anyhow::Result<(RunOptions, Vec<String>)> {
    let public = TcpListener::bind(config.server.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.server.listen))?;
    let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .context("cannot install the metrics recorder")?;
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
    Ok((RunOptions { public: Some(public), admin, metrics: Some(metrics), ..RunOptions::default() }, lines))
}
