//! The inbox: an event and its jobs commit with the receipt, or none of them does.

use idemgate_core::Outcome;
use idemgate_store::{
    HandlerError,
    sqlite::inbox::{NewEvent, accept_event},
};
use serde_json::json;

use crate::{open_store, request};

fn accept(
    request: &idemgate_store::ReceiveRequest,
    destinations: &'static [&'static str],
) -> impl FnOnce(&idemgate_store::Connection) -> Result<serde_json::Value, HandlerError> + use<> {
    let key = request.key.clone();
    let received_at = request.received_at;
    move |conn| {
        let event = NewEvent {
            key: &key,
            outgoing_id: None,
            event_type: Some("t"),
            content_type: Some("application/json"),
            headers: &[],
            ordering: None,

            body: b"{}",
            received_at,
        };
        accept_event(conn, &event, destinations)?;
        Ok(json!({ "event": key.identity.as_str() }))
    }
}

#[tokio::test]
async fn an_accepted_event_has_one_pending_job_per_destination() {
    let t = open_store();
    let req = request("e1", b"{}");
    let outcome = t.store.receive(req.clone(), accept(&req, &["app", "audit"])).await;
    assert_eq!(outcome, Outcome::Applied { result: json!({"event": "e1"}) });
    let repeat = t.store.receive(req.clone(), accept(&req, &["app", "audit"])).await;
    assert!(matches!(repeat, Outcome::Duplicate { .. }));
    let reader = t.reader();
    let jobs = reader.jobs(&req.key).unwrap();
    let states: Vec<_> = jobs.iter().map(|j| (j.destination.as_str(), j.state.as_str())).collect();
    assert_eq!(states, [("app", "pending"), ("audit", "pending")]);
    assert_eq!(reader.event(&req.key).unwrap().map(|e| e.body_len), Some(2));
}

#[tokio::test]
async fn a_refusal_after_the_insert_leaves_neither_event_nor_jobs() {
    let t = open_store();
    let req = request("e1", b"{}");
    let inner = accept(&req, &["app"]);
    let refusing = move |conn: &idemgate_store::Connection| {
        inner(conn)?;
        Err(HandlerError::Refused("type not allowed"))
    };
    let outcome = t.store.receive(req.clone(), refusing).await;
    assert_eq!(outcome, Outcome::Refused { reason: "type not allowed" });
    let reader = t.reader();
    assert_eq!(reader.event(&req.key).unwrap(), None);
    assert!(reader.jobs(&req.key).unwrap().is_empty());
    assert_eq!(reader.receipt(&req.key).unwrap(), None);
}
