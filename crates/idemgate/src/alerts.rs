//! The alert checker: every `[alerts] check_interval`, at the injected clock's now, it
//! reads the queue's health and the alerts recorded so far from the store, lets core
//! decide what to open and resolve ([`idemgate_core::alert::decide`]), and stores each
//! alert as an event of the reserved source [`ALERT_SOURCE`] with one job to the alert
//! destination, through [`Store::accept`] like any delivery. The worker then sends it,
//! signed, on the destination's retry schedule: an alert endpoint that is down gets the
//! alert when it is back.
//!
//! The event's identity is (condition, target, since), so two instances on one store
//! that notice the same condition store one event (the receipt decides), and a crash
//! between storing the event and recording the alert stores nothing new on the next
//! check (a duplicate) and records it then.

use std::sync::Arc;

use idemgate_clock::Clock;
use idemgate_core::{
    BodyHash, Identity, Outcome, ReceiptKey, SourceName, UnixTime,
    alert::{ALERT_SOURCE, Action, decide},
};
use idemgate_store::{ReceiveRequest, Store, StoreError, inbox::IncomingEvent};
use serde_json::json;
use tokio::sync::watch;

use crate::config::AlertsConfig;

/// Why one check stopped before its end (the next check starts over).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store did not take an alert's event.
    #[error("the alert {identity} was not stored: {outcome:?}")]
    NotStored {
        /// The alert's identity.
        identity: String,
        /// What the store answered.
        outcome: Outcome,
    },
}

/// Checks every `check_interval` until `stopped`.
pub async fn check_every(
    store: Store,
    alerts: AlertsConfig,
    clock: Arc<dyn Clock>,
    mut stopped: watch::Receiver<bool>,
) {
    tracing::info!(destination = %alerts.destination, "alerts on");
    loop {
        tokio::select! {
            () = tokio::time::sleep(alerts.check_interval) => {}
            _ = stopped.wait_for(|stop| *stop) => return,
        }
        if let Err(err) = check(&store, &alerts, clock.now()).await {
            tracing::warn!(error = %err, "alert check failed; the next check tries again");
        }
    }
}

/// One check at `now`: stores the alerts to open and resolve and records each; returns
/// what it stored (or found stored by another instance).
pub async fn check(store: &Store, alerts: &AlertsConfig, now: UnixTime) -> Result<Vec<Action>, CheckError> {
    let snapshot = store.alert_snapshot(alerts.destination.clone(), alerts.rules.dead_since(now)).await?;
    let records = store.alert_records().await?;
    let actions = decide(&alerts.rules, &snapshot, &records, now);
    for action in &actions {
        store_alert(store, &alerts.destination, action, now).await?;
        let alert = action.alert();
        let last = records.iter().find(|r| r.condition == alert.condition && r.target == alert.target);
        store.record_alert(action.record(last, now)).await?;
        let condition = alert.condition.name();
        match action {
            Action::Open(_) => tracing::warn!(condition, target = %alert.target, "alert opened"),
            Action::Resolve(_) => tracing::info!(condition, target = %alert.target, "alert resolved"),
        }
    }
    Ok(actions)
}

/// The alert's event and its one job to `destination`, stored once: a duplicate (or a
/// conflict: another instance stored the same alert with other counts) is already there.
async fn store_alert(store: &Store, destination: &str, action: &Action, now: UnixTime) -> Result<(), CheckError> {
    let identity = action.identity();
    let body = action.body().to_string().into_bytes();
    let invalid = |_| CheckError::NotStored { identity: identity.clone(), outcome: Outcome::Conflict };
    let key = ReceiptKey {
        source: SourceName::new(ALERT_SOURCE).map_err(invalid)?,
        identity: Identity::new(identity.clone()).map_err(invalid)?,
    };
    let request = ReceiveRequest { key, body_hash: BodyHash::of(&body), received_at: now, dedupe_body: false };
    let event = IncomingEvent {
        result: json!({ "event": identity }),
        outgoing_id: None,
        event_type: Some(action.event_type().to_owned()),
        content_type: Some("application/json".to_owned()),
        headers: Vec::new(),
        body: body.into(),
        ordering: None,
        destinations: Arc::from([destination.to_owned()]),
        dead: Vec::new(),
        refusal: None,
    };
    match store.accept(request, event).await {
        Outcome::Applied { .. } | Outcome::Duplicate { .. } | Outcome::Conflict => Ok(()),
        outcome => Err(CheckError::NotStored { identity, outcome }),
    }
}

/// The checker for `run`, once the store is open; `None` without `[alerts]`.
pub(crate) fn checker(
    alerts: Option<&AlertsConfig>,
    availability: Arc<crate::availability::Availability>,
    clock: Arc<dyn Clock>,
    stopped: watch::Receiver<bool>,
) -> Option<tokio::task::JoinHandle<()>> {
    let alerts = alerts?.clone();
    Some(tokio::spawn(async move {
        if availability.until_open(stopped.clone()).await {
            check_every(availability.store.clone(), alerts, clock, stopped).await;
        }
    }))
}
