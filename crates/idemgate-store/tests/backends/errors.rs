//! Both backends' failures come out as one [`ErrorKind`], and PostgreSQL's start-up is
//! safe when several instances migrate one schema at once.

use std::time::Duration;

use idemgate_store::{ErrorKind, PgOptions, PgStore, StoreError, create_schema};

use crate::{postgres_url, unique_schema};

#[test]
fn a_sqlite_unique_violation_and_lock_timeout_have_their_kinds() {
    let dir = tempfile::tempdir().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("k.sqlite3")).unwrap();
    conn.execute_batch("CREATE TABLE t (k TEXT PRIMARY KEY); INSERT INTO t VALUES ('a');").unwrap();
    let err = StoreError::from(conn.execute("INSERT INTO t VALUES ('a')", []).unwrap_err());
    assert_eq!(err.kind(), ErrorKind::UniqueViolation);
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    let other = rusqlite::Connection::open(dir.path().join("k.sqlite3")).unwrap();
    let err = StoreError::from(other.execute_batch("BEGIN IMMEDIATE").unwrap_err());
    assert_eq!(err.kind(), ErrorKind::SerializationFailure);
}

#[tokio::test]
async fn a_postgres_unique_violation_and_a_lost_connection_have_their_kinds() {
    let url = create_schema(&postgres_url(), &unique_schema("kinds")).await.unwrap();
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.batch_execute("CREATE TABLE t (k TEXT PRIMARY KEY); INSERT INTO t VALUES ('a')").await.unwrap();
    let err = StoreError::from(client.execute("INSERT INTO t VALUES ('a')", &[]).await.unwrap_err());
    assert_eq!(err.kind(), ErrorKind::UniqueViolation);
    let err =
        StoreError::from(client.batch_execute("SELECT pg_terminate_backend(pg_backend_pid())").await.unwrap_err());
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
}

#[tokio::test]
async fn a_database_that_cannot_be_reached_is_unavailable_and_the_password_is_not_shown() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let url = format!("postgres://idemgate:s3cr3t-pw@127.0.0.1:{port}/nothing");
    let err =
        PgStore::connect(&url, PgOptions { pool_size: 1, wait_timeout: Duration::from_secs(2) }).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(!err.to_string().contains("s3cr3t-pw"), "{err}");
    let err = PgStore::connect("postgres://a:s3cr3t-pw@[bad", PgOptions::default()).await.unwrap_err();
    assert!(!err.to_string().contains("s3cr3t-pw"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_instances_starting_at_once_migrate_one_schema_once() {
    let url = create_schema(&postgres_url(), &unique_schema("boot")).await.unwrap();
    let starts: Vec<_> = (0..6)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(
                async move { PgStore::connect(&url, PgOptions { pool_size: 2, ..PgOptions::default() }).await },
            )
        })
        .collect();
    for start in starts {
        start.await.unwrap().unwrap();
    }
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let rows = client.query("SELECT version FROM idemgate_schema", &[]).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, i32>(0), 20);
    client.execute("UPDATE idemgate_schema SET version = 99", &[]).await.unwrap();
    let err = PgStore::connect(&url, PgOptions::default()).await.unwrap_err();
    assert!(matches!(err, StoreError::NewerSchema { found: 99, supported: 20 }), "{err}");
}

#[tokio::test]
async fn a_postgres_session_with_synchronous_commit_off_is_refused_before_the_schema_is_touched() {
    let url = create_schema(&postgres_url(), &unique_schema("nosync")).await.unwrap();
    // Every session of this URL acknowledges commits before they reach the WAL on disk.
    let unsafe_url = format!("{url}%20-csynchronous_commit%3Doff");
    let err = PgStore::connect(&unsafe_url, PgOptions::default()).await.unwrap_err();
    assert!(matches!(err, StoreError::Config(_)), "{err}");
    assert!(err.to_string().contains("synchronous_commit=off"), "{err}");
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let tables = client
        .query("SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema()", &[])
        .await
        .unwrap();
    assert!(tables.is_empty(), "nothing was migrated into the schema");
    PgStore::connect(&url, PgOptions::default()).await.unwrap();
}
