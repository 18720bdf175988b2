//! The worker as configured: one route per `[destinations.*]` (an HTTP endpoint or an
//! SMTP smarthost, by its kind), with its timeouts,
//! retry policy and FIFO setting.

use std::{collections::HashMap, sync::Arc};

use idemgate_store::Store;
use idemgate_worker::{Deliver, HttpDestination, Route, SmtpDestination, Worker, http::ClientError};

use crate::config::{Config, DestinationKind};

/// The worker that delivers `store`'s jobs to `config`'s destinations.
pub fn worker(config: &Config, store: &Store) -> Result<Worker, ClientError> {
    Ok(Worker::new(store.clone(), routes(config)?, config.worker.options))
}

/// The worker's routes for `config`'s destinations, by name (a reload replaces them).
pub fn routes(config: &Config) -> Result<HashMap<String, Route>, ClientError> {
    let mut routes = HashMap::new();
    for (name, destination) in &config.destinations {
        let deliver: Arc<dyn Deliver> = match &destination.kind {
            DestinationKind::Http => Arc::new(HttpDestination::new(
                &destination.url.to_string(),
                destination.secret.clone(),
                destination.connect_timeout,
                destination.timeout,
            )?),
            DestinationKind::Smtp(relay) => Arc::new(SmtpDestination::new(
                relay.host.clone(),
                relay.port,
                relay.encryption,
                relay.credentials.clone(),
                relay.keep_key_header,
                destination.timeout,
            )),
        };
        let route = Route { deliver, policy: destination.policy.clone(), fifo: destination.fifo };
        routes.insert(name.clone(), route);
    }
    Ok(routes)
}
