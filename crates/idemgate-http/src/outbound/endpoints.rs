//! `/app/{app_id}/endpoint…`: an application's endpoints (list, create 201, get, put,
//! patch, delete), their custom headers (get, put, patch: core's header rules; sensitive
//! ones only named) and their signing secret (get, rotate).
//!
//! A URL a customer types is untrusted (`docs/design/outbound-api.md` §3.8): it is checked
//! with core's [`UrlPolicy`] and, when its host is a name, every address the name resolves
//! to is checked too; a refusal is a 422 at `["body","url"]`. Secrets are sealed with the
//! operator's `[api] secrets_key` under the endpoint's id and their `seq`; only
//! `GET …/secret` and rotate's answer show one.

use std::{net::IpAddr, sync::Arc};

use axum::{
    Router,
    body::Bytes,
    extract::{Path, RawQuery},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use idemgate_core::outbound::{
    address::{UrlHost, UrlPolicy},
    field::{Channel, EndpointUid, EventTypeName, FieldError, Loc, Rule, parse_list},
    headers,
    id::EndpointId,
    sealing::{EndpointSecret, SealedSecret, SecretsKey},
};
use idemgate_store::{
    audit::Actor,
    outbound::{
        Lookup, OutboundError,
        endpoint::{self as store, FIRST_SECRET_SEQ, NewEndpoint, NewSecret},
        new_endpoint_id,
    },
};

use super::{
    ApiState, By, Shared,
    applications::patch_of,
    body,
    pagination::Page,
    wire::{
        DEFAULT_GRACE_PERIOD_SECONDS, EndpointHeadersIn, EndpointHeadersOut, EndpointHeadersPatchIn, EndpointIn,
        EndpointOut, EndpointPatch, EndpointSecretOut, EndpointSecretRotateIn, EndpointUpdate, ListResponse, WireTime,
    },
};
use crate::answer::{Done, OutboundAnswer, api_not_found};

/// The most channels an endpoint listens to (Svix's `EndpointIn.channels`).
const MAX_CHANNELS: usize = 10;
/// The longest grace period of a rotated secret, in seconds (seven days).
const MAX_GRACE_PERIOD_SECONDS: u32 = 604_800;
/// How many times a rotation is tried when another one comes first.
const ROTATION_TRIES: usize = 3;

pub(super) fn routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route("/app/{app_id}/endpoint", get(list).post(create).fallback(api_not_found))
        .route(
            "/app/{app_id}/endpoint/{endpoint_id}",
            get(read).put(upsert).patch(patch).delete(delete).fallback(api_not_found),
        )
        .route(
            "/app/{app_id}/endpoint/{endpoint_id}/headers",
            get(read_headers).put(set_headers).patch(patch_headers).fallback(api_not_found),
        )
        .route("/app/{app_id}/endpoint/{endpoint_id}/secret", get(read_secret).fallback(api_not_found))
        .route("/app/{app_id}/endpoint/{endpoint_id}/secret/rotate", post(rotate).fallback(api_not_found))
}

type Pair = Path<(String, String)>;

/// The uid a path segment names, if it is not an id.
fn path_uid(lookup: Lookup) -> Option<String> {
    match lookup {
        Lookup::Uid(uid) => Some(uid),
        Lookup::Id(_) => None,
    }
}

fn lookups(app: &str, ep: &str) -> (Lookup, Lookup) {
    (Lookup::application(app), Lookup::endpoint(ep))
}

async fn list(state: Shared, Path(app): Path<String>, RawQuery(query): RawQuery) -> Result<Response, OutboundAnswer> {
    let page = Page::from_query(query.as_deref())?;
    let found = state.store.list_endpoints(Lookup::application(&app), page.list_query()).await?;
    Ok(Done::Ok.with(ListResponse::of(found, EndpointOut::from)))
}

async fn create(state: Shared, By(by): By, Path(app): Path<String>, bytes: Bytes) -> Result<Response, OutboundAnswer> {
    let input: EndpointIn = body::json(&bytes)?;
    let fields = Fields {
        url: input.url,
        description: input.description,
        uid: input.uid,
        disabled: input.disabled,
        event_types: input.event_types,
        channels: input.channels,
        metadata: input.metadata,
        throttle_rate: input.throttle_rate,
    };
    let created =
        create_endpoint(&state, Lookup::application(&app), fields, input.headers, input.secret.as_deref(), &by).await?;
    Ok(Done::Created.with(EndpointOut::from(created)))
}

/// Creates an endpoint of `app` (`POST …/endpoint`, and the portal's "Add endpoint"):
/// its headers by core's rules, its fields checked ([`Fields::checked`]), its first secret
/// `secret` (Svix's `whsec_…`) or a new one, sealed.
pub(crate) async fn create_endpoint(
    state: &ApiState,
    app: Lookup,
    fields: Fields,
    headers: store::Headers,
    secret: Option<&str>,
    by: &Actor,
) -> Result<store::Endpoint, OutboundAnswer> {
    let secret = match secret {
        Some(text) => EndpointSecret::parse(text, Loc::body("secret"))?,
        None => EndpointSecret::generate(random()?),
    };
    headers::check_all(headers.iter().map(|(n, v)| (n.as_str(), v.as_str())), &Loc::body("headers"))?;
    let endpoint = fields.checked(&state.url_policy).await?;
    let mut new = new_endpoint(state, endpoint, &secret)?;
    new.headers = headers;
    Ok(state.store.create_endpoint(app, new, by, state.now_ms()).await?)
}

async fn read(state: Shared, Path((app, ep)): Pair) -> Result<Response, OutboundAnswer> {
    let (app, ep) = lookups(&app, &ep);
    let found = state.store.endpoint(app, ep).await?.ok_or(OutboundAnswer::NotFound)?;
    Ok(Done::Ok.with(EndpointOut::from(found)))
}

async fn upsert(state: Shared, By(by): By, Path((app, ep)): Pair, bytes: Bytes) -> Result<Response, OutboundAnswer> {
    let input: EndpointUpdate = body::json(&bytes)?;
    let fields = Fields {
        url: input.url,
        description: input.description,
        // A body without a uid keeps the one the path names it by.
        uid: input.uid.or_else(|| path_uid(Lookup::endpoint(&ep))),
        disabled: input.disabled,
        event_types: input.event_types,
        channels: input.channels,
        metadata: input.metadata,
        throttle_rate: input.throttle_rate,
    };
    let endpoint = fields.checked(&state.url_policy).await?;
    // Used only if the `PUT` creates the endpoint.
    let new = new_endpoint(&state, endpoint, &EndpointSecret::generate(random()?))?;
    let (app, ep) = lookups(&app, &ep);
    let upserted = state.store.upsert_endpoint(app, ep, new, &by, state.now_ms()).await?;
    Ok(Done::upserted(upserted.created).with(EndpointOut::from(upserted.value)))
}

async fn patch(state: Shared, By(by): By, Path((app, ep)): Pair, bytes: Bytes) -> Result<Response, OutboundAnswer> {
    let input: EndpointPatch = body::json(&bytes)?;
    let (app, ep) = lookups(&app, &ep);
    let patched = patch_endpoint(&state, app, ep, input, &by).await?;
    Ok(Done::Ok.with(EndpointOut::from(patched)))
}

/// Changes the fields `input` names of the endpoint `ep` of `app` (`PATCH`, and the
/// portal's edit, disable and enable), each checked as at create.
pub(crate) async fn patch_endpoint(
    state: &ApiState,
    app: Lookup,
    ep: Lookup,
    input: EndpointPatch,
    by: &Actor,
) -> Result<store::Endpoint, OutboundAnswer> {
    let url = match input.url {
        Some(url) => Some(checked_url(&state.url_policy, url).await?),
        None => None,
    };
    let uid = patch_of(input.uid).map(|uid| uid.map(|uid| uid_rule(&uid)).transpose()).transpose()?;
    let event_types =
        patch_of(input.event_types).map(|types| types.map(|types| event_types_rule(&types)).transpose()).transpose()?;
    let channels =
        patch_of(input.channels).map(|list| list.map(|list| channels_rule(&list)).transpose()).transpose()?;
    let patch = store::EndpointPatch {
        uid,
        url,
        description: input.description,
        disabled: input.disabled,
        event_types,
        channels,
        metadata: input.metadata,
        throttle_rate: patch_of(input.throttle_rate),
    };
    Ok(state.store.patch_endpoint(app, ep, patch, by, state.now_ms()).await?)
}

async fn delete(state: Shared, By(by): By, Path((app, ep)): Pair) -> Result<Response, OutboundAnswer> {
    let (app, ep) = lookups(&app, &ep);
    state.store.delete_endpoint(app, ep, &by, state.now_ms()).await?;
    Ok(OutboundAnswer::NoContent.into_response())
}

async fn read_headers(state: Shared, Path((app, ep)): Pair) -> Result<Response, OutboundAnswer> {
    let (app, ep) = lookups(&app, &ep);
    let found = state.store.endpoint(app, ep).await?.ok_or(OutboundAnswer::NotFound)?;
    Ok(Done::Ok.with(EndpointHeadersOut::from_stored(found.headers)))
}

async fn set_headers(
    state: Shared,
    By(by): By,
    Path((app, ep)): Pair,
    bytes: Bytes,
) -> Result<Response, OutboundAnswer> {
    let input: EndpointHeadersIn = body::json(&bytes)?;
    let (app, ep) = lookups(&app, &ep);
    set_endpoint_headers(&state, app, ep, input.headers, &by).await?;
    Ok(OutboundAnswer::NoContent.into_response())
}

/// Replaces the custom headers of the endpoint `ep` of `app` (`PUT …/headers`, and the
/// portal's headers form), each checked by core's rules (422 at `["body","headers"]`).
pub(crate) async fn set_endpoint_headers(
    state: &ApiState,
    app: Lookup,
    ep: Lookup,
    headers: store::Headers,
    by: &Actor,
) -> Result<(), OutboundAnswer> {
    headers::check_all(headers.iter().map(|(n, v)| (n.as_str(), v.as_str())), &Loc::body("headers"))?;
    state.store.set_endpoint_headers(app, ep, headers, by, state.now_ms()).await?;
    Ok(())
}

async fn patch_headers(
    state: Shared,
    By(by): By,
    Path((app, ep)): Pair,
    bytes: Bytes,
) -> Result<Response, OutboundAnswer> {
    let input: EndpointHeadersPatchIn = body::json(&bytes)?;
    let loc = Loc::body("headers");
    for (name, value) in &input.headers {
        if let Some(value) = value {
            headers::check(name, value, &loc)?;
        }
    }
    let mut change = input.headers;
    change.extend(input.delete_headers.into_iter().map(|name| (name, None)));
    let (app, ep) = lookups(&app, &ep);
    state.store.patch_endpoint_headers(app, ep, change, &by, state.now_ms()).await?;
    Ok(OutboundAnswer::NoContent.into_response())
}

async fn read_secret(state: Shared, Path((app, ep)): Pair) -> Result<Response, OutboundAnswer> {
    let (app, ep) = lookups(&app, &ep);
    let secret = current_secret(&state, app, ep).await?;
    Ok(Done::Ok.with(EndpointSecretOut { key: secret.reveal() }))
}

/// The current signing secret of the endpoint `ep` of `app`, opened (`GET …/secret`, and
/// the portal's "Reveal").
pub(crate) async fn current_secret(
    state: &ApiState,
    app: Lookup,
    ep: Lookup,
) -> Result<EndpointSecret, OutboundAnswer> {
    let key = state.secrets_key.as_ref().ok_or(OutboundAnswer::Unavailable)?;
    let endpoint = state.store.endpoint(app.clone(), ep).await?.ok_or(OutboundAnswer::NotFound)?;
    let secrets = state.store.endpoint_secrets(app, Lookup::Id(endpoint.id.clone()), state.now_ms()).await?;
    let current = secrets.first().ok_or(OutboundAnswer::NotFound)?;
    let id = EndpointId::parse(&endpoint.id).map_err(|_| OutboundAnswer::Unavailable)?;
    key.open(&current.sealed, &id, current.seq).map_err(|err| {
        tracing::warn!(error = %err, "an endpoint's secret could not be opened");
        OutboundAnswer::Unavailable
    })
}

/// Rotation answers 200 with the new key (`EndpointSecretOut`), not Svix's 204: the Rust
/// SDK 2.9.1 expects that body (`docs/design/outbound-api.md` §2.1).
async fn rotate(state: Shared, By(by): By, Path((app, ep)): Pair, bytes: Bytes) -> Result<Response, OutboundAnswer> {
    let input: EndpointSecretRotateIn = if bytes.is_empty() {
        EndpointSecretRotateIn { key: None, grace_period_seconds: None }
    } else {
        body::json(&bytes)?
    };
    let grace = input.grace_period_seconds.unwrap_or(DEFAULT_GRACE_PERIOD_SECONDS);
    if grace > MAX_GRACE_PERIOD_SECONDS {
        return Err(OutboundAnswer::invalid(
            &["body", "gracePeriodSeconds"],
            format!("ensure this value is less than or equal to {MAX_GRACE_PERIOD_SECONDS}"),
            "value_error.number.not_le",
        ));
    }
    let secret = rotate_secret(&state, lookups(&app, &ep), input.key.as_deref(), grace, &by).await?;
    // The new key is shown once: the key's record keeps the status, not the body.
    let mut answer = Done::Ok.with(EndpointSecretOut { key: secret.reveal() });
    answer.extensions_mut().insert(crate::idempotency::BodyNotStored);
    Ok(answer)
}

/// Rotates the signing secret of the endpoint `ep` of `app` (`POST …/secret/rotate`, and
/// the portal's "Rotate"): `key` (Svix's `whsec_…`) or a new one becomes the current
/// secret, sealed; the previous one keeps signing for `grace_seconds`. Answers the new one.
pub(crate) async fn rotate_secret(
    state: &ApiState,
    (app, ep): (Lookup, Lookup),
    key: Option<&str>,
    grace_seconds: u32,
    by: &Actor,
) -> Result<EndpointSecret, OutboundAnswer> {
    let secret = match key {
        Some(text) => EndpointSecret::parse(text, Loc::body("key"))?,
        None => EndpointSecret::generate(random()?),
    };
    let key = state.secrets_key.as_ref().ok_or(OutboundAnswer::Unavailable)?;
    let endpoint = state.store.endpoint(app.clone(), ep).await?.ok_or(OutboundAnswer::NotFound)?;
    let id = EndpointId::parse(&endpoint.id).map_err(|_| OutboundAnswer::Unavailable)?;
    let ep = Lookup::Id(endpoint.id.clone());
    let mut tries = 0;
    loop {
        let now = state.now_ms();
        let secrets = state.store.endpoint_secrets(app.clone(), ep.clone(), now).await?;
        let seq = secrets.iter().map(|stored| stored.seq).max().unwrap_or(FIRST_SECRET_SEQ - 1) + 1;
        let sealed = NewSecret { seq, sealed: seal(key, &secret, &id, seq)? };
        let grace_ms = i64::from(grace_seconds) * 1000;
        match state.store.rotate_endpoint_secret(app.clone(), ep.clone(), sealed, grace_ms, by, now).await {
            Ok(()) => return Ok(secret),
            Err(OutboundError::StaleSecret) if tries + 1 < ROTATION_TRIES => tries += 1,
            Err(err) => return Err(err.into()),
        }
    }
}

/// An endpoint's fields as the wire (or the portal's form) gives them, before they are
/// checked.
pub(crate) struct Fields {
    /// Where messages go.
    pub(crate) url: String,
    /// Free text.
    pub(crate) description: String,
    /// The caller's name for it.
    pub(crate) uid: Option<String>,
    /// Disabled from the start.
    pub(crate) disabled: bool,
    /// The event types it receives; `None`: all.
    pub(crate) event_types: Option<Vec<String>>,
    /// The channels it receives; `None`: all.
    pub(crate) channels: Option<Vec<String>>,
    /// Free text → text pairs.
    pub(crate) metadata: super::wire::Metadata,
    /// Most messages per second it gets.
    pub(crate) throttle_rate: Option<u16>,
}

impl Fields {
    /// The store's fields, each checked: the URL by the policy, the uid, event types and
    /// channels by core's rules.
    async fn checked(self, policy: &UrlPolicy) -> Result<store::EndpointIn, OutboundAnswer> {
        let uid = self.uid.as_deref().map(uid_rule).transpose()?;
        let event_types = self.event_types.as_deref().map(event_types_rule).transpose()?;
        let channels = self.channels.as_deref().map(channels_rule).transpose()?;
        let url = checked_url(policy, self.url).await?;
        Ok(store::EndpointIn {
            uid,
            url,
            description: self.description,
            disabled: self.disabled,
            event_types,
            channels,
            metadata: self.metadata,
            throttle_rate: self.throttle_rate,
        })
    }
}

fn uid_rule(uid: &str) -> Result<String, FieldError> {
    EndpointUid::parse(uid, Loc::body("uid")).map(|uid| uid.as_str().to_owned())
}

fn event_types_rule(types: &[String]) -> Result<Vec<String>, FieldError> {
    let parsed = parse_list(types, &Loc::body("eventTypes"), (1, usize::MAX), EventTypeName::parse)?;
    Ok(parsed.iter().map(|name| name.as_str().to_owned()).collect())
}

fn channels_rule(channels: &[String]) -> Result<Vec<String>, FieldError> {
    let parsed = parse_list(channels, &Loc::body("channels"), (1, MAX_CHANNELS), Channel::parse)?;
    Ok(parsed.iter().map(|channel| channel.as_str().to_owned()).collect())
}

/// `url` if the policy allows it and, for a host name, every address it resolves to;
/// else a 422 at `["body","url"]` that never repeats the URL.
async fn checked_url(policy: &UrlPolicy, url: String) -> Result<String, OutboundAnswer> {
    let loc = || Loc::body("url");
    let host = policy.check_url(&url).map_err(|err| FieldError::new(loc(), Rule::Url(err)))?;
    if let UrlHost::Name(name) = host {
        let unresolved = || OutboundAnswer::invalid(&["body", "url"], "URL host could not be resolved", "value_error");
        let addresses: Vec<IpAddr> =
            tokio::net::lookup_host((name.as_str(), 443)).await.map_err(|_| unresolved())?.map(|at| at.ip()).collect();
        if addresses.is_empty() {
            return Err(unresolved());
        }
        policy.check_addresses(addresses).map_err(|err| FieldError::new(loc(), Rule::Url(err)))?;
    }
    Ok(url)
}

/// A new endpoint with a fresh id and `secret` sealed under it as its first.
fn new_endpoint(
    state: &ApiState,
    endpoint: store::EndpointIn,
    secret: &EndpointSecret,
) -> Result<NewEndpoint, OutboundAnswer> {
    let key = state.secrets_key.as_ref().ok_or(OutboundAnswer::Unavailable)?;
    let id = new_endpoint_id(state.now_ms()).map_err(|err| OutboundAnswer::from(OutboundError::from(err)))?;
    let sealed = seal(key, secret, &id, FIRST_SECRET_SEQ)?;
    Ok(NewEndpoint { id, endpoint, headers: store::Headers::new(), secret: sealed })
}

fn seal(key: &SecretsKey, secret: &EndpointSecret, id: &EndpointId, seq: i64) -> Result<SealedSecret, OutboundAnswer> {
    key.seal(secret, id, seq, random()?).map_err(|err| {
        tracing::warn!(error = %err, "an endpoint's secret could not be sealed");
        OutboundAnswer::Unavailable
    })
}

/// `N` bytes from the OS random source (a generated secret, a nonce).
fn random<const N: usize>() -> Result<[u8; N], OutboundAnswer> {
    let mut bytes = [0; N];
    getrandom::fill(&mut bytes).map_err(|_| OutboundAnswer::Unavailable)?;
    Ok(bytes)
}

impl From<store::Endpoint> for EndpointOut {
    fn from(ep: store::Endpoint) -> Self {
        Self {
            id: ep.id,
            url: ep.url,
            description: ep.description,
            metadata: ep.metadata,
            created_at: WireTime(ep.created_at_ms),
            updated_at: WireTime(ep.updated_at_ms),
            uid: ep.uid,
            disabled: ep.disabled,
            event_types: ep.event_types,
            channels: ep.channels,
            throttle_rate: ep.throttle_rate,
        }
    }
}
