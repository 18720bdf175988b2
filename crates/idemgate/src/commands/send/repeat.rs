//! `idemgate send --repeat N`: many operations at once over `--concurrency` tasks, as a
//! load generator, and their counts by outcome and final answer, as a table or JSON.

use std::{collections::BTreeMap, sync::Arc, time::Instant};

use idemgate_client::{Client, Final, Request, SendError, Sent};

use super::{EXIT_GAVE_UP, EXIT_REJECTED};

/// Operations by how they ended.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
struct Outcomes {
    /// Got a 2xx.
    succeeded: usize,
    /// Got a final refusal.
    rejected: usize,
    /// Ran out of attempts.
    gave_up: usize,
}

/// What `send --repeat` did: outcome and final answer counts over all operations.
#[derive(Debug, Default, serde::Serialize)]
pub(super) struct RepeatReport {
    /// Operations sent.
    operations: usize,
    /// Wall time of the whole run.
    seconds: f64,
    /// Operations per second.
    per_second: f64,
    /// Operations by outcome.
    outcomes: Outcomes,
    /// Operations by their last answer's status.
    statuses: BTreeMap<u16, usize>,
    /// Operations whose last attempt got no answer, by why (`cannot connect: connection
    /// refused`).
    no_answer: BTreeMap<String, usize>,
}

impl RepeatReport {
    fn count(&mut self, sent: &Sent) {
        let outcome = match sent.outcome {
            Final::Succeeded => &mut self.outcomes.succeeded,
            Final::Rejected => &mut self.outcomes.rejected,
            Final::GaveUp => &mut self.outcomes.gave_up,
        };
        *outcome += 1;
        match sent.attempts.last().and_then(|attempt| attempt.error.as_ref()) {
            Some(error) if sent.status == 0 => *self.no_answer.entry(error.to_string()).or_insert(0) += 1,
            _ => *self.statuses.entry(sent.status).or_insert(0) += 1,
        }
    }

    /// The exit code: the worst outcome's.
    #[must_use]
    pub(super) fn exit_code(&self) -> u8 {
        if self.outcomes.gave_up > 0 {
            EXIT_GAVE_UP
        } else if self.outcomes.rejected > 0 {
            EXIT_REJECTED
        } else {
            0
        }
    }

    /// The report as text: a headline, then outcome → operations and answer → operations.
    #[must_use]
    pub(super) fn table(&self) -> String {
        let outcomes = [
            ("succeeded".to_owned(), self.outcomes.succeeded),
            ("rejected".to_owned(), self.outcomes.rejected),
            ("gave up".to_owned(), self.outcomes.gave_up),
        ];
        let answers: Vec<(String, usize)> = self
            .statuses
            .iter()
            .map(|(status, n)| (status.to_string(), *n))
            .chain(self.no_answer.iter().map(|(why, n)| (format!("none: {why}"), *n)))
            .collect();
        let width = outcomes.iter().chain(&answers).map(|(label, _)| label.len()).max().unwrap_or(0).max(7);
        let mut text = format!(
            "{} operations in {:.2} s ({:.0}/s)\n\n{:<width$}  operations\n",
            self.operations, self.seconds, self.per_second, "outcome"
        );
        for (label, n) in &outcomes {
            text.push_str(&format!("{label:<width$}  {n:>10}\n"));
        }
        text.push_str(&format!("\n{:<width$}  operations\n", "status"));
        for (label, n) in &answers {
            text.push_str(&format!("{label:<width$}  {n:>10}\n"));
        }
        text
    }
}

/// Sends `count` operations built by `make` over `concurrency` tasks and counts how they
/// ended. A request that cannot be built at all stops the run with its error.
pub(super) async fn repeat(
    client: &Client,
    make: Arc<dyn Fn(usize) -> Request + Send + Sync>,
    count: usize,
    concurrency: usize,
) -> Result<RepeatReport, SendError> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (client, make, next) = (client.clone(), Arc::clone(&make), Arc::clone(&next));
            tokio::spawn(async move {
                let mut results = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= count {
                        return Ok(results);
                    }
                    results.push(client.send(make(i)).await?);
                }
            })
        })
        .collect();
    let mut report = RepeatReport::default();
    for task in tasks {
        let sent = match task.await {
            Ok(sent) => sent?,
            Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
        };
        for sent in sent {
            report.count(&sent);
        }
    }
    report.operations = count;
    report.seconds = started.elapsed().as_secs_f64();
    report.per_second = count as f64 / report.seconds.max(f64::EPSILON);
    Ok(report)
}
