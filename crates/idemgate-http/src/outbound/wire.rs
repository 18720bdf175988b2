//! The JSON shapes of the outbound API, exactly as Svix's `server/openapi.json` (1.1.1,
//! `docs/design/outbound-api.md` §1.6) spells them: camelCase members, times in RFC 3339,
//! `MessageStatus` as its number beside its word.
//!
//! Input shapes ignore members they do not know (no `deny_unknown_fields`): the SDKs are
//! generated from Svix's hosted API and may send `tags`, `deliverAt`, `headers`, … . They
//! hold text as sent; the handlers check it with `idemgate_core::outbound::field` and answer
//! each refusal as a [`ValidationErrorItem`]. A message's payload is kept as its raw JSON
//! text, never re-serialised, so every digit stays.

use std::collections::BTreeMap;

use idemgate_core::{
    UnixTime,
    outbound::{field::FieldError, headers, status::MessageStatus},
    time::TimeSpec,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use utoipa::ToSchema;

/// Svix's `metadata`: string to string.
pub(crate) type Metadata = BTreeMap<String, String>;

/// A member that may be absent (leave as it is), `null` (clear it) or a value: the
/// nullable members of the `…Patch` shapes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Patch<T> {
    /// Not in the body: unchanged.
    #[default]
    Absent,
    /// `null`: cleared.
    Null,
    /// A new value.
    Value(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(deserializer)? {
            None => Self::Null,
            Some(value) => Self::Value(value),
        })
    }
}

/// A time on the wire: unix milliseconds, written as RFC 3339 UTC with milliseconds
/// (`2026-12-01T17:43:58.123Z`) and read from RFC 3339 with any offset (fractions of a
/// second are dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct WireTime(pub(crate) i64);

impl Serialize for WireTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let seconds = UnixTime(self.0.div_euclid(1000)).rfc3339().to_string();
        let whole = seconds.strip_suffix('Z').unwrap_or(&seconds);
        serializer.collect_str(&format_args!("{whole}.{:03}Z", self.0.rem_euclid(1000)))
    }
}

impl<'de> Deserialize<'de> for WireTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        match text.parse::<TimeSpec>() {
            Ok(TimeSpec::At(at)) if text.contains('T') => Ok(Self(at.0.saturating_mul(1000))),
            _ => Err(serde::de::Error::custom("expected an RFC 3339 date-time")),
        }
    }
}

/// A message's payload: any JSON object, kept as the bytes the caller sent; or, in an
/// answer, `{}` for a message read without its content (`with_content=false`) and
/// `{"expired":true}` for one whose payload was purged or expunged, as Svix shows them.
#[derive(Debug)]
pub(crate) enum Payload {
    /// The caller's JSON object, byte for byte.
    Raw(Box<RawValue>),
    /// `{}`.
    WithoutContent,
    /// `{"expired":true}`.
    Expired,
}

impl Payload {
    /// The raw JSON text, if this is a caller's payload.
    pub(crate) fn raw(&self) -> Option<&str> {
        match self {
            Self::Raw(raw) => Some(raw.get()),
            Self::WithoutContent | Self::Expired => None,
        }
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        if raw.get().trim_start().starts_with('{') {
            Ok(Self::Raw(raw))
        } else {
            Err(serde::de::Error::custom("payload must be a JSON object"))
        }
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Self::Raw(raw) => raw.serialize(serializer),
            Self::WithoutContent => serializer.serialize_map(Some(0))?.end(),
            Self::Expired => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("expired", &true)?;
                map.end()
            }
        }
    }
}

/// `MessageStatus` and `MessageStatusText`, side by side as `status` and `statusText`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StatusPair {
    status: u8,
    status_text: &'static str,
}

impl From<MessageStatus> for StatusPair {
    fn from(status: MessageStatus) -> Self {
        Self { status: status.code(), status_text: status.text() }
    }
}

// ---- Applications ----

/// `ApplicationIn` (create, upsert, and inside `MessageIn` / `AppPortalAccessIn`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApplicationIn {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) uid: Option<String>,
    #[serde(default)]
    #[schema(value_type = BTreeMap<String, String>)]
    pub(crate) metadata: Metadata,
    #[serde(default)]
    pub(crate) throttle_rate: Option<u16>,
}

/// `ApplicationPatch`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApplicationPatch {
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub(crate) uid: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    pub(crate) metadata: Option<Metadata>,
    #[serde(default)]
    #[schema(value_type = Option<u16>)]
    pub(crate) throttle_rate: Patch<u16>,
}

/// `ApplicationOut`. `uid` is left out when there is none, as Svix does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApplicationOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) uid: Option<String>,
    pub(crate) name: String,
    pub(crate) throttle_rate: Option<u16>,
    pub(crate) id: String,
    #[schema(value_type = String, format = DateTime)]
    pub(crate) created_at: WireTime,
    #[schema(value_type = String, format = DateTime)]
    pub(crate) updated_at: WireTime,
    #[schema(value_type = BTreeMap<String, String>)]
    pub(crate) metadata: Metadata,
}

// ---- Endpoints ----

/// `EndpointIn` (create).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EndpointIn {
    pub(crate) url: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) uid: Option<String>,
    #[serde(default)]
    pub(crate) disabled: bool,
    #[serde(default)]
    pub(crate) event_types: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) channels: Option<Vec<String>>,
    #[serde(default)]
    #[schema(value_type = BTreeMap<String, String>)]
    pub(crate) metadata: Metadata,
    /// Generated when absent. Never logged: `Debug` of this shape is for tests only.
    #[serde(default)]
    pub(crate) secret: Option<String>,
    #[serde(default)]
    pub(crate) throttle_rate: Option<u16>,
    /// Custom headers (the hosted API's member, which the SDKs send), checked as
    /// `EndpointHeadersIn`'s.
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
}

/// `EndpointUpdate` (upsert): `EndpointIn` without `secret`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EndpointUpdate {
    pub(crate) url: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) uid: Option<String>,
    #[serde(default)]
    pub(crate) disabled: bool,
    #[serde(default)]
    pub(crate) event_types: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) channels: Option<Vec<String>>,
    #[serde(default)]
    #[schema(value_type = BTreeMap<String, String>)]
    pub(crate) metadata: Metadata,
    #[serde(default)]
    pub(crate) throttle_rate: Option<u16>,
}

/// `EndpointPatch`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EndpointPatch {
    #[serde(default)]
    pub(crate) url: Option<String>,
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub(crate) uid: Patch<String>,
    #[serde(default)]
    pub(crate) disabled: Option<bool>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub(crate) event_types: Patch<Vec<String>>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub(crate) channels: Patch<Vec<String>>,
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    pub(crate) metadata: Option<Metadata>,
    #[serde(default)]
    #[schema(value_type = Option<u16>)]
    pub(crate) throttle_rate: Patch<u16>,
}

/// `EndpointOut`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EndpointOut {
    pub(crate) id: String,
    pub(crate) url: String,
    pub(crate) description: String,
    #[schema(value_type = BTreeMap<String, String>)]
    pub(crate) metadata: Metadata,
    #[schema(value_type = String, format = DateTime)]
    pub(crate) created_at: WireTime,
    #[schema(value_type = String, format = DateTime)]
    pub(crate) updated_at: WireTime,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) uid: Option<String>,
    pub(crate) disabled: bool,
    pub(crate) event_types: Option<Vec<String>>,
    pub(crate) channels: Option<Vec<String>>,
    pub(crate) throttle_rate: Option<u16>,
}

/// `EndpointHeadersIn` (replace all).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ToSchema)]
pub(crate) struct EndpointHeadersIn {
    pub(crate) headers: BTreeMap<String, String>,
}

/// `EndpointHeadersPatchIn`: a `null` value removes that header, as do the names in
/// `deleteHeaders` (the hosted API's member, which the SDKs send).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ToSchema)]
pub(crate) struct EndpointHeadersPatchIn {
    pub(crate) headers: BTreeMap<String, Option<String>>,
    #[serde(default, rename = "deleteHeaders")]
    pub(crate) delete_headers: Vec<String>,
}

/// `EndpointHeadersOut`: sensitive headers are listed by name in `sensitive`, their values
/// never shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct EndpointHeadersOut {
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) sensitive: Vec<String>,
}

impl EndpointHeadersOut {
    /// An endpoint's stored headers as the API shows them: the values of sensitive ones
    /// (`authorization`, …; `idemgate_core::outbound::headers::is_sensitive`) left out and
    /// their names listed in `sensitive`, as Svix's `From<EndpointHeaders>` does.
    pub(crate) fn from_stored(stored: BTreeMap<String, String>) -> Self {
        let (hidden, headers): (BTreeMap<_, _>, BTreeMap<_, _>) =
            stored.into_iter().partition(|(name, _)| headers::is_sensitive(name));
        Self { headers, sensitive: hidden.into_keys().collect() }
    }
}

/// `EndpointSecretOut`. Only `GET …/secret` and rotate's answer carry it.
#[derive(Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct EndpointSecretOut {
    pub(crate) key: String,
}

impl std::fmt::Debug for EndpointSecretOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EndpointSecretOut { key: <redacted> }")
    }
}

/// The default grace period of a rotated secret, in seconds (one day).
pub(crate) const DEFAULT_GRACE_PERIOD_SECONDS: u32 = 86_400;

/// `EndpointSecretRotateIn`: the new key (generated when absent) and how long the old one
/// still signs (0 to 604800 s, default 86400; the handler checks the range).
#[derive(Clone, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EndpointSecretRotateIn {
    #[serde(default)]
    pub(crate) key: Option<String>,
    #[serde(default)]
    pub(crate) grace_period_seconds: Option<u32>,
}

impl std::fmt::Debug for EndpointSecretRotateIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointSecretRotateIn")
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("grace_period_seconds", &self.grace_period_seconds)
            .finish()
    }
}

/// `EndpointStats`: the endpoint's messages by status in a time range.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct EndpointStats {
    pub(crate) success: i64,
    pub(crate) pending: i64,
    pub(crate) sending: i64,
    pub(crate) fail: i64,
    pub(crate) canceled: i64,
}

/// `RecoverIn`: resend the endpoint's failed messages in `[since, until)`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ToSchema)]
pub(crate) struct RecoverIn {
    #[schema(value_type = String, format = DateTime)]
    pub(crate) since: WireTime,
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub(crate) until: Option<WireTime>,
}

/// `RecoverOut`: the background task (`status` is always `running`, `task` always
/// `endpoint.recover`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RecoverOut {
    pub(crate) id: String,
    pub(crate) status: &'static str,
    pub(crate) task: &'static str,
    #[schema(value_type = String, format = DateTime)]
    pub(crate) updated_at: WireTime,
}

impl RecoverOut {
    /// The answer for the recovery task `id`, started at `at`.
    pub(crate) fn running(id: String, at: WireTime) -> Self {
        Self { id, status: "running", task: "endpoint.recover", updated_at: at }
    }

    /// The answer for the recovery task `id`, done at `at` (idemgate recovers in the
    /// request's own transaction).
    pub(crate) fn finished(id: String, at: WireTime) -> Self {
        Self { status: "finished", ..Self::running(id, at) }
    }
}

/// `EventExampleIn` (send-example).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EventExampleIn {
    pub(crate) event_type: String,
    /// Which of the schema's `examples` to send (the first by default).
    #[serde(default)]
    pub(crate) example_index: Option<u64>,
    /// A custom payload (Svix's cloud, for allow-listed customers only): refused.
    #[serde(default)]
    pub(crate) payload: Option<serde_json::Value>,
}

// ---- Messages and attempts ----

/// The default and largest `payloadRetentionPeriod`, in days.
pub(crate) const DEFAULT_PAYLOAD_RETENTION_DAYS: i64 = 90;

fn default_retention() -> i64 {
    DEFAULT_PAYLOAD_RETENTION_DAYS
}

/// `MessageIn`. The payload is also accepted as `data`, as Svix's server accepts it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessageIn {
    pub(crate) event_type: String,
    #[serde(alias = "data")]
    #[schema(value_type = Object)]
    pub(crate) payload: Payload,
    #[serde(default)]
    pub(crate) event_id: Option<String>,
    #[serde(default)]
    pub(crate) channels: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) application: Option<ApplicationIn>,
    #[serde(default = "default_retention")]
    pub(crate) payload_retention_period: i64,
    /// The SDK's (Svix's hosted API's) finer form: hours, which win over the period.
    #[serde(default)]
    pub(crate) payload_retention_hours: Option<i64>,
}

/// `MessageOut`. `payload` is `{}` when the caller asked without content, and
/// `{"expired":true}` once it was purged.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessageOut {
    pub(crate) event_id: Option<String>,
    pub(crate) event_type: String,
    #[schema(value_type = Object)]
    pub(crate) payload: Payload,
    pub(crate) channels: Option<Vec<String>>,
    pub(crate) id: String,
    #[schema(value_type = String, format = DateTime)]
    pub(crate) timestamp: WireTime,
}

/// `MessageAttemptTriggerType`: 0 scheduled, 1 manual (a resend or recovery).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TriggerType {
    Scheduled,
    Manual,
}

impl Serialize for TriggerType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u8(match self {
            Self::Scheduled => 0,
            Self::Manual => 1,
        })
    }
}

/// `MessageAttemptOut`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessageAttemptOut {
    pub(crate) id: String,
    pub(crate) msg_id: String,
    pub(crate) endpoint_id: String,
    pub(crate) url: String,
    pub(crate) response: String,
    pub(crate) response_status_code: i16,
    pub(crate) response_duration_ms: i64,
    #[serde(flatten)]
    pub(crate) status: StatusPair,
    #[schema(value_type = String, format = DateTime)]
    pub(crate) timestamp: WireTime,
    pub(crate) trigger_type: TriggerType,
}

/// `MessageEndpointOut`: an endpoint a message was sent to (its `id` is the endpoint's),
/// with the delivery's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessageEndpointOut {
    pub(crate) id: String,
    pub(crate) url: String,
    pub(crate) description: String,
    #[schema(value_type = String, format = DateTime)]
    pub(crate) created_at: WireTime,
    #[schema(value_type = String, format = DateTime)]
    pub(crate) updated_at: WireTime,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) uid: Option<String>,
    pub(crate) disabled: bool,
    pub(crate) event_types: Option<Vec<String>>,
    pub(crate) channels: Option<Vec<String>>,
    pub(crate) throttle_rate: Option<u16>,
    #[serde(flatten)]
    pub(crate) status: StatusPair,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub(crate) next_attempt: Option<WireTime>,
}

/// `EndpointMessageOut`: a message sent to an endpoint, with the delivery's status.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EndpointMessageOut {
    #[serde(flatten)]
    pub(crate) message: MessageOut,
    #[serde(flatten)]
    pub(crate) status: StatusPair,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub(crate) next_attempt: Option<WireTime>,
}

// ---- Event types ----

/// `schemas`: version (`"1"`) to a JSON Schema object, kept as sent.
pub(crate) type Schemas = BTreeMap<String, serde_json::Value>;

/// `EventTypeIn` (create).
#[derive(Debug, Clone, PartialEq, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EventTypeIn {
    pub(crate) name: String,
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) archived: bool,
    #[serde(default)]
    pub(crate) deprecated: bool,
    #[serde(default)]
    pub(crate) feature_flag: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, Object>>)]
    pub(crate) schemas: Option<Schemas>,
}

/// `EventTypeUpdate` (upsert): `EventTypeIn` without `name`.
#[derive(Debug, Clone, PartialEq, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EventTypeUpdate {
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) archived: bool,
    #[serde(default)]
    pub(crate) deprecated: bool,
    #[serde(default)]
    pub(crate) feature_flag: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, Object>>)]
    pub(crate) schemas: Option<Schemas>,
}

/// `EventTypePatch`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EventTypePatch {
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) archived: Option<bool>,
    #[serde(default)]
    pub(crate) deprecated: Option<bool>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub(crate) feature_flag: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, Object>>)]
    pub(crate) schemas: Patch<Schemas>,
}

/// `EventTypeOut`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EventTypeOut {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) archived: bool,
    pub(crate) deprecated: bool,
    pub(crate) feature_flag: Option<String>,
    #[schema(value_type = Option<BTreeMap<String, Object>>)]
    pub(crate) schemas: Option<Schemas>,
    #[schema(value_type = String, format = DateTime)]
    pub(crate) created_at: WireTime,
    #[schema(value_type = String, format = DateTime)]
    pub(crate) updated_at: WireTime,
}

// ---- Access ----

/// `AppPortalAccessIn`, with the SDK's `expiry` (seconds; Svix's hosted API has it, the
/// open-source spec does not).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AppPortalAccessIn {
    #[serde(default)]
    pub(crate) application: Option<ApplicationIn>,
    #[serde(default)]
    pub(crate) feature_flags: Vec<String>,
    #[serde(default)]
    pub(crate) expiry: Option<u64>,
}

/// `AppPortalAccessOut`. The token is shown once, in this answer.
#[derive(Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct AppPortalAccessOut {
    pub(crate) token: String,
    pub(crate) url: String,
}

impl std::fmt::Debug for AppPortalAccessOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppPortalAccessOut").field("token", &"<redacted>").field("url", &self.url).finish()
    }
}

// ---- Lists and errors ----

/// `ListResponse_*`: one page; `prevIterator` is left out when there is none, as Svix does.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListResponse<T> {
    pub(crate) data: Vec<T>,
    pub(crate) iterator: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) prev_iterator: Option<String>,
    pub(crate) done: bool,
}

/// `HttpErrorOut`: every refusal other than a 422.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct HttpErrorOut {
    pub(crate) code: String,
    pub(crate) detail: String,
}

/// `ValidationErrorItem`: one refused field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct ValidationErrorItem {
    pub(crate) loc: Vec<String>,
    pub(crate) msg: String,
    #[serde(rename = "type")]
    pub(crate) kind: String,
}

impl From<&FieldError> for ValidationErrorItem {
    fn from(err: &FieldError) -> Self {
        Self { loc: err.loc.parts().to_vec(), msg: err.rule.to_string(), kind: FieldError::TYPE.to_owned() }
    }
}

/// `HTTPValidationError`: every 422.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[schema(as = HTTPValidationError)]
pub(crate) struct HttpValidationError {
    pub(crate) detail: Vec<ValidationErrorItem>,
}

#[cfg(test)]
mod tests;
