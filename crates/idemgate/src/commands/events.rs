//! `idemgate events`: the views of stored events, replaying finished jobs, and hurrying
//! waiting ones. Replays and retries are recorded in the audit log under `cli`.

use std::process::ExitCode;

use anyhow::{Context, anyhow};
use idemgate::{config::Config, operator};
use idemgate_clock::Clock;
use idemgate_core::job::JobState;
use idemgate_store::{
    SqliteReader,
    audit::{Action, Audit, CLI, target},
    jobs::{ReplayFilter, ReplayTo},
    views,
};
use indicatif::{ProgressBar, ProgressStyle};

use super::{existing_store, open_store, print_line};
use crate::cli::{EventsCommand, JobFilterArgs, ReplayArgs, ReplayState, RetryArgs};

/// Jobs replayed per write transaction.
const REPLAY_BATCH: usize = 500;

/// Replays the jobs matching at the start, in batches, so a large replay shows its progress
/// and never holds the write lock for long.
pub(super) async fn replay(config: &Config, args: ReplayArgs, clock: &dyn Clock) -> anyhow::Result<ExitCode> {
    if let Some(to) = args.to {
        return replay_to(config, to, args.state, args.jobs, clock).await;
    }
    let state = match args.state {
        None => JobState::Dead,
        Some(ReplayState::Jobs(state)) => state,
        Some(ReplayState::Unmatched) => {
            return Err(anyhow!("unmatched events have no job to replay: name a destination with --to DEST"));
        }
    };
    let filter = job_filter(args.jobs, Some(state), clock);
    existing_store(config)?;
    let store = open_store(config).await?;
    let progress = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} jobs replayed")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let audit = Audit::new(CLI, Action::Replay, target::filter(&filter));
    let replayed = store
        .audited(audit)
        .replay_all(filter, clock.now(), REPLAY_BATCH, |done, total| {
            progress.set_length(total as u64);
            progress.set_position(done as u64);
            std::future::ready(())
        })
        .await?;
    progress.finish_and_clear();
    print_line(&format!("replayed {replayed} job(s); the worker delivers them with their original webhook-id"))?;
    Ok(ExitCode::SUCCESS)
}

/// Sends the selected events to the destination `to`: each one's missing job is created,
/// a finished one replayed; with `--state unmatched` only the events that have no job.
async fn replay_to(
    config: &Config,
    to: String,
    state: Option<ReplayState>,
    jobs: JobFilterArgs,
    clock: &dyn Clock,
) -> anyhow::Result<ExitCode> {
    if !config.has_destination(&to) {
        return Err(anyhow!("--to: no destination named {to:?} in the configuration"));
    }
    let unmatched_only = match state {
        None => false,
        Some(ReplayState::Unmatched) => true,
        Some(ReplayState::Jobs(state)) => {
            return Err(anyhow!(
                "--to sends every selected event to {to:?}; --state takes only `unmatched` with it, not {state}"
            ));
        }
    };
    let now = clock.now();
    let selection = ReplayTo {
        destination: to.clone(),
        source: jobs.source,
        identity: jobs.identity,
        since: jobs.since.map(|at| at.resolve(now)),
        until: jobs.until.map(|at| at.resolve(now)),
        unmatched_only,
    };
    existing_store(config)?;
    let store = open_store(config).await?;
    let audit = Audit::new(CLI, Action::ReplayTo, target::replay_to(&selection));
    let done = store.audited(audit).replay_to(selection, now).await?;
    store.close().await;
    print_line(&format!(
        "{} job(s) created and {} replayed for {to}; the worker delivers them with their original webhook-id",
        done.created, done.replayed
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// The store's filter for `jobs` in `state`, the times resolved against the clock's now.
fn job_filter(jobs: JobFilterArgs, state: Option<JobState>, clock: &dyn Clock) -> ReplayFilter {
    let now = clock.now();
    ReplayFilter {
        source: jobs.source,
        identity: jobs.identity,
        destination: jobs.destination,
        state,
        since: jobs.since.map(|at| at.resolve(now)),
        until: jobs.until.map(|at| at.resolve(now)),
    }
}

/// Makes the waiting jobs matching `args` due now; the worker takes them on its next poll.
pub(super) async fn retry(config: &Config, args: RetryArgs, clock: &dyn Clock) -> anyhow::Result<ExitCode> {
    let filter = job_filter(args.jobs, args.state, clock);
    existing_store(config)?;
    let store = open_store(config).await?;
    let audit = Audit::new(CLI, Action::Retry, target::filter(&filter));
    let hurried = store.audited(audit).retry_now(filter, clock.now_ms()).await?;
    store.close().await;
    print_line(&format!("{hurried} job(s) due now; the worker sends their next attempt on its next poll"))?;
    Ok(ExitCode::SUCCESS)
}

/// `events list`, `show` and `stats`, with times shown against `clock`.
pub(super) async fn view(config: &Config, command: EventsCommand, clock: &dyn Clock) -> anyhow::Result<ExitCode> {
    existing_store(config)?;
    if config.store.postgres.is_none() {
        // A view changes nothing: a foreign file or one of another schema version is an error.
        // The store's error names the file.
        SqliteReader::open(&config.store.path).context("cannot read the store")?;
    }
    let store = open_store(config).await?;
    let now = clock.now();
    let (text, empty) = match command {
        EventsCommand::List { source, state, destination, since, until, before, limit, json } => {
            let filter = views::EventFilter {
                source,
                state,
                destination,
                since: since.map(|at| at.resolve(now)),
                until: until.map(|at| at.resolve(now)),
                before_id: before,
                limit: limit.max(1),
                ..views::EventFilter::default()
            };
            (operator::list(&store, filter, json, now).await?, operator::NO_EVENTS)
        }
        EventsCommand::Show { source, identity, json } => {
            match operator::show(&store, (&source, &identity), json, config.transforms(), now).await? {
                Some(text) => (text, ""),
                None => return Err(anyhow!("no event {identity:?} from source {source:?}")),
            }
        }
        EventsCommand::Stats { since, json } => {
            (operator::stats(&store, since.map(|at| at.resolve(now)), json).await?, operator::NO_SOURCES)
        }
        EventsCommand::Replay { .. } | EventsCommand::Retry { .. } => return Err(anyhow!("not a view")),
    };
    store.close().await;
    print_listing(&text, empty)?;
    Ok(ExitCode::SUCCESS)
}

/// A listing's text on stdout; an empty one says `empty` on stderr instead, so a person
/// reads why nothing came and a script reading stdout gets nothing (`--json` is never
/// empty: its list is `[]`).
pub(super) fn print_listing(text: &str, empty: &str) -> anyhow::Result<()> {
    let text = text.trim_end();
    if text.is_empty() {
        eprintln!("{empty}");
        return Ok(());
    }
    print_line(text)
}
