//! Retention on PostgreSQL: the rules of [`crate::maintenance`], in one transaction. Backups are PostgreSQL's own business (`pg_dump`, base backups).

use idemgate_core::UnixTime;

use super::{PgStore, partitions::delete_payloads};
use crate::{
    StoreError,
    maintenance::{PurgeReport, Retention},
    model::maintenance::cutoff,
};

/// Events of `$1` received before `$2` whose jobs are all finished and that hold no
/// ordering version.
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
        for policy in policies {
            let receipts_before = cutoff(now, policy.receipts);
            let payloads_before = cutoff(now, policy.payloads);
            let source = policy.source.as_str();
            // A purged payload is a missing `payloads` row (docs/design/postgres-partitions.md).
            report.payloads += count(delete_payloads(&tx, PURGEABLE_EVENTS, &[&source, &payloads_before]).await?);
            // Attempts are not deleted by rows: a deleted job's attempts are read by nothing
            // (every read joins their job), and their day goes whole once every attempt in it
            // is of no job or of a job purged (`partitions::retire`).
            tx.execute(
                &format!("DELETE FROM jobs WHERE event_id IN ({PURGEABLE_EVENTS})"),
                &[&source, &receipts_before],
            )
            .await?;
            // The payloads of the events deleted below (past the receipt retention but not
            // the payload retention): not counted as payloads, as before.
            delete_payloads(&tx, PURGEABLE_EVENTS, &[&source, &receipts_before]).await?;
            report.events += count(
                tx.execute(
                    &format!("DELETE FROM events WHERE id IN ({PURGEABLE_EVENTS})"),
                    &[&source, &receipts_before],
                )
                .await?,
            );
            report.receipts += count(
                tx.execute(
                    "DELETE FROM receipts WHERE source = $1 AND received_at < $2
                       AND NOT EXISTS (SELECT 1 FROM events e
                                       WHERE e.source = receipts.source AND e.identity = receipts.identity)",
                    &[&source, &receipts_before],
                )
                .await?,
            );
            tx.execute(
                "DELETE FROM body_receipts WHERE source = $1
                   AND NOT EXISTS (SELECT 1 FROM receipts r
                                   WHERE r.source = body_receipts.source AND r.identity = body_receipts.identity)",
                &[&source],
            )
            .await?;
            report.conflicts += count(
                tx.execute(
                    "DELETE FROM conflicts WHERE source = $1 AND last_seen_at < $2
                       AND NOT EXISTS (SELECT 1 FROM receipts r
                                       WHERE r.source = conflicts.source AND r.identity = conflicts.identity)",
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
