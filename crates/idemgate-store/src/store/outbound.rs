//! [`Store`]'s outbound operations: applications, event types, endpoints and messages
//! (`docs/design/outbound-api.md` §3.2–3.3), each the same call on either backend.

use super::{Backend, Store};
use crate::model::outbound::{
    ListQuery, Lookup, OutboundError, Page, Upserted,
    application::{Application, ApplicationIn, ApplicationPatch, Deletion},
    event_type::{EventType, EventTypeDeletion, EventTypeIn, EventTypePatch},
};

impl Store {
    /// Creates an application with a new id; a uid another live application has is
    /// [`OutboundError::UidTaken`].
    pub async fn create_application(&self, input: ApplicationIn, now_ms: i64) -> Result<Application, OutboundError> {
        on_backend!(self, store => store.create_application(input, now_ms).await)
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
        now_ms: i64,
    ) -> Result<Upserted<Application>, OutboundError> {
        on_backend!(self, store => store.upsert_application(app, input, now_ms).await)
    }

    /// `PATCH`: changes the fields `patch` names.
    pub async fn patch_application(
        &self,
        app: Lookup,
        patch: ApplicationPatch,
        now_ms: i64,
    ) -> Result<Application, OutboundError> {
        on_backend!(self, store => store.patch_application(app, patch, now_ms).await)
    }

    /// Deletes the application and its endpoints (their waiting jobs end `dead`); its
    /// endpoints and messages are no longer served.
    pub async fn delete_application(&self, app: Lookup, deletion: Deletion, now_ms: i64) -> Result<(), OutboundError> {
        on_backend!(self, store => store.delete_application(app, deletion, now_ms).await)
    }

    /// Creates the event type `name`; one that exists (archived or not) is
    /// [`OutboundError::EventTypeExists`].
    pub async fn create_event_type(
        &self,
        name: String,
        input: EventTypeIn,
        now_ms: i64,
    ) -> Result<EventType, OutboundError> {
        on_backend!(self, store => store.create_event_type(name, input, now_ms).await)
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
        now_ms: i64,
    ) -> Result<Upserted<EventType>, OutboundError> {
        on_backend!(self, store => store.upsert_event_type(name, input, now_ms).await)
    }

    /// `PATCH`: changes the fields `patch` names.
    pub async fn patch_event_type(
        &self,
        name: String,
        patch: EventTypePatch,
        now_ms: i64,
    ) -> Result<EventType, OutboundError> {
        on_backend!(self, store => store.patch_event_type(name, patch, now_ms).await)
    }

    /// Archives the event type `name`, or removes it.
    pub async fn delete_event_type(
        &self,
        name: String,
        deletion: EventTypeDeletion,
        now_ms: i64,
    ) -> Result<(), OutboundError> {
        on_backend!(self, store => store.delete_event_type(name, deletion, now_ms).await)
    }
}
