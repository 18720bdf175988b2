//! `idemgate store`: retention purges (the sources' and the audit log's), backups and restores.

use std::{path::Path, process::ExitCode};

use anyhow::anyhow;
use idemgate::config::{Config, paths};
use idemgate_clock::Clock;
use idemgate_store::{maintenance::PurgeReport, sqlite::maintenance};

use super::{existing_store, open_store, print_line};
use crate::cli::StoreCommand;

pub(super) async fn store(config: &Config, command: StoreCommand, clock: &dyn Clock) -> anyhow::Result<ExitCode> {
    let path = &config.store.path;
    if !matches!(command, StoreCommand::Restore { .. }) {
        // Restoring may create the store; purging and backing up need one.
        existing_store(config)?;
    }
    let line = match command {
        StoreCommand::Purge { dry_run } => {
            let report = purge(config, dry_run, clock).await?;
            let store = open_store(config).await?;
            let audit = store.purge_audit(clock.now(), config.audit_retention, dry_run).await;
            store.close().await;
            let verb = if dry_run { "would purge" } else { "purged" };
            format!(
                "{verb} {} receipt(s), {} event(s) with their jobs, {} payload(s), {} conflict record(s), \
                 {} audit record(s)",
                report.receipts, report.events, report.payloads, report.conflicts, audit?
            )
        }
        StoreCommand::Backup { .. } | StoreCommand::Restore { .. } if config.store.postgres.is_some() => {
            return Err(anyhow!(
                "store backup and restore work on the SQLite file; back up PostgreSQL with pg_dump or a base backup"
            ));
        }
        StoreCommand::Backup { to } => {
            let to = paths::resolve(Path::new("."), to);
            let summary = maintenance::backup(path, &to)?;
            format!(
                "backup {}: {} receipt(s), {} event(s), {} job(s), one consistent snapshot",
                to.display(),
                summary.receipts,
                summary.events,
                summary.jobs
            )
        }
        StoreCommand::Restore { from } => {
            let from = paths::resolve(Path::new("."), from);
            let restored = maintenance::restore(&from, path, clock.now())?;
            let kept = restored.kept.map(|kept| format!("; the replaced store is kept as {}", kept.display()));
            format!(
                "restored {} from {}: {} receipt(s){}; events received after the backup are forgotten (see docs/guide/retention-and-backups.md)",
                path.display(),
                from.display(),
                restored.summary.receipts,
                kept.unwrap_or_default()
            )
        }
    };
    print_line(&line)?;
    Ok(ExitCode::SUCCESS)
}

/// Purges (or counts) what retention allows: through the store on PostgreSQL, on the file
/// directly on SQLite, at the clock's now.
async fn purge(config: &Config, dry_run: bool, clock: &dyn Clock) -> anyhow::Result<PurgeReport> {
    let now = clock.now();
    if config.store.postgres.is_none() {
        return Ok(maintenance::purge_file(&config.store.path, now, &config.retention(), dry_run)?);
    }
    let store = open_store(config).await?;
    let report = if dry_run {
        store.purge_dry_run(now, config.retention()).await
    } else {
        store.purge(now, config.retention()).await
    };
    store.close().await;
    Ok(report?)
}
