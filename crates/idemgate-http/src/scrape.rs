//! `GET /metrics`: Prometheus text rendered from what the process recorded. A scrape reads
//! nothing from the store: the queue's gauges (jobs by state, the age of the oldest
//! waiting job, whether the store can be read, which destinations their breakers paused,
//! on PostgreSQL whether a synchronous standby is in sync)
//! are refreshed by [`refresh_queue_gauges`]
//! on an interval, so a scraper polling often costs the store nothing more.
//!
//! The same route serves on the public listener ([`crate::gateway::router`]), on the admin
//! listener or on a listener of its own ([`router`]), as the binary configures it.

use std::{sync::Arc, time::Duration};

use axum::{
    Router,
    response::{IntoResponse, Response},
    routing::get,
};
use http::header::CONTENT_TYPE;
use idemgate_clock::Clock;
use idemgate_core::outbound::label::EndpointLabels;
use idemgate_store::{Store, StoreError};

/// Renders the metrics recorded so far as Prometheus text.
#[derive(Clone)]
pub struct Render(pub Arc<dyn Fn() -> String + Send + Sync>);

impl std::fmt::Debug for Render {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Render(..)")
    }
}

impl Render {
    /// The answer to one scrape.
    #[must_use]
    pub fn answer(&self) -> Response {
        ([(CONTENT_TYPE, "text/plain; version=0.0.4")], (self.0)()).into_response()
    }
}

/// A router serving `/metrics` alone, to merge into the admin API's or to serve on a
/// listener of its own.
pub fn router(render: Render) -> Router {
    Router::new().route("/metrics", get(move || async move { render.answer() }))
}

/// Reads the queue's gauges from `store` now, then every `interval`, forever; endpoints
/// show in the `destination` label as `labels` says.
pub async fn refresh_queue_gauges(store: Store, clock: Arc<dyn Clock>, interval: Duration, labels: EndpointLabels) {
    loop {
        if let Err(err) = record_queue_gauges(&store, clock.as_ref(), labels).await {
            tracing::debug!(error = %err, "could not read the queue's gauges");
        }
        tokio::time::sleep(interval).await;
    }
}

/// Reads the queue's gauges from the store. While the store cannot be read, the gauges keep
/// their last values (a backlog does not look empty because the store is down) and
/// `idemgate_store_available` says 0.
async fn record_queue_gauges(store: &Store, clock: &dyn Clock, labels: EndpointLabels) -> Result<(), StoreError> {
    let read = async { Ok::<_, StoreError>((store.queue_states().await?, store.oldest_waiting_job().await?)) };
    let read = read.await;
    metrics::gauge!("idemgate_store_available").set(if read.is_ok() { 1.0 } else { 0.0 });
    let (states, oldest) = read?;
    for state in idemgate_core::job::JobState::QUEUE {
        metrics::gauge!("idemgate_jobs", "state" => state.as_str()).set(0.0);
    }
    for (state, count) in states {
        metrics::gauge!("idemgate_jobs", "state" => state).set(count as f64);
    }
    let age = oldest.map_or(0, |oldest| (clock.now().0 - oldest.0).max(0));
    metrics::gauge!("idemgate_oldest_waiting_job_seconds").set(age as f64);
    // Folded endpoints share one label: it reads 1 while any of them is paused.
    let mut paused = std::collections::BTreeMap::<String, f64>::new();
    for (destination, breaker) in store.breakers().await? {
        let value = if breaker.paused_at.is_some() { 1.0 } else { 0.0 };
        let slot = paused.entry(labels.destination(&destination).to_owned()).or_insert(0.0);
        *slot = slot.max(value);
    }
    for (destination, value) in paused {
        metrics::gauge!("idemgate_destination_paused", "destination" => destination).set(value);
    }
    // PostgreSQL only: whether a failover could lose acknowledged events right now.
    if let Some(replication) = store.replication().await? {
        let safe = replication.failover_risk().is_none();
        metrics::gauge!("idemgate_store_synchronous_standby").set(if safe { 1.0 } else { 0.0 });
    }
    Ok(())
}
