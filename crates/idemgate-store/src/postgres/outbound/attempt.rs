//! Message attempts on PostgreSQL: the gateway's `attempts` rows of a message's jobs,
//! newest first, only within the application the path names; and an endpoint's
//! deliveries counted by status.

use deadpool_postgres::GenericClient;
use idemgate_core::UnixTime;
use tokio_postgres::Row;

use super::{
    app_id, endpoint,
    message::{self, COLUMNS as MESSAGE_COLUMNS},
};
use crate::postgres::partitions::payload_of;
use crate::{
    PgStore, StoreError,
    model::outbound::{
        ListQuery, Lookup, OutboundError, Page, Resource,
        attempt::{
            Attempt, AttemptQuery, AttemptRow, AttemptedDestination, AttemptedMessage, AttemptedMessageQuery, COLUMNS,
            EndpointStats, FROM, attempt_id, filter_sql,
        },
        endpoint::E_COLUMNS,
        message::RESPONSE_EXPUNGED,
    },
    model::{
        audit::{Action, Actor, target},
        second_of,
    },
    postgres::audit,
};

fn attempt(row: &Row) -> Result<Attempt, StoreError> {
    let status: Option<i32> = row.try_get(6)?;
    AttemptRow {
        row: row.try_get(0)?,
        started_at_s: row.try_get(1)?,
        msg_id: row.try_get(2)?,
        endpoint_id: row.try_get(3)?,
        url: row.try_get(4)?,
        response: row.try_get(5)?,
        status: status.map(i64::from),
        duration_ms: row.try_get(7)?,
        manual: row.try_get(8)?,
    }
    .attempt()
}

/// One page of the application's attempts whose `scope` column is `value`, as the
/// query's filter admits them (at the endpoint `endpoint_id` when given).
async fn page(
    client: &impl GenericClient,
    app_id: &str,
    scope: &str,
    value: &str,
    query: &AttemptQuery,
    endpoint_id: Option<&str>,
) -> Result<Page<Attempt>, OutboundError> {
    let (cursor, after) = query.walk();
    let (compare, order) = cursor.sql();
    let filter = filter_sql(5, '$', "::bigint");
    let select = client
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE m.app_id = $1 AND {scope} = $2 AND ($3::bigint IS NULL OR a.id {compare} $3) AND {filter}
               AND ($10::text IS NULL OR j.destination = $10)
               AND ($11::text[] IS NULL OR m.event_type = ANY($11))
               AND ($12::text IS NULL OR coalesce(m.channels::jsonb ? $12, false))
             ORDER BY a.id {order} LIMIT $4"
        ))
        .await?;
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX - 1) + 1;
    let f = &query.filter;
    let ((low, high), (started_after, started_before)) = (f.codes(), f.started());
    let rows = client
        .query(
            &select,
            &[
                &app_id,
                &value,
                &after,
                &limit,
                &f.outcome(),
                &low,
                &high,
                &started_after,
                &started_before,
                &endpoint_id,
                &f.event_types,
                &f.channel,
            ],
        )
        .await?;
    let attempts = rows.iter().map(attempt).collect::<Result<Vec<_>, _>>()?;
    Ok(Page::of(attempts, query.limit, &cursor, |attempt| attempt.id.clone()))
}

/// The message `msg` names in the application `app`: its id and the application's.
async fn message_of(
    client: &impl GenericClient,
    app: &Lookup,
    msg: &Lookup,
) -> Result<(String, String), OutboundError> {
    let app_id = app_id(client, app).await?;
    let found = message::find(client, &app_id, msg).await?.ok_or(OutboundError::NotFound(Resource::Message))?;
    Ok((app_id, found.id))
}

impl PgStore {
    pub(crate) async fn attempts_by_message(
        &self,
        app: Lookup,
        msg: Lookup,
        query: AttemptQuery,
    ) -> Result<Page<Attempt>, OutboundError> {
        let client = self.client().await?;
        let (app_id, msg_id) = message_of(&client, &app, &msg).await?;
        let endpoint_id = match &query.filter.endpoint {
            Some(ep) => Some(
                endpoint::find(&client, &app_id, ep, false)
                    .await?
                    .ok_or(OutboundError::NotFound(Resource::Endpoint))?
                    .id,
            ),
            None => None,
        };
        page(&client, &app_id, "m.id", &msg_id, &query, endpoint_id.as_deref()).await
    }

    pub(crate) async fn attempts_by_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        query: AttemptQuery,
    ) -> Result<Page<Attempt>, OutboundError> {
        let client = self.client().await?;
        let app_id = app_id(&client, &app).await?;
        let found =
            endpoint::find(&client, &app_id, &ep, false).await?.ok_or(OutboundError::NotFound(Resource::Endpoint))?;
        page(&client, &app_id, "j.destination", &found.id, &query, None).await
    }

    pub(crate) async fn attempt(
        &self,
        app: Lookup,
        msg: Lookup,
        row_id: i64,
    ) -> Result<Option<Attempt>, OutboundError> {
        let client = self.client().await?;
        let (app_id, msg_id) = message_of(&client, &app, &msg).await?;
        let select = client
            .prepare_cached(&format!("SELECT {COLUMNS} FROM {FROM} WHERE m.app_id = $1 AND m.id = $2 AND a.id = $3"))
            .await?;
        Ok(client.query_opt(&select, &[&app_id, &msg_id, &row_id]).await?.as_ref().map(attempt).transpose()?)
    }

    pub(crate) async fn endpoint_stats(
        &self,
        app: Lookup,
        ep: Lookup,
        since_ms: i64,
        until_ms: i64,
    ) -> Result<EndpointStats, OutboundError> {
        let client = self.client().await?;
        let app_id = app_id(&client, &app).await?;
        let found =
            endpoint::find(&client, &app_id, &ep, false).await?.ok_or(OutboundError::NotFound(Resource::Endpoint))?;
        let select = client
            .prepare_cached(
                "SELECT j.state, count(*) FROM jobs j JOIN messages m ON m.event_row = j.event_id
                 WHERE m.app_id = $1 AND j.destination = $2 AND m.created_at >= $3 AND m.created_at < $4
                 GROUP BY j.state",
            )
            .await?;
        let mut stats = EndpointStats::default();
        for row in client.query(&select, &[&app_id, &found.id, &since_ms, &until_ms]).await? {
            let state: String = row.try_get(0)?;
            stats.add(&state, row.try_get(1)?)?;
        }
        Ok(stats)
    }

    pub(crate) async fn attempted_destinations(
        &self,
        app: Lookup,
        msg: Lookup,
        query: ListQuery,
    ) -> Result<Page<AttemptedDestination>, OutboundError> {
        let client = self.client().await?;
        let (app_id, msg_id) = message_of(&client, &app, &msg).await?;
        let cursor = query.cursor();
        let (compare, order) = cursor.sql();
        let select = client
            .prepare_cached(&format!(
                "SELECT {E_COLUMNS}, j.state, j.next_attempt_at_ms
                 FROM messages m JOIN jobs j ON j.event_id = m.event_row JOIN endpoints e ON e.id = j.destination
                 WHERE m.app_id = $1 AND m.id = $2 AND ($3::text IS NULL OR e.id {compare} $3)
                 ORDER BY e.id {order} LIMIT $4"
            ))
            .await?;
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX - 1) + 1;
        let mut found = Vec::new();
        for row in client.query(&select, &[&app_id, &msg_id, &cursor.after, &limit]).await? {
            let state: String = row.try_get(14)?;
            found.push(AttemptedDestination::of(endpoint::endpoint(&row)?, &state, row.try_get(15)?)?);
        }
        Ok(Page::of(found, query.limit, &cursor, |d| d.endpoint.id.clone()))
    }

    pub(crate) async fn attempted_messages(
        &self,
        app: Lookup,
        ep: Lookup,
        query: AttemptedMessageQuery,
    ) -> Result<Page<AttemptedMessage>, OutboundError> {
        let client = self.client().await?;
        let app_id = app_id(&client, &app).await?;
        let found =
            endpoint::find(&client, &app_id, &ep, false).await?.ok_or(OutboundError::NotFound(Resource::Endpoint))?;
        let messages = &query.messages;
        let cursor = messages.cursor();
        let (compare, order) = cursor.sql();
        let (above, below) = messages.window();
        let select = client
            .prepare_cached(&format!(
                "SELECT {MESSAGE_COLUMNS}, j.state, j.next_attempt_at_ms
                 FROM messages m JOIN events e ON e.id = m.event_row JOIN jobs j ON j.event_id = m.event_row
                 {payload}
                 WHERE m.app_id = $1 AND j.destination = $2 AND ($3::text IS NULL OR m.id {compare} $3)
                   AND ($4::text IS NULL OR m.id > $4) AND ($5::text IS NULL OR m.id < $5)
                   AND ($6::text[] IS NULL OR m.event_type = ANY($6))
                   AND ($7::text IS NULL OR coalesce(m.channels::jsonb ? $7, false))
                   AND ($8::text[] IS NULL OR j.state = ANY($8))
                 ORDER BY m.id {order} LIMIT $9",
                payload = payload_of!("m.event_row")
            ))
            .await?;
        let limit = i64::try_from(messages.limit).unwrap_or(i64::MAX - 1) + 1;
        let states = query.states();
        let rows = client
            .query(
                &select,
                &[
                    &app_id,
                    &found.id,
                    &cursor.after,
                    &above,
                    &below,
                    &messages.event_types,
                    &messages.channel,
                    &states,
                    &limit,
                ],
            )
            .await?;
        let mut page = Vec::with_capacity(rows.len());
        for row in &rows {
            let state: String = row.try_get(8)?;
            page.push(AttemptedMessage::of(message::message(row)?, &state, row.try_get(9)?)?);
        }
        Ok(Page::of(page, messages.limit, &cursor, |m| m.message.id.clone()))
    }

    pub(crate) async fn expunge_attempt_content(
        &self,
        app: Lookup,
        msg: Lookup,
        row_id: i64,
        by: Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let (app_id, msg_id) = message_of(&tx, &app, &msg).await?;
        let expunged = tx
            .query_opt(
                "UPDATE attempts SET response_prefix = $3 WHERE id = $1 AND job_id IN
                   (SELECT j.id FROM jobs j JOIN messages m ON m.event_row = j.event_id WHERE m.id = $2)
                 RETURNING started_at",
                &[&row_id, &msg_id, &RESPONSE_EXPUNGED],
            )
            .await?
            .ok_or(OutboundError::NotFound(Resource::Attempt))?;
        let started_at_s: i64 = expunged.try_get(0)?;
        let record = by
            .did(Action::AttemptContentExpunge, target::attempt(&app_id, &msg_id, &attempt_id(started_at_s, row_id)?));
        audit::insert_if(&tx, Some(&record), UnixTime(second_of(now_ms)), 1).await?;
        tx.commit().await?;
        Ok(())
    }
}
