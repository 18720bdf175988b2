//! The process's metrics recorder: every metric idemgate records, described once (its
//! `# HELP` and `# TYPE`) and every histogram rendered as Prometheus buckets, with bounds
//! that fit what it measures, so that instances aggregate (`histogram_quantile` over the
//! sum of their buckets). The recorder is process-wide, so only `serve` and `worker`
//! install one; the library crates record through the `metrics` facade.

use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};

/// Seconds, for a delivery attempt to a destination (up to a slow destination's timeout).
const DELIVERY_SECONDS: &[f64] = &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];
/// Seconds, for one group commit (an fsync, usually a few milliseconds).
const COMMIT_SECONDS: &[f64] = &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];
/// Writes in one group commit.
const COMMIT_WRITES: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

/// Each histogram and its buckets; a histogram not listed here would still get buckets
/// (the delivery ones) rather than a summary.
const HISTOGRAMS: [(&str, &[f64]); 3] = [
    ("idemgate_delivery_seconds", DELIVERY_SECONDS),
    ("idemgate_commit_seconds", COMMIT_SECONDS),
    ("idemgate_commit_batch_writes", COMMIT_WRITES),
];

/// Installs the recorder and describes every metric.
pub(super) fn install() -> Result<PrometheusHandle, BuildError> {
    let mut builder = PrometheusBuilder::new().set_buckets(DELIVERY_SECONDS)?;
    for (name, buckets) in HISTOGRAMS {
        builder = builder.set_buckets_for_metric(Matcher::Full(name.to_owned()), buckets)?;
    }
    let handle = builder.install_recorder()?;
    describe();
    Ok(handle)
}

fn describe() {
    describe_counter!("idemgate_deliveries_total", "Deliveries received, by source and outcome");
    describe_counter!("idemgate_rejections_total", "Deliveries rejected, by source and reason");
    describe_counter!("idemgate_attempts_total", "Delivery attempts to destinations, by destination and result");
    describe_counter!("idemgate_store_errors_total", "Group commits the store failed");
    describe_counter!(
        "idemgate_jobs_handed_over_total",
        "Jobs passed from the accept to this process's worker already leased, without waiting for a claim (SQLite)"
    );
    describe_counter!(
        "idemgate_conflicts_unrecorded_total",
        "Conflicting repeats answered 409 whose conflict record could not be written, by source"
    );
    describe_counter!(
        "idemgate_idempotency_replays_total",
        "Idempotency-Key repeats replayed, by where the completed record was found: memory, read or write"
    );
    describe_counter!(
        "idemgate_idempotency_unprotected_total",
        "Proxy requests passed through without an idempotency record while the store was unavailable"
    );
    describe_counter!(
        "idemgate_smtp_submissions_total",
        "Messages submitted to an SMTP listener and offered to the store, by listener and outcome"
    );
    describe_counter!(
        "idemgate_smtp_unkeyed_total",
        "Messages submitted to an SMTP listener without a key header, relayed without deduplication, by listener"
    );
    describe_histogram!(
        "idemgate_delivery_seconds",
        Unit::Seconds,
        "Time of one delivery attempt to a destination, by destination"
    );
    describe_histogram!("idemgate_commit_seconds", Unit::Seconds, "Time of one group commit of the store");
    describe_histogram!("idemgate_commit_batch_writes", Unit::Count, "Writes in one group commit of the store");
    describe_gauge!(
        "idemgate_jobs",
        Unit::Count,
        "Jobs waiting, running and dead, by state, as last read from the store"
    );
    describe_gauge!(
        "idemgate_oldest_waiting_job_seconds",
        Unit::Seconds,
        "Age of the oldest job waiting to be delivered, as last read from the store"
    );
    describe_gauge!("idemgate_store_available", "1 while the store could be read at the last refresh, else 0");
    describe_gauge!(
        "idemgate_store_synchronous_standby",
        "PostgreSQL: 1 while a synchronous standby in sync holds every acknowledged commit (at the last refresh), else 0"
    );
    describe_gauge!(
        "idemgate_destination_paused",
        "1 while the destination's circuit breaker has it paused (as last read from the store), else 0"
    );
    describe_gauge!(
        "idemgate_destination_throttled",
        "1 while this worker's last claim for the destination was cut short by its rate limit or in-flight cap"
    );
    describe_counter!(
        "idemgate_destination_throttled_total",
        "Claims of this worker cut short by the destination's rate limit or in-flight cap"
    );
}
