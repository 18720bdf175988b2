//! What to do after a delivery attempt, as a pure function of the attempt's result, the
//! attempt number, the policy and a random draw; the caller supplies the clock and the
//! randomness, so schedules are deterministic under test.

use std::time::Duration;

/// The default delays after the first (immediate) attempt: the Standard Webhooks spec's
/// example schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; also Svix's default),
/// extended by two daily attempts so that a provider-style outage of up to three days is
/// covered: ten attempts over about 3 days 3 hours.
pub const DEFAULT_SCHEDULE: [Duration; 9] = [
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 3600),
    Duration::from_secs(5 * 3600),
    Duration::from_secs(10 * 3600),
    Duration::from_secs(10 * 3600),
    Duration::from_secs(24 * 3600),
    Duration::from_secs(24 * 3600),
];

/// How a destination's failed attempts are retried.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Delay before attempt `n + 2` is `schedule[n]`; its length + 1 is the attempt limit.
    pub schedule: Vec<Duration>,
    /// Each delay is spread uniformly over ±`jitter` of itself (0.2 = ±20 %), so that
    /// retries after an outage do not arrive all at once.
    pub jitter: f64,
    /// The longest `Retry-After` honoured; a longer one is cut to this.
    pub retry_after_cap: Duration,
    /// Retry other 4xx answers too (by default they are final: the request itself is wrong).
    pub retry_client_errors: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            schedule: DEFAULT_SCHEDULE.to_vec(),
            jitter: 0.2,
            retry_after_cap: Duration::from_secs(6 * 3600),
            retry_client_errors: false,
        }
    }
}

/// What one attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    /// The destination answered with this status (and maybe a `Retry-After`).
    Status {
        /// The HTTP status.
        status: u16,
        /// The parsed `Retry-After`, if any.
        retry_after: Option<Duration>,
    },
    /// No complete answer within the destination's timeout.
    Timeout,
    /// The connection could not be made or broke before an answer.
    Connection,
    /// A destination that is not HTTP took the event (a broker's publisher confirm, a
    /// mail server's `250`, a Rust handler's success).
    Accepted,
    /// A destination that is not HTTP answered with a refusal (a broker's nack, a mail
    /// server's `4xx` or `5xx`, a Rust handler's failure), or the event cannot be made into what it takes (a failing
    /// transform). A permanent refusal is final; a temporary one follows the schedule.
    Refused {
        /// Retrying cannot change it.
        permanent: bool,
    },
}

/// What an attempt came to, as the store keeps it with the attempt: the one field every
/// view (health, last success and failure, series, the dashboard's figures) reads, so that
/// none infers it from a status or an error (a broker's confirm has neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempted {
    /// The destination took the event: a 2xx, a broker's confirm, a smarthost's `250`.
    Succeeded,
    /// Anything else: another status, no answer, a refusal.
    Failed,
}

impl Attempted {
    /// The outcome of an attempt that came to `result`.
    #[must_use]
    pub fn of(result: AttemptResult) -> Self {
        match result {
            AttemptResult::Status { status: 200..=299, .. } | AttemptResult::Accepted => Self::Succeeded,
            _ => Self::Failed,
        }
    }

    /// Its stored name: `succeeded` or `failed`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
        }
    }

    /// The outcome stored as `name`; `None` for a name this build does not write.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "succeeded" => Some(Self::Succeeded),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// The verdict for a job after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Delivered.
    Succeeded,
    /// Try again after this delay.
    RetryAfter(Duration),
    /// Give up; the job is dead (replayable).
    Dead(DeadReason),
    /// The destination answered `410 Gone`: stop all its deliveries until re-enabled. The
    /// job itself waits (as retrying) and resumes when the destination is enabled.
    DisableDestination,
}

/// Why a job is dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadReason {
    /// Every attempt of the schedule failed.
    AttemptsExhausted,
    /// The destination gave an answer that retrying cannot change (a 4xx).
    FinalStatus(u16),
    /// A destination that is not HTTP refused permanently; the attempt's error says how.
    Refused,
}

impl DeadReason {
    /// A bounded description for the job's record.
    #[must_use]
    pub fn describe(self) -> String {
        match self {
            Self::AttemptsExhausted => "attempts exhausted".to_owned(),
            Self::FinalStatus(status) => format!("final status {status}"),
            Self::Refused => "refused permanently".to_owned(),
        }
    }
}

impl RetryPolicy {
    /// How many attempts a job gets in all.
    #[must_use]
    pub fn max_attempts(&self) -> u32 {
        u32::try_from(self.schedule.len()).unwrap_or(u32::MAX).saturating_add(1)
    }

    /// The verdict after attempt number `attempt` (1-based). `draw` is uniform in [0, 1).
    #[must_use]
    pub fn decide(&self, attempt: u32, result: AttemptResult, draw: f64) -> Decision {
        let retry_after = match result {
            AttemptResult::Status { status: 200..=299, .. } | AttemptResult::Accepted => return Decision::Succeeded,
            AttemptResult::Refused { permanent: true } => return Decision::Dead(DeadReason::Refused),
            AttemptResult::Status { status: 410, .. } => return Decision::DisableDestination,
            AttemptResult::Status { status, .. } if !self.is_retryable(status) => {
                return Decision::Dead(DeadReason::FinalStatus(status));
            }

            AttemptResult::Status { retry_after, .. } => retry_after,
            AttemptResult::Timeout | AttemptResult::Connection | AttemptResult::Refused { permanent: false } => None,
        };
        let Some(base) = attempt.checked_sub(1).and_then(|i| self.schedule.get(i as usize)) else {
            return Decision::Dead(DeadReason::AttemptsExhausted);
        };
        let jittered = self.jittered(*base, draw);
        let honoured = retry_after.map_or(Duration::ZERO, |wait| wait.min(self.retry_after_cap));
        Decision::RetryAfter(jittered.max(honoured))
    }

    fn is_retryable(&self, status: u16) -> bool {
        matches!(status, 408 | 429 | 500..=599) || (self.retry_client_errors && (400..500).contains(&status))
    }

    fn jittered(&self, base: Duration, draw: f64) -> Duration {
        let spread = self.jitter.clamp(0.0, 1.0);
        let factor = 1.0 + spread * (2.0 * draw.clamp(0.0, 1.0) - 1.0);
        base.mul_f64(factor)
    }
}

/// Parses a `Retry-After` value given in seconds (the HTTP-date form is not honoured and
/// falls back to the schedule).
#[must_use]
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16) -> AttemptResult {
        AttemptResult::Status { status, retry_after: None }
    }

    #[test]
    fn an_attempt_succeeded_exactly_when_its_job_is_decided_succeeded() {
        let results = [
            status(200),
            status(299),
            status(301),
            status(410),
            status(503),
            AttemptResult::Accepted,
            AttemptResult::Timeout,
            AttemptResult::Connection,
            AttemptResult::Refused { permanent: true },
            AttemptResult::Refused { permanent: false },
        ];
        for result in results {
            let decided = RetryPolicy::default().decide(1, result, 0.5) == Decision::Succeeded;
            assert_eq!(Attempted::of(result) == Attempted::Succeeded, decided, "{result:?}");
            let outcome = Attempted::of(result);
            assert_eq!(Attempted::parse(outcome.as_str()), Some(outcome));
        }
    }

    fn no_jitter() -> RetryPolicy {
        RetryPolicy { jitter: 0.0, ..RetryPolicy::default() }
    }

    #[test]
    fn success_is_final() {
        assert_eq!(no_jitter().decide(1, status(204), 0.5), Decision::Succeeded);
    }

    #[test]
    fn transient_failures_follow_the_schedule_then_die() {
        let policy = no_jitter();
        let transient =
            [status(500), status(503), status(408), status(429), AttemptResult::Timeout, AttemptResult::Connection];
        for result in transient {
            assert_eq!(policy.decide(1, result, 0.5), Decision::RetryAfter(Duration::from_secs(5)), "{result:?}");
        }
        assert_eq!(policy.decide(2, status(500), 0.5), Decision::RetryAfter(Duration::from_secs(300)));
        assert_eq!(policy.decide(9, status(500), 0.5), Decision::RetryAfter(Duration::from_secs(86_400)));
        assert_eq!(policy.max_attempts(), 10);
        assert_eq!(policy.decide(10, status(500), 0.5), Decision::Dead(DeadReason::AttemptsExhausted));
    }

    #[test]
    fn the_default_schedule_covers_a_multi_day_outage() {
        let total: Duration = DEFAULT_SCHEDULE.iter().sum();
        assert!(total >= Duration::from_secs(3 * 86_400), "{total:?}");
    }

    #[test]
    fn client_errors_are_final_unless_configured() {
        assert_eq!(no_jitter().decide(1, status(400), 0.5), Decision::Dead(DeadReason::FinalStatus(400)));
        assert_eq!(no_jitter().decide(1, status(404), 0.5), Decision::Dead(DeadReason::FinalStatus(404)));
        let lenient = RetryPolicy { retry_client_errors: true, ..no_jitter() };
        assert_eq!(lenient.decide(1, status(404), 0.5), Decision::RetryAfter(Duration::from_secs(5)));
        assert_eq!(lenient.decide(1, status(410), 0.5), Decision::DisableDestination, "410 always disables");
    }

    #[test]
    fn a_non_http_destination_accepts_or_refuses() {
        let policy = no_jitter();
        assert_eq!(policy.decide(1, AttemptResult::Accepted, 0.5), Decision::Succeeded);
        assert_eq!(
            policy.decide(1, AttemptResult::Refused { permanent: true }, 0.5),
            Decision::Dead(DeadReason::Refused)
        );
        let temporary = AttemptResult::Refused { permanent: false };
        assert_eq!(policy.decide(1, temporary, 0.5), Decision::RetryAfter(Duration::from_secs(5)));
        assert_eq!(policy.decide(10, temporary, 0.5), Decision::Dead(DeadReason::AttemptsExhausted));
    }

    #[test]
    fn gone_disables_the_destination() {
        assert_eq!(no_jitter().decide(3, status(410), 0.5), Decision::DisableDestination);
    }

    #[test]
    fn retry_after_is_honoured_up_to_its_cap() {
        let policy = no_jitter();
        let asked = |secs| AttemptResult::Status { status: 429, retry_after: Some(Duration::from_secs(secs)) };
        assert_eq!(policy.decide(1, asked(120), 0.5), Decision::RetryAfter(Duration::from_secs(120)));
        assert_eq!(
            policy.decide(1, asked(1), 0.5),
            Decision::RetryAfter(Duration::from_secs(5)),
            "never sooner than the schedule"
        );
        assert_eq!(policy.decide(1, asked(86_400 * 30), 0.5), Decision::RetryAfter(Duration::from_secs(6 * 3600)));
    }

    #[test]
    fn jitter_spreads_the_delay_by_the_draw() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.decide(2, status(500), 0.0), Decision::RetryAfter(Duration::from_secs(240)));
        assert_eq!(policy.decide(2, status(500), 0.5), Decision::RetryAfter(Duration::from_secs(300)));
        let Decision::RetryAfter(high) = policy.decide(2, status(500), 0.999_999) else { unreachable!() };
        assert!(high <= Duration::from_secs(360) && high > Duration::from_secs(359));
    }

    #[test]
    fn retry_after_seconds_parse() {
        assert_eq!(parse_retry_after(" 30 "), Some(Duration::from_secs(30)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
