//! Endpoints: an application's URLs that receive its messages, each with its filters,
//! custom headers and signing secrets (sealed by the caller with core's `SecretsKey`; the
//! store keeps the sealed bytes and never sees a secret). Every change moves the outbound
//! version, which the worker's endpoint cache follows (`docs/design/outbound-api.md` §3.5).

use std::collections::BTreeMap;

use idemgate_core::outbound::{id::EndpointId, sealing::SealedSecret};

use super::Metadata;

/// Custom header name → value, as stored.
pub type Headers = BTreeMap<String, String>;

/// A header change: a `None` value removes the header (`EndpointHeadersPatchIn`).
pub type HeadersPatch = BTreeMap<String, Option<String>>;

/// Old secrets kept (unexpired) beside the current one, as Svix keeps.
pub const MAX_OLD_SECRETS: usize = 10;

/// The `seq` of an endpoint's first secret; each rotation's is one more than the last.
pub const FIRST_SECRET_SEQ: i64 = 1;

/// Why a waiting job of a deleted endpoint ended `dead`.
pub const ENDPOINT_DELETED: &str = "endpoint deleted";

/// Why a disabled endpoint's destination row is disabled.
pub(crate) const ENDPOINT_DISABLED: &str = "endpoint disabled";

/// An endpoint's fields as created or replaced (`EndpointIn` / `EndpointUpdate` without
/// the secret and headers).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EndpointIn {
    /// The caller's name for it, unique among the application's live endpoints.
    pub uid: Option<String>,
    /// Where messages go (checked by the caller, core's address rules).
    pub url: String,
    /// Free text.
    pub description: String,
    /// Disabled: its jobs wait (the claim skips them) and new messages make none.
    pub disabled: bool,
    /// The event types it receives; `None`: all.
    pub event_types: Option<Vec<String>>,
    /// The channels it receives; `None`: all messages, with channels or without.
    pub channels: Option<Vec<String>>,
    /// Free text → text pairs.
    pub metadata: Metadata,
    /// Most messages per second it gets.
    pub throttle_rate: Option<u16>,
}

/// A new endpoint: its id (drawn with [`super::new_endpoint_id`] before the secret was
/// sealed under it), its fields, its custom headers and its first secret (sealed as
/// [`FIRST_SECRET_SEQ`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEndpoint {
    /// `ep_…`.
    pub id: EndpointId,
    /// Its fields.
    pub endpoint: EndpointIn,
    /// Its custom headers.
    pub headers: Headers,
    /// Its first signing secret, sealed.
    pub secret: SealedSecret,
}

/// A partial change (`EndpointPatch`): `None` leaves a field; `Some(None)` clears it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EndpointPatch {
    /// A new uid, or none.
    pub uid: Option<Option<String>>,
    /// A new URL.
    pub url: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// Disabled or not.
    pub disabled: Option<bool>,
    /// New event types, or all.
    pub event_types: Option<Option<Vec<String>>>,
    /// New channels, or all.
    pub channels: Option<Option<Vec<String>>>,
    /// New metadata.
    pub metadata: Option<Metadata>,
    /// A new rate, or none.
    pub throttle_rate: Option<Option<u16>>,
}

impl EndpointPatch {
    /// `stored`'s fields with this patch applied.
    pub(crate) fn apply(self, stored: &Endpoint) -> EndpointIn {
        EndpointIn {
            uid: self.uid.unwrap_or_else(|| stored.uid.clone()),
            url: self.url.unwrap_or_else(|| stored.url.clone()),
            description: self.description.unwrap_or_else(|| stored.description.clone()),
            disabled: self.disabled.unwrap_or(stored.disabled),
            event_types: self.event_types.unwrap_or_else(|| stored.event_types.clone()),
            channels: self.channels.unwrap_or_else(|| stored.channels.clone()),
            metadata: self.metadata.unwrap_or_else(|| stored.metadata.clone()),
            throttle_rate: self.throttle_rate.unwrap_or(stored.throttle_rate),
        }
    }
}

/// `headers` with `patch` applied: a value sets its header, `None` removes it.
pub(crate) fn patch_headers(mut headers: Headers, patch: HeadersPatch) -> Headers {
    for (name, value) in patch {
        match value {
            Some(value) => headers.insert(name, value),
            None => headers.remove(&name),
        };
    }
    headers
}

/// A stored endpoint (`EndpointOut`, plus what the worker needs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `ep_…`.
    pub id: String,
    /// The application's id.
    pub app_id: String,
    /// See [`EndpointIn`].
    pub uid: Option<String>,
    /// See [`EndpointIn`].
    pub url: String,
    /// See [`EndpointIn`].
    pub description: String,
    /// See [`EndpointIn`].
    pub disabled: bool,
    /// See [`EndpointIn`].
    pub event_types: Option<Vec<String>>,
    /// See [`EndpointIn`].
    pub channels: Option<Vec<String>>,
    /// See [`EndpointIn`].
    pub metadata: Metadata,
    /// See [`EndpointIn`].
    pub throttle_rate: Option<u16>,
    /// Its custom headers.
    pub headers: Headers,
    /// The outbound version of its last change.
    pub version: i64,
    /// When it was created, unix milliseconds.
    pub created_at_ms: i64,
    /// When it last changed, unix milliseconds.
    pub updated_at_ms: i64,
}

impl Endpoint {
    /// `input` as the endpoint `id` of `app_id`, created now.
    pub(crate) fn new(
        id: String,
        app_id: String,
        input: EndpointIn,
        headers: Headers,
        version: i64,
        now_ms: i64,
    ) -> Self {
        let blank = Self {
            id,
            app_id,
            uid: None,
            url: String::new(),
            description: String::new(),
            disabled: false,
            event_types: None,
            channels: None,
            metadata: Metadata::new(),
            throttle_rate: None,
            headers,
            version,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        };
        blank.with(input, version, now_ms)
    }

    /// This endpoint with `input`'s fields, changed at `version` and `now_ms`.
    pub(crate) fn with(self, input: EndpointIn, version: i64, now_ms: i64) -> Self {
        let EndpointIn { uid, url, description, disabled, event_types, channels, metadata, throttle_rate } = input;
        Self {
            uid,
            url,
            description,
            disabled,
            event_types,
            channels,
            metadata,
            throttle_rate,
            version,
            updated_at_ms: now_ms,
            ..self
        }
    }

    /// Whether a message of `event_type` on `channels` goes to this endpoint (its filters
    /// only; whether it is enabled and live is the caller's): Svix's rule, an endpoint
    /// with channels receives only messages on one of them.
    #[must_use]
    pub fn receives(&self, event_type: &str, channels: Option<&[String]>) -> bool {
        let type_ok = self.event_types.as_ref().is_none_or(|types| types.iter().any(|t| t == event_type));
        let channel_ok = match &self.channels {
            None => true,
            Some(wanted) => channels.is_some_and(|channels| channels.iter().any(|c| wanted.contains(c))),
        };
        type_ok && channel_ok
    }
}

/// The columns both backends select for an [`Endpoint`], in its fields' order.
pub(crate) const COLUMNS: &str = "id, app_id, uid, url, description, disabled, event_types, channels, metadata, \
                                  throttle_rate, headers, version, created_at, updated_at";

/// [`COLUMNS`] of the endpoints aliased `e`.
pub(crate) const E_COLUMNS: &str = "e.id, e.app_id, e.uid, e.url, e.description, e.disabled, e.event_types, \
                                    e.channels, e.metadata, e.throttle_rate, e.headers, e.version, e.created_at, \
                                    e.updated_at";

/// A stored signing secret, sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSecret {
    /// Its number among the endpoint's secrets (the sealing's associated data).
    pub seq: i64,
    /// The sealed bytes and the key id.
    pub sealed: SealedSecret,
    /// When it stops signing, unix milliseconds; `None`: the current secret.
    pub expires_at_ms: Option<i64>,
    /// When it was stored.
    pub created_at_ms: i64,
}

/// A rotation's new secret, sealed as secret `seq` (the current one's plus one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSecret {
    /// Its number.
    pub seq: i64,
    /// The sealed bytes and the key id.
    pub sealed: SealedSecret,
}

/// An endpoint as the worker's cache takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointState {
    /// The row (also when deleted).
    pub endpoint: Endpoint,
    /// Neither it nor its application is deleted.
    pub live: bool,
    /// Its current and unexpired secrets, newest first.
    pub secrets: Vec<StoredSecret>,
}

/// What changed since a version the worker had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedEndpoints {
    /// The outbound version read before the endpoints: the next read asks from here.
    pub version: i64,
    /// The endpoints whose last change is newer than the version asked from.
    pub endpoints: Vec<EndpointState>,
}
