//! How the server the store writes to replicates its commits: its settings for the
//! store's session and the standbys `pg_stat_replication` shows, as one row.

use super::PgStore;
use crate::{StoreError, replication::Replication};

impl PgStore {
    /// The server's replication as the store's session sees it now.
    pub(crate) async fn replication(&self) -> Result<Replication, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT current_setting('synchronous_commit'), current_setting('synchronous_standby_names'), \
                 (SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')), \
                 (SELECT count(*) FROM pg_stat_replication WHERE sync_state IS NULL)",
                &[],
            )
            .await?;
        let count = |index: usize| -> Result<usize, StoreError> {
            Ok(usize::try_from(row.try_get::<_, i64>(index)?).unwrap_or(0))
        };
        Ok(Replication {
            synchronous_commit: row.try_get(0)?,
            synchronous_standby_names: row.try_get(1)?,
            standbys_in_sync: count(2)?,
            standbys_hidden: count(3)?,
        })
    }
}
