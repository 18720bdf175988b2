//! `idemgate destination`: what each destination's deliveries come to, and resuming
//! deliveries to one disabled by a `410 Gone` or paused by its circuit breaker (recorded in
//! the audit log under `cli`).

use std::process::ExitCode;

use anyhow::anyhow;
use idemgate::{config::Config, operator};
use idemgate_clock::Clock;
use idemgate_store::audit::{Action, Audit, CLI, target};

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
