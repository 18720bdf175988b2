//! [`Store`]'s outbound operations: applications, event types, endpoints, messages and
//! application tokens (`docs/design/outbound-api.md` §3.2–3.3, §3.9), each the same call
//! on either backend. Every change takes the [`Actor`] that makes it and writes its audit
//! record in its own transaction; publishing a message is not audited (the message row is
//! its record).

use super::{Backend, Store};
use crate::model::audit::Actor;
use crate::model::outbound::{
    ListQuery, Lookup, OutboundError, Page, Upserted,
    app_token::{AppToken, NewAppToken},
    application::{Application, ApplicationIn, ApplicationPatch, Deletion},
    attempt::{Attempt, AttemptQuery, AttemptedDestination, AttemptedMessage, AttemptedMessageQuery, EndpointStats},
    endpoint::{
        ChangedEndpoints, Endpoint, EndpointPatch, Headers, HeadersPatch, NewEndpoint, NewSecret, StoredSecret,
    },
    event_type::{EventType, EventTypeDeletion, EventTypeIn, EventTypePatch},
    message::{Accepted, Addressed, Message, MessageIn, MessageQuery},
    redelivery::{Recovery, Resent},
};

impl Store {
    /// Creates an application with a new id; a uid another live application has is
    /// [`OutboundError::UidTaken`].
    pub async fn create_application(
        &self,
        input: ApplicationIn,
        by: &Actor,
        now_ms: i64,
    ) -> Result<Application, OutboundError> {
        on_backend!(self, store => store.create_application(input, by.clone(), now_ms).await)
    }

    /// The live application `app` names (its id or uid).
    pub async fn application(&self, app: Lookup) -> Result<Option<Application>, OutboundError> {
        on_backend!(self, store => store.application(app).await)
    }

    /// One page of the live applications, by id.
    pub async fn list_applications(&self, query: ListQuery) -> Result<Page<Application>, OutboundError> {
        on_backend!(self, store => store.list_applications(query).await)
    }

    /// `PUT`: replaces the application `app` names, or creates it (with the path's uid when
    /// `input` has none).
    pub async fn upsert_application(
        &self,
        app: Lookup,
        input: ApplicationIn,
        by: &Actor,
        now_ms: i64,
    ) -> Result<Upserted<Application>, OutboundError> {
        on_backend!(self, store => store.upsert_application(app, input, by.clone(), now_ms).await)
    }

    /// `PATCH`: changes the fields `patch` names.
    pub async fn patch_application(
        &self,
        app: Lookup,
        patch: ApplicationPatch,
        by: &Actor,
        now_ms: i64,
    ) -> Result<Application, OutboundError> {
        on_backend!(self, store => store.patch_application(app, patch, by.clone(), now_ms).await)
    }

    /// Deletes the application and its endpoints (their waiting jobs end `dead`); its
    /// endpoints and messages are no longer served.
    pub async fn delete_application(
        &self,
        app: Lookup,
        deletion: Deletion,
        by: &Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        on_backend!(self, store => store.delete_application(app, deletion, by.clone(), now_ms).await)
    }

    /// Creates the event type `name`; one that exists (archived or not) is
    /// [`OutboundError::EventTypeExists`].
    pub async fn create_event_type(
        &self,
        name: String,
        input: EventTypeIn,
        by: &Actor,
        now_ms: i64,
    ) -> Result<EventType, OutboundError> {
        on_backend!(self, store => store.create_event_type(name, input, by.clone(), now_ms).await)
    }

    /// The event type `name`, archived or not.
    pub async fn event_type(&self, name: String) -> Result<Option<EventType>, OutboundError> {
        on_backend!(self, store => store.event_type(name).await)
    }

    /// One page of the event types, by name; the archived ones only with `include_archived`.
    pub async fn list_event_types(
        &self,
        query: ListQuery,
        include_archived: bool,
    ) -> Result<Page<EventType>, OutboundError> {
        on_backend!(self, store => store.list_event_types(query, include_archived).await)
    }

    /// `PUT`: replaces the event type `name`, or creates it.
    pub async fn upsert_event_type(
        &self,
        name: String,
        input: EventTypeIn,
        by: &Actor,
        now_ms: i64,
    ) -> Result<Upserted<EventType>, OutboundError> {
        on_backend!(self, store => store.upsert_event_type(name, input, by.clone(), now_ms).await)
    }

    /// `PATCH`: changes the fields `patch` names.
    pub async fn patch_event_type(
        &self,
        name: String,
        patch: EventTypePatch,
        by: &Actor,
        now_ms: i64,
    ) -> Result<EventType, OutboundError> {
        on_backend!(self, store => store.patch_event_type(name, patch, by.clone(), now_ms).await)
    }

    /// Archives the event type `name`, or removes it.
    pub async fn delete_event_type(
        &self,
        name: String,
        deletion: EventTypeDeletion,
        by: &Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        on_backend!(self, store => store.delete_event_type(name, deletion, by.clone(), now_ms).await)
    }

    /// Creates an endpoint of the application `app` with its first secret; a uid another
    /// live endpoint of the application has is [`OutboundError::UidTaken`]. A disabled one
    /// also disables its destination row.
    pub async fn create_endpoint(
        &self,
        app: Lookup,
        new: NewEndpoint,
        by: &Actor,
        now_ms: i64,
    ) -> Result<Endpoint, OutboundError> {
        on_backend!(self, store => store.create_endpoint(app, new, by.clone(), now_ms).await)
    }

    /// The live endpoint `ep` (id or uid) of the live application `app`; an application
    /// that is missing is [`OutboundError::NotFound`].
    pub async fn endpoint(&self, app: Lookup, ep: Lookup) -> Result<Option<Endpoint>, OutboundError> {
        on_backend!(self, store => store.endpoint(app, ep).await)
    }

    /// One page of the application's live endpoints, by id.
    pub async fn list_endpoints(&self, app: Lookup, query: ListQuery) -> Result<Page<Endpoint>, OutboundError> {
        on_backend!(self, store => store.list_endpoints(app, query).await)
    }

    /// `PUT`: replaces the fields of the endpoint `ep` (its headers and secrets stay), or
    /// creates it from `new` (with the path's uid when `new` has none).
    pub async fn upsert_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        new: NewEndpoint,
        by: &Actor,
        now_ms: i64,
    ) -> Result<Upserted<Endpoint>, OutboundError> {
        on_backend!(self, store => store.upsert_endpoint(app, ep, new, by.clone(), now_ms).await)
    }

    /// `PATCH`: changes the fields `patch` names. Disabling writes the destination row the
    /// claim skips; enabling clears it and makes the waiting retries due.
    pub async fn patch_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        patch: EndpointPatch,
        by: &Actor,
        now_ms: i64,
    ) -> Result<Endpoint, OutboundError> {
        on_backend!(self, store => store.patch_endpoint(app, ep, patch, by.clone(), now_ms).await)
    }

    /// Replaces the endpoint's custom headers.
    pub async fn set_endpoint_headers(
        &self,
        app: Lookup,
        ep: Lookup,
        headers: Headers,
        by: &Actor,
        now_ms: i64,
    ) -> Result<Endpoint, OutboundError> {
        on_backend!(self, store => store.set_endpoint_headers(app, ep, headers, by.clone(), now_ms).await)
    }

    /// Sets the headers `patch` gives a value and removes those it gives `None`.
    pub async fn patch_endpoint_headers(
        &self,
        app: Lookup,
        ep: Lookup,
        patch: HeadersPatch,
        by: &Actor,
        now_ms: i64,
    ) -> Result<Endpoint, OutboundError> {
        on_backend!(self, store => store.patch_endpoint_headers(app, ep, patch, by.clone(), now_ms).await)
    }

    /// Deletes the endpoint; its `pending` and `retrying` jobs end `dead` ("endpoint
    /// deleted") in the same transaction.
    pub async fn delete_endpoint(&self, app: Lookup, ep: Lookup, by: &Actor, now_ms: i64) -> Result<(), OutboundError> {
        on_backend!(self, store => store.delete_endpoint(app, ep, by.clone(), now_ms).await)
    }

    /// The endpoint's current and unexpired old secrets at `now_ms`, newest (the current) first.
    pub async fn endpoint_secrets(
        &self,
        app: Lookup,
        ep: Lookup,
        now_ms: i64,
    ) -> Result<Vec<StoredSecret>, OutboundError> {
        on_backend!(self, store => store.endpoint_secrets(app, ep, now_ms).await)
    }

    /// Rotation, in one transaction: `secret` becomes the current one, the previous one
    /// expires `grace_ms` from now, and at most [`MAX_OLD_SECRETS`] unexpired old ones are
    /// kept. `secret.seq` must be the last one's plus one, else [`OutboundError::StaleSecret`].
    ///
    /// [`MAX_OLD_SECRETS`]: crate::outbound::endpoint::MAX_OLD_SECRETS
    pub async fn rotate_endpoint_secret(
        &self,
        app: Lookup,
        ep: Lookup,
        secret: NewSecret,
        grace_ms: i64,
        by: &Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        on_backend!(self, store => store.rotate_endpoint_secret(app, ep, secret, grace_ms, by.clone(), now_ms).await)
    }

    /// The outbound version: moved by every application, endpoint and secret change.
    pub async fn outbound_version(&self) -> Result<i64, OutboundError> {
        on_backend!(self, store => store.outbound_version().await)
    }

    /// The endpoints changed since `version` (deleted ones too, as not live), with their
    /// secrets valid at `now_ms`, for the worker's endpoint cache.
    pub async fn endpoints_changed_since(&self, version: i64, now_ms: i64) -> Result<ChangedEndpoints, OutboundError> {
        on_backend!(self, store => store.endpoints_changed_since(version, now_ms).await)
    }

    /// Publishes a message to the application `app`, in one transaction: the receipt on
    /// (the application, the `eventId` or the new message id) with the message's
    /// fingerprint, then the event, the message row and one `pending` job per enabled,
    /// live endpoint it goes to. A repeat with the same fingerprint is the original
    /// message and writes nothing; another fingerprint is a conflict, recorded, nothing
    /// else. Answered only once the commit is durable (on SQLite, through the writer's
    /// group commit, as [`Self::accept`]).
    pub async fn accept_message(&self, app: Lookup, input: MessageIn, now_ms: i64) -> Result<Accepted, OutboundError> {
        on_backend!(self, store => store.accept_message(app, input, Addressed::Subscribers, now_ms).await)
    }

    /// [`Self::accept_message`] to the endpoint `ep` (id or uid) of the application alone,
    /// whatever its filters (an example message): its one job is that endpoint's. A
    /// missing or deleted endpoint is [`OutboundError::NotFound`], a disabled one
    /// [`OutboundError::EndpointDisabled`]; nothing is stored then.
    pub async fn accept_message_to(
        &self,
        app: Lookup,
        ep: Lookup,
        input: MessageIn,
        now_ms: i64,
    ) -> Result<Accepted, OutboundError> {
        on_backend!(self, store => store.accept_message(app, input, Addressed::Endpoint(ep), now_ms).await)
    }

    /// Sends the message `msg` (id or `eventId`) again to the endpoint `ep` (id or uid) of
    /// the live application `app`, in one transaction: its job for the endpoint is
    /// replayed (finished) or made due now (waiting), and marked manual, so its attempts
    /// from then on are `Manual`; a job being attempted is left alone
    /// ([`Resent::Sending`]). The message keeps its id, so the `webhook-id` is the same.
    /// A message never sent to that endpoint is [`OutboundError::NotFound`] (as Svix), a
    /// disabled endpoint [`OutboundError::EndpointDisabled`], a purged payload
    /// [`OutboundError::PayloadGone`]. `by`'s audit record is written in the transaction.
    pub async fn resend_message(
        &self,
        app: Lookup,
        msg: Lookup,
        ep: Lookup,
        by: &Actor,
        now_ms: i64,
    ) -> Result<Resent, OutboundError> {
        on_backend!(self, store => store.resend_message(app, msg, ep, by.clone(), now_ms).await)
    }

    /// Replays, in one transaction, every `dead` job of the endpoint `ep` whose message
    /// was created in `range`, marking them manual; returns how many. A disabled endpoint
    /// is [`OutboundError::EndpointDisabled`]. `by`'s audit record is written in the
    /// transaction.
    pub async fn recover_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        range: Recovery,
        by: &Actor,
        now_ms: i64,
    ) -> Result<usize, OutboundError> {
        on_backend!(self, store => store.recover_endpoint(app, ep, range, by.clone(), now_ms).await)
    }

    /// The message `msg` (its id or `eventId`) of the live application `app`.
    pub async fn message(&self, app: Lookup, msg: Lookup) -> Result<Option<Message>, OutboundError> {
        on_backend!(self, store => store.message(app, msg).await)
    }

    /// One page of the application's messages, newest first, as `query` filters them.
    pub async fn list_messages(&self, app: Lookup, query: MessageQuery) -> Result<Page<Message>, OutboundError> {
        on_backend!(self, store => store.list_messages(app, query).await)
    }

    /// One page of the attempts of the message `msg` (id or `eventId`) of the live
    /// application `app`, newest first; a message of another application is
    /// [`OutboundError::NotFound`].
    pub async fn attempts_by_message(
        &self,
        app: Lookup,
        msg: Lookup,
        query: AttemptQuery,
    ) -> Result<Page<Attempt>, OutboundError> {
        on_backend!(self, store => store.attempts_by_message(app, msg, query).await)
    }

    /// One page of the attempts at the live endpoint `ep` (id or uid) of the live
    /// application `app`, newest first.
    pub async fn attempts_by_endpoint(
        &self,
        app: Lookup,
        ep: Lookup,
        query: AttemptQuery,
    ) -> Result<Page<Attempt>, OutboundError> {
        on_backend!(self, store => store.attempts_by_endpoint(app, ep, query).await)
    }

    /// The attempt stored as row `row` (see [`AttemptId::row`]), if it carried the
    /// message `msg` of the application `app`.
    ///
    /// [`AttemptId::row`]: idemgate_core::outbound::id::AttemptId::row
    pub async fn attempt(&self, app: Lookup, msg: Lookup, row: i64) -> Result<Option<Attempt>, OutboundError> {
        on_backend!(self, store => store.attempt(app, msg, row).await)
    }

    /// The deliveries of the live endpoint `ep` of the live application `app` by status,
    /// for the messages created in `[since_ms, until_ms)`.
    pub async fn endpoint_stats(
        &self,
        app: Lookup,
        ep: Lookup,
        since_ms: i64,
        until_ms: i64,
    ) -> Result<EndpointStats, OutboundError> {
        on_backend!(self, store => store.endpoint_stats(app, ep, since_ms, until_ms).await)
    }

    /// One page of the endpoints the message `msg` of the live application `app` was sent
    /// to, by endpoint id, with each delivery's status.
    pub async fn attempted_destinations(
        &self,
        app: Lookup,
        msg: Lookup,
        query: ListQuery,
    ) -> Result<Page<AttemptedDestination>, OutboundError> {
        on_backend!(self, store => store.attempted_destinations(app, msg, query).await)
    }

    /// Keeps an application's token (its digest, never the token) for the live
    /// application `app`, issued by `by`, and drops the tokens that expired; returns the
    /// application's id. Audited as `app_token_issue`.
    pub async fn issue_app_token(
        &self,
        app: Lookup,
        token: NewAppToken,
        by: &Actor,
        now_ms: i64,
    ) -> Result<String, OutboundError> {
        on_backend!(self, store => store.issue_app_token(app, token, by.clone(), now_ms).await)
    }

    /// The application token of SHA-256 `digest`, if its application is live and it has
    /// not expired at `now_ms`: read from the store on every call, so a revocation or a
    /// deletion on any instance counts at once.
    pub async fn app_token(&self, digest: [u8; 32], now_ms: i64) -> Result<Option<AppToken>, OutboundError> {
        on_backend!(self, store => store.app_token(digest, now_ms).await)
    }

    /// Deletes the application token of SHA-256 `digest` (`logout`); whether there was
    /// one. Audited as `app_token_revoke`.
    pub async fn revoke_app_token(&self, digest: [u8; 32], by: &Actor, now_ms: i64) -> Result<bool, OutboundError> {
        on_backend!(self, store => store.revoke_app_token(digest, by.clone(), now_ms).await)
    }

    /// One page of the messages sent to the live endpoint `ep` of the live application
    /// `app` (those with a job for it), newest first, each with that delivery's status.
    pub async fn attempted_messages(
        &self,
        app: Lookup,
        ep: Lookup,
        query: AttemptedMessageQuery,
    ) -> Result<Page<AttemptedMessage>, OutboundError> {
        on_backend!(self, store => store.attempted_messages(app, ep, query).await)
    }

    /// Removes the payload of the message `msg` (id or `eventId`) of the live application
    /// `app` for good, in one transaction with `by`'s audit record: its receipt (so a
    /// repeat of its `eventId` is still judged by the fingerprint it was accepted with),
    /// row, jobs and attempts stay; it reads as purged from then on. Its waiting
    /// deliveries end `dead` ([`CONTENT_EXPUNGED`]): nothing is left to send.
    ///
    /// [`CONTENT_EXPUNGED`]: crate::outbound::message::CONTENT_EXPUNGED
    pub async fn expunge_message_content(
        &self,
        app: Lookup,
        msg: Lookup,
        by: &Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        on_backend!(self, store => store.expunge_message_content(app, msg, by.clone(), now_ms).await)
    }

    /// Replaces the stored response of the attempt stored as row `row` of the message
    /// `msg` of the application `app` with [`RESPONSE_EXPUNGED`] for good, in one
    /// transaction with `by`'s audit record; an attempt of another message is
    /// [`OutboundError::NotFound`].
    ///
    /// [`RESPONSE_EXPUNGED`]: crate::outbound::message::RESPONSE_EXPUNGED
    pub async fn expunge_attempt_content(
        &self,
        app: Lookup,
        msg: Lookup,
        row: i64,
        by: &Actor,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        on_backend!(self, store => store.expunge_attempt_content(app, msg, row, by.clone(), now_ms).await)
    }
}
