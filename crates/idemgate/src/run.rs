//! The whole gateway started on listeners the caller bound: the sources' routes, the
//! worker (unless `[worker] enabled = false`), the retention purges, the alert checker
//! (with `[alerts]`) and the admin API, until
//! a shutdown future completes. `idemgate serve` and `idemgate worker` are this function
//! behind a signal; tests call it in-process on `127.0.0.1:0`. Every part reads the time
//! from the one clock in [`RunOptions`], so a test can run the whole gateway on a
//! `ManualClock`.
//!
//! With [`RunOptions::reloads`], each configuration received is applied while serving
//! ([`crate::reload`]): the public router, the worker's routes and the admin token are
//! replaced behind handles that a request or a claim batch reads once.

use std::{future::Future, sync::Arc, time::Duration};

use idemgate_clock::{Clock, SystemClock};
use idemgate_http::{
    RejectionCounts, ServeOptions,
    console::session::Sessions,
    current::{AdminTokens, DestinationNames, LiveGateway},
    gateway::Observers,
    idempotency,
    scrape::{self, Render},
    serve,
};
use idemgate_store::{Store, maintenance::Retention};
use idemgate_worker::RouteTable;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::{
    net::TcpListener,
    sync::{mpsc, watch},
};

use crate::{
    availability::{Availability, OpenError},
    config::{AdminConfig, Config, MetricsListen, ServerConfig},
    gateway, outbound, reload,
};

/// What [`run`] serves on, besides the configuration.
#[derive(Debug)]
pub struct RunOptions {
    /// The public listener; `None` runs the worker alone (`idemgate worker`), whatever
    /// `[worker] enabled` says.
    pub public: Option<TcpListener>,
    /// The admin API's listener; served only when `[admin]` is configured too.
    pub admin: Option<TcpListener>,
    /// Renders `/metrics`; `None` answers it with 404 (the recorder is process-wide, so
    /// only the binary installs one). Served where `[metrics] listen` says.
    pub metrics: Option<PrometheusHandle>,
    /// `/metrics`' own listener, for `[metrics] listen = "HOST:PORT"`.
    pub metrics_listener: Option<TcpListener>,
    /// Told once the store's configuration was accepted and the gateway starts serving, so
    /// a caller announces its listeners only then (a store config error comes first, alone).
    pub ready: Option<tokio::sync::oneshot::Sender<()>>,
    /// Where every part reads the time: deliveries, gauges, the worker, purges, the admin
    /// API and the proxies' `Idempotency-Key` records. [`SystemClock`] by default.
    pub clock: Arc<dyn Clock>,
    /// One listener per `[smtp.*]` in the order of [`Config::smtp`], bound by the caller;
    /// served with the public listener (a listener missing here is not served).
    pub smtp: Vec<TcpListener>,
    /// Configurations to reload while running (`idemgate serve` sends one on SIGHUP);
    /// `None` runs the configuration given to [`run`] until the end.
    pub reloads: Option<mpsc::Receiver<Config>>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            public: None,
            admin: None,
            metrics: None,
            metrics_listener: None,
            ready: None,
            clock: Arc::new(SystemClock),
            smtp: Vec::new(),
            reloads: None,
        }
    }
}

/// Why the gateway could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The store refuses its configuration (`idemgate` exits with 2).
    #[error("{key}: {source}")]
    StoreConfig {
        /// `store.url` or `store.path`.
        key: &'static str,
        /// What the store said.
        source: OpenError,
    },
    /// The store could not be opened for another lasting reason.
    #[error(transparent)]
    Open(OpenError),
    /// A `[[proxy]]`'s HTTP client could not be built.
    #[error("cannot build the proxy's http client")]
    Proxy(#[source] reqwest::Error),
    /// The worker's HTTP client could not be built.
    #[error(transparent)]
    Worker(#[from] idemgate_worker::http::ClientError),
    /// A listener failed.
    #[error(transparent)]
    Serve(#[from] std::io::Error),
}

/// Runs the gateway until `shutdown` completes, then drains the listeners and the worker
/// and closes the store. A store that cannot be opened yet is opened in the background
/// (`availability`).
pub async fn run(
    config: Config,
    options: RunOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop.send(true);
    });
    let availability = match Availability::open(&config.store, stopped.clone()).await {
        Ok(availability) => Arc::new(availability),
        Err(source) if source.is_config() => {
            let key = if config.store.postgres.is_some() { "store.url" } else { "store.path" };
            return Err(RunError::StoreConfig { key, source });
        }
        Err(err) => return Err(RunError::Open(err)),
    };
    let store = availability.store.clone();
    let RunOptions { public, admin, metrics, metrics_listener, ready, clock, smtp, reloads } = options;
    if let Some(ready) = ready {
        let _ = ready.send(());
    }
    let receive = public.is_some();
    let metrics = metrics.map(|handle| Render(Arc::new(move || handle.render())));
    if metrics.is_some() {
        let refresh = config.metrics.refresh_interval;
        let labels = config.api.as_ref().map(|api| api.endpoint_labels).unwrap_or_default();
        tokio::spawn(scrape::refresh_queue_gauges(store.clone(), Arc::clone(&clock), refresh, labels));
    }
    let own_metrics = match (&metrics, metrics_listener) {
        (Some(render), Some(listener)) => {
            Some(serve_metrics(&config.server, listener, render.clone(), stopped.clone()))
        }
        _ => None,
    };
    let alerts =
        crate::alerts::checker(config.alerts.as_ref(), Arc::clone(&availability), Arc::clone(&clock), stopped.clone());
    let worker = (config.worker.enabled || !receive)
        .then(|| outbound::worker(&config, &store).map(|worker| worker.with_clock(Arc::clone(&clock))))
        .transpose()?;
    let live = Live { worker: worker.as_ref().map(idemgate_worker::Worker::routes), ..Live::default() };
    let worker = worker.map(|worker| {
        let (availability, stopped) = (Arc::clone(&availability), stopped.clone());
        tokio::spawn(async move {
            if availability.until_open(stopped.clone()).await {
                worker.run(stopped).await;
            }
        })
    });
    let smtp = (public.is_some() && !smtp.is_empty()).then(|| {
        let listeners = smtp.into_iter().zip(config.smtp.iter().map(|smtp| Arc::clone(&smtp.listener))).collect();
        for smtp in &config.smtp {
            tracing::info!(listener = %smtp.listener.name, destinations = ?smtp.listener.destinations, "smtp listener ready");
        }
        tokio::spawn(idemgate_smtp::serve_all(listeners, store.clone(), Arc::clone(&clock), stopped.clone()))
    });
    match public {
        Some(public) => {
            let reloading = (live, reloads);
            receive_until_stopped(&config, &availability, public, (admin, metrics), clock, stopped, reloading).await?;
        }
        None => {
            tracing::info!(destinations = config.destinations.len(), "worker running");
            if let Some(reloads) = reloads {
                tokio::spawn(live.apply(config, reloads));
            }
        }
    }
    if let Some(worker) = worker {
        let _ = worker.await;
    }
    if let Some(alerts) = alerts {
        let _ = alerts.await;
    }
    if let Some(smtp) = smtp {
        let _ = smtp.await;
    }
    if let Some(own_metrics) = own_metrics {
        let _ = own_metrics.await;
    }
    store.close().await;
    tracing::info!("stopped");
    Ok(())
}

async fn receive_until_stopped(
    config: &Config,
    availability: &Arc<Availability>,
    listener: TcpListener,
    (admin_listener, metrics): (Option<TcpListener>, Option<Render>),
    clock: Arc<dyn Clock>,
    stopped: watch::Receiver<bool>,
    (mut live, reloads): (Live, Option<mpsc::Receiver<Config>>),
) -> Result<(), RunError> {
    let store = &availability.store;
    let rejections: Arc<RejectionCounts> = Arc::default();
    let (public_metrics, admin_metrics) = match config.metrics.listen {
        MetricsListen::Public => (metrics, None),
        MetricsListen::Admin => (None, metrics),
        MetricsListen::Address(_) => (None, None),
    };
    let observers = Observers { metrics: public_metrics, rejections: Arc::clone(&rejections) };
    let public =
        LiveGateway::new(&gateway::routes(config), store, Arc::clone(&clock), observers).map_err(RunError::Proxy)?;
    let router = public.router();
    let (retention, policies) = watch::channel((config.retention(), config.audit_retention));
    tokio::spawn(purges(config, Arc::clone(availability), Arc::clone(&clock), policies, stopped.clone()));
    for source in &config.sources {
        tracing::info!(source = %source.id, scheme = source.scheme.name(), route = %format!("/in/{}", source.route), "source ready");
    }
    let admin = match (&config.admin, admin_listener) {
        (Some(admin), Some(listener)) => {
            let (token, sessions) =
                (AdminTokens::new(admin.tokens.clone()), Sessions::new(store.clone(), admin.session_lifetime));
            let names =
                DestinationNames::new(config.destination_names().clone()).with_transforms(config.transforms().clone());
            live.admin = Some((token.clone(), sessions.clone()));
            live.destination_names = Some(names.clone());
            let access = (token, sessions, names);
            let observed = (access, rejections, admin_metrics);
            Some(serve_admin(admin, &config.server, listener, (store, clock), observed, stopped.clone()))
        }
        _ => {
            tracing::info!("admin API off: no [admin] token configured");
            None
        }
    };
    let serving = ServeOptions {
        header_timeout: config.server.header_timeout,
        shutdown_grace: config.server.shutdown_grace,
        tls: config.server.tls.as_ref().map(|tls| tls.acceptor.clone()),
    };
    if let Some(reloads) = reloads {
        (live.public, live.retention) = (Some(public), Some(retention));
        tokio::spawn(live.apply(config.clone(), reloads));
    }
    serve(listener, router, serving, until_stopped(stopped)).await?;
    if let Some(admin) = admin {
        let _ = admin.await;
    }
    Ok(())
}

/// Retention (and, with proxies, expired idempotency records) purged once the store is
/// open, for as long as the server runs.
fn purges(
    config: &Config,
    availability: Arc<Availability>,
    clock: Arc<dyn Clock>,
    policies: watch::Receiver<Policies>,
    stopped: watch::Receiver<bool>,
) -> impl Future<Output = ()> + Send + 'static {
    let interval = config.store.purge_interval;
    async move {
        if !availability.until_open(stopped).await {
            return;
        }
        let store = availability.store.clone();
        // Run with or without proxies: a reload may add one.
        let expired = idempotency::purge_expired_every(store.clone(), Arc::clone(&clock), Duration::from_secs(60));
        tokio::spawn(expired);
        purge_every(store, policies, interval, clock.as_ref()).await;
    }
}

/// The sources' retention policies and the audit log's, as last reloaded.
type Policies = (Vec<Retention>, Duration);

/// Purges what retention allows (the sources' policies and the audit log's, as last
/// reloaded), every `interval`, for as long as the server runs.
async fn purge_every(store: Store, policies: watch::Receiver<Policies>, interval: Duration, clock: &dyn Clock) {
    loop {
        tokio::time::sleep(interval).await;
        let (policies, audit) = policies.borrow().clone();
        match store.purge(clock.now(), policies).await {
            Ok(report) => tracing::info!(?report, "retention purge"),
            Err(err) => tracing::warn!(error = %err, "retention purge failed"),
        }
        match store.purge_audit(clock.now(), audit, false).await {
            Ok(records) => tracing::info!(records, "audit log purge"),
            Err(err) => tracing::warn!(error = %err, "audit log purge failed"),
        }
    }
}

/// What the admin API checks requests against: the token, the dashboard's sessions and the
/// configured destinations' names, each replaced by a reload.
type AdminAccess = (AdminTokens, Sessions, DestinationNames);

/// Starts the admin API on its own listener, with the public listener's timeouts and TLS
/// (`[admin.tls]` or `[server.tls]`).
fn serve_admin(
    admin: &AdminConfig,
    server: &ServerConfig,
    listener: TcpListener,
    (store, clock): (&Store, Arc<dyn Clock>),
    ((token, sessions, destinations), rejections, metrics): (AdminAccess, Arc<RejectionCounts>, Option<Render>),
    stopped: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<std::io::Result<()>> {
    let state = idemgate_http::console::AdminState {
        store: store.clone(),
        tokens: token,
        rejections,
        sessions,
        tls: admin.tls.is_some(),
        body_timeout: server.body_timeout,
        clock,
        destinations,
    };
    let options = ServeOptions {
        header_timeout: server.header_timeout,
        shutdown_grace: server.shutdown_grace,
        tls: admin.tls.as_ref().map(|tls| tls.acceptor.clone()),
    };
    let mut router = idemgate_http::console::router(state);
    if let Some(render) = metrics {
        router = scrape::router(render).merge(router);
    }
    tokio::spawn(serve(listener, router, options, until_stopped(stopped)))
}

/// Serves `/metrics` alone on its own listener, with the public listener's timeouts and
/// no TLS (a scraper on the host's network reads counters, never a secret).
fn serve_metrics(
    server: &ServerConfig,
    listener: TcpListener,
    render: Render,
    stopped: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<std::io::Result<()>> {
    let options =
        ServeOptions { header_timeout: server.header_timeout, shutdown_grace: server.shutdown_grace, tls: None };
    tokio::spawn(serve(listener, scrape::router(render), options, until_stopped(stopped)))
}

async fn until_stopped(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|stop| *stop).await;
}

/// The handles a reload replaces what runs behind; `None` where that part does not run.
#[derive(Default)]
struct Live {
    public: Option<LiveGateway>,
    admin: Option<(AdminTokens, Sessions)>,
    destination_names: Option<DestinationNames>,
    worker: Option<RouteTable>,
    retention: Option<watch::Sender<Policies>>,
}

impl Live {
    /// Applies each configuration received over `running`, in order, until the sender
    /// goes away.
    async fn apply(self, mut running: Config, mut reloads: mpsc::Receiver<Config>) {
        while let Some(new) = reloads.recv().await {
            if let Some(applied) = self.reload(&running, new).await {
                running = applied;
            }
        }
    }

    /// Builds the worker's routes, then replaces the router, then the rest; a part that
    /// cannot be built keeps the whole running configuration. Returns what now runs.
    async fn reload(&self, running: &Config, new: Config) -> Option<Config> {
        let reload::Plan { applied, changes, needs_restart } = reload::plan(running, new);
        if !needs_restart.is_empty() {
            tracing::warn!(keys = %needs_restart.join(", "), "changed keys need a restart; they keep their running values");
        }
        let routes = match self.worker.as_ref().map(|_| outbound::routes(&applied)).transpose() {
            Ok(routes) => routes,
            Err(err) => {
                tracing::error!(error = %err, "cannot build a destination's http client; the running configuration is kept");
                return None;
            }
        };
        if let Some(Err(err)) = self.public.as_ref().map(|public| public.replace(&gateway::routes(&applied))) {
            tracing::error!(error = %err, "cannot build the proxy's http client; the running configuration is kept");
            return None;
        }
        if let (Some(table), Some(routes)) = (&self.worker, routes) {
            table.replace(routes);
        }
        if let (Some((token, sessions)), Some(admin), true) = (&self.admin, &applied.admin, changes.admin_token_changed)
        {
            token.replace(admin.tokens.clone());
            // In the store, so on every instance; should that fail, a session of a token
            // renamed or given another role still reads as signed out here.
            match sessions.end_all().await {
                Ok(ended) => tracing::info!(ended, "admin tokens changed: every dashboard session signed out"),
                Err(err) => {
                    tracing::error!(error = %err, "admin tokens changed, but the dashboard sessions could not be ended")
                }
            }
        }
        if let Some(retention) = &self.retention {
            retention.send_replace((applied.retention(), applied.audit_retention));
        }
        if let Some(names) = &self.destination_names {
            names.replace(applied.destination_names().clone());
            names.replace_transforms(applied.transforms().clone());
        }
        tracing::info!(changes = %changes, "reloaded configuration");
        Some(applied)
    }
}
