//! One attempt of one job on its snapshot's route: the transform, the send, the retry
//! policy's decision, and what it records of it (metrics and span attributes).

use std::collections::HashMap;

use idemgate_core::retry::{AttemptResult, DeadReason, Decision};
use idemgate_jq::Program;
use idemgate_store::jobs::{AttemptRecord, ClaimedJob};
use opentelemetry::{
    KeyValue,
    trace::{Span, SpanKind},
};

use super::{Attempted, Worker};
use crate::{
    AttemptOutcome,
    route::Route,
    trace::{AttemptTrace, Claim},
};

impl Worker {
    /// Delivers one job on its batch's `routes` and decides what follows; recording is
    /// left to [`Self::record`].
    pub(super) async fn attempt(
        &self,
        mut job: ClaimedJob,
        routes: &HashMap<String, Route>,
        claim: Claim,
    ) -> (Attempted, AttemptTrace) {
        let trace = AttemptTrace::start(&job, claim);
        trace.carry(&mut job);
        let started_at = self.clock.now();
        let timer = std::time::Instant::now();
        let (outcome, decision) = match routes.get(&job.destination) {
            Some(route) => {
                let mut send = trace.child("send", SpanKind::Client);
                let outcome = match &route.transform {
                    None => route.deliver.deliver(&job, started_at).await,
                    Some(transform) => match transformed(&job, transform) {
                        Ok(job) => route.deliver.deliver(&job, started_at).await,
                        Err(refused) => refused,
                    },
                };
                send.set_attributes(result_attributes(&outcome.result));
                send.end();
                let decision = route.policy.decide(job.attempt, outcome.result, (self.draw)());
                (outcome, decision)
            }
            None => {
                (AttemptOutcome::failed("destination is not configured"), Decision::Dead(DeadReason::AttemptsExhausted))
            }
        };
        let record = AttemptRecord {
            started_at,
            latency: timer.elapsed(),
            status: match outcome.result {
                idemgate_core::retry::AttemptResult::Status { status, .. } => Some(status),
                _ => None,
            },
            error: outcome.error,
            response_prefix: outcome.response_prefix,
            outcome: idemgate_core::retry::Attempted::of(outcome.result),
        };
        let class = match outcome.result {
            idemgate_core::retry::AttemptResult::Status { status, .. } => match status {
                200..=299 => "2xx",
                300..=399 => "3xx",
                400..=499 => "4xx",
                _ => "5xx",
            },
            idemgate_core::retry::AttemptResult::Timeout => "timeout",
            idemgate_core::retry::AttemptResult::Connection => "connection",
            idemgate_core::retry::AttemptResult::Accepted => "accepted",
            idemgate_core::retry::AttemptResult::Refused { .. } => "refused",
        };
        let destination = self.labels.destination(&job.destination).to_owned();
        metrics::counter!("idemgate_attempts_total", "destination" => destination.clone(), "result" => class)
            .increment(1);
        metrics::histogram!("idemgate_delivery_seconds", "destination" => destination)
            .record(record.latency.as_secs_f64());
        let mut attributes = result_attributes(&outcome.result);
        attributes.push(KeyValue::new("decision", decision_name(decision)));
        trace.record(attributes);
        ((job, record, decision), trace)
    }
}

/// What an attempt came to, as span attributes: the status when there is one, and the
/// kind of result.
fn result_attributes(result: &AttemptResult) -> Vec<KeyValue> {
    let (kind, status) = match result {
        AttemptResult::Status { status, .. } => ("status", Some(*status)),
        AttemptResult::Timeout => ("timeout", None),
        AttemptResult::Connection => ("connection", None),
        AttemptResult::Accepted => ("accepted", None),
        AttemptResult::Refused { .. } => ("refused", None),
    };
    let mut attributes = vec![KeyValue::new("result", kind)];
    attributes.extend(status.map(|status| KeyValue::new("http.response.status_code", i64::from(status))));
    attributes
}

/// The decision's name, without its delay or reason's details.
fn decision_name(decision: Decision) -> &'static str {
    match decision {
        Decision::Succeeded => "succeeded",
        Decision::RetryAfter(_) => "retry",
        Decision::Dead(_) => "dead",
        Decision::DisableDestination => "disable_destination",
    }
}

/// `job` with the body `transform` makes of its stored one, or the attempt's permanent
/// refusal saying why there is none (the error names the kind, never the event's values).
fn transformed(job: &ClaimedJob, transform: &Program) -> Result<ClaimedJob, AttemptOutcome> {
    match transform.transform(&job.body) {
        Ok(body) => {
            Ok(ClaimedJob { body: body.into(), content_type: Some("application/json".to_owned()), ..job.clone() })
        }
        Err(err) => Err(AttemptOutcome {
            result: AttemptResult::Refused { permanent: true },
            error: Some(err.to_string()),
            response_prefix: None,
        }),
    }
}
