//! How the store reports its server's replication: SQLite has no standby to fail over to;
//! PostgreSQL reads its session's `synchronous_commit`, the server's
//! `synchronous_standby_names` and the standbys in sync. The test server on 5432 has no
//! standby, so a failover there could lose acknowledged events (a primary with a
//! synchronous standby is in the gateway's failover test, `postgres_failover.rs`).

use std::time::Duration;

use idemgate_store::{
    PgOptions, PgStore, Store, create_schema,
    replication::{FailoverRisk, Replication},
};

use crate::{TestStore, postgres_url, unique_schema};

#[tokio::test]
async fn sqlite_has_no_replication_to_report() {
    let store: TestStore = crate::sqlite().await;
    assert_eq!(store.store.replication().await.unwrap(), None);
}

#[tokio::test]
async fn postgres_without_a_standby_reports_the_risk_of_a_failover() {
    let store = crate::postgres().await;
    let replication = store.store.replication().await.unwrap().expect("PostgreSQL reports its replication");
    assert_eq!(
        replication,
        Replication {
            synchronous_commit: "on".to_owned(),
            synchronous_standby_names: String::new(),
            standbys_in_sync: 0,
            standbys_hidden: 0,
        }
    );
    assert_eq!(replication.failover_risk(), Some(FailoverRisk::NoStandbyNamed));
}

#[tokio::test]
async fn postgres_reports_the_synchronous_commit_of_the_stores_own_sessions() {
    let url = create_schema(&postgres_url(), &unique_schema("repl")).await.unwrap();
    let local = format!("{url}%20-csynchronous_commit%3Dlocal");
    let options = PgOptions { pool_size: 1, wait_timeout: Duration::from_secs(10) };
    let store: Store = PgStore::connect(&local, options).await.unwrap().into();
    let replication = store.replication().await.unwrap().unwrap();
    assert_eq!(replication.synchronous_commit, "local");
}
