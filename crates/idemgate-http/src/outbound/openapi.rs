//! The outbound API's OpenAPI document, served at `GET /api/v1/openapi.json` (no token
//! needed). It is a document of its own, apart from the admin API's: Svix's clients are
//! generated from a spec of `/api/v1` alone, with its own bearer tokens, and its `servers`
//! is the API's public URL (`[api] public_url`), not the admin listener
//! (`docs/design/outbound-api.md` §3.14).
//!
//! The schemas are derived from the wire types of [`super::wire`] (`utoipa::ToSchema`, with
//! serde's names); the operations are the one table [`OPERATIONS`], each with its path,
//! parameters, request body, answers and whether it takes an `idempotency-key`. Every
//! authenticated operation also lists the refusals `answer/outbound.rs` may give, in
//! Svix's shapes (`HttpErrorOut`, `HTTPValidationError`).

use std::borrow::Cow;

use utoipa::{
    PartialSchema, ToSchema,
    openapi::{
        ArrayBuilder, ComponentsBuilder, ContentBuilder, HttpMethod, InfoBuilder, ObjectBuilder, OpenApi,
        OpenApiBuilder, PathItem, PathsBuilder, Ref, RefOr, Required, ResponseBuilder, Schema, ServerBuilder, Type,
        path::{OperationBuilder, ParameterBuilder, ParameterIn, ParameterStyle},
        request_body::RequestBodyBuilder,
        response::Response,
        schema::SchemaType,
        security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme},
        tag::TagBuilder,
    },
};

use super::{
    PREFIX,
    wire::{
        AppPortalAccessIn, AppPortalAccessOut, ApplicationIn, ApplicationOut, ApplicationPatch, EndpointHeadersIn,
        EndpointHeadersOut, EndpointHeadersPatchIn, EndpointIn, EndpointMessageOut, EndpointOut, EndpointPatch,
        EndpointSecretOut, EndpointSecretRotateIn, EndpointStats, EndpointUpdate, EventExampleIn, EventTypeIn,
        EventTypeOut, EventTypePatch, EventTypeUpdate, HttpErrorOut, HttpValidationError, MessageAttemptOut,
        MessageEndpointOut, MessageIn, MessageOut, RecoverIn, RecoverOut, StatusPair, TriggerType,
    },
};

/// The security scheme's name, as Svix's spec names it.
const BEARER: &str = "HTTPBearer";

/// The schemas the document defines so far: (name, schema).
type Registry = Vec<(String, RefOr<Schema>)>;

/// A body's shape: registers its schema (and those it names) and refers to it.
type Shape = fn(&mut Registry) -> RefOr<Schema>;

/// `T`'s schema, registered with the ones it refers to.
fn shape<T: ToSchema>(registry: &mut Registry) -> RefOr<Schema> {
    T::schemas(registry);
    registry.push((T::name().into_owned(), T::schema()));
    Ref::from_schema_name(T::name()).into()
}

/// `ListResponse_T_`: one page of `T`s (`wire::ListResponse<T>`: `data`, `iterator`,
/// `prevIterator` left out when there is none, `done`).
fn list<T: ToSchema>(registry: &mut Registry) -> RefOr<Schema> {
    let item = shape::<T>(registry);
    let name = format!("ListResponse_{}_", T::name());
    let nullable = || ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::String, Type::Null]));
    let page = ObjectBuilder::new()
        .property("data", ArrayBuilder::new().items(item))
        .property("iterator", nullable().description(Some("The iterator of the next page; null on the last.")))
        .property("prevIterator", nullable().description(Some("The iterator of the previous page.")))
        .property("done", ObjectBuilder::new().schema_type(Type::Boolean))
        .required("data")
        .required("iterator")
        .required("done");
    registry.push((name.clone(), page.into()));
    Ref::from_schema_name(name).into()
}

/// `MessageStatus` (0 success, 1 pending, 2 fail, 3 sending) and `MessageStatusText`,
/// side by side as `status` and `statusText` wherever they are flattened in.
impl PartialSchema for StatusPair {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .property(
                "status",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .enum_values(Some([0, 1, 2, 3]))
                    .description(Some("MessageStatus: 0 success, 1 pending, 2 fail, 3 sending.")),
            )
            .property(
                "statusText",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(["success", "pending", "fail", "sending"])),
            )
            .required("status")
            .required("statusText")
            .into()
    }
}

impl ToSchema for StatusPair {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("MessageStatusPair")
    }
}

/// `MessageAttemptTriggerType`: 0 scheduled, 1 manual (a resend or recovery).
impl PartialSchema for TriggerType {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .enum_values(Some([0, 1]))
            .description(Some("0 scheduled, 1 manual (a resend or a recovery)."))
            .into()
    }
}

impl ToSchema for TriggerType {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("MessageAttemptTriggerType")
    }
}

/// A method of the document's operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Head,
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    fn http(self) -> HttpMethod {
        match self {
            Self::Get => HttpMethod::Get,
            Self::Head => HttpMethod::Head,
            Self::Post => HttpMethod::Post,
            Self::Put => HttpMethod::Put,
            Self::Patch => HttpMethod::Patch,
            Self::Delete => HttpMethod::Delete,
        }
    }

    /// Whether a request of this method may carry a body the API reads (and may be
    /// refused 408 or 413 for it).
    fn has_body(self) -> bool {
        matches!(self, Self::Post | Self::Put | Self::Patch | Self::Delete)
    }
}

/// A query parameter some operation takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Query {
    Limit,
    Iterator,
    Order,
    GetIfExists,
    WithContent,
    IncludeArchived,
    Expunge,
    Channel,
    Before,
    After,
    Since,
    Until,
    EventTypes,
    Status,
    StatusClass,
    EndpointId,
}

impl Query {
    fn name(self) -> &'static str {
        match self {
            Self::Limit => "limit",
            Self::Iterator => "iterator",
            Self::Order => "order",
            Self::GetIfExists => "get_if_exists",
            Self::WithContent => "with_content",
            Self::IncludeArchived => "include_archived",
            Self::Expunge => "expunge",
            Self::Channel => "channel",
            Self::Before => "before",
            Self::After => "after",
            Self::Since => "since",
            Self::Until => "until",
            Self::EventTypes => "event_types",
            Self::Status => "status",
            Self::StatusClass => "status_code_class",
            Self::EndpointId => "endpoint_id",
        }
    }

    fn parameter(self) -> utoipa::openapi::path::Parameter {
        let flag = |default: bool| ObjectBuilder::new().schema_type(Type::Boolean).default(Some(default.into()));
        let time = || ObjectBuilder::new().schema_type(Type::String).format(Some(date_time()));
        let (schema, description): (ObjectBuilder, &str) = match self {
            Self::Limit => (
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(1))
                    .maximum(Some(250))
                    .default(Some(50.into())),
                "How many items a page holds (at most 250).",
            ),
            Self::Iterator => (ObjectBuilder::new().schema_type(Type::String), "The `iterator` of the page before."),
            Self::Order => (
                ObjectBuilder::new().schema_type(Type::String).enum_values(Some(["ascending", "descending"])),
                "The order of the items.",
            ),
            Self::GetIfExists => (flag(false), "Answer the application with this `uid` (200) if it exists."),
            Self::WithContent => (flag(true), "Whether the payload is in the answer (else `{}`)."),
            Self::IncludeArchived => (flag(false), "Whether archived event types are listed."),
            Self::Expunge => (flag(false), "Delete the event type for good instead of archiving it."),
            Self::Channel => (ObjectBuilder::new().schema_type(Type::String), "Only messages on this channel."),
            Self::Before => (time(), "Only messages created before this time."),
            Self::After => (time(), "Only messages created after this time."),
            Self::Since => (time(), "The start of the range (default: 28 days before `until`)."),
            Self::Until => (time(), "The end of the range (default: now)."),
            Self::EventTypes => (
                ObjectBuilder::new().schema_type(Type::Array),
                "Only messages of these event types (repeat the parameter).",
            ),
            Self::Status => (
                ObjectBuilder::new().schema_type(Type::Integer).enum_values(Some([0, 1, 2, 3])),
                "Only deliveries with this MessageStatus.",
            ),
            Self::StatusClass => (
                ObjectBuilder::new().schema_type(Type::Integer).enum_values(Some([0, 100, 200, 300, 400, 500])),
                "Only attempts whose response status is in this class (0: no response).",
            ),
            Self::EndpointId => {
                (ObjectBuilder::new().schema_type(Type::String), "Only attempts to this endpoint (its id or uid).")
            }
        };
        let schema: RefOr<Schema> = if self == Self::EventTypes {
            ArrayBuilder::new().items(ObjectBuilder::new().schema_type(Type::String)).into()
        } else {
            schema.into()
        };
        let builder = ParameterBuilder::new()
            .name(self.name())
            .parameter_in(ParameterIn::Query)
            .required(Required::False)
            .description(Some(description))
            .schema(Some(schema));
        let builder = if self == Self::EventTypes {
            builder.style(Some(ParameterStyle::Form)).explode(Some(true))
        } else {
            builder
        };
        builder.build()
    }
}

fn date_time() -> utoipa::openapi::SchemaFormat {
    utoipa::openapi::SchemaFormat::KnownFormat(utoipa::openapi::KnownFormat::DateTime)
}

/// A success of an operation: its status and its body's shape (`None`: no body).
pub(crate) type Success = (u16, Option<Shape>);

/// One operation of `/api/v1`.
pub(crate) struct Operation {
    /// Its method.
    pub(crate) method: Method,
    /// Its path below [`PREFIX`], with `{…}` path parameters.
    pub(crate) path: &'static str,
    /// Svix's `operationId` where the spec has a unique one.
    pub(crate) id: &'static str,
    /// Its group.
    tag: &'static str,
    /// One line for a person.
    summary: &'static str,
    /// The query parameters it reads.
    query: &'static [Query],
    /// Its request body's shape.
    body: Option<Shape>,
    /// What it answers when it succeeds.
    pub(crate) successes: &'static [Success],
    /// Whether it takes an `idempotency-key` (every `POST`).
    keyed: bool,
}

const APPLICATION: &str = "Application";
const ENDPOINT: &str = "Endpoint";
const MESSAGE: &str = "Message";
const ATTEMPT: &str = "Message Attempt";
const EVENT_TYPE: &str = "Event Type";
const AUTHENTICATION: &str = "Authentication";
const HEALTH: &str = "Health";

const PAGE: &[Query] = &[Query::Limit, Query::Iterator, Query::Order];
const PAGE_NEWEST_FIRST: &[Query] = &[Query::Limit, Query::Iterator];
const MESSAGES: &[Query] = &[
    Query::Limit,
    Query::Iterator,
    Query::Channel,
    Query::Before,
    Query::After,
    Query::WithContent,
    Query::EventTypes,
];
const ENDPOINT_ATTEMPTS: &[Query] = &[
    Query::Limit,
    Query::Iterator,
    Query::Status,
    Query::StatusClass,
    Query::Channel,
    Query::Before,
    Query::After,
    Query::WithContent,
    Query::EventTypes,
];
const MESSAGE_ATTEMPTS: &[Query] = &[
    Query::Limit,
    Query::Iterator,
    Query::Status,
    Query::StatusClass,
    Query::Channel,
    Query::EndpointId,
    Query::Before,
    Query::After,
    Query::WithContent,
    Query::EventTypes,
];
const ATTEMPTED_MESSAGES: &[Query] = &[
    Query::Limit,
    Query::Iterator,
    Query::Channel,
    Query::Status,
    Query::Before,
    Query::After,
    Query::WithContent,
    Query::EventTypes,
];

/// The operation `method path`, with defaults for the rest.
const fn op(
    method: Method,
    path: &'static str,
    id: &'static str,
    tag: &'static str,
    summary: &'static str,
) -> Operation {
    Operation { method, path, id, tag, summary, query: &[], body: None, successes: &[], keyed: false }
}

impl Operation {
    const fn query(mut self, query: &'static [Query]) -> Self {
        self.query = query;
        self
    }

    const fn body(mut self, body: Shape) -> Self {
        self.body = Some(body);
        self
    }

    const fn answers(mut self, successes: &'static [Success]) -> Self {
        self.successes = successes;
        self
    }

    const fn keyed(mut self) -> Self {
        self.keyed = true;
        self
    }

    /// Whether it needs a token (all but health).
    fn authenticated(&self) -> bool {
        self.tag != HEALTH
    }
}

use Method::{Delete, Get, Head, Patch, Post, Put};

/// Every operation of `/api/v1`, in the order of Svix's spec (`docs/design/outbound-api.md`
/// §1.1).
pub(crate) const OPERATIONS: &[Operation] = &[
    op(Get, "/app", "v1.application.list", APPLICATION, "List applications")
        .query(PAGE)
        .answers(&[(200, Some(list::<ApplicationOut>))]),
    op(Post, "/app", "v1.application.create", APPLICATION, "Create an application")
        .query(&[Query::GetIfExists])
        .body(shape::<ApplicationIn>)
        .answers(&[(200, Some(shape::<ApplicationOut>)), (201, Some(shape::<ApplicationOut>))])
        .keyed(),
    op(Delete, "/app/{app_id}", "v1.application.delete", APPLICATION, "Delete an application").answers(&[(204, None)]),
    op(Get, "/app/{app_id}", "v1.application.get", APPLICATION, "Get an application")
        .answers(&[(200, Some(shape::<ApplicationOut>))]),
    op(Patch, "/app/{app_id}", "patch_application", APPLICATION, "Change some of an application's fields")
        .body(shape::<ApplicationPatch>)
        .answers(&[(200, Some(shape::<ApplicationOut>))]),
    op(Put, "/app/{app_id}", "v1.application.update", APPLICATION, "Create or replace an application")
        .body(shape::<ApplicationIn>)
        .answers(&[(200, Some(shape::<ApplicationOut>)), (201, Some(shape::<ApplicationOut>))]),
    op(
        Get,
        "/app/{app_id}/attempt/endpoint/{endpoint_id}",
        "v1.message-attempt.list-by-endpoint",
        ATTEMPT,
        "List an endpoint's attempts, newest first",
    )
    .query(ENDPOINT_ATTEMPTS)
    .answers(&[(200, Some(list::<MessageAttemptOut>))]),
    op(
        Get,
        "/app/{app_id}/attempt/msg/{msg_id}",
        "v1.message-attempt.list-by-msg",
        ATTEMPT,
        "List a message's attempts, newest first",
    )
    .query(MESSAGE_ATTEMPTS)
    .answers(&[(200, Some(list::<MessageAttemptOut>))]),
    op(Get, "/app/{app_id}/endpoint", "v1.endpoint.list", ENDPOINT, "List an application's endpoints")
        .query(PAGE)
        .answers(&[(200, Some(list::<EndpointOut>))]),
    op(Post, "/app/{app_id}/endpoint", "v1.endpoint.create", ENDPOINT, "Create an endpoint")
        .body(shape::<EndpointIn>)
        .answers(&[(201, Some(shape::<EndpointOut>))])
        .keyed(),
    op(Delete, "/app/{app_id}/endpoint/{endpoint_id}", "v1.endpoint.delete", ENDPOINT, "Delete an endpoint")
        .answers(&[(204, None)]),
    op(Get, "/app/{app_id}/endpoint/{endpoint_id}", "v1.endpoint.get", ENDPOINT, "Get an endpoint")
        .answers(&[(200, Some(shape::<EndpointOut>))]),
    op(
        Patch,
        "/app/{app_id}/endpoint/{endpoint_id}",
        "patch_endpoint",
        ENDPOINT,
        "Change some of an endpoint's fields",
    )
    .body(shape::<EndpointPatch>)
    .answers(&[(200, Some(shape::<EndpointOut>))]),
    op(Put, "/app/{app_id}/endpoint/{endpoint_id}", "v1.endpoint.update", ENDPOINT, "Create or replace an endpoint")
        .body(shape::<EndpointUpdate>)
        .answers(&[(200, Some(shape::<EndpointOut>)), (201, Some(shape::<EndpointOut>))]),
    op(
        Get,
        "/app/{app_id}/endpoint/{endpoint_id}/headers",
        "v1.endpoint.get-headers",
        ENDPOINT,
        "Get an endpoint's headers",
    )
    .answers(&[(200, Some(shape::<EndpointHeadersOut>))]),
    op(
        Patch,
        "/app/{app_id}/endpoint/{endpoint_id}/headers",
        "v1.endpoint.patch-headers",
        ENDPOINT,
        "Set or remove some of an endpoint's headers",
    )
    .body(shape::<EndpointHeadersPatchIn>)
    .answers(&[(204, None)]),
    op(
        Put,
        "/app/{app_id}/endpoint/{endpoint_id}/headers",
        "v1.endpoint.update-headers",
        ENDPOINT,
        "Replace an endpoint's headers",
    )
    .body(shape::<EndpointHeadersIn>)
    .answers(&[(204, None)]),
    op(
        Get,
        "/app/{app_id}/endpoint/{endpoint_id}/msg",
        "v1.message-attempt.list-attempted-messages",
        ATTEMPT,
        "List the messages sent to an endpoint, newest first",
    )
    .query(ATTEMPTED_MESSAGES)
    .answers(&[(200, Some(list::<EndpointMessageOut>))]),
    op(
        Post,
        "/app/{app_id}/endpoint/{endpoint_id}/recover",
        "v1.endpoint.recover",
        ENDPOINT,
        "Resend an endpoint's failed messages of a time range",
    )
    .body(shape::<RecoverIn>)
    .answers(&[(202, Some(shape::<RecoverOut>))])
    .keyed(),
    op(
        Get,
        "/app/{app_id}/endpoint/{endpoint_id}/secret",
        "v1.endpoint.get-secret",
        ENDPOINT,
        "Get an endpoint's signing secret",
    )
    .answers(&[(200, Some(shape::<EndpointSecretOut>))]),
    op(
        Post,
        "/app/{app_id}/endpoint/{endpoint_id}/secret/rotate",
        "v1.endpoint.rotate-secret",
        ENDPOINT,
        "Rotate an endpoint's signing secret (answers the new one, unlike Svix's 204)",
    )
    .body(shape::<EndpointSecretRotateIn>)
    .answers(&[(200, Some(shape::<EndpointSecretOut>))])
    .keyed(),
    op(
        Post,
        "/app/{app_id}/endpoint/{endpoint_id}/send-example",
        "v1.endpoint.send-example",
        ENDPOINT,
        "Send an event type's example to an endpoint",
    )
    .body(shape::<EventExampleIn>)
    .answers(&[(200, Some(shape::<MessageOut>))])
    .keyed(),
    op(
        Get,
        "/app/{app_id}/endpoint/{endpoint_id}/stats",
        "v1.endpoint.get-stats",
        ENDPOINT,
        "Count an endpoint's messages by status",
    )
    .query(&[Query::Since, Query::Until])
    .answers(&[(200, Some(shape::<EndpointStats>))]),
    op(Get, "/app/{app_id}/msg", "v1.message.list", MESSAGE, "List an application's messages, newest first")
        .query(MESSAGES)
        .answers(&[(200, Some(list::<MessageOut>))]),
    op(
        Post,
        "/app/{app_id}/msg",
        "v1.message.create",
        MESSAGE,
        "Publish a message (answered once its commit is durable)",
    )
    .query(&[Query::WithContent])
    .body(shape::<MessageIn>)
    .answers(&[(202, Some(shape::<MessageOut>))])
    .keyed(),
    op(Get, "/app/{app_id}/msg/{msg_id}", "v1.message.get", MESSAGE, "Get a message")
        .query(&[Query::WithContent])
        .answers(&[(200, Some(shape::<MessageOut>))]),
    op(Get, "/app/{app_id}/msg/{msg_id}/attempt/{attempt_id}", "v1.message-attempt.get", ATTEMPT, "Get an attempt")
        .answers(&[(200, Some(shape::<MessageAttemptOut>))]),
    op(
        Delete,
        "/app/{app_id}/msg/{msg_id}/attempt/{attempt_id}/content",
        "v1.message-attempt.expunge-content",
        ATTEMPT,
        "Delete an attempt's response body",
    )
    .answers(&[(204, None)]),
    op(
        Delete,
        "/app/{app_id}/msg/{msg_id}/content",
        "v1.message.expunge-content",
        MESSAGE,
        "Delete a message's payload",
    )
    .answers(&[(204, None)]),
    op(
        Get,
        "/app/{app_id}/msg/{msg_id}/endpoint",
        "v1.message-attempt.list-attempted-destinations",
        ATTEMPT,
        "List the endpoints a message was sent to",
    )
    .query(PAGE_NEWEST_FIRST)
    .answers(&[(200, Some(list::<MessageEndpointOut>))]),
    op(
        Post,
        "/app/{app_id}/msg/{msg_id}/endpoint/{endpoint_id}/resend",
        "v1.message-attempt.resend",
        ATTEMPT,
        "Send a message to an endpoint again",
    )
    .answers(&[(202, Some(shape::<EmptyResponse>))])
    .keyed(),
    op(
        Post,
        "/auth/app-portal-access/{app_id}",
        "v1.authentication.app-portal-access",
        AUTHENTICATION,
        "Issue a token that sees one application",
    )
    .body(shape::<AppPortalAccessIn>)
    .answers(&[(200, Some(shape::<AppPortalAccessOut>))])
    .keyed(),
    op(Post, "/auth/logout", "v1.authentication.logout", AUTHENTICATION, "Revoke the token presented")
        .answers(&[(204, None)])
        .keyed(),
    op(Get, "/event-type", "v1.event-type.list", EVENT_TYPE, "List event types")
        .query(&[Query::Limit, Query::Iterator, Query::Order, Query::IncludeArchived])
        .answers(&[(200, Some(list::<EventTypeOut>))]),
    op(Post, "/event-type", "v1.event-type.create", EVENT_TYPE, "Create an event type")
        .body(shape::<EventTypeIn>)
        .answers(&[(201, Some(shape::<EventTypeOut>))])
        .keyed(),
    op(
        Delete,
        "/event-type/{event_type_name}",
        "v1.event-type.delete",
        EVENT_TYPE,
        "Archive (or expunge) an event type",
    )
    .query(&[Query::Expunge])
    .answers(&[(204, None)]),
    op(Get, "/event-type/{event_type_name}", "v1.event-type.get", EVENT_TYPE, "Get an event type")
        .answers(&[(200, Some(shape::<EventTypeOut>))]),
    op(Patch, "/event-type/{event_type_name}", "patch_event_type", EVENT_TYPE, "Change some of an event type's fields")
        .body(shape::<EventTypePatch>)
        .answers(&[(200, Some(shape::<EventTypeOut>))]),
    op(Put, "/event-type/{event_type_name}", "v1.event-type.update", EVENT_TYPE, "Create or replace an event type")
        .body(shape::<EventTypeUpdate>)
        .answers(&[(200, Some(shape::<EventTypeOut>)), (201, Some(shape::<EventTypeOut>))]),
    op(Get, "/health", "v1.health.get", HEALTH, "Whether the server answers (no token needed)").answers(&[(204, None)]),
    op(Head, "/health", "v1.health.head", HEALTH, "Whether the server answers (no token needed)")
        .answers(&[(204, None)]),
    op(Get, "/health/ping", "v1.health.ping", HEALTH, "Whether the server answers (no token needed)")
        .answers(&[(204, None)]),
    op(Head, "/health/ping", "v1.health.ping-head", HEALTH, "Whether the server answers (no token needed)")
        .answers(&[(204, None)]),
];

/// `EmptyResponse`: `{}`, resend's answer.
#[derive(ToSchema)]
#[allow(dead_code)] // Never built: the document's name for the answer `{}`.
pub(crate) struct EmptyResponse {}

/// The refusals every authenticated operation may answer, as `answer/outbound.rs` gives
/// them: (status, the shared response's name, its description, whether its body is Svix's
/// error shape; `false`: the empty object of a failure of ours).
const REFUSALS: &[(u16, &str, &str, bool)] = &[
    (400, "BadRequest", "A request Svix refuses as malformed (`HttpErrorOut`).", true),
    (401, "Unauthorized", "No bearer token, or not one of ours (`authentication_failed`).", true),
    (403, "Forbidden", "The token's role does not allow it (`insufficient_access`).", true),
    (404, "NotFound", "No such thing, or no such route (`not_found`).", true),
    (408, "RequestTimeout", "The request body did not arrive in time (`body_timeout`).", true),
    (
        409,
        "Conflict",
        "A uid or name taken, an `eventId` with another payload, or the `idempotency-key`'s request still running (`idempotency_conflict`, with `Retry-After`).",
        true,
    ),
    (413, "PayloadTooLarge", "The request body is over the limit (`payload_too_large`).", true),
    (
        422,
        "ValidationError",
        "Fields refused, each with its `loc` (`HTTPValidationError`); also an `idempotency-key` used for another request.",
        true,
    ),
    (429, "TooManyRequests", "Too many requests (`rate_limited`, with `Retry-After`).", true),
    (503, "ServiceUnavailable", "The store cannot be used now: `{}`, with `Retry-After`.", false),
];

/// The refusals an operation of `method` lists: 408 and 413 only where a body is read.
fn refusals(method: Method) -> impl Iterator<Item = &'static (u16, &'static str, &'static str, bool)> {
    REFUSALS.iter().filter(move |(status, ..)| method.has_body() || !matches!(status, 408 | 413))
}

fn json_response(description: &str, schema: RefOr<Schema>) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content("application/json", ContentBuilder::new().schema(Some(schema)).build())
        .build()
}

/// The path parameter `name`'s description.
fn path_parameter(name: &str) -> utoipa::openapi::path::Parameter {
    let description = match name {
        "app_id" => "The application's id (`app_…`) or uid.",
        "endpoint_id" => "The endpoint's id (`ep_…`) or uid.",
        "msg_id" => "The message's id (`msg_…`) or `eventId`.",
        "attempt_id" => "The attempt's id (`atmpt_…`).",
        "event_type_name" => "The event type's name.",
        _ => "",
    };
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .description(Some(description))
        .schema(Some(ObjectBuilder::new().schema_type(Type::String).min_length(Some(1))))
        .build()
}

/// The names of `path`'s `{…}` parameters, in order.
fn path_parameters(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
}

/// The document, with `server` (the API's public URL; `None`: relative to where the
/// document was fetched) as its one server.
pub(crate) fn document(server: Option<&str>) -> OpenApi {
    let mut registry = Registry::new();
    let mut paths = PathsBuilder::new();
    let mut tags: Vec<&str> = Vec::new();
    for operation in OPERATIONS {
        if !tags.contains(&operation.tag) {
            tags.push(operation.tag);
        }
        let mut built = OperationBuilder::new()
            .operation_id(Some(operation.id))
            .summary(Some(operation.summary))
            .tag(operation.tag);
        for name in path_parameters(operation.path) {
            built = built.parameter(path_parameter(name));
        }
        for query in operation.query {
            built = built.parameter(query.parameter());
        }
        if operation.keyed {
            built = built.parameter(
                ParameterBuilder::new()
                    .name("idempotency-key")
                    .parameter_in(ParameterIn::Header)
                    .required(Required::False)
                    .description(Some(
                        "One key names one request: a repeat within 3 h is answered the first answer \
                         (`Idempotency-Replay: true`); the same key for another request is 422.",
                    ))
                    .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
                    .build(),
            );
        }
        if let Some(body) = operation.body {
            let content = ContentBuilder::new().schema(Some(body(&mut registry))).build();
            built = built.request_body(Some(
                RequestBodyBuilder::new().content("application/json", content).required(Some(Required::True)).build(),
            ));
        }
        for (status, shape) in operation.successes {
            let response: RefOr<Response> = match shape {
                Some(shape) => json_response("Done.", shape(&mut registry)).into(),
                None => ResponseBuilder::new().description("Done, no body.").build().into(),
            };
            built = built.response(status.to_string(), response);
        }
        if operation.authenticated() {
            for (status, name, ..) in refusals(operation.method) {
                built = built.response(status.to_string(), Ref::from_response_name(*name));
            }
        } else {
            built = built.securities(Some(Vec::<SecurityRequirement>::new()));
        }
        let path = format!("{PREFIX}{}", operation.path);
        paths = paths.path(path, PathItem::new(operation.method.http(), built.build()));
    }

    let error = shape::<HttpErrorOut>(&mut registry);
    let invalid = shape::<HttpValidationError>(&mut registry);
    let mut components = ComponentsBuilder::new();
    for (status, name, description, shaped) in REFUSALS {
        let schema = match (status, shaped) {
            (422, _) => invalid.clone(),
            (_, true) => error.clone(),
            (_, false) => ObjectBuilder::new().description(Some("An empty object.")).into(),
        };
        components = components.response(*name, json_response(description, schema));
    }
    registry.sort_by(|a, b| a.0.cmp(&b.0));
    registry.dedup_by(|a, b| a.0 == b.0);
    let bearer = HttpBuilder::new()
        .scheme(HttpAuthScheme::Bearer)
        .description(Some(
            "One of the `[api.tokens.*]` tokens: `admin` may do everything, `publish` publish and read, `read` read.",
        ))
        .build();
    let components =
        components.schemas_from_iter(registry).security_scheme(BEARER, SecurityScheme::Http(bearer)).build();
    let server = ServerBuilder::new()
        .url(server.map_or_else(|| "/".to_owned(), |url| url.trim_end_matches('/').to_owned()))
        .description(Some("The gateway's public listener."))
        .build();
    OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("idemgate outbound API (Svix-compatible)")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(
                    "Sending webhooks to your customers through the API of Svix's open-source server \
                     (`/api/v1`), on idemgate's store and worker. Where idemgate differs from Svix: \
                     docs/design/outbound-api.md §3.10.",
                )),
        )
        .servers(Some([server]))
        .paths(paths)
        .components(Some(components))
        .security(Some([SecurityRequirement::new(BEARER, Vec::<String>::new())]))
        .tags(Some(tags.into_iter().map(|tag| TagBuilder::new().name(tag).build())))
        .build()
}

#[cfg(test)]
mod tests;
