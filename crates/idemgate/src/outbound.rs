//! The worker as configured: one HTTP route per `[destinations.*]`, with its timeouts,
//! retry policy, FIFO setting, transform and protection (rate limit, in-flight cap, breaker).

use std::{collections::HashMap, sync::Arc};

use idemgate_store::Store;
use idemgate_worker::{HttpDestination, Route, Worker, http::ClientError};

use crate::config::Config;

/// The worker that delivers `store`'s jobs to `config`'s destinations.
pub fn worker(config: &Config, store: &Store) -> Result<Worker, ClientError> {
    Ok(Worker::new(store.clone(), routes(config)?, config.worker.options))
}

/// The worker's routes for `config`'s destinations, by name (a reload replaces them).
pub fn routes(config: &Config) -> Result<HashMap<String, Route>, ClientError> {
    let mut routes = HashMap::new();
    for (name, destination) in &config.destinations {
        let http = HttpDestination::new(
            &destination.url.to_string(),
            destination.secret.clone(),
            destination.connect_timeout,
            destination.timeout,
        )?;
        let route = Route {
            deliver: Arc::new(http),
            policy: destination.policy.clone(),
            fifo: destination.fifo,
            protection: destination.protection,
            transform: destination.transform.clone(),
        };
        routes.insert(name.clone(), route);
    }
    Ok(routes)
}
