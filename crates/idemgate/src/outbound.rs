//! The worker as configured: one route per `[destinations.*]`, of the destination's kind
//! (HTTP, RabbitMQ, NATS JetStream, an SMTP smarthost), with its timeouts, retry policy,
//! FIFO setting, transform and protection (rate limit, in-flight cap, breaker); and, when
//! `[api]` is enabled, the routes of the outbound API's endpoints, read from the store.

use std::{collections::HashMap, sync::Arc, time::Duration};

use idemgate_store::Store;
use idemgate_worker::{
    AmqpDestination, Deliver, EndpointClient, EndpointRoutes, HttpDestination, NatsDestination, Route, SmtpDestination,
    Worker, http::ClientError,
};

use crate::config::{Config, DestinationConfig, Target};

/// How long connecting to a customer's endpoint may take.
const ENDPOINT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The worker that delivers `store`'s jobs to `config`'s destinations and, when `[api]` is
/// enabled, to the endpoints `store` holds: one client for all of them, reaching public
/// addresses and `[api] allow_networks` only, their secrets opened with `[api] secrets_key`.
pub fn worker(config: &Config, store: &Store) -> Result<Worker, ClientError> {
    let worker = Worker::new(store.clone(), routes(config)?, config.worker.options);
    let Some(api) = &config.api else { return Ok(worker) };
    let client = EndpointClient::new(api.url_policy.allow_networks.clone(), ENDPOINT_CONNECT_TIMEOUT)?;
    Ok(worker
        .with_endpoints(EndpointRoutes::new(store.clone(), client, api.secrets_key.clone()))
        .with_endpoint_labels(api.endpoint_labels))
}

/// The worker's routes for `config`'s destinations, by name (a reload replaces them).
pub fn routes(config: &Config) -> Result<HashMap<String, Route>, ClientError> {
    let mut routes = HashMap::new();
    for (name, destination) in &config.destinations {
        let route = Route {
            deliver: deliver(destination)?,
            policy: destination.policy.clone(),
            fifo: destination.fifo,
            protection: destination.protection,
            transform: destination.transform.clone(),
        };
        routes.insert(name.clone(), route);
    }
    Ok(routes)
}

/// What delivers to `destination`, by its kind. A broker connects on its first attempt.
fn deliver(destination: &DestinationConfig) -> Result<Arc<dyn Deliver>, ClientError> {
    let (connect, total) = (destination.connect_timeout, destination.timeout);
    Ok(match &destination.target {
        Target::Http { url, secret } => Arc::new(HttpDestination::new(url.expose(), secret.clone(), connect, total)?),
        Target::Rabbitmq { url, exchange, routing_key } => {
            Arc::new(AmqpDestination::new(url.expose(), exchange, routing_key, connect, total))
        }
        Target::Nats { url, subject } => Arc::new(NatsDestination::new(url.expose(), subject, connect, total)),
        Target::Smtp(relay) => Arc::new(SmtpDestination::new(
            relay.host.clone(),
            relay.port,
            relay.encryption,
            relay.credentials.clone(),
            relay.keep_key_header,
            total,
        )),
    })
}
