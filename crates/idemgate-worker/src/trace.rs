//! One attempt's spans: `attempt`, with the children `claim`, `send` and `complete`. The
//! attempt's parent is the delivery that stored the event: a traced delivery stores its
//! own `traceparent` with the event's headers, and every attempt, retries and replays
//! alike, continues that trace. The attempt's own `traceparent` replaces it in the headers
//! the destination gets, so the destination's spans are the attempt's children.
//!
//! Claims and completions are made for a batch at once; each attempt's `claim` span is its
//! batch's claim (the attempt begins with it), and its `complete` span the store write that
//! recorded it. These spans are made with the OpenTelemetry API on the process's tracer
//! provider, because the attempt begins before it is known: a span's start time is given.
//! Without a provider (no `[traces]`) the API makes no spans, an attempt's context is the
//! stored one, and the headers are left exactly as they were stored.

use std::time::SystemTime;

use idemgate_core::traceparent::{self, Traceparent};
use idemgate_store::jobs::ClaimedJob;
use opentelemetry::{
    Context, KeyValue, global,
    trace::{Span, SpanContext, SpanId, SpanKind, TraceContextExt, TraceFlags, TraceId, TraceState, Tracer},
};

/// The name the worker's spans are made under.
const TRACER: &str = "idemgate";

/// When a batch's claim started and ended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Claim {
    pub(crate) started: SystemTime,
    pub(crate) ended: SystemTime,
}

/// One attempt's span, open until [`AttemptTrace::finish`].
#[derive(Debug)]
pub(crate) struct AttemptTrace(Context);

impl AttemptTrace {
    /// Starts the attempt span of `job` at its claim's start, with the claim as its first child.
    pub(crate) fn start(job: &ClaimedJob, claim: Claim) -> Self {
        let tracer = global::tracer(TRACER);
        let parent = stored(job).map_or_else(Context::new, remote);
        let span = tracer
            .span_builder("attempt")
            .with_start_time(claim.started)
            .with_attributes([
                KeyValue::new("destination", job.destination.clone()),
                KeyValue::new("job.id", job.id),
                KeyValue::new("attempt", i64::from(job.attempt)),
            ])
            .start_with_context(&tracer, &parent);
        let context = parent.with_span(span);
        tracer
            .span_builder("claim")
            .with_start_time(claim.started)
            .start_with_context(&tracer, &context)
            .end_with_timestamp(claim.ended);
        Self(context)
    }

    /// Sets the attempt's `traceparent` in `job`'s headers, in place of the stored one.
    pub(crate) fn carry(&self, job: &mut ClaimedJob) {
        let span = self.0.span();
        let found = span.span_context();
        if !found.is_valid() {
            return;
        }
        let value = Traceparent {
            trace_id: found.trace_id().to_bytes(),
            span_id: found.span_id().to_bytes(),
            flags: found.trace_flags().to_u8(),
        }
        .to_string();
        match job.headers.iter_mut().find(|(name, _)| name == traceparent::HEADER) {
            Some((_, stored)) => *stored = value,
            None => job.headers.push((traceparent::HEADER.to_owned(), value)),
        }
    }

    /// A child span of the attempt, started now.
    pub(crate) fn child(&self, name: &'static str, kind: SpanKind) -> global::BoxedSpan {
        let tracer = global::tracer(TRACER);
        tracer.span_builder(name).with_kind(kind).start_with_context(&tracer, &self.0)
    }

    /// Records `attributes` on the attempt span.
    pub(crate) fn record(&self, attributes: Vec<KeyValue>) {
        self.0.span().set_attributes(attributes);
    }

    /// Ends the attempt span.
    pub(crate) fn finish(self) {
        self.0.span().end();
    }
}

/// The delivery's `traceparent` stored with the job's event.
fn stored(job: &ClaimedJob) -> Option<Traceparent> {
    job.headers.iter().find(|(name, _)| name == traceparent::HEADER).and_then(|(_, value)| Traceparent::parse(value))
}

/// A context whose span is the remote one `parent` names.
fn remote(parent: Traceparent) -> Context {
    Context::new().with_remote_span_context(SpanContext::new(
        TraceId::from_bytes(parent.trace_id),
        SpanId::from_bytes(parent.span_id),
        TraceFlags::new(parent.flags),
        true,
        TraceState::default(),
    ))
}
