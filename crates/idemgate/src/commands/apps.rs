//! `idemgate apps`: the sending side's applications and their endpoints, read from the
//! store like `events list` (read-only: applications and endpoints change through
//! `/api/v1`). The views are [`idemgate::applications`]'s.

use std::process::ExitCode;

use anyhow::{Context, anyhow};
use idemgate::{applications, config::Config};
use idemgate_clock::Clock;
use idemgate_store::SqliteReader;

use super::{events::print_listing, existing_store, open_store};
use crate::cli::AppsCommand;

/// `apps list` or `apps show`, with times shown against `clock`.
pub(super) async fn view(config: &Config, command: AppsCommand, clock: &dyn Clock) -> anyhow::Result<ExitCode> {
    existing_store(config)?;
    if config.store.postgres.is_none() {
        // A view changes nothing: a foreign file or one of another schema version is an error.
        SqliteReader::open(&config.store.path).context("cannot read the store")?;
    }
    let store = open_store(config).await?;
    let now = clock.now();
    let (text, empty) = match command {
        AppsCommand::List { after, limit, json } => {
            (applications::list(&store, (after, limit), json, now).await?, applications::NO_APPLICATIONS)
        }
        AppsCommand::Show { app, json } => match applications::show(&store, &app, json, now).await? {
            Some(text) => (text, ""),
            None => return Err(anyhow!("no application {app:?} (give its id, app_…, or its uid)")),
        },
    };
    store.close().await;
    print_listing(&text, empty)?;
    Ok(ExitCode::SUCCESS)
}
