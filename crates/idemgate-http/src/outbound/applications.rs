//! `/app` and `/app/{app_id}`: an application's list, create (201; `get_if_exists=true`
//! answers the existing one 200), get, put (upsert), patch and delete, named by id or uid.

use std::sync::Arc;

use axum::{
    Router,
    body::Bytes,
    extract::{Path, RawQuery},
    response::{IntoResponse, Response},
    routing::get,
};
use idemgate_core::outbound::field::{ApplicationUid, FieldError, Loc, Rule};
use idemgate_store::outbound::{
    Lookup,
    application::{self as store, Deletion},
};

use super::{
    ApiState, By, Shared, body,
    pagination::Page,
    wire::{ApplicationIn, ApplicationOut, ApplicationPatch, ListResponse, Patch, WireTime},
};
use crate::answer::{Done, OutboundAnswer, api_not_found};

pub(super) fn routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route("/app", get(list).post(create).fallback(api_not_found))
        .route("/app/{app_id}", get(read).put(upsert).patch(patch).delete(delete).fallback(api_not_found))
}

async fn list(state: Shared, RawQuery(query): RawQuery) -> Result<Response, OutboundAnswer> {
    let page = Page::from_query(query.as_deref())?;
    let found = state.store.list_applications(page.list_query()).await?;
    Ok(Done::Ok.with(ListResponse::of(found, ApplicationOut::from)))
}

async fn create(
    state: Shared,
    By(by): By,
    RawQuery(query): RawQuery,
    bytes: Bytes,
) -> Result<Response, OutboundAnswer> {
    let input = checked(body::json(&bytes)?)?;
    if body::flag(query.as_deref(), "get_if_exists", false)?
        && let Some(uid) = &input.uid
        && let Some(existing) = state.store.application(Lookup::Uid(uid.clone())).await?
    {
        return Ok(Done::Ok.with(ApplicationOut::from(existing)));
    }
    let created = state.store.create_application(input, &by, state.now_ms()).await?;
    Ok(Done::Created.with(ApplicationOut::from(created)))
}

async fn read(state: Shared, Path(app): Path<String>) -> Result<Response, OutboundAnswer> {
    let found = state.store.application(Lookup::application(&app)).await?.ok_or(OutboundAnswer::NotFound)?;
    Ok(Done::Ok.with(ApplicationOut::from(found)))
}

async fn upsert(state: Shared, By(by): By, Path(app): Path<String>, bytes: Bytes) -> Result<Response, OutboundAnswer> {
    let input = checked(body::json(&bytes)?)?;
    let upserted = state.store.upsert_application(Lookup::application(&app), input, &by, state.now_ms()).await?;
    Ok(Done::upserted(upserted.created).with(ApplicationOut::from(upserted.value)))
}

async fn patch(state: Shared, By(by): By, Path(app): Path<String>, bytes: Bytes) -> Result<Response, OutboundAnswer> {
    let wire: ApplicationPatch = body::json(&bytes)?;
    if let Some(name) = &wire.name {
        name_rule(name)?;
    }
    let patch = store::ApplicationPatch {
        name: wire.name,
        uid: patch_of(wire.uid).map(|uid| uid.map(|uid| uid_rule(&uid)).transpose()).transpose()?,
        metadata: wire.metadata,
        throttle_rate: patch_of(wire.throttle_rate),
    };
    let patched = state.store.patch_application(Lookup::application(&app), patch, &by, state.now_ms()).await?;
    Ok(Done::Ok.with(ApplicationOut::from(patched)))
}

async fn delete(state: Shared, By(by): By, Path(app): Path<String>) -> Result<Response, OutboundAnswer> {
    state.store.delete_application(Lookup::application(&app), Deletion::Soft, &by, state.now_ms()).await?;
    Ok(OutboundAnswer::NoContent.into_response())
}

/// An `ApplicationIn` from the wire, its fields checked (`name` not empty, the uid rule).
pub(super) fn checked(input: ApplicationIn) -> Result<store::ApplicationIn, FieldError> {
    name_rule(&input.name)?;
    let uid = input.uid.as_deref().map(uid_rule).transpose()?;
    Ok(store::ApplicationIn { name: input.name, uid, metadata: input.metadata, throttle_rate: input.throttle_rate })
}

fn name_rule(name: &str) -> Result<(), FieldError> {
    if name.is_empty() { Err(FieldError::new(Loc::body("name"), Rule::Empty)) } else { Ok(()) }
}

fn uid_rule(uid: &str) -> Result<String, FieldError> {
    ApplicationUid::parse(uid, Loc::body("uid")).map(|uid| uid.as_str().to_owned())
}

/// A wire patch member as the store's: absent `None`, `null` `Some(None)`.
pub(super) fn patch_of<T>(patch: Patch<T>) -> Option<Option<T>> {
    match patch {
        Patch::Absent => None,
        Patch::Null => Some(None),
        Patch::Value(value) => Some(Some(value)),
    }
}

impl From<store::Application> for ApplicationOut {
    fn from(app: store::Application) -> Self {
        Self {
            uid: app.uid,
            name: app.name,
            throttle_rate: app.throttle_rate,
            id: app.id,
            created_at: WireTime(app.created_at_ms),
            updated_at: WireTime(app.updated_at_ms),
            metadata: app.metadata,
        }
    }
}
