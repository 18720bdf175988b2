//! The outbound API's data on PostgreSQL, one file per resource. Every change is one
//! transaction that first locks its application's row `FOR NO KEY UPDATE`, so that a
//! message accepted at the same time (which holds it `FOR SHARE`) sees the change either
//! wholly or not at all (`docs/design/outbound-api.md` §3.3), and writes its audit record
//! in that transaction ([`record`]).

mod app_token;
mod application;
mod attempt;
mod endpoint;
mod event_type;
pub(super) mod message;
mod redelivery;

use deadpool_postgres::GenericClient;

use super::audit;
use crate::model::{
    audit::{Action, Actor, at_ms},
    outbound::{Lookup, OutboundError, Resource},
};

impl From<tokio_postgres::Error> for OutboundError {
    fn from(err: tokio_postgres::Error) -> Self {
        Self::Store(err.into())
    }
}

impl From<deadpool_postgres::PoolError> for OutboundError {
    fn from(err: deadpool_postgres::PoolError) -> Self {
        Self::Store(err.into())
    }
}

/// Moves the outbound version on and returns it, in the change's transaction.
async fn bump_version(tx: &impl GenericClient) -> Result<i64, OutboundError> {
    let bump = tx.prepare_cached("UPDATE outbound_version SET version = version + 1 RETURNING version").await?;
    Ok(tx.query_one(&bump, &[]).await?.try_get(0)?)
}

/// Records that `by` did `action` to `target` (one row) at `now_ms`, in the change's own
/// transaction: the record is kept exactly when the change is.
async fn record(
    tx: &impl GenericClient,
    by: &Actor,
    action: Action,
    target: String,
    now_ms: i64,
) -> Result<(), OutboundError> {
    audit::insert_if(tx, Some(&by.did(action, target)), at_ms(now_ms), 1).await?;
    Ok(())
}

/// How a transaction holds its application's row.
#[derive(Debug, Clone, Copy)]
enum Hold {
    /// A message being accepted: endpoint changes wait for it, other messages do not.
    Share,
    /// An application or endpoint change.
    Change,
}

/// The id of the live application `app` names, without a lock (for reads).
pub(super) async fn app_id(client: &impl GenericClient, app: &Lookup) -> Result<String, OutboundError> {
    let (column, value) = app.column("uid");
    let select = client
        .prepare_cached(&format!("SELECT id FROM applications WHERE {column} = $1 AND deleted_at IS NULL"))
        .await?;
    match client.query_opt(&select, &[&value]).await? {
        Some(row) => Ok(row.try_get(0)?),
        None => Err(OutboundError::NotFound(Resource::Application)),
    }
}

/// Locks the live application `app` names as `hold` says and returns its id.
async fn lock_app(tx: &impl GenericClient, app: &Lookup, hold: Hold) -> Result<String, OutboundError> {
    let (column, value) = app.column("uid");
    let mode = match hold {
        Hold::Share => "FOR SHARE",
        Hold::Change => "FOR NO KEY UPDATE",
    };
    let select = tx
        .prepare_cached(&format!("SELECT id FROM applications WHERE {column} = $1 AND deleted_at IS NULL {mode}"))
        .await?;
    match tx.query_opt(&select, &[&value]).await? {
        Some(row) => Ok(row.try_get(0)?),
        None => Err(OutboundError::NotFound(Resource::Application)),
    }
}

/// A stored rate as the model's.
fn rate(stored: Option<i32>) -> Option<u16> {
    stored.and_then(|rate| u16::try_from(rate).ok())
}
