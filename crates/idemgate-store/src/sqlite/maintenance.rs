//! Keeping the SQLite file the right size and safe: retention purges by the rules of
//! [`crate::maintenance`], consistent backups (`VACUUM INTO`), the restore, and seeding a
//! large store for benchmarks. These work on the file itself, so they also run without a
//! server (the command line), under the writers' lock.

use std::{
    fs::File,
    path::{Path, PathBuf},
    time::{Duration, UNIX_EPOCH},
};

use idemgate_core::UnixTime;
use rusqlite::{Connection, params};

use super::{
    SqliteError, StoreOptions, create_private, lock::WriterLock, migrations, new_private, open_connection,
    receive::INSERT_RECEIPT,
};
use crate::{
    StoreError,
    maintenance::{PurgeReport, Retention},
    model::maintenance::cutoff,
};

/// Events of `?1` received before `?2` whose jobs are all finished and that hold no
/// ordering version.
const PURGEABLE_EVENTS: &str = "SELECT e.id FROM events e
    WHERE e.source = ?1 AND e.received_at < ?2
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.event_id = e.id AND j.state IN ('pending', 'running', 'retrying'))
      AND NOT EXISTS (SELECT 1 FROM ordering_versions o WHERE o.event_id = e.id)";

/// Applies `policies` at `now` on `conn`, inside the caller's transaction, and the
/// messages' own payload retention (`expires_at`, from `payloadRetentionPeriod`).
pub fn purge(conn: &Connection, now: UnixTime, policies: &[Retention]) -> Result<PurgeReport, rusqlite::Error> {
    let mut report = PurgeReport::default();
    for policy in policies {
        let receipts_before = cutoff(now, policy.receipts);
        let payloads_before = cutoff(now, policy.payloads);
        let source = policy.source.as_str();
        report.payloads += conn.execute(
            &format!("UPDATE events SET body = X'', payload_purged = 1 WHERE payload_purged = 0 AND id IN ({PURGEABLE_EVENTS})"),
            params![source, payloads_before],
        )?;
        conn.execute(
            &format!(
                "DELETE FROM attempts WHERE job_id IN (SELECT id FROM jobs WHERE event_id IN ({PURGEABLE_EVENTS}))"
            ),
            params![source, receipts_before],
        )?;
        conn.execute(
            &format!("DELETE FROM jobs WHERE event_id IN ({PURGEABLE_EVENTS})"),
            params![source, receipts_before],
        )?;
        report.events += conn.execute(
            &format!("DELETE FROM events WHERE id IN ({PURGEABLE_EVENTS})"),
            params![source, receipts_before],
        )?;
        report.receipts += conn.execute(
            "DELETE FROM receipts WHERE source = ?1 AND received_at < ?2
               AND NOT EXISTS (SELECT 1 FROM events e WHERE e.source = receipts.source AND e.identity = receipts.identity)",
            params![source, receipts_before],
        )?;
        conn.execute(
            "DELETE FROM body_receipts WHERE source = ?1
               AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.source = body_receipts.source AND r.identity = body_receipts.identity)",
            params![source],
        )?;
        report.conflicts += conn.execute(
            "DELETE FROM conflicts WHERE source = ?1 AND last_seen_at < ?2
               AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.source = conflicts.source AND r.identity = conflicts.identity)",
            params![source, receipts_before],
        )?;
    }
    report.payloads += super::outbound::message::purge_expired(conn, now.0.saturating_mul(1000))?;
    Ok(report)
}

/// [`purge`] on a connection of its own (for the command line): committed, or rolled back
/// after counting when `dry_run`.
pub fn purge_file(
    path: &Path,
    now: UnixTime,
    policies: &[Retention],
    dry_run: bool,
) -> Result<PurgeReport, StoreError> {
    let _lock = WriterLock::shared(path)?;
    let mut conn = open_connection(path, false, &StoreOptions::default())?;
    migrations::check_current(&conn)?;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let report = purge(&tx, now, policies)?;
    if dry_run {
        tx.rollback()?;
    } else {
        tx.commit()?;
    }
    Ok(report)
}

/// Counts in a backup, to show that it holds what it should.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupSummary {
    /// Receipts in the copy.
    pub receipts: u64,
    /// Events in the copy.
    pub events: u64,
    /// Jobs in the copy.
    pub jobs: u64,
}

/// Writes a consistent copy of the whole store at `path` to the new file `to`, while
/// servers keep writing: `VACUUM INTO` reads one snapshot, so receipts, events, jobs,
/// idempotency records and an application's own tables in it belong together.
pub fn backup(path: &Path, to: &Path) -> Result<BackupSummary, StoreError> {
    let _lock = WriterLock::shared(path)?;
    let conn = open_connection(path, false, &StoreOptions::default())?;
    migrations::check_current(&conn)?;
    // Created 0600 before SQLite writes into it (it accepts an empty file): a backup holds
    // the payloads as the store does.
    new_private(to).map_err(|err| match err.kind() {
        std::io::ErrorKind::AlreadyExists => {
            StoreError::Maintenance("the backup file already exists; choose a new name")
        }
        _ => StoreError::Maintenance(io_reason(&err)),
    })?;
    if let Err(err) = conn.execute("VACUUM INTO ?1", params![to.to_string_lossy()]) {
        let _ = std::fs::remove_file(to);
        return Err(err.into());
    }
    summary(to)
}

fn summary(path: &Path) -> Result<BackupSummary, StoreError> {
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|cause| SqliteError::Open { path: path.to_owned(), cause })?;
    let count = |table: &str| conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |row| row.get::<_, u64>(0));
    Ok(BackupSummary { receipts: count("receipts")?, events: count("events")?, jobs: count("jobs")? })
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// Counts in the restored store.
    pub summary: BackupSummary,
    /// Where the store it replaced was kept, if there was one.
    pub kept: Option<PathBuf>,
}

/// Replaces the store at `to` with the backup `from`. Refused while any process has `to`
/// open for writing ([`SqliteError::InUse`]); while it runs, no writer can open `to`.
///
/// The store it replaces is first copied, WAL included, to a new file
/// `<name>.before-restore-<UTC time>`, the time being `now` (the caller's clock), that
/// never overwrites an earlier one, and the restored file and its folder are synced
/// before this returns. Receipts newer than the backup are forgotten by this: see the
/// user guide, `docs/guide/retention-and-backups.md`, on closing that gap.
pub fn restore(from: &Path, to: &Path, now: UnixTime) -> Result<Restored, StoreError> {
    check_backup(from)?;
    let _lock = WriterLock::exclusive(to)?;
    let kept = if to.exists() { Some(keep(to, now)?) } else { None };
    let io = |source: std::io::Error| StoreError::Maintenance(io_reason(&source));
    let incoming = sibling(to, ".restoring");
    copy_private(from, &incoming).map_err(io)?;
    // The old WAL must go before the new file takes the name, or SQLite would apply it to the backup.
    for side in [sibling(to, "-wal"), sibling(to, "-shm")] {
        if side.exists() {
            std::fs::remove_file(side).map_err(io)?;
        }
    }
    std::fs::rename(&incoming, to).map_err(io)?;
    sync_folder(to).map_err(io)?;
    Ok(Restored { summary: summary(to)?, kept })
}

fn check_backup(from: &Path) -> Result<(), StoreError> {
    let checked = Connection::open_with_flags(from, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|cause| SqliteError::Open { path: from.to_owned(), cause })?;
    migrations::check_current(&checked)?;
    let integrity: String = checked.query_row("PRAGMA integrity_check", [], |row| row.get(0))?;
    if integrity != "ok" {
        return Err(StoreError::Maintenance("the backup fails SQLite's integrity check"));
    }
    Ok(())
}

/// Copies the store at `store` through SQLite (so what only its WAL holds is in the copy,
/// as after a crash) to a new, synced file beside it; returns that file.
fn keep(store: &Path, now: UnixTime) -> Result<PathBuf, StoreError> {
    let unreadable = StoreError::Maintenance(
        "the current store cannot be read to keep a copy of it; move it and its -wal file away, then restore again",
    );
    let conn = open_connection(store, false, &StoreOptions::default()).map_err(|_| unreadable)?;
    let kept = kept_name(store, now);
    create_private(&kept).map_err(|err| StoreError::Maintenance(io_reason(&err)))?;
    conn.execute("VACUUM INTO ?1", params![kept.to_string_lossy()])?;
    drop(conn);
    let io = |source: std::io::Error| StoreError::Maintenance(io_reason(&source));
    File::open(&kept).and_then(|file| file.sync_all()).map_err(io)?;
    sync_folder(&kept).map_err(io)?;
    Ok(kept)
}

/// `<name>.before-restore-<UTC time of now>`, with a counter if a copy of that second exists.
fn kept_name(store: &Path, now: UnixTime) -> PathBuf {
    let at = UNIX_EPOCH + Duration::from_secs(u64::try_from(now.0).unwrap_or(0));
    let time: String =
        humantime::format_rfc3339_seconds(at).to_string().chars().filter(|c| !matches!(c, '-' | ':')).collect();
    let base = sibling(store, &format!(".before-restore-{time}"));
    std::iter::once(base.clone())
        .chain((2..).map(|n| sibling(&base, &format!("-{n}"))))
        .find(|candidate| !candidate.exists())
        .unwrap_or(base)
}

/// `path` with `suffix` appended to its file name (`x.sqlite3` → `x.sqlite3-wal`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Syncs the folder holding `path`, so that a rename or a new file in it is durable.
fn sync_folder(path: &Path) -> std::io::Result<()> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    File::open(folder)?.sync_all()
}
/// Copies `from` to a new file `to`, mode 0600 (not `from`'s, which an older backup may
/// have had wider), synced.
fn copy_private(from: &Path, to: &Path) -> std::io::Result<()> {
    if to.exists() {
        std::fs::remove_file(to)?;
    }
    let mut incoming = new_private(to)?;
    std::io::copy(&mut File::open(from)?, &mut incoming)?;
    incoming.sync_all()
}

fn io_reason(err: &std::io::Error) -> &'static str {
    match err.kind() {
        std::io::ErrorKind::NotFound => "a file was not found",
        std::io::ErrorKind::PermissionDenied => "permission denied",
        _ => "a file operation failed",
    }
}

impl super::SqliteStore {
    /// [`purge`] on the writer, committed.
    pub(crate) async fn purge(&self, now: UnixTime, policies: Vec<Retention>) -> Result<PurgeReport, StoreError> {
        self.write(move |conn| purge(conn, now, &policies)).await
    }

    /// What [`Self::purge`] would remove, counted on a connection of its own ([`purge_file`],
    /// dry run) and rolled back.
    pub(crate) async fn purge_dry_run(
        &self,
        now: UnixTime,
        policies: Vec<Retention>,
    ) -> Result<PurgeReport, StoreError> {
        let path = self.path().to_owned();
        tokio::task::spawn_blocking(move || purge_file(&path, now, &policies, true))
            .await
            .map_err(|_| StoreError::Unavailable)?
    }
}

/// Fills the store at `path` with `count` synthetic receipts of `source` (identities
/// `seed-0`, `seed-1`, …), in batches of one transaction each: for measuring how
/// throughput holds up on a large store, not for production data.
pub fn seed_receipts(path: &Path, source: &str, count: u64, now: UnixTime) -> Result<u64, StoreError> {
    let _lock = WriterLock::shared(path)?;
    let mut conn = open_connection(path, true, &StoreOptions::default())?;
    migrations::migrate(&mut conn)?;
    conn.pragma_update(None, "synchronous", "OFF")?;
    let insert = format!("{INSERT_RECEIPT} ON CONFLICT DO NOTHING");
    let mut written = 0;
    while written < count {
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(&insert)?;
            for i in written..count.min(written + 100_000) {
                let mut hash = [0u8; 32];
                hash[..8].copy_from_slice(&i.to_be_bytes());
                insert.execute(params![source, format!("seed-{i}"), &hash[..], "0", now.0])?;
            }
        }
        tx.commit()?;
        written = count.min(written + 100_000);
    }
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(written)
}
