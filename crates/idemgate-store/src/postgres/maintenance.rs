//! Retention on PostgreSQL: the rules of [`crate::maintenance`], in one transaction. Backups are PostgreSQL's own business (`pg_dump`, base backups).

use idemgate_core::UnixTime;

use super::{
    PgStore, first_column,
    partitions::{NO_JIT, delete_payloads, has_payload},
};
use crate::{
    StoreError,
    maintenance::{PurgeReport, Retention},
    model::maintenance::cutoff,
};

/// Events of `$1` received before `$2` whose jobs are all finished and that hold no
/// ordering version: probes of the unfinished jobs' and the ordering versions' indexes.
const PURGEABLE_EVENTS: &str = "SELECT e.id FROM events e
    WHERE e.source = $1 AND e.received_at < $2
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.event_id = e.id AND j.state IN ('pending', 'running', 'retrying'))
      AND NOT EXISTS (SELECT 1 FROM ordering_versions o WHERE o.event_id = e.id)";

fn count(rows: u64) -> usize {
    usize::try_from(rows).unwrap_or(usize::MAX)
}

impl PgStore {
    /// Applies `policies` at `now`, committed.
    pub(crate) async fn purge(&self, now: UnixTime, policies: Vec<Retention>) -> Result<PurgeReport, StoreError> {
        self.purge_or_count(now, &policies, false).await
    }

    /// What [`Self::purge`] would remove: counted, and rolled back.
    pub(crate) async fn purge_dry_run(
        &self,
        now: UnixTime,
        policies: Vec<Retention>,
    ) -> Result<PurgeReport, StoreError> {
        self.purge_or_count(now, &policies, true).await
    }

    /// Applies `policies` at `now`, and the messages' own payload retention (`expires_at`),
    /// committed; or, when `dry_run`, counts and rolls back.
    async fn purge_or_count(
        &self,
        now: UnixTime,
        policies: &[Retention],
        dry_run: bool,
    ) -> Result<PurgeReport, StoreError> {
        let mut client = self.client().await?;
        let mut report = PurgeReport::default();
        if !dry_run {
            // Whole days of attempts and payloads first (the rows below would take them row
            // by row; the payloads they held that the rows below would have counted are
            // counted here, so that a dry run, by rows, reports the same).
            super::partitions::roll(&mut client, now).await?;
            if let Err(err) = super::partitions::retire(&mut client, now, policies, &mut report.payloads).await {
                tracing::warn!(error = %err, "retiring partitions failed; purging by rows");
            }
        }
        let tx = client.transaction().await?;
        tx.batch_execute(NO_JIT).await?;
        // One probe into each day's index of payloads.
        let oldest_payload: Option<i64> = tx.query_one("SELECT min(event_id) FROM payloads", &[]).await?.try_get(0)?;
        for policy in policies {
            let receipts_before = cutoff(now, policy.receipts);
            let payloads_before = cutoff(now, policy.payloads);
            let source = policy.source.as_str();
            // A purged payload is a missing `payloads` row (docs/design/postgres-partitions.md).
            // The events are selected once, then deleted by id: statements that each
            // selected them again were planned as joins reading `jobs` and `events` whole.
            // Only events from the oldest payload on: with payloads kept shorter than
            // receipts, the events between the two cutoffs lost theirs in earlier passes
            // (mostly as whole days), and are not looked at again.
            let payloads_past = match oldest_payload {
                Some(oldest) => {
                    let selected = format!("{PURGEABLE_EVENTS} AND e.id >= $3 AND {}", has_payload!("e.id"));
                    first_column(&tx.query(&selected, &[&source, &payloads_before, &oldest]).await?)?
                }
                None => Vec::new(),
            };
            report.payloads += count(delete_payloads(&tx, &payloads_past).await?);
            let events_past: Vec<i64> = first_column(&tx.query(PURGEABLE_EVENTS, &[&source, &receipts_before]).await?)?;
            // Attempts are not deleted by rows: a deleted job's attempts are read by nothing
            // (every read joins their job), and their day goes whole once every attempt in it
            // is of no job or of a job purged (`partitions::retire`). A job made to wait
            // again since the selection (a replay) stays, and keeps its event.
            tx.execute(
                "DELETE FROM jobs WHERE event_id = ANY($1) AND state NOT IN ('pending', 'running', 'retrying')",
                &[&events_past],
            )
            .await?;
            // The payloads of the events deleted below (past the receipt retention but not
            // the payload retention): not counted as payloads, as before.
            delete_payloads(&tx, &events_past).await?;
            report.events += count(
                tx.execute(
                    "DELETE FROM events e WHERE e.id = ANY($1)
                       AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.event_id = e.id)
                       AND NOT EXISTS (SELECT 1 FROM ordering_versions o WHERE o.event_id = e.id)",
                    &[&events_past],
                )
                .await?,
            );
            let receipts_gone: Vec<String> = first_column(
                &tx.query(
                    // `OFFSET 0`: a probe of the events' key per receipt; as an anti-join
                    // PostgreSQL may hash every event (9 s on 20 million).
                    "DELETE FROM receipts WHERE source = $1 AND received_at < $2
                       AND NOT EXISTS (SELECT 1 FROM events e
                                       WHERE e.source = receipts.source AND e.identity = receipts.identity OFFSET 0)
                     RETURNING identity",
                    &[&source, &receipts_before],
                )
                .await?,
            )?;
            report.receipts += receipts_gone.len();
            // The body receipts of the receipts just deleted (the only ones without a
            // receipt: their key to it is checked at commit), by their index, not a read
            // of every body receipt of the source.
            tx.execute(
                "DELETE FROM body_receipts WHERE source = $1 AND identity = ANY($2)",
                &[&source, &receipts_gone],
            )
            .await?;
            report.conflicts += count(
                tx.execute(
                    "DELETE FROM conflicts WHERE source = $1 AND last_seen_at < $2
                       AND NOT EXISTS (SELECT 1 FROM receipts r
                                       WHERE r.source = conflicts.source AND r.identity = conflicts.identity OFFSET 0)",
                    &[&source, &receipts_before],
                )
                .await?,
            );
        }
        report.payloads += count(super::outbound::message::purge_expired(&tx, now.0.saturating_mul(1000)).await?);
        if dry_run {
            tx.rollback().await?;
        } else {
            tx.commit().await?;
        }
        Ok(report)
    }
}
