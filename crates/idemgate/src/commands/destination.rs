//! `idemgate destination`: resuming deliveries to a destination disabled by a `410 Gone`.

use std::process::ExitCode;

use anyhow::anyhow;
use idemgate::config::Config;
use idemgate_clock::Clock;

use super::{existing_store, open_store, print_line};

pub(super) async fn enable(config: &Config, name: String, clock: &dyn Clock) -> anyhow::Result<ExitCode> {
    if !config.has_destination(&name) {
        return Err(anyhow!("no destination {name:?} in the configuration"));
    }
    existing_store(config)?;
    let store = open_store(config).await?;
    let was_disabled = store.enable_destination(name.clone(), clock.now()).await?;
    print_line(&format!(
        "{name}: {}",
        if was_disabled { "enabled; waiting jobs are due now" } else { "was not disabled" }
    ))?;
    Ok(ExitCode::SUCCESS)
}
