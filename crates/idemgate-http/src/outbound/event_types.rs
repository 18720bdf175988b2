//! `/event-type` and `/event-type/{event_type_name}`: list (archived ones with
//! `include_archived=true`), create (201; a name that exists is 409), get, put (upsert),
//! patch, and delete, which archives unless `expunge=true`. A schema that does not compile
//! is refused (422 at `["body","schemas"]`; `payload_schema`).

use std::sync::Arc;

use axum::{
    Router,
    body::Bytes,
    extract::{Path, RawQuery},
    response::{IntoResponse, Response},
    routing::get,
};
use idemgate_core::outbound::field::{EventTypeName, FieldError, Loc};
use idemgate_store::outbound::event_type::{self as store, EventTypeDeletion};

use super::{
    ApiState, By, Shared,
    applications::patch_of,
    body,
    pagination::Page,
    payload_schema,
    wire::{EventTypeIn, EventTypeOut, EventTypePatch, EventTypeUpdate, ListResponse, Patch, Schemas, WireTime},
};
use crate::answer::{Done, OutboundAnswer, api_not_found};

pub(super) fn routes() -> Router<Arc<ApiState>> {
    Router::new().route("/event-type", get(list).post(create).fallback(api_not_found)).route(
        "/event-type/{event_type_name}",
        get(read).put(upsert).patch(patch).delete(delete).fallback(api_not_found),
    )
}

async fn list(state: Shared, RawQuery(query): RawQuery) -> Result<Response, OutboundAnswer> {
    let page = Page::from_query(query.as_deref())?;
    let archived = body::flag(query.as_deref(), "include_archived", false)?;
    let found = state.store.list_event_types(page.list_query(), archived).await?;
    Ok(Done::Ok.with(ListResponse::of(found, EventTypeOut::from)))
}

async fn create(state: Shared, By(by): By, bytes: Bytes) -> Result<Response, OutboundAnswer> {
    let input: EventTypeIn = body::json(&bytes)?;
    let name = EventTypeName::parse(&input.name, Loc::body("name"))?;
    payload_schema::check_schemas(input.schemas.as_ref())?;
    let fields = store::EventTypeIn {
        description: input.description,
        archived: input.archived,
        deprecated: input.deprecated,
        feature_flag: input.feature_flag,
        schemas: input.schemas.as_ref().map(schemas_text),
    };
    let created = state.store.create_event_type(name.as_str().to_owned(), fields, &by, state.now_ms()).await?;
    Ok(Done::Created.with(EventTypeOut::from(created)))
}

async fn read(state: Shared, Path(name): Path<String>) -> Result<Response, OutboundAnswer> {
    let found = state.store.event_type(name).await?.ok_or(OutboundAnswer::NotFound)?;
    Ok(Done::Ok.with(EventTypeOut::from(found)))
}

async fn upsert(state: Shared, By(by): By, Path(name): Path<String>, bytes: Bytes) -> Result<Response, OutboundAnswer> {
    let input: EventTypeUpdate = body::json(&bytes)?;
    let name = path_name(&name)?;
    payload_schema::check_schemas(input.schemas.as_ref())?;
    let fields = store::EventTypeIn {
        description: input.description,
        archived: input.archived,
        deprecated: input.deprecated,
        feature_flag: input.feature_flag,
        schemas: input.schemas.as_ref().map(schemas_text),
    };
    let upserted = state.store.upsert_event_type(name, fields, &by, state.now_ms()).await?;
    Ok(Done::upserted(upserted.created).with(EventTypeOut::from(upserted.value)))
}

async fn patch(state: Shared, By(by): By, Path(name): Path<String>, bytes: Bytes) -> Result<Response, OutboundAnswer> {
    let input: EventTypePatch = body::json(&bytes)?;
    if let Patch::Value(schemas) = &input.schemas {
        payload_schema::check_schemas(Some(schemas))?;
    }
    let patch = store::EventTypePatch {
        description: input.description,
        archived: input.archived,
        deprecated: input.deprecated,
        feature_flag: patch_of(input.feature_flag),
        schemas: patch_of(input.schemas).map(|schemas| schemas.as_ref().map(schemas_text)),
    };
    let patched = state.store.patch_event_type(name, patch, &by, state.now_ms()).await?;
    Ok(Done::Ok.with(EventTypeOut::from(patched)))
}

async fn delete(
    state: Shared,
    By(by): By,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, OutboundAnswer> {
    let deletion = if body::flag(query.as_deref(), "expunge", false)? {
        EventTypeDeletion::Expunge
    } else {
        EventTypeDeletion::Archive
    };
    state.store.delete_event_type(name, deletion, &by, state.now_ms()).await?;
    Ok(OutboundAnswer::NoContent.into_response())
}

/// The name in a `PUT`'s path, checked as a new event type's name would be.
fn path_name(name: &str) -> Result<String, FieldError> {
    EventTypeName::parse(name, Loc::path("event_type_name")).map(|name| name.as_str().to_owned())
}

fn schemas_text(schemas: &Schemas) -> String {
    serde_json::to_string(schemas).unwrap_or_else(|_| "{}".to_owned())
}

impl From<store::EventType> for EventTypeOut {
    fn from(stored: store::EventType) -> Self {
        Self {
            name: stored.name,
            description: stored.description,
            archived: stored.archived,
            deprecated: stored.deprecated,
            feature_flag: stored.feature_flag,
            // The store holds the text this module wrote from a `Schemas`.
            schemas: stored.schemas.and_then(|text| serde_json::from_str(&text).ok()),
            created_at: WireTime(stored.created_at_ms),
            updated_at: WireTime(stored.updated_at_ms),
        }
    }
}
