//! Receipts and the gateway's inbox on PostgreSQL: one transaction per delivery that
//! inserts the receipt, the event and its jobs, or finds the receipt already there.

use idemgate_core::{Outcome, outcome::FailureCause};

use super::{
    PgStore,
    group::Reply,
    receipt::{AcceptParams, accept_all, repeat},
    retrying,
};
use crate::{
    ErrorKind, ReceiveRequest, StoreError,
    inbox::IncomingEvent,
    model::{
        inbox::{log_superseded, outgoing_id, stored_headers},
        jobs::bounded,
        receive::parse_result,
    },
};

/// The one statement that writes a receipt on PostgreSQL: $1 source, $2 identity, $3 body
/// hash, $4 result, $5 time received. Of racing first deliveries, one inserts; the others
/// wait on its index entry and then insert nothing.
const INSERT_RECEIPT: &str = "INSERT INTO receipts (source, identity, body_sha256, outcome, result, received_at)
     VALUES ($1, $2, $3, 'applied', $4, $5) ON CONFLICT DO NOTHING";

impl PgStore {
    /// Offers one delivery of a gateway event: exactly one of applied / duplicate /
    /// conflict / refused / failed, known once the commit is durable. A delivery of the
    /// common case waits for the next group commit (`group.rs`); the others, and any
    /// whose batch was rolled back, run in a transaction of their own.
    pub(crate) async fn accept(&self, request: ReceiveRequest, event: IncomingEvent) -> Outcome {
        let (request, event) = if groupable(&request, &event) {
            match self.group.offer(request, event).await {
                Some(Reply::Done(outcome)) => return outcome,
                Some(Reply::Alone(handed_back)) => *handed_back,
                None => return Outcome::Failed { cause: FailureCause::Store },
            }
        } else {
            (request, event)
        };
        match retrying(|| self.try_accept(&request, &event)).await {
            Ok(outcome) => outcome,
            Err(err) => {
                let key = &request.key;
                tracing::warn!(source = %key.source, identity = %key.identity, error = %err, "receipt transaction failed");
                let cause =
                    if err.kind() == ErrorKind::Unavailable { FailureCause::Unavailable } else { FailureCause::Store };
                Outcome::Failed { cause }
            }
        }
    }

    async fn try_accept(&self, request: &ReceiveRequest, event: &IncomingEvent) -> Result<Outcome, StoreError> {
        if groupable(request, event) {
            return self.accept_in_one_statement(request, event).await;
        }
        self.accept_in_transaction(request, event).await
    }

    /// The common case (nothing to refuse, no ordering guard) as one statement, so one
    /// round trip and one implicit transaction: the receipt insert decides, and the event
    /// and its jobs are inserted only from the receipt row it returned. A repeat then
    /// reads the receipt that was there (or that a racing first delivery committed).
    async fn accept_in_one_statement(
        &self,
        request: &ReceiveRequest,
        event: &IncomingEvent,
    ) -> Result<Outcome, StoreError> {
        let client = self.client().await?;
        let params = AcceptParams::new(request, event);
        if accept_all(&client, std::slice::from_ref(&params)).await?.contains(&true) {
            return Ok(Outcome::Applied { result: event.result.clone() });
        }
        repeat(&client, request).await
    }

    /// The general case: a body receipt to claim, a refusal to apply after the receipt
    /// lookup, an ordering guard to move, or jobs stored dead because a subscription's
    /// filter failed, in one explicit transaction.
    async fn accept_in_transaction(
        &self,
        request: &ReceiveRequest,
        event: &IncomingEvent,
    ) -> Result<Outcome, StoreError> {
        let key = &request.key;
        let (source, identity) = (key.source.as_str(), key.identity.as_str());
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        if !insert_receipt(&tx, request, &event.result).await? {
            // Nothing was written; the receipt is committed, and its repeat is answered
            // outside this transaction, which a failed conflict record must not abort.
            tx.rollback().await?;
            return repeat(&client, request).await;
        }
        if request.dedupe_body
            && let Some(result) = claim_body(&tx, request).await?
        {
            tx.rollback().await?;
            return Ok(Outcome::Duplicate { result: parse_result(&result)? });
        }
        if let Some(reason) = event.refusal {
            tracing::info!(source, identity, reason, "event refused; rolled back");
            tx.rollback().await?;
            return Ok(Outcome::Refused { reason });
        }
        let event_id = insert_event(&tx, request, event).await?;
        let superseded = match &event.ordering {
            Some(ordering) => {
                let (int, text) = ordering.version.columns();
                // Moves the key's newest version forward unless a newer one was seen; the
                // upsert holds the key's row lock, so racing versions of one key serialise.
                let advance = tx
                    .prepare_cached(
                        r#"INSERT INTO ordering_versions (source, ordering_key, version_int, version_text, event_id)
                         VALUES ($1, $2, $3, $4, $5)
                         ON CONFLICT (source, ordering_key) DO UPDATE SET
                            version_int = excluded.version_int, version_text = excluded.version_text,
                            event_id = excluded.event_id
                         WHERE NOT (coalesce(excluded.version_int < ordering_versions.version_int, false)
                                 OR coalesce(excluded.version_text < ordering_versions.version_text, false))"#,
                    )
                    .await?;
                tx.execute(&advance, &[&source, &ordering.key, &int, &text, &event_id]).await? == 0
            }
            None => false,
        };
        let state = if superseded { "superseded" } else { "pending" };
        let destinations: Vec<&str> = event.destinations.iter().map(String::as_str).collect();
        insert_jobs(&tx, event_id, state, request.received_at.0, &destinations).await?;
        if !event.dead.is_empty() {
            let dead = tx
                .prepare_cached(
                    "INSERT INTO jobs (event_id, destination, state, next_attempt_at_ms, last_error, created_at, updated_at)
                     SELECT $1, d, 'dead', $2::bigint * 1000, r, $2, $2 FROM unnest($3::text[], $4::text[]) AS t (d, r)",
                )
                .await?;
            let names: Vec<&str> = event.dead.iter().map(|(name, _)| name.as_str()).collect();
            let reasons: Vec<String> = event.dead.iter().filter_map(|(_, reason)| bounded(Some(reason))).collect();
            tx.execute(&dead, &[&event_id, &request.received_at.0, &names, &reasons]).await?;
        }
        tx.commit().await?;
        if superseded {
            log_superseded(key);
        }
        Ok(Outcome::Applied { result: event.result.clone() })
    }
}

/// Inserts the receipt of a delivery with `result` in `tx`; false when there was one. A
/// concurrent first delivery of the same identity holds the key's index entry until it
/// commits or rolls back; this insert waits for that, then knows. Shared with the outbound
/// API's messages (`outbound/message.rs`).
pub(super) async fn insert_receipt(
    tx: &impl deadpool_postgres::GenericClient,
    request: &ReceiveRequest,
    result: &serde_json::Value,
) -> Result<bool, StoreError> {
    let key = &request.key;
    let insert = tx.prepare_cached(INSERT_RECEIPT).await?;
    let inserted = tx
        .execute(
            &insert,
            &[
                &key.source.as_str(),
                &key.identity.as_str(),
                &&request.body_hash.0[..],
                &result.to_string(),
                &request.received_at.0,
            ],
        )
        .await?;
    Ok(inserted == 1)
}

/// Inserts the event of a first delivery (its receipt inserted in the same transaction)
/// and, in the same statement, its payload; returns its row id. Shared with the outbound
/// API's messages (`outbound/message.rs`).
pub(super) async fn insert_event(
    tx: &impl deadpool_postgres::GenericClient,
    request: &ReceiveRequest,
    event: &IncomingEvent,
) -> Result<i64, StoreError> {
    let key = &request.key;
    let headers = stored_headers(&event.headers);
    let insert_event = tx
        .prepare_cached(
            "WITH e AS (
                INSERT INTO events (source, identity, event_type, content_type, received_at, headers, ordering_key,
                                    outgoing_id)
                VALUES ($1, $2, $3, $4, $6, $7, $8, $9) RETURNING id
             ), p AS (
                INSERT INTO payloads (event_id, body) SELECT id, $5::bytea FROM e
             )
             SELECT id FROM e",
        )
        .await?;
    let ordering_key = event.ordering.as_ref().map(|o| o.key.as_str());
    Ok(tx
        .query_one(
            &insert_event,
            &[
                &key.source.as_str(),
                &key.identity.as_str(),
                &event.event_type,
                &event.content_type,
                &&event.body[..],
                &request.received_at.0,
                &headers,
                &ordering_key,
                &outgoing_id(event.outgoing_id.as_deref(), key),
            ],
        )
        .await?
        .try_get(0)?)
}

/// Inserts one job in `state` per destination for the event `event_id`, due at `received_at`.
pub(super) async fn insert_jobs(
    tx: &impl deadpool_postgres::GenericClient,
    event_id: i64,
    state: &str,
    received_at: i64,
    destinations: &[&str],
) -> Result<(), StoreError> {
    let jobs = tx
        .prepare_cached(
            "INSERT INTO jobs (event_id, destination, state, next_attempt_at_ms, created_at, updated_at)
             SELECT $1, d, $2, $3::bigint * 1000, $3, $3 FROM unnest($4::text[]) AS d",
        )
        .await?;
    tx.execute(&jobs, &[&event_id, &state, &received_at, &destinations]).await?;
    Ok(())
}

/// Whether a delivery takes the one-statement path (and so may share a group commit):
/// nothing to refuse, no ordering guard, no body receipt, no dead jobs.
fn groupable(request: &ReceiveRequest, event: &IncomingEvent) -> bool {
    event.refusal.is_none() && event.ordering.is_none() && !request.dedupe_body && event.dead.is_empty()
}

/// Claims (source, body hash) for this delivery's identity, or returns the stored result
/// of the event that holds it. A concurrent first delivery of the same bytes holds the
/// key's index entry until it commits or rolls back; the insert waits for that, then knows.
async fn claim_body(
    tx: &impl deadpool_postgres::GenericClient,
    request: &ReceiveRequest,
) -> Result<Option<String>, StoreError> {
    let key = &request.key;
    let (source, hash) = (key.source.as_str(), &request.body_hash.0[..]);
    let insert = tx
        .prepare_cached(
            "INSERT INTO body_receipts (source, body_sha256, identity) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        )
        .await?;
    if tx.execute(&insert, &[&source, &hash, &key.identity.as_str()]).await? == 1 {
        return Ok(None);
    }
    let original = tx
        .prepare_cached(
            "SELECT r.result FROM body_receipts b JOIN receipts r ON r.source = b.source AND r.identity = b.identity
             WHERE b.source = $1 AND b.body_sha256 = $2",
        )
        .await?;
    let Some(row) = tx.query_opt(&original, &[&source, &hash]).await? else {
        return Err(StoreError::Malformed("body receipt vanished during its lookup"));
    };
    Ok(Some(row.try_get(0)?))
}
