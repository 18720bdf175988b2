//! The delivery's span: one `delivery` span per request to a source's route, whose
//! children (`read`, `verify`, `parse`, `commit`, `answer`) are made by the pipeline. A
//! sender's valid `traceparent` makes it the delivery's parent, so the delivery joins the
//! sender's trace. The spans carry the source, the identity, the outcome and the status,
//! never a payload, a header's value or a secret.
//!
//! These are `tracing` spans: they reach a collector only when the binary installs the
//! OpenTelemetry layer (`[traces]`); without it a span has no trace context, and
//! [`traceparent_of`] is `None`.

use http::HeaderMap;
use idemgate_core::{SourceName, traceparent::Traceparent};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The span of one delivery to `source`, the child of the sender's span when `headers`
/// carry a valid `traceparent`.
#[must_use]
pub fn delivery_span(source: &SourceName, headers: &HeaderMap) -> tracing::Span {
    let span = tracing::info_span!(
        "delivery",
        otel.kind = "server",
        source = %source,
        identity = Empty,
        outcome = Empty,
        reason = Empty,
        http.response.status_code = Empty,
    );
    let parent = headers
        .get(idemgate_core::traceparent::HEADER)
        .and_then(|value| value.to_str().ok())
        .and_then(Traceparent::parse);
    if let Some(parent) = parent {
        // Without the OpenTelemetry layer there is no trace to continue: nothing to do.
        let _ = span.set_parent(remote(parent));
    }
    span
}

/// A context whose span is the remote one `parent` names.
#[must_use]
pub fn remote(parent: Traceparent) -> opentelemetry::Context {
    opentelemetry::Context::new().with_remote_span_context(SpanContext::new(
        TraceId::from_bytes(parent.trace_id),
        SpanId::from_bytes(parent.span_id),
        TraceFlags::new(parent.flags),
        true,
        TraceState::default(),
    ))
}

/// The `traceparent` naming `span`, when it belongs to a trace (the layer is installed).
#[must_use]
pub fn traceparent_of(span: &tracing::Span) -> Option<Traceparent> {
    let context = span.context();
    let span = context.span();
    let found = span.span_context();
    found.is_valid().then(|| Traceparent {
        trace_id: found.trace_id().to_bytes(),
        span_id: found.span_id().to_bytes(),
        flags: found.trace_flags().to_u8(),
    })
}
