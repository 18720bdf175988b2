//! The receipt statements a lone delivery (`receive.rs`) and a group commit (`group.rs`)
//! share: the accept of the common case in one statement, for one delivery or a batch,
//! and the answer to a delivery whose receipt was already there. A leaf: it imports
//! neither of the two.

use idemgate_core::Outcome;

use crate::{
    ReceiveRequest, StoreError,
    inbox::IncomingEvent,
    model::{
        inbox::{outgoing_id, stored_headers},
        receive::{conflict_refused, duplicate_of},
    },
};

/// The common case in one statement, for a batch of deliveries (or one): each receipt
/// insert decides, and an event, its payload and its jobs are inserted only for a receipt row it
/// returned. The deliveries come as arrays (in the batch's order, which is key order) and
/// their destinations as (position, destination) pairs. Of several deliveries of one key
/// only the first is offered, so the others find its receipt. Returns the positions (from
/// 1) of the deliveries that inserted their receipt, and so their event and jobs.
const ACCEPT_IN_ONE_STATEMENT: &str = r#"WITH input AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::text[], $5::bigint[], $6::text[],
                             $7::text[], $8::bytea[], $9::text[], $10::text[])
            WITH ORDINALITY AS i(source, identity, body_sha256, result, received_at, event_type,
                                 content_type, body, headers, outgoing_id, n)
     ), first AS (
        SELECT DISTINCT ON (source, identity) * FROM input ORDER BY source, identity, n
     ), receipt AS (
        INSERT INTO receipts (source, identity, body_sha256, outcome, result, received_at)
        SELECT source, identity, body_sha256, 'applied', result, received_at FROM first ORDER BY n
        ON CONFLICT DO NOTHING RETURNING source, identity
     ), inserted AS (
        SELECT f.* FROM receipt r
        JOIN first f ON f.source COLLATE "C" = r.source AND f.identity COLLATE "C" = r.identity
     ), event AS (
        INSERT INTO events (source, identity, event_type, content_type, received_at, headers, outgoing_id)
        SELECT source, identity, event_type, content_type, received_at, headers, outgoing_id
        FROM inserted ORDER BY n RETURNING id, source, identity
     ), payload AS (
        INSERT INTO payloads (event_id, body)
        SELECT e.id, i.body
        FROM event e
        JOIN inserted i ON i.source COLLATE "C" = e.source AND i.identity COLLATE "C" = e.identity
     ), jobs AS (
        INSERT INTO jobs (event_id, destination, state, next_attempt_at_ms, created_at, updated_at)
        SELECT e.id, d.destination, 'pending', i.received_at * 1000, i.received_at, i.received_at
        FROM event e
        JOIN inserted i ON i.source COLLATE "C" = e.source AND i.identity COLLATE "C" = e.identity
        JOIN unnest($11::bigint[], $12::text[]) AS d(n, destination) ON d.n = i.n
     )
     SELECT n FROM inserted"#;

/// Offers every delivery of `batch` in [`ACCEPT_IN_ONE_STATEMENT`] on `tx`: whether
/// each inserted its receipt, in the batch's order.
pub(super) async fn accept_all(
    tx: &impl deadpool_postgres::GenericClient,
    batch: &[AcceptParams<'_>],
) -> Result<Vec<bool>, StoreError> {
    let sources: Vec<&str> = batch.iter().map(|p| p.source).collect();
    let identities: Vec<&str> = batch.iter().map(|p| p.identity).collect();
    let hashes: Vec<&[u8]> = batch.iter().map(|p| p.body_hash).collect();
    let results: Vec<&str> = batch.iter().map(|p| p.result.as_str()).collect();
    let received: Vec<i64> = batch.iter().map(|p| p.received_at).collect();
    let types: Vec<Option<&str>> = batch.iter().map(|p| p.event_type.as_deref()).collect();
    let content_types: Vec<Option<&str>> = batch.iter().map(|p| p.content_type.as_deref()).collect();
    let bodies: Vec<&[u8]> = batch.iter().map(|p| p.body).collect();
    let headers: Vec<Option<&str>> = batch.iter().map(|p| p.headers.as_deref()).collect();
    let outgoing: Vec<&str> = batch.iter().map(|p| p.outgoing_id).collect();
    let (mut at, mut destinations) = (Vec::new(), Vec::new());
    for (n, params) in (1_i64..).zip(batch) {
        for destination in &params.destinations {
            at.push(n);
            destinations.push(*destination);
        }
    }
    let accept = tx.prepare_cached(ACCEPT_IN_ONE_STATEMENT).await?;
    let rows = tx
        .query(
            &accept,
            &[
                &sources,
                &identities,
                &hashes,
                &results,
                &received,
                &types,
                &content_types,
                &bodies,
                &headers,
                &outgoing,
                &at,
                &destinations,
            ],
        )
        .await?;
    let mut inserted = vec![false; batch.len()];
    for row in rows {
        let n: i64 = row.try_get(0)?;
        if let Some(slot) = usize::try_from(n - 1).ok().and_then(|i| inserted.get_mut(i)) {
            *slot = true;
        }
    }
    Ok(inserted)
}

/// The values [`accept_all`] sends of one delivery, owned where they are derived, so that
/// a batch can hold them while its statement is in flight.
pub(super) struct AcceptParams<'a> {
    source: &'a str,
    identity: &'a str,
    body_hash: &'a [u8],
    result: String,
    received_at: i64,
    event_type: &'a Option<String>,
    content_type: &'a Option<String>,
    body: &'a [u8],
    headers: Option<String>,
    destinations: Vec<&'a str>,
    outgoing_id: &'a str,
}

impl<'a> AcceptParams<'a> {
    pub(super) fn new(request: &'a ReceiveRequest, event: &'a IncomingEvent) -> Self {
        let key = &request.key;
        Self {
            source: key.source.as_str(),
            identity: key.identity.as_str(),
            body_hash: &request.body_hash.0[..],
            result: event.result.to_string(),
            received_at: request.received_at.0,
            event_type: &event.event_type,
            content_type: &event.content_type,
            body: &event.body[..],
            headers: stored_headers(&event.headers),
            destinations: event.destinations.iter().map(String::as_str).collect(),
            outgoing_id: outgoing_id(event.outgoing_id.as_deref(), key),
        }
    }
}

/// The answer to a delivery whose receipt insert found one already there: a duplicate with
/// the stored result, or a conflict, recorded for the operator.
pub(super) async fn repeat(
    client: &impl deadpool_postgres::GenericClient,
    request: &ReceiveRequest,
) -> Result<Outcome, StoreError> {
    let key = &request.key;
    let (source, identity) = (key.source.as_str(), key.identity.as_str());
    let existing =
        client.prepare_cached("SELECT body_sha256, result FROM receipts WHERE source = $1 AND identity = $2").await?;
    let Some(row) = client.query_opt(&existing, &[&source, &identity]).await? else {
        // Purged between the insert and this lookup: the sender's retry starts afresh.
        return Err(StoreError::Malformed("receipt vanished during its lookup"));
    };
    let (hash, result): (Vec<u8>, String) = (row.try_get(0)?, row.try_get(1)?);
    if let Some(duplicate) = duplicate_of(&hash, &result, &request.body_hash)? {
        return Ok(duplicate);
    }
    conflict_refused(key, record_conflict(client, request).await);
    Ok(Outcome::Conflict)
}

async fn record_conflict(
    tx: &impl deadpool_postgres::GenericClient,
    request: &ReceiveRequest,
) -> Result<(), StoreError> {
    let key = &request.key;
    let upsert = tx
        .prepare_cached(
            "INSERT INTO conflicts (source, identity, body_sha256, first_seen_at, last_seen_at, seen_count)
             VALUES ($1, $2, $3, $4, $4, 1)
             ON CONFLICT (source, identity, body_sha256)
             DO UPDATE SET last_seen_at = excluded.last_seen_at, seen_count = conflicts.seen_count + 1",
        )
        .await?;
    tx.execute(
        &upsert,
        &[&key.source.as_str(), &key.identity.as_str(), &&request.body_hash.0[..], &request.received_at.0],
    )
    .await?;
    Ok(())
}
