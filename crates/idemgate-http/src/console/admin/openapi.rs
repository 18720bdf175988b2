//! What the admin API's OpenAPI document says beyond its handlers' types: the bearer-token
//! security scheme, the error body and which refusals each kind of route answers, and the
//! fixed sets of values its filters take, as enums with their exact wire spellings. The
//! handlers read these filters as text and refuse unknown values with their own codes
//! (`unknown_state`, …); the tests below keep each enum equal to the set its handler takes.

use serde::Serialize;
use utoipa::{
    IntoResponses, Modify, ToSchema,
    openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
};

/// The body of every admin API error.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorBody {
    /// A stable code: `unauthorized`, `forbidden`, `not_found`, `invalid_query`,
    /// `unknown_state`, … (the README lists them).
    pub error: String,
    /// One sentence for a person.
    pub detail: String,
}

/// What a read of a collection may answer besides its view.
#[derive(IntoResponses)]
#[allow(dead_code)] // Never built: the document's list of a route's refusals.
pub(crate) enum ReadRefusals {
    /// A query the API does not take: `invalid_query` (it does not parse), a value outside
    /// its set (`unknown_state`, `unknown_action`), or a cursor it did not give (`bad_cursor`).
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// No valid bearer token (`unauthorized`).
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// The store cannot be read now (`store_unavailable`).
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

/// What a read of one named thing may answer besides its view.
#[derive(IntoResponses)]
#[allow(dead_code)] // Never built: the document's list of a route's refusals.
pub(crate) enum LookupRefusals {
    /// A query or path the API does not take (`invalid_query`, `invalid_path`), or a
    /// cursor it did not give (`bad_cursor`).
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// No valid bearer token (`unauthorized`).
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// No such event, application (or endpoint or message of it), or no such path (`not_found`).
    #[response(status = 404)]
    NotFound(ErrorBody),
    /// The store cannot be read now (`store_unavailable`).
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

/// What a change of one named thing may answer besides its result.
#[derive(IntoResponses)]
#[allow(dead_code)] // Never built: the document's list of a route's refusals.
pub(crate) enum ChangeRefusals {
    /// A query or path the API does not take: `invalid_query`, `invalid_path`,
    /// `unknown_destination`, `state_not_replayable`, `state_not_waiting`,
    /// `state_not_for_replay_to`.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// No valid bearer token (`unauthorized`).
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// A `read` token: nothing was changed (`forbidden`).
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// No such event or destination, or no such path: nothing was changed (`not_found`).
    #[response(status = 404)]
    NotFound(ErrorBody),
    /// The store cannot be written now (`store_unavailable`).
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

/// What a change by a JSON filter may answer besides its result.
#[derive(IntoResponses)]
#[allow(dead_code)] // Never built: the document's list of a route's refusals.
pub(crate) enum BulkRefusals {
    /// A body the API does not take: `invalid_body` (it does not parse),
    /// `unknown_destination`, `destination_with_to`, `state_not_replayable`,
    /// `state_not_waiting`, `state_not_for_replay_to`, `body_unreadable`.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// No valid bearer token (`unauthorized`).
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// A `read` token: nothing was changed (`forbidden`).
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// The body was not sent in time (`body_timeout`).
    #[response(status = 408)]
    Timeout(ErrorBody),
    /// The body is over 64 KiB (`body_size`).
    #[response(status = 413)]
    TooLarge(ErrorBody),
    /// The body is not sent as `application/json` (`unsupported_media_type`).
    #[response(status = 415)]
    UnsupportedMediaType(ErrorBody),
    /// The store cannot be written now (`store_unavailable`).
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

/// The states the event listing's `state` takes: a job state, or `unmatched` (no job).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)] // Never built: the document's names for what the handler parses as text.
pub(crate) enum EventState {
    Pending,
    Running,
    Succeeded,
    Retrying,
    Dead,
    Superseded,
    Unmatched,
}

/// The states a replay's `state` takes: the finished job states, or `unmatched` (with `to`).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)] // Never built: the document's names for what the handler parses as text.
pub(crate) enum ReplayState {
    Dead,
    Superseded,
    Succeeded,
    Unmatched,
}

/// The states a retry-now's `state` takes: the waiting job states.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)] // Never built: the document's names for what the handler parses as text.
pub(crate) enum WaitingState {
    Pending,
    Retrying,
}

/// The actions of the audit log.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)] // Never built: the document's names for what the handler parses as text.
pub(crate) enum AuditAction {
    Replay,
    ReplayTo,
    Retry,
    Enable,
    ApplicationCreate,
    ApplicationUpdate,
    ApplicationDelete,
    EndpointCreate,
    EndpointUpdate,
    EndpointDelete,
    EndpointHeaders,
    EndpointSecretRotate,
    EventTypeCreate,
    EventTypeUpdate,
    EventTypeArchive,
    EventTypeDelete,
    AppTokenIssue,
    AppTokenRevoke,
    MessageResend,
    EndpointRecover,
    MessageContentExpunge,
    AttemptContentExpunge,
}

/// Declares the bearer token every route but the document itself needs.
#[derive(Debug)]
pub(crate) struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some("One of the admin tokens; a `read` token is refused every change (403)."))
            .build();
        openapi
            .components
            .get_or_insert_with(Default::default)
            .add_security_scheme("bearer", SecurityScheme::Http(scheme));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use idemgate_core::job::JobState;
    use idemgate_store::{audit::Action, views::UNMATCHED};

    use super::*;

    fn names<T: Serialize>(values: &[T]) -> Vec<String> {
        values.iter().map(|v| serde_json::to_value(v).unwrap().as_str().unwrap().to_owned()).collect()
    }

    fn states(keep: impl Fn(JobState) -> bool, unmatched: bool) -> Vec<String> {
        let mut all: Vec<String> =
            JobState::ALL.into_iter().filter(|s| keep(*s)).map(|s| s.as_str().to_owned()).collect();
        all.extend(unmatched.then(|| UNMATCHED.to_owned()));
        all.sort();
        all
    }

    fn sorted(mut names: Vec<String>) -> Vec<String> {
        names.sort();
        names
    }

    #[test]
    fn each_documented_set_is_the_set_its_handler_takes() {
        use EventState as E;
        let event = [E::Pending, E::Running, E::Succeeded, E::Retrying, E::Dead, E::Superseded, E::Unmatched];
        assert_eq!(sorted(names(&event)), states(|_| true, true));
        let replay = [ReplayState::Dead, ReplayState::Superseded, ReplayState::Succeeded, ReplayState::Unmatched];
        assert_eq!(sorted(names(&replay)), states(JobState::is_replayable, true));
        assert_eq!(
            sorted(names(&[WaitingState::Pending, WaitingState::Retrying])),
            states(JobState::is_claimable, false)
        );
        use AuditAction as A;
        let actions = [
            A::Replay,
            A::ReplayTo,
            A::Retry,
            A::Enable,
            A::ApplicationCreate,
            A::ApplicationUpdate,
            A::ApplicationDelete,
            A::EndpointCreate,
            A::EndpointUpdate,
            A::EndpointDelete,
            A::EndpointHeaders,
            A::EndpointSecretRotate,
            A::EventTypeCreate,
            A::EventTypeUpdate,
            A::EventTypeArchive,
            A::EventTypeDelete,
            A::AppTokenIssue,
            A::AppTokenRevoke,
            A::MessageResend,
            A::EndpointRecover,
            A::MessageContentExpunge,
            A::AttemptContentExpunge,
        ];
        assert_eq!(names(&actions), Action::ALL.map(|a| a.as_str().to_owned()));
    }
}
