//! `idemgate send`: one operation, retried safely from the command line; or, with
//! `--repeat`, many operations at once as a load generator.
//!
//! Exit codes: 0 when the (every) operation got a 2xx, [`EXIT_REJECTED`] when one was
//! refused with a final answer (a 4xx: retrying cannot help), [`EXIT_GAVE_UP`] when the
//! retries ran out.

use std::{collections::BTreeMap, sync::Arc, time::Instant};

use idemgate_client::{Client, Final, Request, Sent, WebhookSigner};
use idemgate_core::{scheme, secret::SecretError};

/// A final non-2xx answer.
pub const EXIT_REJECTED: u8 = 3;
/// Every attempt failed transiently.
pub const EXIT_GAVE_UP: u8 = 4;

/// Why a send could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendSetupError {
    /// The scheme is unknown or cannot sign.
    #[error("{0}")]
    Scheme(String),
    /// The secret does not fit the scheme (never echoed).
    #[error("the secret is not valid for {scheme}: {reason}")]
    Secret {
        /// The scheme.
        scheme: String,
        /// Why, without the secret.
        reason: String,
    },
    /// A `-H` argument is not `Name: value`.
    #[error("header {0:?} is not `Name: value`")]
    Header(String),
}

/// The signer for the registry's scheme `scheme_name` with the secret text `secret`,
/// decoded as the scheme's verifier decodes it.
pub fn signer(scheme_name: &str, secret: &str) -> Result<WebhookSigner, SendSetupError> {
    let scheme = scheme::lookup(scheme_name).map_err(|err| SendSetupError::Scheme(err.to_string()))?;
    let invalid = |err: SecretError| SendSetupError::Secret { scheme: scheme_name.to_owned(), reason: err.to_string() };
    let key = scheme.decode_secret(secret).map_err(invalid)?;
    if !scheme.secret_signs() {
        return Err(SendSetupError::Scheme(format!(
            "{scheme_name} deliveries cannot be signed by send (it needs a private key)"
        )));
    }
    WebhookSigner::new(scheme, key).map_err(invalid)
}

/// Parses `-H 'Name: value'`.
pub fn header(text: &str) -> Result<(String, String), SendSetupError> {
    let (name, value) = text.split_once(':').ok_or_else(|| SendSetupError::Header(text.to_owned()))?;
    Ok((name.trim().to_owned(), value.trim().to_owned()))
}

/// The exit code for how an operation ended.
#[must_use]
pub fn exit_code(outcome: Final) -> u8 {
    match outcome {
        Final::Succeeded => 0,
        Final::Rejected => EXIT_REJECTED,
        Final::GaveUp => EXIT_GAVE_UP,
    }
}

/// One line per attempt, for `--verbose`.
#[must_use]
pub fn describe_attempts(sent: &Sent) -> String {
    let mut lines = String::new();
    for (n, attempt) in sent.attempts.iter().enumerate() {
        let what = match (&attempt.status, &attempt.error) {
            (Some(status), _) => format!("status {status}"),
            (None, Some(error)) => error.clone(),
            (None, None) => "no answer".to_owned(),
        };
        let next = attempt.waited.map_or(String::new(), |w| format!("; retrying in {:.1} s", w.as_secs_f64()));
        lines.push_str(&format!("attempt {}: {what}{next}\n", n + 1));
    }
    if let Some(key) = &sent.idempotency_key {
        lines.push_str(&format!("idempotency-key: {key}\n"));
    }
    lines
}

/// Sends `count` operations built by `make` over `concurrency` tasks; returns the
/// outcome counts, the statuses and the elapsed time.
pub async fn repeat(
    client: &Client,
    make: Arc<dyn Fn(usize) -> Request + Send + Sync>,
    count: usize,
    concurrency: usize,
) -> (BTreeMap<&'static str, usize>, BTreeMap<u16, usize>, std::time::Duration) {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (client, make, next) = (client.clone(), Arc::clone(&make), Arc::clone(&next));
            tokio::spawn(async move {
                let mut results = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= count {
                        return results;
                    }
                    if let Ok(sent) = client.send(make(i)).await {
                        results.push((sent.outcome, sent.status));
                    }
                }
            })
        })
        .collect();
    let (mut outcomes, mut statuses) = (BTreeMap::new(), BTreeMap::new());
    for task in tasks {
        for (outcome, status) in task.await.unwrap_or_default() {
            let name = match outcome {
                Final::Succeeded => "succeeded",
                Final::Rejected => "rejected",
                Final::GaveUp => "gave up",
            };
            *outcomes.entry(name).or_insert(0) += 1;
            *statuses.entry(status).or_insert(0) += 1;
        }
    }
    (outcomes, statuses, started.elapsed())
}
