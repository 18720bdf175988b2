//! `idemgate events list | show | stats`: what an operator types during an incident, as
//! aligned text or `--json`. Reads the store directly; identities and states only.

use idemgate_core::{Identity, ReceiptKey, SourceName};
use idemgate_store::{Store, StoreError, views::EventFilter};
use serde_json::{Value, json};

/// The listing as text (one event a line) or JSON.
pub async fn list(store: &Store, filter: EventFilter, as_json: bool) -> Result<String, StoreError> {
    let limit = filter.limit;
    let events = store.list_events(filter).await?;
    if as_json {
        let rows: Vec<Value> = events
            .iter()
            .map(|e| {
                let jobs: serde_json::Map<String, Value> = e.jobs.iter().map(|(d, s)| (d.clone(), json!(s))).collect();
                json!({"id": e.id, "source": e.source, "identity": e.identity, "type": e.event_type,
                       "received_at": e.received_at.0, "jobs": jobs})
            })
            .collect();
        let next = events.last().filter(|_| events.len() == limit).map(|e| e.id);
        return Ok(json!({ "events": rows, "next_before": next }).to_string());
    }
    let mut text =
        format!("{:>8}  {:<16} {:<40} {:<20} {:>11}  jobs\n", "id", "source", "identity", "type", "received");
    for e in &events {
        let jobs: Vec<String> = e.jobs.iter().map(|(d, s)| format!("{d}={s}")).collect();
        text.push_str(&format!(
            "{:>8}  {:<16} {:<40} {:<20} {:>11}  {}\n",
            e.id,
            e.source,
            e.identity,
            e.event_type.as_deref().unwrap_or("-"),
            e.received_at.0,
            jobs.join(" ")
        ));
    }
    if events.len() == limit {
        if let Some(last) = events.last() {
            text.push_str(&format!("(more: --before {})\n", last.id));
        }
    }
    Ok(text)
}

/// One event: its receipt, its jobs and every attempt.
pub async fn show(store: &Store, source: &str, identity: &str, as_json: bool) -> Result<Option<String>, StoreError> {
    let (Ok(source_name), Ok(id)) = (SourceName::new(source), Identity::new(identity)) else { return Ok(None) };
    let key = ReceiptKey { source: source_name, identity: id };
    let Some(receipt) = store.receipt(key.clone()).await? else { return Ok(None) };
    let jobs = store.jobs(key).await?;
    let attempts = store.attempts(source.to_owned(), identity.to_owned()).await?;
    if as_json {
        let jobs: Vec<Value> = jobs
            .iter()
            .map(|j| json!({"destination": j.destination, "state": j.state, "attempts": j.attempts, "next_attempt_at": j.next_attempt_at.0}))
            .collect();
        let attempts: Vec<Value> = attempts
            .iter()
            .map(|a| {
                json!({"destination": a.destination, "attempt": a.attempt, "started_at": a.started_at.0,
                             "latency_ms": a.latency_ms, "status": a.status, "error": a.error})
            })
            .collect();
        let view = json!({"source": source, "identity": identity, "body_sha256": receipt.body_hash.to_hex(),
                          "outcome": receipt.outcome, "result": receipt.result, "received_at": receipt.received_at.0,
                          "jobs": jobs, "attempts": attempts});
        return Ok(Some(view.to_string()));
    }
    let mut text = format!(
        "event     {source} / {identity}\nreceived  {}\nsha256    {}\noutcome   {} (result {})\n",
        receipt.received_at.0,
        receipt.body_hash.to_hex(),
        receipt.outcome,
        receipt.result
    );
    for job in &jobs {
        text.push_str(&format!(
            "job       {:<16} {:<10} attempts {}  next {}\n",
            job.destination, job.state, job.attempts, job.next_attempt_at.0
        ));
    }
    for a in &attempts {
        let status = a.status.map_or("-".to_owned(), |s| s.to_string());
        text.push_str(&format!(
            "attempt   {:<16} #{:<3} at {} {:>6} ms  status {status}  {}\n",
            a.destination,
            a.attempt,
            a.started_at.0,
            a.latency_ms,
            a.error.as_deref().unwrap_or("")
        ));
    }
    Ok(Some(text))
}

/// Counts per source.
pub async fn stats(store: &Store, since: Option<idemgate_core::UnixTime>, as_json: bool) -> Result<String, StoreError> {
    let all = store.stats(since).await?;
    if as_json {
        let rows: Vec<Value> = all
            .iter()
            .map(|s| {
                let jobs: serde_json::Map<String, Value> = s.jobs.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
                json!({"source": s.source, "receipts": s.receipts, "conflicts": s.conflicts, "jobs": jobs})
            })
            .collect();
        return Ok(json!({ "sources": rows }).to_string());
    }
    let mut text = format!("{:<16} {:>9} {:>9}  jobs\n", "source", "receipts", "conflicts");
    for s in &all {
        let jobs: Vec<String> = s.jobs.iter().map(|(k, v)| format!("{k} {v}")).collect();
        text.push_str(&format!("{:<16} {:>9} {:>9}  {}\n", s.source, s.receipts, s.conflicts, jobs.join(", ")));
    }
    Ok(text)
}
