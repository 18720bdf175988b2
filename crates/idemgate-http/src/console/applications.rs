//! The operator's views of the sending side (the outbound API's data, issue 37): the
//! applications with their endpoint counts and the counts that say something is wrong,
//! one application's endpoints with their state and deliveries, its latest messages, one
//! message with its deliveries and attempts, and an endpoint's latest attempts. The admin
//! API answers these shapes, `idemgate apps list | show --json` prints them and the
//! dashboard draws them, so a field has one name wherever an operator reads it.
//!
//! Read-only: an endpoint is the customer's (changed through `/api/v1`). No view holds a
//! signing secret or a custom header's value: an endpoint shows its header *names* only,
//! since a header such as `authorization` is a credential. An endpoint's job counts,
//! health and latest failure come from the destination rows its jobs share with the
//! configured destinations ([`views::destinations`]: a job's destination is the endpoint id).

use std::collections::BTreeMap;

use idemgate_core::UnixTime;
use idemgate_store::{
    Store, StoreError,
    outbound::{
        ListQuery, Lookup, OutboundError, Page,
        application::Application,
        attempt::{Attempt, AttemptIterator, AttemptQuery},
        endpoint::Endpoint,
        message::{Message, MessageQuery},
    },
};
use serde::Serialize;
use utoipa::ToSchema;

use super::views::{self, DestinationView, FailureView};

/// Most rows one page of a listing holds.
pub const MAX_PAGE: usize = 250;
/// Most endpoints read per store call while counting an application's endpoints.
const ENDPOINTS_PER_READ: usize = 250;

/// One application as the listing shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ApplicationSummary {
    /// `app_…`.
    pub id: String,
    /// The provider's own name for it, if given.
    pub uid: Option<String>,
    /// Its name.
    pub name: String,
    /// Most messages per second its endpoints get by default.
    pub throttle_rate: Option<u16>,
    /// When it was created (unix seconds).
    pub created_at: i64,
    /// Its live endpoints.
    pub endpoints: u64,
    /// Of those, how many are disabled (by the customer, by a `410 Gone`) or paused by
    /// their circuit breaker: their messages wait.
    pub endpoints_not_delivering: u64,
    /// Of those, how many have jobs waiting for a retry after a failed attempt.
    pub endpoints_retrying: u64,
    /// Of those, how many have dead jobs (given up).
    pub endpoints_with_dead_jobs: u64,
    /// Its endpoints' jobs by state (`pending`, `retrying`, `dead`, …), summed.
    pub jobs: BTreeMap<String, u64>,
}

/// One page of applications, by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ApplicationsPage {
    /// The applications on this page.
    pub applications: Vec<ApplicationSummary>,
    /// Pass as `after` for the next page; absent on the last one.
    pub next_after: Option<String>,
}

/// One endpoint as an operator sees it: its filters and state, its deliveries by job
/// state, its health. Never its secrets, nor its custom headers' values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct EndpointView {
    /// `ep_…`.
    pub id: String,
    /// The customer's name for it, if given.
    pub uid: Option<String>,
    /// Where its messages go.
    pub url: String,
    /// Its description.
    pub description: String,
    /// `enabled`; `disabled` (by the customer through the API, or by a `410 Gone`: see
    /// `disabled_reason`); `paused` (by its circuit breaker); or `throttled` (its rate
    /// limit holds its jobs back).
    pub state: String,
    /// Why it is disabled: `endpoint disabled` (the customer's choice) or what the worker saw.
    pub disabled_reason: Option<String>,
    /// The event types it receives; null: all.
    pub event_types: Option<Vec<String>>,
    /// The channels it receives; null: all.
    pub channels: Option<Vec<String>>,
    /// Most messages per second it gets.
    pub throttle_rate: Option<u16>,
    /// The names of its custom headers (their values are never shown).
    pub header_names: Vec<String>,
    /// Its jobs by state.
    pub jobs: BTreeMap<String, u64>,
    /// From its latest attempt of the last hour: `ok`, `failing` or `no recent attempts`.
    pub health: String,
    /// When its latest successful attempt started (unix seconds).
    pub last_success_at: Option<i64>,
    /// Its latest failed attempt.
    pub last_failure: Option<FailureView>,
    /// When it was created (unix seconds).
    pub created_at: i64,
}

/// One application with its endpoints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ApplicationDetail {
    /// The application and its counts.
    pub application: ApplicationSummary,
    /// Its live endpoints, by id.
    pub endpoints: Vec<EndpointView>,
}

/// One message in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct MessageSummary {
    /// `msg_…`, also its `webhook-id`.
    pub id: String,
    /// The provider's `eventId`, if given.
    pub event_id: Option<String>,
    /// Its event type.
    pub event_type: String,
    /// Its channels, if any.
    pub channels: Option<Vec<String>>,
    /// When it was accepted (unix seconds).
    pub created_at: i64,
    /// Its deliveries (one per endpoint it went to) by status: `success`, `pending`,
    /// `sending`, `fail`.
    pub deliveries: BTreeMap<String, u64>,
}

/// One page of an application's messages, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct MessagesPage {
    /// The messages on this page.
    pub messages: Vec<MessageSummary>,
    /// Pass as `before` for the next page; absent on the last one.
    pub next_before: Option<String>,
}

/// One delivery of a message: the endpoint it went to and its status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct DeliveryView {
    /// The endpoint.
    pub endpoint_id: String,
    /// Its URL.
    pub url: String,
    /// `success`, `pending`, `sending` or `fail`.
    pub status: String,
    /// When a waiting delivery is tried next (unix seconds).
    pub next_attempt_at: Option<i64>,
}

/// One attempt to deliver a message to an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct MessageAttemptView {
    /// `atmpt_…`.
    pub id: String,
    /// The message it carried.
    pub msg_id: String,
    /// The endpoint it went to.
    pub endpoint_id: String,
    /// The endpoint's URL (as it is now).
    pub url: String,
    /// When it started (unix seconds).
    pub started_at: i64,
    /// The endpoint's status, if it answered.
    pub status_code: Option<u16>,
    /// How long it took.
    pub duration_ms: i64,
    /// `success` (a 2xx) or `fail`.
    pub status: String,
    /// The start of the endpoint's answer, as recorded (empty without one).
    pub response: String,
}

/// One message: its fields, its payload while retention keeps it, its deliveries and attempts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct MessageDetail {
    /// The message.
    pub message: MessageSummary,
    /// The application it was published to.
    pub app_id: String,
    /// True once retention purged the payload: `payload` is then null.
    pub purged: bool,
    /// The payload as received, as text; null once purged.
    pub payload: Option<String>,
    /// Its deliveries, by endpoint id.
    pub deliveries: Vec<DeliveryView>,
    /// Its attempts, newest first (at most [`MAX_PAGE`]).
    pub attempts: Vec<MessageAttemptView>,
}

/// One page of an endpoint's attempts, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct AttemptsPage {
    /// The attempts on this page.
    pub attempts: Vec<MessageAttemptView>,
    /// Pass as `after` for the next page (older attempts); absent on the last one.
    pub next_after: Option<String>,
}

/// What a read of one application's data may find besides its view.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// No such application, endpoint or message (or not of that application).
    #[error("not found")]
    NotFound,
    /// An `after` that is not an attempt id this store gave.
    #[error("bad cursor")]
    BadCursor,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<OutboundError> for ViewError {
    fn from(err: OutboundError) -> Self {
        match err {
            OutboundError::NotFound(_) => Self::NotFound,
            OutboundError::Store(err) => Self::Store(err),
            // A read refuses nothing else; should a new refusal appear, it is not a view.
            _ => Self::Store(StoreError::Malformed("an outbound read was refused")),
        }
    }
}

/// `result` with [`ViewError::NotFound`] as `None`, for a page whose subject is missing.
pub fn found<T>(result: Result<T, ViewError>) -> Result<Option<T>, ViewError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(ViewError::NotFound) => Ok(None),
        Err(err) => Err(err),
    }
}

/// The page of applications after `after` (an application id), at most `limit`.
pub async fn applications_page(
    store: &Store,
    after: Option<String>,
    limit: usize,
    now: UnixTime,
) -> Result<ApplicationsPage, ViewError> {
    let limit = limit.clamp(1, MAX_PAGE);
    let page = store.list_applications(ListQuery { iterator: after, ..ListQuery::first(limit) }).await?;
    let destinations = by_name(views::destinations(store, now).await?);
    let mut applications = Vec::with_capacity(page.data.len());
    for app in &page.data {
        let endpoints = all_endpoints(store, &app.id).await?;
        applications.push(summary(app, &endpoints, &destinations));
    }
    Ok(ApplicationsPage { applications, next_after: next(&page) })
}

/// The application `app` (id or uid) with its endpoints.
pub async fn application_detail(store: &Store, app: &str, now: UnixTime) -> Result<ApplicationDetail, ViewError> {
    let application = store.application(Lookup::application(app)).await?.ok_or(ViewError::NotFound)?;
    let endpoints = all_endpoints(store, &application.id).await?;
    let destinations = by_name(views::destinations(store, now).await?);
    Ok(ApplicationDetail {
        application: summary(&application, &endpoints, &destinations),
        endpoints: endpoints.iter().map(|e| endpoint_view(e, destinations.get(&e.id))).collect(),
    })
}

/// The page of the application's messages before `before` (a message id), newest first.
pub async fn messages_page(
    store: &Store,
    app: &str,
    before: Option<String>,
    limit: usize,
) -> Result<MessagesPage, ViewError> {
    let app = Lookup::application(app);
    let query = MessageQuery { iterator: before, ..MessageQuery::newest(limit.clamp(1, MAX_PAGE)) };
    let page = store.list_messages(app.clone(), query).await?;
    let mut messages = Vec::with_capacity(page.data.len());
    for message in &page.data {
        let deliveries = deliveries(store, &app, &message.id).await?;
        messages.push(message_summary(message, &deliveries));
    }
    Ok(MessagesPage { messages, next_before: next(&page) })
}

/// The message `msg` (id or `eventId`) of the application `app`.
pub async fn message_detail(store: &Store, app: &str, msg: &str) -> Result<MessageDetail, ViewError> {
    let app = Lookup::application(app);
    let message = store.message(app.clone(), Lookup::message(msg)).await?.ok_or(ViewError::NotFound)?;
    let deliveries = deliveries(store, &app, &message.id).await?;
    let attempts =
        store.attempts_by_message(app, Lookup::Id(message.id.clone()), AttemptQuery::newest(MAX_PAGE)).await?;
    Ok(MessageDetail {
        message: message_summary(&message, &deliveries),
        app_id: message.app_id.clone(),
        purged: message.payload.is_none(),
        payload: message.payload.as_deref().map(|bytes| String::from_utf8_lossy(bytes).into_owned()),
        deliveries,
        attempts: attempts.data.into_iter().map(attempt_view).collect(),
    })
}

/// The page of the endpoint `ep`'s attempts after `after` (an attempt id), newest first.
pub async fn endpoint_attempts(
    store: &Store,
    (app, ep): (&str, &str),
    after: Option<&str>,
    limit: usize,
) -> Result<AttemptsPage, ViewError> {
    let iterator = after.map(|text| AttemptIterator::parse(text).ok_or(ViewError::BadCursor)).transpose()?;
    let query = AttemptQuery { limit: limit.clamp(1, MAX_PAGE), iterator, ..AttemptQuery::newest(0) };
    let page = store.attempts_by_endpoint(Lookup::application(app), Lookup::endpoint(ep), query).await?;
    let next_after = next(&page);
    Ok(AttemptsPage { attempts: page.data.into_iter().map(attempt_view).collect(), next_after })
}

/// Where the page after `page` starts, unless it is the last.
fn next<T>(page: &Page<T>) -> Option<String> {
    if page.done { None } else { page.iterator.clone() }
}

fn by_name(destinations: Vec<DestinationView>) -> BTreeMap<String, DestinationView> {
    destinations.into_iter().map(|d| (d.name.clone(), d)).collect()
}

/// Every live endpoint of the application `app_id`, by id.
async fn all_endpoints(store: &Store, app_id: &str) -> Result<Vec<Endpoint>, ViewError> {
    let mut all = Vec::new();
    let mut iterator = None;
    loop {
        let query = ListQuery { iterator, ..ListQuery::first(ENDPOINTS_PER_READ) };
        let page = store.list_endpoints(Lookup::Id(app_id.to_owned()), query).await?;
        all.extend(page.data);
        if page.done {
            return Ok(all);
        }
        iterator = page.iterator;
    }
}

fn summary(
    app: &Application,
    endpoints: &[Endpoint],
    destinations: &BTreeMap<String, DestinationView>,
) -> ApplicationSummary {
    let views: Vec<EndpointView> = endpoints.iter().map(|e| endpoint_view(e, destinations.get(&e.id))).collect();
    let count = |keep: &dyn Fn(&EndpointView) -> bool| views.iter().filter(|v| keep(v)).count() as u64;
    let mut jobs = BTreeMap::new();
    for (state, n) in views.iter().flat_map(|v| &v.jobs) {
        *jobs.entry(state.clone()).or_insert(0) += n;
    }
    ApplicationSummary {
        id: app.id.clone(),
        uid: app.uid.clone(),
        name: app.name.clone(),
        throttle_rate: app.throttle_rate,
        created_at: app.created_at_ms / 1000,
        endpoints: views.len() as u64,
        endpoints_not_delivering: count(&|v| matches!(v.state.as_str(), "disabled" | "paused")),
        endpoints_retrying: count(&|v| v.jobs.get("retrying").is_some_and(|n| *n > 0)),
        endpoints_with_dead_jobs: count(&|v| v.jobs.get("dead").is_some_and(|n| *n > 0)),
        jobs,
    }
}

/// The endpoint as an operator sees it, with the destination row of its jobs if it has one.
fn endpoint_view(endpoint: &Endpoint, destination: Option<&DestinationView>) -> EndpointView {
    let (state, disabled_reason) = match destination {
        _ if endpoint.disabled => ("disabled".to_owned(), Some("endpoint disabled".to_owned())),
        Some(d) => (d.state.clone(), d.disabled_reason.clone()),
        None => ("enabled".to_owned(), None),
    };
    EndpointView {
        id: endpoint.id.clone(),
        uid: endpoint.uid.clone(),
        url: endpoint.url.clone(),
        description: endpoint.description.clone(),
        state,
        disabled_reason,
        event_types: endpoint.event_types.clone(),
        channels: endpoint.channels.clone(),
        throttle_rate: endpoint.throttle_rate,
        header_names: endpoint.headers.keys().cloned().collect(),
        jobs: destination.map(|d| d.jobs.clone()).unwrap_or_default(),
        health: destination.map_or_else(|| "no recent attempts".to_owned(), |d| d.health.clone()),
        last_success_at: destination.and_then(|d| d.last_success_at),
        last_failure: destination.and_then(|d| d.last_failure.clone()),
        created_at: endpoint.created_at_ms / 1000,
    }
}

/// The message's deliveries, one per endpoint it went to, by endpoint id.
async fn deliveries(store: &Store, app: &Lookup, msg_id: &str) -> Result<Vec<DeliveryView>, ViewError> {
    let mut all = Vec::new();
    let mut iterator = None;
    loop {
        let query = ListQuery { iterator, ..ListQuery::first(MAX_PAGE) };
        let page = store.attempted_destinations(app.clone(), Lookup::Id(msg_id.to_owned()), query).await?;
        all.extend(page.data.into_iter().map(|d| DeliveryView {
            endpoint_id: d.endpoint.id,
            url: d.endpoint.url,
            status: d.status.text().to_owned(),
            next_attempt_at: d.next_attempt_ms.map(|ms| ms / 1000),
        }));
        if page.done {
            return Ok(all);
        }
        iterator = page.iterator;
    }
}

fn message_summary(message: &Message, deliveries: &[DeliveryView]) -> MessageSummary {
    let mut by_status = BTreeMap::new();
    for d in deliveries {
        *by_status.entry(d.status.clone()).or_insert(0) += 1;
    }
    MessageSummary {
        id: message.id.clone(),
        event_id: message.event_id.clone(),
        event_type: message.event_type.clone(),
        channels: message.channels.clone(),
        created_at: message.created_at_ms / 1000,
        deliveries: by_status,
    }
}

fn attempt_view(attempt: Attempt) -> MessageAttemptView {
    MessageAttemptView {
        status: attempt.status().text().to_owned(),
        id: attempt.id,
        msg_id: attempt.msg_id,
        endpoint_id: attempt.endpoint_id,
        url: attempt.url,
        started_at: attempt.started_at_ms / 1000,
        status_code: attempt.status_code,
        duration_ms: attempt.duration_ms,
        response: attempt.response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(disabled: bool, headers: &[(&str, &str)]) -> Endpoint {
        Endpoint {
            id: "ep_1".to_owned(),
            app_id: "app_1".to_owned(),
            uid: None,
            url: "https://example.com/hook".to_owned(),
            description: String::new(),
            disabled,
            event_types: None,
            channels: None,
            metadata: BTreeMap::new(),
            throttle_rate: None,
            headers: headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            version: 1,
            created_at_ms: 1_700_000_000_123,
            updated_at_ms: 1_700_000_000_123,
        }
    }

    fn destination(state: &str, jobs: &[(&str, u64)]) -> DestinationView {
        DestinationView {
            name: "ep_1".to_owned(),
            state: state.to_owned(),
            throttled_since: None,
            disabled_at: None,
            disabled_reason: (state == "disabled").then(|| "410 Gone".to_owned()),
            jobs: jobs.iter().map(|(s, n)| ((*s).to_owned(), *n)).collect(),
            last_success_at: None,
            last_failure: None,
            health: "failing".to_owned(),
            breaker: views::BreakerStateView::default(),
        }
    }

    #[test]
    fn an_endpoint_shows_its_header_names_and_never_their_values() {
        let view = endpoint_view(&endpoint(false, &[("authorization", "Bearer s3cret")]), None);
        assert_eq!(view.header_names, ["authorization"]);
        let shown = serde_json::to_string(&view).unwrap_or_default();
        assert!(shown.contains("authorization") && !shown.contains("s3cret"), "{shown}");
        assert_eq!(
            (view.state.as_str(), view.health.as_str(), view.created_at),
            ("enabled", "no recent attempts", 1_700_000_000)
        );
    }

    #[test]
    fn the_customers_disable_outranks_the_destination_row_and_a_gone_endpoint_is_disabled() {
        let by_customer = endpoint_view(&endpoint(true, &[]), Some(&destination("enabled", &[])));
        assert_eq!(
            (by_customer.state.as_str(), by_customer.disabled_reason.as_deref()),
            ("disabled", Some("endpoint disabled"))
        );
        let gone = endpoint_view(&endpoint(false, &[]), Some(&destination("disabled", &[])));
        assert_eq!((gone.state.as_str(), gone.disabled_reason.as_deref()), ("disabled", Some("410 Gone")));
    }

    #[test]
    fn an_applications_counts_name_the_endpoints_that_need_a_look() {
        let app = Application {
            id: "app_1".to_owned(),
            uid: None,
            name: "shop".to_owned(),
            metadata: BTreeMap::new(),
            throttle_rate: None,
            created_at_ms: 0,
            updated_at_ms: 0,
        };
        let mut second = endpoint(false, &[]);
        second.id = "ep_2".to_owned();
        let mut third = endpoint(true, &[]);
        third.id = "ep_3".to_owned();
        let destinations = by_name(vec![
            destination("paused", &[("retrying", 2), ("dead", 1)]),
            DestinationView { name: "ep_2".to_owned(), ..destination("enabled", &[("succeeded", 3), ("dead", 0)]) },
        ]);
        let s = summary(&app, &[endpoint(false, &[]), second, third], &destinations);
        assert_eq!(
            (s.endpoints, s.endpoints_not_delivering, s.endpoints_retrying, s.endpoints_with_dead_jobs),
            (3, 2, 1, 1)
        );
        assert_eq!(s.jobs.get("succeeded"), Some(&3));
        assert_eq!(s.jobs.get("retrying"), Some(&2));
    }
}
