//! The recording: finished attempts written to the store in groups, with their
//! destinations' breakers, and what became of each logged.

use idemgate_core::retry::Decision;
use idemgate_store::{
    StoreError,
    jobs::{Breakers, Completion},
};
use opentelemetry::{
    KeyValue,
    trace::{Span, SpanKind, Status},
};
use tokio::sync::mpsc;

use super::{Attempted, Finished, Worker};
use crate::trace::AttemptTrace;

impl Worker {
    /// Records the attempts arriving on `finished` in groups (whatever has arrived by the
    /// time the previous group is recorded), until every attempt that could send one has.
    /// A group with an attempt the claim loop waits for (one of a destination its last
    /// claim was short of room for, or of a FIFO destination, whose next event is due once
    /// this one is recorded) wakes the loop.
    pub(super) async fn record_all(&self, mut finished: mpsc::UnboundedReceiver<Finished>) {
        while let Some(first) = finished.recv().await {
            let mut group = vec![first];
            while let Ok(more) = finished.try_recv() {
                group.push(more);
            }
            let mut breakers = Breakers::new();
            let mut wake = false;
            let attempts: Vec<_> = group
                .into_iter()
                .map(|(done, breaker, fifo)| {
                    let destination = &done.0.0.destination;
                    if let Some(breaker) = breaker {
                        breakers.insert(destination.clone(), breaker);
                    }
                    wake |= fifo || self.room.waits_for(destination);
                    done
                })
                .collect();
            if let Err(err) = self.record(attempts, &breakers).await {
                tracing::warn!(error = %err, "could not record delivery attempts; their leases expire and they are retried");
            }
            if wake {
                self.room.freed.notify_one();
            }
        }
    }

    /// Records finished attempts in one store write, with their destinations' breakers,
    /// and logs what became of each.
    async fn record(&self, group: Vec<(Attempted, AttemptTrace)>, breakers: &Breakers) -> Result<(), StoreError> {
        let (group, traces): (Vec<_>, Vec<_>) = group.into_iter().unzip();
        let described: Vec<_> = group
            .iter()
            .map(|(job, _, decision)| {
                (job.id, job.destination.clone(), job.key.identity.to_string(), job.attempt, *decision)
            })
            .collect();
        let mut writes: Vec<_> = traces.iter().map(|trace| trace.child("complete", SpanKind::Internal)).collect();
        let completed = self.store.complete_jobs_with_breakers(group, self.clock.now_ms(), breakers.clone()).await;
        for write in &mut writes {
            if completed.is_err() {
                write.set_status(Status::error("the attempt could not be recorded"));
            }
            write.end();
        }
        let completions = match completed {
            Ok(completions) => completions,
            Err(err) => {
                traces.into_iter().for_each(AttemptTrace::finish);
                return Err(err);
            }
        };
        for (((id, destination, identity, attempt, decision), completion), trace) in
            described.into_iter().zip(completions).zip(traces)
        {
            let recorded = if matches!(completion, Completion::Stale) { "stale" } else { "recorded" };
            trace.record(vec![KeyValue::new("completion", recorded)]);
            trace.finish();
            match completion {
                Completion::Recorded if decision == Decision::Succeeded => {
                    tracing::debug!(job = id, %destination, %identity, attempt, "delivered");
                }
                Completion::Recorded => {
                    tracing::info!(job = id, %destination, %identity, attempt, decision = ?decision, "delivery attempt failed");
                }
                Completion::Stale => {
                    tracing::warn!(job = id, %destination, attempt, "lease was taken over; this attempt's result is not applied");
                }
            }
        }
        Ok(())
    }
}
