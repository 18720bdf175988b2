//! The process's tracer (`[traces]`): spans exported to an OpenTelemetry collector over
//! OTLP/HTTP (protobuf), batched on the SDK's own thread. `serve` and `worker` start it
//! before logging, install [`Traces::layer`] next to the log's, and [`Traces::shutdown`]
//! after the gateway stopped, which exports the spans still in the batch. Without
//! `[traces]` nothing of it runs: the spans stay `tracing` spans with no trace context and
//! no request is made.
//!
//! Only idemgate's own spans are exported, and no log events: a span's attributes are the
//! ones its code chose (source, identity, outcome, status, destination, job, attempt),
//! never payloads, header values or secrets. The SDK's own warnings (an export that
//! failed, spans dropped from a full queue) go to the log as `opentelemetry_sdk` events.

use opentelemetry::{global, trace::TracerProvider};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::{
    Resource,
    trace::{Sampler, SdkTracerProvider},
};
use tracing::Subscriber;
use tracing_subscriber::{Layer, filter::filter_fn, registry::LookupSpan};

use crate::config::TracesConfig;

/// The name the spans are made under.
const TRACER: &str = "idemgate";

/// The tracer provider, set as the process's global one.
#[derive(Debug)]
pub struct Traces {
    provider: SdkTracerProvider,
}

/// The exporter could not be set up, or not shut down.
#[derive(Debug, thiserror::Error)]
#[error("traces: {0}")]
pub struct TracesError(String);

impl Traces {
    /// Starts exporting to `config.endpoint`, keeping `config.sample_ratio` of new traces
    /// (a delivery that continues a sender's trace follows the sender's decision), and
    /// makes this the process's tracer provider (the worker's spans use it).
    pub fn start(config: &TracesConfig) -> Result<Self, TracesError> {
        let exporter = SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(config.endpoint.clone())
            .build()
            .map_err(|err| TracesError(format!("cannot build the exporter: {err}")))?;
        let sampler = Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(config.sample_ratio)));
        let resource = Resource::builder().with_service_name(config.service_name.clone()).build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_sampler(sampler)
            .with_resource(resource)
            .build();
        global::set_tracer_provider(provider.clone());
        Ok(Self { provider })
    }

    /// The layer turning idemgate's `tracing` spans into exported ones.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'span> LookupSpan<'span>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer(TRACER))
            .with_filter(filter_fn(|meta| meta.is_span() && meta.target().starts_with("idemgate")))
    }

    /// Exports what is still batched and stops the exporter.
    pub async fn shutdown(self) -> Result<(), TracesError> {
        let provider = self.provider;
        tokio::task::spawn_blocking(move || provider.shutdown())
            .await
            .map_err(|err| TracesError(format!("the shutdown did not finish: {err}")))?
            .map_err(|err| TracesError(format!("the exporter did not shut down cleanly: {err}")))
    }
}
