//! Whether every commit the PostgreSQL store acknowledges is also on a synchronous
//! standby, so that promoting that standby after the primary is lost keeps every
//! acknowledged event. Read by [`crate::Store::replication`]; the decision is here, free
//! of SQL. A single server without replication is a valid setup: a risk is a warning
//! (logged at start-up, shown by `/readyz` and a gauge), never an error.

/// What the start-up log and `/readyz` say, before the [`FailoverRisk`], when a failover
/// could lose acknowledged events.
pub const FAILOVER_WARNING: &str = "a failover to a standby could lose acknowledged events";

/// The server's replication settings and standbys, as the store's session read them at
/// one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replication {
    /// `synchronous_commit` of the store's sessions (`off` is refused at start-up).
    pub synchronous_commit: String,
    /// `synchronous_standby_names`; empty when commits wait for no standby.
    pub synchronous_standby_names: String,
    /// Standbys `pg_stat_replication` lists as `sync` or `quorum`.
    pub standbys_in_sync: usize,
    /// Standbys whose `sync_state` the store's role may not read (it needs the privileges
    /// of `pg_read_all_stats`, e.g. through `pg_monitor`).
    pub standbys_hidden: usize,
}

/// Why a failover to a standby could lose commits the store already acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FailoverRisk {
    /// No standby is named, so commits wait for none.
    #[error("synchronous_standby_names is empty: commits are acknowledged before any standby has them")]
    NoStandbyNamed,
    /// The store's sessions do not wait for the standbys named.
    #[error("synchronous_commit is {0}: commits are acknowledged before a standby has them")]
    LocalCommit(&'static str),
    /// Standbys are named but none is connected and in sync: commits wait until one is.
    #[error("no synchronous standby is connected and in sync: commits wait until one is")]
    NoStandbyInSync,
    /// Standbys are connected but the store's role may not see whether they are in sync.
    #[error("the store's role cannot read pg_stat_replication.sync_state (grant it pg_monitor)")]
    StandbysHidden,
}

impl Replication {
    /// Why a failover could lose acknowledged events, or `None` when every commit the
    /// store acknowledges is on a standby that is connected and in sync.
    #[must_use]
    pub fn failover_risk(&self) -> Option<FailoverRisk> {
        if self.synchronous_standby_names.trim().is_empty() {
            return Some(FailoverRisk::NoStandbyNamed);
        }
        match self.synchronous_commit.as_str() {
            "on" | "remote_write" | "remote_apply" => {}
            "local" => return Some(FailoverRisk::LocalCommit("local")),
            _ => return Some(FailoverRisk::LocalCommit("off")),
        }
        match (self.standbys_in_sync, self.standbys_hidden) {
            (0, 0) => Some(FailoverRisk::NoStandbyInSync),
            (0, _) => Some(FailoverRisk::StandbysHidden),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{FailoverRisk, Replication};

    fn replication(commit: &str, names: &str, in_sync: usize, hidden: usize) -> Replication {
        Replication {
            synchronous_commit: commit.to_owned(),
            synchronous_standby_names: names.to_owned(),
            standbys_in_sync: in_sync,
            standbys_hidden: hidden,
        }
    }

    #[test]
    fn only_a_named_standby_in_sync_with_waiting_commits_is_safe() {
        for commit in ["on", "remote_write", "remote_apply"] {
            assert_eq!(replication(commit, "standby", 1, 0).failover_risk(), None, "{commit}");
            assert_eq!(replication(commit, "ANY 1 (a, b)", 2, 0).failover_risk(), None, "{commit}");
        }
        assert_eq!(replication("on", "", 1, 0).failover_risk(), Some(FailoverRisk::NoStandbyNamed));
        assert_eq!(replication("on", " ", 0, 0).failover_risk(), Some(FailoverRisk::NoStandbyNamed));
        assert_eq!(replication("local", "standby", 1, 0).failover_risk(), Some(FailoverRisk::LocalCommit("local")));
        assert_eq!(replication("off", "standby", 1, 0).failover_risk(), Some(FailoverRisk::LocalCommit("off")));
        assert_eq!(replication("on", "standby", 0, 0).failover_risk(), Some(FailoverRisk::NoStandbyInSync));
        assert_eq!(replication("on", "standby", 0, 1).failover_risk(), Some(FailoverRisk::StandbysHidden));
    }
}
