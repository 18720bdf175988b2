//! Sending with retries: one operation, attempted until it gets a final answer or the
//! attempts run out, every attempt carrying the same key or event identity.

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use idemgate_clock::{Clock, SystemClock};
use idemgate_core::{
    retry::{AttemptResult, Decision, RetryPolicy, parse_retry_after},
    scheme::Outgoing,
};
use reqwest::header::RETRY_AFTER;

use crate::{Request, api_answer::is_in_flight, request::generate_id};

/// The header that marks an answer replayed from an `Idempotency-Key`'s record.
const IDEMPOTENCY_REPLAY: &str = "idempotency-replay";

/// Waits between attempts; injectable so tests need not sleep.
pub trait Sleeper: Send + Sync + std::fmt::Debug {
    /// Waits `duration`.
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// Sleeps on the tokio timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// How a client retries.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The first retry's delay; each further one doubles, up to `max_delay`.
    pub base_delay: Duration,
    /// The longest delay between attempts (and the longest `Retry-After` honoured).
    pub max_delay: Duration,
    /// Timeout of one attempt.
    pub timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            timeout: Duration::from_secs(10),
        }
    }
}

impl ClientOptions {
    /// The retry policy these options describe: exponential delays with ±20 % jitter,
    /// `Retry-After` honoured up to `max_delay`, other 4xx final.
    #[must_use]
    pub fn policy(&self) -> RetryPolicy {
        let retries = self.max_attempts.saturating_sub(1);
        let schedule =
            (0..retries).map(|n| self.base_delay.saturating_mul(2u32.saturating_pow(n)).min(self.max_delay)).collect();
        RetryPolicy { schedule, jitter: 0.2, retry_after_cap: self.max_delay, retry_client_errors: false }
    }
}

/// One attempt as it went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The status, if an answer came.
    pub status: Option<u16>,
    /// Why not, if none came.
    pub error: Option<NoAnswer>,
    /// How long the client waited before the next attempt, if there was one.
    pub waited: Option<Duration>,
}

/// Why an attempt got no answer. The causes are the operating system's words
/// (`connection refused`) or the resolver's, never the URL, which the caller knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoAnswer {
    /// No connection could be made.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The attempt's timeout passed first.
    #[error("timed out")]
    TimedOut,
    /// The connection was made but broke before a complete answer.
    #[error("connection lost: {0}")]
    Lost(String),
}

impl NoAnswer {
    fn of(err: &reqwest::Error) -> Self {
        if err.is_timeout() {
            Self::TimedOut
        } else if err.is_connect() {
            Self::Connect(cause(err))
        } else {
            Self::Lost(cause(err))
        }
    }
}

/// The deepest cause of `err`: an operating system error by its kind (`connection
/// refused`, without `(os error 111)`), otherwise the innermost message.
fn cause(err: &reqwest::Error) -> String {
    let mut deepest: &dyn std::error::Error = err;
    while let Some(source) = deepest.source() {
        if let Some(io) = source.downcast_ref::<std::io::Error>()
            && io.raw_os_error().is_some()
        {
            return io.kind().to_string();
        }
        deepest = source;
    }
    deepest.to_string()
}

/// How the operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Final {
    /// A 2xx.
    Succeeded,
    /// A final non-2xx answer (a 4xx or a 3xx): retrying cannot change it.
    Rejected,
    /// Every attempt failed transiently.
    GaveUp,
}

/// The operation's last answer and its history.
#[derive(Debug, Clone)]
pub struct Sent {
    /// How it ended.
    pub outcome: Final,
    /// The last status (0 when no answer ever came).
    pub status: u16,
    /// The last answer's body.
    pub body: bytes::Bytes,
    /// Whether the last answer was a replay of the key's first answer
    /// (`Idempotency-Replay: true`): the operation had taken effect before.
    pub replayed: bool,
    /// The key every attempt carried, if any.
    pub idempotency_key: Option<String>,
    /// Every attempt.
    pub attempts: Vec<Attempt>,
}

/// The request could not be sent at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The HTTP client could not be built.
    #[error("cannot build the http client: {0}")]
    Client(String),
    /// A header name or value, or the URL, is not valid.
    #[error("invalid request: {0}")]
    Invalid(String),
}

/// Sends [`Request`]s with retries.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    policy: RetryPolicy,
    clock: Arc<dyn Clock>,
    sleeper: Arc<dyn Sleeper>,
}

impl Client {
    /// A client with `options`, the system clock and real sleeping.
    pub fn new(options: ClientOptions) -> Result<Self, SendError> {
        let http = reqwest::Client::builder()
            .timeout(options.timeout)
            .build()
            .map_err(|err| SendError::Client(err.to_string()))?;
        Ok(Self { http, policy: options.policy(), clock: Arc::new(SystemClock), sleeper: Arc::new(TokioSleeper) })
    }

    /// Replaces the sleeper (tests record the waits instead of sleeping).
    #[must_use]
    pub fn with_sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// Sends `request` until it gets a final answer or the attempts run out. A request
    /// with a key whose answer is the API's refusal of a repeat still in flight (`409`
    /// `idempotency_conflict` with `Retry-After`) is tried again with the same key, after
    /// the schedule's delay but no later than its `Retry-After`.
    pub async fn send(&self, request: Request) -> Result<Sent, SendError> {
        let key = request.idempotency_key.clone().or_else(|| request.is_mutation().then(|| generate_id("idg-")));
        let mut attempts = Vec::new();
        let mut attempt = 1;
        loop {
            let answer = self.attempt(&request, key.as_deref(), attempt).await?;
            let decision = self.decide(attempt, &answer, key.is_some());
            let outcome = match decision {
                Decision::Succeeded => Some(Final::Succeeded),
                Decision::RetryAfter(_) => None,
                Decision::Dead(idemgate_core::retry::DeadReason::AttemptsExhausted) => Some(Final::GaveUp),
                Decision::Dead(_) | Decision::DisableDestination => Some(Final::Rejected),
            };
            let waited = match decision {
                Decision::RetryAfter(delay) => Some(delay),
                _ => None,
            };
            let (status, error, body, replayed) = match answer {
                Ok(answer) => (answer.status, None, answer.body, answer.replayed),
                Err(error) => (0, Some(error), bytes::Bytes::new(), false),
            };
            attempts.push(Attempt { status: (status != 0).then_some(status), error, waited });
            if let Some(outcome) = outcome {
                return Ok(Sent { outcome, status, body, replayed, idempotency_key: key, attempts });
            }
            if let Some(delay) = waited {
                self.sleeper.sleep(delay).await;
            }
            attempt += 1;
        }
    }

    /// What to do after attempt `attempt` came to `answer`. A refusal in flight is a
    /// temporary refusal for the schedule, waited for no longer than its `Retry-After`
    /// (the lock's time left: the first request usually ends well before).
    fn decide(&self, attempt: u32, answer: &Result<Answer, NoAnswer>, keyed: bool) -> Decision {
        let result = match answer {
            Ok(answer) if keyed && is_in_flight(answer.status, answer.retry_after, &answer.body) => {
                let decision =
                    self.policy.decide(attempt, AttemptResult::Refused { permanent: false }, fastrand::f64());
                return match (decision, answer.retry_after) {
                    (Decision::RetryAfter(delay), Some(limit)) => Decision::RetryAfter(delay.min(limit)),
                    (other, _) => other,
                };
            }
            Ok(answer) => AttemptResult::Status { status: answer.status, retry_after: answer.retry_after },
            Err(NoAnswer::TimedOut) => AttemptResult::Timeout,
            Err(_) => AttemptResult::Connection,
        };
        self.policy.decide(attempt, result, fastrand::f64())
    }

    async fn attempt(
        &self,
        request: &Request,
        key: Option<&str>,
        attempt: u32,
    ) -> Result<Result<Answer, NoAnswer>, SendError> {
        let mut builder = self.http.request(request.method.clone(), &request.url);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        if let Some(key) = key {
            builder = builder.header("idempotency-key", key);
        }
        if let Some((signer, identity)) = &request.webhook {
            let message = Outgoing { id: identity, attempt, timestamp: self.clock.now(), body: &request.body };
            for (name, value) in signer.headers(&message) {
                builder = builder.header(name, value);
            }
        }
        let built = builder.body(request.body.clone()).build().map_err(|err| SendError::Invalid(err.to_string()))?;
        match self.http.execute(built).await {
            Ok(response) => {
                let status = response.status().as_u16();
                let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok());
                let retry_after = header(RETRY_AFTER.as_str()).and_then(parse_retry_after);
                let replayed = header(IDEMPOTENCY_REPLAY).is_some_and(|v| v.eq_ignore_ascii_case("true"));
                // An answer whose body breaks off is no answer: its effect is not known.
                match response.bytes().await {
                    Ok(body) => Ok(Ok(Answer { status, retry_after, body, replayed })),
                    Err(err) => Ok(Err(NoAnswer::of(&err))),
                }
            }
            Err(err) => Ok(Err(NoAnswer::of(&err))),
        }
    }
}

/// One attempt's complete answer.
#[derive(Debug)]
struct Answer {
    status: u16,
    retry_after: Option<Duration>,
    body: bytes::Bytes,
    /// `Idempotency-Replay: true`: the key's first answer, given again.
    replayed: bool,
}
