//! [`Store`]: the one interface the gateway, the worker, the `Idempotency-Key` layer and
//! the operator's tools use, whichever backend holds the data.
//!
//! An enum rather than a trait object: there are exactly two backends, each method is a
//! plain `async fn`, and each operation is one match whose two arms are the same call
//! (`on_backend!`), so a backend that lacks an operation, or takes other arguments for it,
//! does not compile. The conveniences (`claim_jobs` without limits, `complete_job` for one
//! job, the [`Audited`] view) are calls of `Store`'s own full forms, never a backend's. Both backends take every operation's arguments **by value**: the
//! SQLite store moves them onto its writer thread or into a blocking read, and the
//! PostgreSQL store borrows from them for its statements.

use std::{
    collections::HashMap,
    future::Future,
    sync::{Arc, OnceLock},
    time::Duration,
};

use idemgate_core::{
    Outcome, ReceiptKey, SourceName, UnixTime,
    alert::{AlertRecord, Snapshot},
    idempotency::Fingerprint,
    limit::Limits,
    outcome::FailureCause,
    retry::Decision,
};

use crate::{
    ConflictRecord, Receipt, ReceiveRequest, SqliteStore, StoreError,
    audit::{Audit, AuditFilter, AuditRecord},
    idempotency::{Begin, CompletedRecord, Lifetimes, RecordKey, StoredResponse},
    inbox::{IncomingEvent, JobRecord, StoredEvent},
    jobs::{AttemptRecord, Breakers, Claimed, ClaimedJob, Completion, ReplayFilter, ReplayTo, ReplayedTo},
    maintenance::{PurgeReport, Retention},
    postgres::PgStore,
    replication::Replication,
    sqlite::{Handler, handover::Handover},
    views::{
        AttemptBucket, AttemptRow, BreakerView, ConflictBucket, ConflictFilter, ConflictRow, DeadJob,
        DestinationHealth, EventFilter, EventPayload, EventRow, RecentConflict, SourceStats, WaitingQueue,
    },
};

/// The store, on SQLite or PostgreSQL, or not open yet ([`Store::unavailable`]). Cheap
/// to clone: clones share one backend, so a store opened later
/// ([`Store::make_available`]) is seen by every clone at once.
#[derive(Debug, Clone)]
pub struct Store {
    backend: Arc<OnceLock<Backend>>,
}

#[derive(Debug, Clone)]
enum Backend {
    Sqlite(Arc<SqliteStore>),
    Postgres(PgStore),
}

/// Whatever takes deliveries for the inbound pipeline: the gateway's [`Store`] (effect:
/// an [`IncomingEvent`]) or a [`SqliteStore`] running an application's own handler.
pub trait Receiver: Send + Sync + 'static {
    /// What a first delivery does, inside the receipt's transaction.
    type Effect: Send + 'static;
    /// Offers one delivery; see [`SqliteStore::receive`].
    fn receive(&self, request: ReceiveRequest, effect: Self::Effect) -> impl Future<Output = Outcome> + Send;
}

impl Receiver for SqliteStore {
    type Effect = Handler;

    fn receive(&self, request: ReceiveRequest, effect: Handler) -> impl Future<Output = Outcome> + Send {
        self.receive_boxed(request, effect)
    }
}

impl<T: Receiver> Receiver for Arc<T> {
    type Effect = T::Effect;

    fn receive(&self, request: ReceiveRequest, effect: T::Effect) -> impl Future<Output = Outcome> + Send {
        T::receive(self, request, effect)
    }
}

impl Receiver for Store {
    type Effect = IncomingEvent;

    fn receive(&self, request: ReceiveRequest, effect: IncomingEvent) -> impl Future<Output = Outcome> + Send {
        self.accept(request, effect)
    }
}

impl From<Arc<SqliteStore>> for Store {
    fn from(store: Arc<SqliteStore>) -> Self {
        Self::opened(Backend::Sqlite(store))
    }
}

impl From<PgStore> for Store {
    fn from(store: PgStore) -> Self {
        Self::opened(Backend::Postgres(store))
    }
}

/// `$call` on the open backend, bound to `$store` (or [`StoreError::NotOpen`]). Both arms
/// are the same expression, so both backends have the operation with the same signature.
macro_rules! on_backend {
    ($self:ident, $store:ident => $call:expr) => {
        match $self.open_backend()? {
            Backend::Sqlite($store) => $call,
            Backend::Postgres($store) => $call,
        }
    };
}

impl Store {
    fn opened(backend: Backend) -> Self {
        Self { backend: Arc::new(OnceLock::from(backend)) }
    }

    /// A store that is not open yet, for a server that starts while its database cannot be
    /// reached: every operation fails with [`StoreError::NotOpen`] (a delivery as
    /// [`Outcome::Failed`]) until [`Self::make_available`] gives it the opened backend.
    #[must_use]
    pub fn unavailable() -> Self {
        Self { backend: Arc::new(OnceLock::new()) }
    }

    /// Gives a store made by [`Self::unavailable`] (and all its clones) the backend of
    /// `opened`. Returns `false`, changing nothing, when it already had one.
    pub fn make_available(&self, opened: &Self) -> bool {
        opened.backend.get().is_some_and(|backend| self.backend.set(backend.clone()).is_ok())
    }

    /// Whether the backend is open (it may still fail, e.g. a database server gone since).
    #[must_use]
    pub fn is_available(&self) -> bool {
        self.backend.get().is_some()
    }

    fn open_backend(&self) -> Result<&Backend, StoreError> {
        self.backend.get().ok_or(StoreError::NotOpen)
    }

    /// `sqlite` or `postgres` (or `unavailable` before the backend is open).
    #[must_use]
    pub fn backend(&self) -> &'static str {
        match self.backend.get() {
            Some(Backend::Sqlite(_)) => "sqlite",
            Some(Backend::Postgres(_)) => "postgres",
            None => "unavailable",
        }
    }

    /// Stops the store once this is its last handle: the SQLite writer finishes what is
    /// queued, the PostgreSQL pool closes its connections (at once: clones share it).
    pub async fn close(self) {
        if let Some(Backend::Postgres(store)) = self.backend.get() {
            store.close();
        }
        if let Some(Backend::Sqlite(store)) = Arc::into_inner(self.backend).and_then(OnceLock::into_inner)
            && let Some(store) = Arc::into_inner(store)
        {
            store.close().await;
        }
    }

    /// Offers one gateway delivery: stores the receipt, the event and one job per
    /// destination together, or finds the receipt (duplicate or conflict). The outcome is
    /// known only after the commit is durable.
    ///
    /// On SQLite, the jobs of destinations this process's worker can start at once go to it
    /// already leased, when it takes them ([`Self::hand_over_to`]).
    pub async fn accept(&self, request: ReceiveRequest, event: IncomingEvent) -> Outcome {
        match self.open_backend() {
            Ok(Backend::Sqlite(store)) => store.accept(request, event).await,
            Ok(Backend::Postgres(store)) => store.accept(request, event).await,
            Err(_) => Outcome::Failed { cause: FailureCause::Store },
        }
    }

    /// From now on, jobs this process accepts go to `handover` (a worker's), or again wait
    /// for a claim (`None`). Every clone of this store sees it. Only an open SQLite store
    /// hands over: on PostgreSQL every job waits for a claim.
    pub fn hand_over_to(&self, handover: Option<Handover>) {
        if let Some(Backend::Sqlite(store)) = self.backend.get() {
            store.hand_over_to(handover);
        }
    }

    /// Whether the store can take writes now. Used by readiness checks.
    pub async fn ping(&self) -> Result<(), StoreError> {
        on_backend!(self, store => store.ping().await)
    }

    /// How the PostgreSQL server replicates the store's commits now (its
    /// [`Replication::failover_risk`] says whether a failover could lose acknowledged
    /// events); `None` on SQLite, which has no standby to fail over to.
    pub async fn replication(&self) -> Result<Option<Replication>, StoreError> {
        match self.open_backend()? {
            Backend::Sqlite(_) => Ok(None),
            Backend::Postgres(store) => store.replication().await.map(Some),
        }
    }

    /// Claims up to `limit` due jobs at `now_ms` for `lease`, by the rules of [`crate::jobs`];
    /// `fifo` names the destinations delivered in order.
    pub async fn claim_jobs(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
        fifo: Vec<String>,
    ) -> Result<Vec<ClaimedJob>, StoreError> {
        self.claim_jobs_limited(now_ms, lease, limit, fifo, HashMap::new()).await
    }

    /// [`Self::claim_jobs`], taking at most `per_destination`'s number of jobs of each
    /// destination it names (the worker's throttled destinations: as many as it can start
    /// now). Either way a paused destination's jobs are not taken, except one when its
    /// probe is due, and the claim moves its probe time on.
    pub async fn claim_jobs_limited(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
        fifo: Vec<String>,
        per_destination: HashMap<String, usize>,
    ) -> Result<Vec<ClaimedJob>, StoreError> {
        let claimed = self.claim_jobs_within(now_ms, lease, limit, fifo, per_destination, HashMap::new()).await?;
        Ok(claimed.jobs)
    }

    /// [`Self::claim_jobs_limited`], holding each destination `shared` names to its limits
    /// over every instance on the store: its rate limit's token bucket, kept in its row, and
    /// its cap on attempts in flight, counted as its jobs leased now (a killed instance's
    /// places come back as its leases expire). The claim takes its turn on those rows, takes
    /// no more than the room they leave, and spends a token per job taken, in its one write
    /// (core's `limit`). Returns the jobs and the room each limited destination had.
    pub async fn claim_jobs_within(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
        fifo: Vec<String>,
        per_destination: HashMap<String, usize>,
        shared: HashMap<String, Limits>,
    ) -> Result<Claimed, StoreError> {
        on_backend!(self, store => store.claim_jobs(now_ms, lease, limit, fifo, per_destination, shared).await)
    }

    /// Records an attempt and moves its job as `decision` says, if the lease is current.
    pub async fn complete_job(
        &self,
        job: ClaimedJob,
        attempt: AttemptRecord,
        decision: Decision,
        now_ms: i64,
    ) -> Result<Completion, StoreError> {
        let completions = self.complete_jobs(vec![(job, attempt, decision)], now_ms).await?;
        Ok(completions.into_iter().next().unwrap_or(Completion::Stale))
    }

    /// Records several attempts at once, each as [`Self::complete_job`] would, in one
    /// write: on SQLite one command for the writer, on PostgreSQL one statement. The
    /// completions come back in the order of `finished`.
    pub async fn complete_jobs(
        &self,
        finished: Vec<(ClaimedJob, AttemptRecord, Decision)>,
        now_ms: i64,
    ) -> Result<Vec<Completion>, StoreError> {
        self.complete_jobs_with_breakers(finished, now_ms, Breakers::new()).await
    }

    /// [`Self::complete_jobs`], folding the attempts into their destinations' circuit
    /// breakers by `breakers` in the same write: enough failures pause a destination, and
    /// while it is paused a job whose schedule is exhausted waits instead of dying. (Without
    /// a destination's policy an answer still resumes it, but nothing pauses it.)
    pub async fn complete_jobs_with_breakers(
        &self,
        finished: Vec<(ClaimedJob, AttemptRecord, Decision)>,
        now_ms: i64,
        breakers: Breakers,
    ) -> Result<Vec<Completion>, StoreError> {
        on_backend!(self, store => store.complete_jobs(finished, now_ms, breakers).await)
    }

    /// Makes up to `limit` finished jobs matching `filter` pending again; returns how
    /// many. A replayed job no longer matches, so calling again continues with the rest.
    pub async fn replay_jobs(&self, filter: ReplayFilter, now: UnixTime, limit: usize) -> Result<usize, StoreError> {
        on_backend!(self, store => store.replay_jobs(filter, now, limit, None).await)
    }

    /// Replays every job `filter` selects when it starts, each at most once, in batches of
    /// `batch` (so the write lock is never held for long); `after_batch(done, total)` runs
    /// after each. The set is taken first: a replayed job that finishes again while the
    /// replay runs matches the filter again, and must not be sent a second time.
    pub async fn replay_all<F, Fut>(
        &self,
        filter: ReplayFilter,
        now: UnixTime,
        batch: usize,
        mut after_batch: F,
    ) -> Result<usize, StoreError>
    where
        F: FnMut(usize, usize) -> Fut,
        Fut: Future<Output = ()>,
    {
        let selected = on_backend!(self, store => store.replayable(filter.clone()).await)?;
        let mut replayed = 0;
        for ids in selected.chunks(batch.max(1)) {
            replayed += on_backend!(self, store => store.replay_selected(filter.clone(), ids.to_vec(), now).await)?;
            after_batch(replayed, selected.len()).await;
        }
        Ok(replayed)
    }

    /// Sends the events `to` selects to its destination, by the rules of
    /// [`crate::jobs::ReplayTo`]: the job each lacks is created, a finished one replayed.
    pub async fn replay_to(&self, to: ReplayTo, now: UnixTime) -> Result<ReplayedTo, StoreError> {
        on_backend!(self, store => store.replay_to(to, now, None).await)
    }

    /// Makes the pending and retrying jobs matching `filter` (its state, if any, one of
    /// those two) due at `now_ms`, keeping their attempts so far: the retry schedule
    /// continues from there. Returns how many were not yet due.
    pub async fn retry_now(&self, filter: ReplayFilter, now_ms: i64) -> Result<usize, StoreError> {
        on_backend!(self, store => store.retry_now(filter, now_ms, None).await)
    }

    /// How many jobs `filter` selects now.
    pub async fn count_replayable(&self, filter: ReplayFilter) -> Result<usize, StoreError> {
        on_backend!(self, store => store.count_replayable(filter).await)
    }

    /// Records whether `destination`'s rate limit or in-flight cap holds its jobs back:
    /// `Some(since_ms)` marks it throttled (an earlier since, when already throttled, is
    /// kept), `None` clears it. Workers call it when the state changes, not per claim, so
    /// that other processes (the CLI, the admin API) can show it.
    pub async fn mark_throttled(&self, destination: String, since_ms: Option<i64>) -> Result<(), StoreError> {
        on_backend!(self, store => store.mark_throttled(destination, since_ms).await)
    }

    /// Re-enables `destination`; returns whether it was disabled.
    pub async fn enable_destination(&self, destination: String, now: UnixTime) -> Result<bool, StoreError> {
        on_backend!(self, store => store.enable_destination(destination, now, None).await)
    }

    /// Starts (or looks up) the `Idempotency-Key` operation named by `record` at `now_ms`,
    /// by the rules of [`crate::idempotency`].
    pub async fn begin_idempotent(
        &self,
        record: RecordKey,
        fingerprint: Fingerprint,
        now_ms: i64,
        lifetimes: Lifetimes,
    ) -> Result<Begin, StoreError> {
        on_backend!(self, store => store.begin_idempotent(record, fingerprint, now_ms, lifetimes).await)
    }

    /// The completed, unexpired record under `record` at `now_ms`, from a plain read
    /// without a write; its [`CompletedRecord::answer`] replays or refuses a repeat. `None`
    /// when the request must go through [`Self::begin_idempotent`] (no record, expired,
    /// in flight).
    pub async fn completed_idempotent(
        &self,
        record: RecordKey,
        now_ms: i64,
    ) -> Result<Option<CompletedRecord>, StoreError> {
        on_backend!(self, store => store.completed_idempotent(record, now_ms).await)
    }

    /// Stores the response of an operation whose lock `token` still holds. Returns the
    /// record's expiry when it did, `None` when the token was stale (the lock expired and
    /// was taken over).
    pub async fn complete_idempotent(
        &self,
        record: RecordKey,
        token: i64,
        response: StoredResponse,
    ) -> Result<Option<i64>, StoreError> {
        on_backend!(self, store => store.complete_idempotent(record, token, response).await)
    }

    /// Forgets an operation whose lock `token` still holds.
    pub async fn release_idempotent(&self, record: RecordKey, token: i64) -> Result<bool, StoreError> {
        on_backend!(self, store => store.release_idempotent(record, token).await)
    }

    /// Deletes up to `limit` expired idempotency records.
    pub async fn purge_idempotency(&self, now_ms: i64, limit: usize) -> Result<usize, StoreError> {
        on_backend!(self, store => store.purge_idempotency(now_ms, limit).await)
    }

    /// Applies retention `policies` at `now`, by the rules of [`crate::maintenance`].
    pub async fn purge(&self, now: UnixTime, policies: Vec<Retention>) -> Result<PurgeReport, StoreError> {
        on_backend!(self, store => store.purge(now, policies).await)
    }

    /// What a purge at `now` would remove, without removing it.
    pub async fn purge_dry_run(&self, now: UnixTime, policies: Vec<Retention>) -> Result<PurgeReport, StoreError> {
        on_backend!(self, store => store.purge_dry_run(now, policies).await)
    }

    /// The receipt for `key`, if any.
    pub async fn receipt(&self, key: ReceiptKey) -> Result<Option<Receipt>, StoreError> {
        on_backend!(self, store => store.receipt(key).await)
    }

    /// Every receipt of `source`, ordered by identity.
    pub async fn receipts(&self, source: SourceName) -> Result<Vec<Receipt>, StoreError> {
        on_backend!(self, store => store.receipts(source).await)
    }

    /// Every recorded conflict of `source`, ordered by identity.
    pub async fn conflicts(&self, source: SourceName) -> Result<Vec<ConflictRecord>, StoreError> {
        on_backend!(self, store => store.conflicts(source).await)
    }

    /// The event stored under `key`, if any.
    pub async fn event(&self, key: ReceiptKey) -> Result<Option<StoredEvent>, StoreError> {
        on_backend!(self, store => store.event(key).await)
    }

    /// The body bytes of the event stored under `key`, as received; `None` when there is
    /// no such event or retention purged its payload.
    pub async fn event_body(&self, key: ReceiptKey) -> Result<Option<Vec<u8>>, StoreError> {
        on_backend!(self, store => store.event_body(key).await)
    }

    /// The jobs of the event stored under `key`, by destination.
    pub async fn jobs(&self, key: ReceiptKey) -> Result<Vec<JobRecord>, StoreError> {
        on_backend!(self, store => store.jobs(key).await)
    }

    /// How many jobs are in each state.
    pub async fn job_states(&self) -> Result<Vec<(String, u64)>, StoreError> {
        on_backend!(self, store => store.job_states().await)
    }

    /// How many jobs are in each state of the queue: waiting (pending, retrying), running,
    /// and dead; not the delivered or superseded ones, the history, which only a read of
    /// every job could count (seconds a read on a store of 20 million on PostgreSQL, where
    /// these counts come from the indexes of the queue's states). For the gauges.
    pub async fn queue_states(&self) -> Result<Vec<(String, u64)>, StoreError> {
        on_backend!(self, store => store.queue_states().await)
    }

    /// When the oldest job still waiting to be delivered was created.
    pub async fn oldest_waiting_job(&self) -> Result<Option<UnixTime>, StoreError> {
        on_backend!(self, store => store.oldest_waiting_job().await)
    }

    /// Events matching `filter`, newest first.
    pub async fn list_events(&self, filter: EventFilter) -> Result<Vec<EventRow>, StoreError> {
        on_backend!(self, store => store.list_events(filter).await)
    }

    /// Every attempt for the event `(source, identity)`, in order.
    pub async fn attempts(&self, source: String, identity: String) -> Result<Vec<AttemptRow>, StoreError> {
        on_backend!(self, store => store.attempts(source, identity).await)
    }

    /// The most recently updated dead jobs.
    pub async fn dead_jobs(&self, limit: usize) -> Result<Vec<DeadJob>, StoreError> {
        on_backend!(self, store => store.dead_jobs(limit).await)
    }

    /// The most recent conflicts.
    pub async fn recent_conflicts(&self, limit: usize) -> Result<Vec<RecentConflict>, StoreError> {
        on_backend!(self, store => store.recent_conflicts(limit).await)
    }

    /// The conflicting bodies `filter` selects: newest first seen first, then by source,
    /// identity and body hash (descending), so [`ConflictRow::cursor`] pages through them.
    pub async fn list_conflicts(&self, filter: ConflictFilter) -> Result<Vec<ConflictRow>, StoreError> {
        on_backend!(self, store => store.list_conflicts(filter).await)
    }

    /// Every destination that has jobs or was disabled.
    pub async fn destinations(&self) -> Result<Vec<DestinationHealth>, StoreError> {
        on_backend!(self, store => store.destinations().await)
    }

    /// The queue's health for the alert checker, leaving out `exclude` (the alert
    /// destination): each destination's jobs that went dead at or after `dead_since`, the
    /// disabled destinations and the oldest waiting job, read as one snapshot.
    pub async fn alert_snapshot(&self, exclude: String, dead_since: UnixTime) -> Result<Snapshot, StoreError> {
        on_backend!(self, store => store.alert_snapshot(exclude, dead_since).await)
    }

    /// The last alert of each (condition, target).
    pub async fn alert_records(&self) -> Result<Vec<AlertRecord>, StoreError> {
        on_backend!(self, store => store.alert_records().await)
    }

    /// Keeps `record` as the last alert of its (condition, target), replacing the one before.
    pub async fn record_alert(&self, record: AlertRecord) -> Result<(), StoreError> {
        on_backend!(self, store => store.record_alert(record).await)
    }

    /// Each destination's circuit breaker that has one stored, by name: a light read for
    /// the metrics' gauges (the whole [`Self::destinations`] view counts jobs).
    pub async fn breakers(&self) -> Result<Vec<(String, BreakerView)>, StoreError> {
        on_backend!(self, store => store.breakers().await)
    }

    /// The event with row id `id`: its key, its allowlisted headers as stored, and its body
    /// unless retention purged its payload.
    pub async fn event_payload(&self, id: i64) -> Result<Option<EventPayload>, StoreError> {
        on_backend!(self, store => store.event_payload(id).await)
    }

    /// Every destination's attempts that started at or after `since`, counted in buckets of
    /// `width` seconds (succeeded, failed, mean and longest latency); by destination, then
    /// time, leaving out buckets without attempts.
    pub async fn attempt_series(&self, since: UnixTime, width: i64) -> Result<Vec<AttemptBucket>, StoreError> {
        on_backend!(self, store => store.attempt_series(since, width).await)
    }

    /// Every destination with jobs waiting (pending or retrying): how many, and when the
    /// oldest of them was created.
    pub async fn waiting_queues(&self) -> Result<Vec<WaitingQueue>, StoreError> {
        on_backend!(self, store => store.waiting_queues().await)
    }

    /// Conflicting bodies first seen at or after `since`, per source and bucket of `width`
    /// seconds (identities whose receipt met another body); by source, then time.
    pub async fn conflict_series(&self, since: UnixTime, width: i64) -> Result<Vec<ConflictBucket>, StoreError> {
        on_backend!(self, store => store.conflict_series(since, width).await)
    }

    /// Counts per source of what arrived at or after `since`.
    pub async fn stats(&self, since: Option<UnixTime>) -> Result<Vec<SourceStats>, StoreError> {
        on_backend!(self, store => store.source_stats(since).await)
    }

    /// The state-changing operations, each recorded as `audit` in the audit log: in the
    /// operation's own transaction, except a bulk replay's (several), recorded once after.
    #[must_use]
    pub fn audited(&self, audit: Audit) -> Audited<'_> {
        Audited { store: self, audit }
    }

    /// Records `audit` at `at` on its own, as having changed `affected`.
    pub async fn record_audit(&self, audit: Audit, at: UnixTime, affected: usize) -> Result<(), StoreError> {
        on_backend!(self, store => store.record_audit(audit, at, affected).await)
    }

    /// The audit log's records `filter` selects, newest first.
    pub async fn audit_log(&self, filter: AuditFilter) -> Result<Vec<AuditRecord>, StoreError> {
        on_backend!(self, store => store.audit_log(filter).await)
    }

    /// Deletes the audit records older than `keep` before `now` (`[retention] audit`), or
    /// when `dry_run` only counts them; returns how many.
    pub async fn purge_audit(&self, now: UnixTime, keep: Duration, dry_run: bool) -> Result<usize, StoreError> {
        on_backend!(self, store => store.purge_audit(now, keep, dry_run).await)
    }
}

/// [`Store`]'s state-changing operations with their audit record ([`Store::audited`]).
#[derive(Debug)]
pub struct Audited<'a> {
    store: &'a Store,
    audit: Audit,
}

impl Audited<'_> {
    /// [`Store::replay_jobs`], recorded with how many it replayed.
    pub async fn replay_jobs(self, filter: ReplayFilter, now: UnixTime, limit: usize) -> Result<usize, StoreError> {
        let audit = Some(self.audit);
        let shared = self.store;
        on_backend!(shared, store => store.replay_jobs(filter, now, limit, audit).await)
    }

    /// [`Store::replay_all`], recorded once it is done (its batches are several
    /// transactions); a replay that fails part way is recorded with what it did.
    pub async fn replay_all<F, Fut>(
        self,
        filter: ReplayFilter,
        now: UnixTime,
        batch: usize,
        mut after_batch: F,
    ) -> Result<usize, StoreError>
    where
        F: FnMut(usize, usize) -> Fut,
        Fut: Future<Output = ()>,
    {
        let mut done = 0;
        let replayed = self
            .store
            .replay_all(filter, now, batch, |replayed, total| {
                done = replayed;
                after_batch(replayed, total)
            })
            .await;
        let affected = *replayed.as_ref().unwrap_or(&done);
        self.store.record_audit(self.audit, now, affected).await?;
        replayed
    }

    /// [`Store::replay_to`], recorded with the jobs it created and replayed.
    pub async fn replay_to(self, to: ReplayTo, now: UnixTime) -> Result<ReplayedTo, StoreError> {
        let audit = Some(self.audit);
        let shared = self.store;
        on_backend!(shared, store => store.replay_to(to, now, audit).await)
    }

    /// [`Store::retry_now`], recorded with how many it made due.
    pub async fn retry_now(self, filter: ReplayFilter, now_ms: i64) -> Result<usize, StoreError> {
        let audit = Some(self.audit);
        let shared = self.store;
        on_backend!(shared, store => store.retry_now(filter, now_ms, audit).await)
    }

    /// [`Store::enable_destination`], recorded as 1 when it was disabled or paused, else 0.
    pub async fn enable_destination(self, destination: String, now: UnixTime) -> Result<bool, StoreError> {
        let audit = Some(self.audit);
        let shared = self.store;
        on_backend!(shared, store => store.enable_destination(destination, now, audit).await)
    }
}

/// The outbound API's operations (`docs/design/outbound-api.md` §3.2), in a file of their own.
mod outbound;

/// The signed-in sessions' operations (`crate::session`), in a file of their own.
mod session;
