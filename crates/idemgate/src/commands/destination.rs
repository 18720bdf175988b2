//! `idemgate destination`: what each destination's deliveries come to, resuming
//! deliveries to one disabled by a `410 Gone` or paused by its circuit breaker (recorded in
//! the audit log under `cli`), and creating a queue destination's queue or stream.

use std::{process::ExitCode, time::Duration};

use anyhow::{Context, anyhow};
use idemgate::{
    config::{Config, Target},
    core::retry::RetryPolicy,
    operator,
};
use idemgate_clock::Clock;
use idemgate_store::audit::{Action, Audit, CLI, target};
use idemgate_worker::setup;

use super::{existing_store, open_store, print_line};

pub(super) async fn enable(config: &Config, name: String, clock: &dyn Clock) -> anyhow::Result<ExitCode> {
    if !config.has_destination(&name) {
        return Err(anyhow!("no destination {name:?} in the configuration"));
    }
    existing_store(config)?;
    let store = open_store(config).await?;
    let audit = Audit::new(CLI, Action::Enable, target::destination(&name));
    let was_disabled = store.audited(audit).enable_destination(name.clone(), clock.now()).await?;
    print_line(&format!(
        "{name}: {}",
        if was_disabled { "enabled; waiting jobs are due now" } else { "was neither disabled nor paused" }
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `destination list`, with times shown against `clock`.
pub(super) async fn list(config: &Config, json: bool, clock: &dyn Clock) -> anyhow::Result<ExitCode> {
    existing_store(config)?;
    let store = open_store(config).await?;
    let text = operator::destinations(&store, json, clock.now()).await?;
    store.close().await;
    super::events::print_listing(&text, operator::NO_DESTINATIONS)?;
    Ok(ExitCode::SUCCESS)
}

/// `destination setup`: what a RabbitMQ or NATS destination publishes to, created on its
/// broker as configured ([`setup`]), one line per exchange, queue, binding or stream.
pub(super) async fn setup(config: &Config, name: &str) -> anyhow::Result<ExitCode> {
    let destination =
        config.destinations.get(name).ok_or_else(|| anyhow!("no destination {name:?} in the configuration"))?;
    let timeout = destination.timeout;
    let steps = match &destination.target {
        Target::Rabbitmq { url, exchange, routing_key } => {
            setup::rabbitmq(url.expose(), exchange, routing_key, timeout).await
        }
        Target::Nats { url, subject } => {
            let window = duplicate_window(&destination.policy);
            setup::nats(url.expose(), subject, window, timeout).await.map(|step| vec![step])
        }
        Target::Http { .. } | Target::Smtp(_) => {
            return Err(anyhow!(
                "{name} is not a queue destination: setup is for kind = \"rabbitmq\" or \"nats\", and an HTTP or \
                 SMTP destination needs nothing created"
            ));
        }
    }
    .with_context(|| format!("setting up destination {name}"))?;
    for step in steps {
        print_line(&format!("{name}: {step}"))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A new stream's duplicate window: the destination's whole retry schedule, each delay at
/// the top of its jitter, rounded up to a minute, so that a republish after a lost ack is
/// dropped for as long as the job is retried.
fn duplicate_window(policy: &RetryPolicy) -> Duration {
    let horizon = policy.schedule.iter().sum::<Duration>().mul_f64(1.0 + policy.jitter.max(0.0));
    Duration::from_secs(horizon.as_secs().div_ceil(60).max(1) * 60)
}
