//! The audit log: who changed the queue's state by hand, when, what and how much. Every
//! state-changing admin action (the admin API, the dashboard, the CLI's replays, retries
//! and enables) is one [`Audit`] the store writes in the action's own transaction where
//! the operation is one, so an action is recorded exactly when it took effect. Every
//! change through the outbound API (`/api/v1`: applications, endpoints, event types,
//! application tokens, and the resends, recoveries and expunges) is one too, written by
//! the store operation itself under the caller's [`Actor`]; publishing a message is not
//! (the message row is its record). The log is kept for its own retention, apart from the
//! sources' ([`crate::maintenance`]).

use std::time::Duration;

use idemgate_core::UnixTime;

use crate::jobs::{ReplayFilter, ReplayTo};

/// What an operator, or a caller of the outbound API, did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Finished jobs made pending again.
    Replay,
    /// Events sent to a named destination (jobs created or replayed).
    ReplayTo,
    /// Waiting jobs made due now.
    Retry,
    /// A disabled or paused destination resumed.
    Enable,
    /// An application created (`POST /app`, a `PUT` that created, or a message's or an
    /// app portal access's `application`).
    ApplicationCreate,
    /// An application replaced or patched.
    ApplicationUpdate,
    /// An application deleted, with its endpoints.
    ApplicationDelete,
    /// An endpoint created.
    EndpointCreate,
    /// An endpoint replaced or patched.
    EndpointUpdate,
    /// An endpoint deleted.
    EndpointDelete,
    /// An endpoint's custom headers set or patched.
    EndpointHeaders,
    /// An endpoint's signing secret rotated.
    EndpointSecretRotate,
    /// An event type created.
    EventTypeCreate,
    /// An event type replaced or patched.
    EventTypeUpdate,
    /// An event type archived (`DELETE` without `expunge`).
    EventTypeArchive,
    /// An event type removed (`DELETE` with `expunge=true`).
    EventTypeDelete,
    /// An application's token issued (`app-portal-access`).
    AppTokenIssue,
    /// An application's token revoked (`logout`).
    AppTokenRevoke,
    /// A message sent to an endpoint again (`resend`).
    MessageResend,
    /// An endpoint's failed deliveries sent again (`recover`).
    EndpointRecover,
    /// A message's payload removed (`DELETE …/msg/{msg_id}/content`).
    MessageContentExpunge,
    /// An attempt's response body removed (`DELETE …/attempt/{attempt_id}/content`).
    AttemptContentExpunge,
}

impl Action {
    /// Every action, in the order the documentation lists them.
    pub const ALL: [Self; 22] = [
        Self::Replay,
        Self::ReplayTo,
        Self::Retry,
        Self::Enable,
        Self::ApplicationCreate,
        Self::ApplicationUpdate,
        Self::ApplicationDelete,
        Self::EndpointCreate,
        Self::EndpointUpdate,
        Self::EndpointDelete,
        Self::EndpointHeaders,
        Self::EndpointSecretRotate,
        Self::EventTypeCreate,
        Self::EventTypeUpdate,
        Self::EventTypeArchive,
        Self::EventTypeDelete,
        Self::AppTokenIssue,
        Self::AppTokenRevoke,
        Self::MessageResend,
        Self::EndpointRecover,
        Self::MessageContentExpunge,
        Self::AttemptContentExpunge,
    ];

    /// Its stored and shown name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Replay => "replay",
            Self::ReplayTo => "replay_to",
            Self::Retry => "retry",
            Self::Enable => "enable",
            Self::ApplicationCreate => "application_create",
            Self::ApplicationUpdate => "application_update",
            Self::ApplicationDelete => "application_delete",
            Self::EndpointCreate => "endpoint_create",
            Self::EndpointUpdate => "endpoint_update",
            Self::EndpointDelete => "endpoint_delete",
            Self::EndpointHeaders => "endpoint_headers",
            Self::EndpointSecretRotate => "endpoint_secret_rotate",
            Self::EventTypeCreate => "event_type_create",
            Self::EventTypeUpdate => "event_type_update",
            Self::EventTypeArchive => "event_type_archive",
            Self::EventTypeDelete => "event_type_delete",
            Self::AppTokenIssue => "app_token_issue",
            Self::AppTokenRevoke => "app_token_revoke",
            Self::MessageResend => "message_resend",
            Self::EndpointRecover => "endpoint_recover",
            Self::MessageContentExpunge => "message_content_expunge",
            Self::AttemptContentExpunge => "attempt_content_expunge",
        }
    }

    /// The action of that name.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|action| action.as_str() == name)
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One action to record: by whom (an admin token's name, `cli` for the command line), what,
/// and on what. The store adds the time and how many it affected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audit {
    /// The admin token's name, or `cli`.
    pub token: String,
    /// What was done.
    pub action: Action,
    /// What it was done to, as [`target`] words it.
    pub target: String,
}

impl Audit {
    /// `action` by `token` on `target`.
    #[must_use]
    pub fn new(token: impl Into<String>, action: Action, target: String) -> Self {
        Self { token: token.into(), action, target }
    }
}

/// The name the command line's actions are recorded under.
pub const CLI: &str = "cli";

/// Who changes something through the outbound API, as the audit log names them: a
/// configured API token's name, or `app:<application id>` for an application's token.
///
/// ```
/// use idemgate_store::audit::Actor;
/// assert_eq!(Actor::app("app_2").name(), "app:app_2");
/// assert_eq!(Actor::token("ops").name(), "ops");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor(String);

impl Actor {
    /// A configured token, by its name.
    #[must_use]
    pub fn token(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    /// The token of the application `app_id` (its id, never a uid).
    #[must_use]
    pub fn app(app_id: &str) -> Self {
        Self(format!("app:{app_id}"))
    }

    /// The name its records carry.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.0
    }

    /// Its record of `action` on `target`.
    pub(crate) fn did(&self, action: Action, target: String) -> Audit {
        Audit::new(self.0.clone(), action, target)
    }
}

/// One recorded action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// Its place in the log (later actions have higher ids).
    pub id: i64,
    /// When it was done.
    pub at: UnixTime,
    /// The admin or API token's name, `app:<id>` for an application's token, or `cli`.
    pub token: String,
    /// What was done (a stored name; [`Action::parse`] reads it).
    pub action: String,
    /// What it was done to.
    pub target: String,
    /// How many jobs (for `enable`: destinations; for a change through the outbound API:
    /// rows, 1) it changed.
    pub affected: u64,
}

/// Which records a listing returns, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only records at or after this time.
    pub since: Option<UnixTime>,
    /// Only this token's.
    pub token: Option<String>,
    /// Only this action.
    pub action: Option<Action>,
    /// At most this many.
    pub limit: usize,
}

impl Default for AuditFilter {
    fn default() -> Self {
        Self { since: None, token: None, action: None, limit: 100 }
    }
}

/// How the targets of the log read.
pub mod target {
    use std::fmt::Write as _;

    use super::{ReplayFilter, ReplayTo};

    /// One event: `event SOURCE/IDENTITY`.
    #[must_use]
    pub fn event(source: &str, identity: &str) -> String {
        format!("event {source}/{identity}")
    }

    /// One destination: `destination NAME`.
    #[must_use]
    pub fn destination(name: &str) -> String {
        format!("destination {name}")
    }

    /// One application of the outbound API: `application APP_ID`.
    #[must_use]
    pub fn application(app_id: &str) -> String {
        format!("application {app_id}")
    }

    /// One endpoint: `endpoint APP_ID/EP_ID`.
    #[must_use]
    pub fn endpoint(app_id: &str, ep_id: &str) -> String {
        format!("endpoint {app_id}/{ep_id}")
    }

    /// One event type: `event_type NAME`.
    #[must_use]
    pub fn event_type(name: &str) -> String {
        format!("event_type {name}")
    }

    /// One message: `message APP_ID/MSG_ID`.
    #[must_use]
    pub fn message(app_id: &str, msg_id: &str) -> String {
        format!("message {app_id}/{msg_id}")
    }

    /// One message sent to one endpoint: `message APP_ID/MSG_ID to EP_ID`.
    #[must_use]
    pub fn message_to(app_id: &str, msg_id: &str, ep_id: &str) -> String {
        format!("message {app_id}/{msg_id} to {ep_id}")
    }

    /// One attempt: `attempt APP_ID/MSG_ID/ATTEMPT_ID`.
    #[must_use]
    pub fn attempt(app_id: &str, msg_id: &str, attempt_id: &str) -> String {
        format!("attempt {app_id}/{msg_id}/{attempt_id}")
    }

    /// An application's token (never the token itself): `app_token APP_ID`.
    #[must_use]
    pub fn app_token(app_id: &str) -> String {
        format!("app_token {app_id}")
    }

    /// A bulk selection: `filter` and each given key as `key=value` (`filter all` when none).
    #[must_use]
    pub fn filter(filter: &ReplayFilter) -> String {
        if let (Some(source), Some(identity), None) = (&filter.source, &filter.identity, &filter.destination)
            && filter.since.is_none()
            && filter.until.is_none()
        {
            let mut text = event(source, identity);
            if let Some(state) = filter.state {
                let _ = write!(text, " state={state}");
            }
            return text;
        }
        words(
            "filter",
            &[
                ("source", filter.source.clone()),
                ("identity", filter.identity.clone()),
                ("destination", filter.destination.clone()),
                ("state", filter.state.map(|s| s.to_string())),
                ("since", filter.since.map(|t| t.0.to_string())),
                ("until", filter.until.map(|t| t.0.to_string())),
            ],
        )
    }

    /// A replay to a destination: `to NAME` and the selection's keys.
    #[must_use]
    pub fn replay_to(to: &ReplayTo) -> String {
        let head = match (&to.source, &to.identity) {
            (Some(source), Some(identity)) => format!("{} to {}", event(source, identity), to.destination),
            _ => format!("to {}", to.destination),
        };
        let one = to.identity.is_some();
        words(
            &head,
            &[
                ("source", to.source.clone().filter(|_| !one)),
                ("since", to.since.map(|t| t.0.to_string())),
                ("until", to.until.map(|t| t.0.to_string())),
                ("state", to.unmatched_only.then(|| "unmatched".to_owned())),
            ],
        )
    }

    fn words(head: &str, pairs: &[(&str, Option<String>)]) -> String {
        let mut text = head.to_owned();
        let mut any = false;
        for (key, value) in pairs {
            if let Some(value) = value {
                let _ = write!(text, " {key}={value}");
                any = true;
            }
        }
        if !any && head == "filter" {
            text.push_str(" all");
        }
        text
    }
}

/// The time `keep` before `now`, in seconds: older records go.
pub(crate) fn cutoff(now: UnixTime, keep: Duration) -> i64 {
    super::maintenance::cutoff(now, keep)
}

/// The record's time (whole seconds, as every record's) of a change at `now_ms`.
pub(crate) fn at_ms(now_ms: i64) -> UnixTime {
    UnixTime(now_ms.div_euclid(1000))
}

/// A stored count as the record's.
pub(crate) fn affected(count: usize) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use idemgate_core::job::JobState;

    use super::*;

    #[test]
    fn every_action_reads_back_from_its_name() {
        for action in Action::ALL {
            assert_eq!(Action::parse(action.as_str()), Some(action));
        }
        assert_eq!(Action::parse("delete"), None);
        let names: std::collections::HashSet<_> = Action::ALL.iter().map(|a| a.as_str()).collect();
        assert_eq!(names.len(), Action::ALL.len());
    }

    #[test]
    fn targets_name_what_was_selected() {
        let one = ReplayFilter { source: Some("gh".into()), identity: Some("e1".into()), ..ReplayFilter::default() };
        assert_eq!(target::filter(&one), "event gh/e1");
        let dead = ReplayFilter { state: Some(JobState::Dead), ..one };
        assert_eq!(target::filter(&dead), "event gh/e1 state=dead");
        assert_eq!(target::filter(&ReplayFilter::default()), "filter all");
        let bulk =
            ReplayFilter { destination: Some("billing".into()), since: Some(UnixTime(10)), ..ReplayFilter::default() };
        assert_eq!(target::filter(&bulk), "filter destination=billing since=10");
        let to = ReplayTo { destination: "b".into(), unmatched_only: true, ..ReplayTo::default() };
        assert_eq!(target::replay_to(&to), "to b state=unmatched");
        let to_one = ReplayTo {
            destination: "b".into(),
            source: Some("gh".into()),
            identity: Some("e1".into()),
            ..ReplayTo::default()
        };
        assert_eq!(target::replay_to(&to_one), "event gh/e1 to b");
        assert_eq!(target::destination("b"), "destination b");
    }
}
