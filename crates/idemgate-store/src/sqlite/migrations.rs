//! Versioned schema migrations, tracked in `PRAGMA user_version`.
//!
//! Each entry moves the schema one version forward and is applied in its own
//! `BEGIN IMMEDIATE` transaction, so two processes starting on one file at once apply each
//! migration exactly once. Entries are never edited once released; new ones are appended.

use rusqlite::{Connection, TransactionBehavior};

use crate::StoreError;

/// Migration `i` brings the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    r"
    CREATE TABLE receipts (
        source      TEXT    NOT NULL,
        identity    TEXT    NOT NULL,
        body_sha256 BLOB    NOT NULL CHECK (length(body_sha256) = 32),
        outcome     TEXT    NOT NULL CHECK (outcome IN ('applied')),
        result      TEXT    NOT NULL CHECK (json_valid(result)),
        received_at INTEGER NOT NULL,
        PRIMARY KEY (source, identity)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE conflicts (
        source        TEXT    NOT NULL,
        identity      TEXT    NOT NULL,
        body_sha256   BLOB    NOT NULL CHECK (length(body_sha256) = 32),
        first_seen_at INTEGER NOT NULL,
        last_seen_at  INTEGER NOT NULL,
        seen_count    INTEGER NOT NULL CHECK (seen_count > 0),
        PRIMARY KEY (source, identity, body_sha256)
    ) STRICT, WITHOUT ROWID;
",
    r"
    CREATE TABLE events (
        id           INTEGER PRIMARY KEY,
        source       TEXT    NOT NULL,
        identity     TEXT    NOT NULL,
        event_type   TEXT,
        content_type TEXT,
        body         BLOB    NOT NULL,
        received_at  INTEGER NOT NULL,
        UNIQUE (source, identity),
        FOREIGN KEY (source, identity) REFERENCES receipts (source, identity)
            DEFERRABLE INITIALLY DEFERRED
    ) STRICT;

    CREATE TABLE jobs (
        id              INTEGER PRIMARY KEY,
        event_id        INTEGER NOT NULL REFERENCES events (id),
        destination     TEXT    NOT NULL,
        state           TEXT    NOT NULL CHECK (state IN
                            ('pending', 'running', 'succeeded', 'retrying', 'dead', 'superseded')),
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        lease_until     INTEGER,
        lease_token     INTEGER NOT NULL DEFAULT 0,
        last_error      TEXT,
        created_at      INTEGER NOT NULL,
        updated_at      INTEGER NOT NULL,
        UNIQUE (event_id, destination)
    ) STRICT;

    CREATE INDEX jobs_due ON jobs (state, next_attempt_at);
",
    r"
    ALTER TABLE events ADD COLUMN headers TEXT CHECK (headers IS NULL OR json_valid(headers));
    ALTER TABLE events ADD COLUMN ordering_key TEXT;
    CREATE INDEX events_ordering ON events (source, ordering_key) WHERE ordering_key IS NOT NULL;

    CREATE TABLE attempts (
        id              INTEGER PRIMARY KEY,
        job_id          INTEGER NOT NULL REFERENCES jobs (id),
        attempt         INTEGER NOT NULL,
        started_at      INTEGER NOT NULL,
        latency_ms      INTEGER NOT NULL,
        status          INTEGER,
        error           TEXT,
        response_prefix TEXT
    ) STRICT;
    CREATE INDEX attempts_job ON attempts (job_id);

    CREATE TABLE destinations (
        name            TEXT PRIMARY KEY,
        disabled_at     INTEGER,
        disabled_reason TEXT
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE ordering_versions (
        source       TEXT    NOT NULL,
        ordering_key TEXT    NOT NULL,
        version_int  INTEGER,
        version_text TEXT,
        event_id     INTEGER NOT NULL REFERENCES events (id),
        CHECK ((version_int IS NULL) != (version_text IS NULL)),
        PRIMARY KEY (source, ordering_key)
    ) STRICT, WITHOUT ROWID;
",
    r"
    CREATE TABLE idempotency_records (
        scope           TEXT    NOT NULL,
        key             TEXT    NOT NULL,
        fingerprint     BLOB    NOT NULL CHECK (length(fingerprint) = 32),
        state           TEXT    NOT NULL CHECK (state IN ('in_flight', 'completed')),
        lock_token      INTEGER NOT NULL,
        locked_until_ms INTEGER,
        status          INTEGER,
        headers         TEXT CHECK (headers IS NULL OR json_valid(headers)),
        body            BLOB,
        body_omitted    INTEGER NOT NULL DEFAULT 0,
        created_at_ms   INTEGER NOT NULL,
        expires_at_ms   INTEGER NOT NULL,
        PRIMARY KEY (scope, key)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX idempotency_expiry ON idempotency_records (expires_at_ms);
",
    r"
    ALTER TABLE events ADD COLUMN payload_purged INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX receipts_age ON receipts (source, received_at);
    CREATE INDEX events_age ON events (source, received_at);
",
    r"
    ALTER TABLE events ADD COLUMN outgoing_id TEXT;
    UPDATE events SET outgoing_id = identity;

    CREATE TABLE body_receipts (
        source      TEXT NOT NULL,
        body_sha256 BLOB NOT NULL CHECK (length(body_sha256) = 32),
        identity    TEXT NOT NULL,
        PRIMARY KEY (source, body_sha256),
        FOREIGN KEY (source, identity) REFERENCES receipts (source, identity)
            DEFERRABLE INITIALLY DEFERRED
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX body_receipts_identity ON body_receipts (source, identity);
",
    // Due times in milliseconds: whole seconds rounded a 1 s retry down to an instant one.
    r"
    ALTER TABLE jobs RENAME COLUMN next_attempt_at TO next_attempt_at_ms;
    UPDATE jobs SET next_attempt_at_ms = next_attempt_at_ms * 1000;
",
    // Alerts: the last alert of each (condition, target), and dead jobs by when they died.
    r"
    CREATE TABLE alerts (
        condition   TEXT    NOT NULL,
        target      TEXT    NOT NULL,
        since       INTEGER NOT NULL,
        opened_at   INTEGER NOT NULL,
        resolved_at INTEGER,
        PRIMARY KEY (condition, target)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX jobs_dead_at ON jobs (updated_at) WHERE state = 'dead';
",
    // Each destination's circuit breaker, shared by every instance (see core's `breaker`).
    r"
    ALTER TABLE destinations ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE destinations ADD COLUMN failing_since_ms INTEGER;
    ALTER TABLE destinations ADD COLUMN paused_at_ms INTEGER;
    ALTER TABLE destinations ADD COLUMN next_probe_at_ms INTEGER;
    ALTER TABLE destinations ADD COLUMN probe_interval_ms INTEGER;
",
    // Since when a destination's rate limit or in-flight cap holds its jobs back, as its
    // workers last saw it (NULL: not throttled), so that other processes can show it.
    r"
    ALTER TABLE destinations ADD COLUMN throttled_since_ms INTEGER;
",
    // The audit log of operators' actions (see the model's `audit`), purged by its own retention.
    r"
    CREATE TABLE audit_log (
        id       INTEGER PRIMARY KEY,
        at       INTEGER NOT NULL,
        token    TEXT    NOT NULL,
        action   TEXT    NOT NULL,
        target   TEXT    NOT NULL,
        affected INTEGER NOT NULL CHECK (affected >= 0)
    ) STRICT;
    CREATE INDEX audit_log_at ON audit_log (at);
",
    // Each attempt's outcome, written by the worker and read by every view: a broker's
    // confirm or a smarthost's 250 has neither status nor error, and was read as a failure.
    // Existing rows: a 2xx succeeded; an attempt without a status of a job that succeeded
    // succeeded when it has no error (every failure records one) or is the job's latest
    // (a mail accepted for some recipients records the refused ones as its error).
    r"
    ALTER TABLE attempts ADD COLUMN outcome TEXT NOT NULL DEFAULT 'failed'
        CHECK (outcome IN ('succeeded', 'failed'));
    UPDATE attempts SET outcome = 'succeeded'
    WHERE status BETWEEN 200 AND 299
       OR (status IS NULL
           AND EXISTS (SELECT 1 FROM jobs j WHERE j.id = attempts.job_id AND j.state = 'succeeded')
           AND (error IS NULL
                OR id = (SELECT max(later.id) FROM attempts later WHERE later.job_id = attempts.job_id)));
",
    // The outbound API's data (docs/design/outbound-api.md §3.2): applications, their
    // endpoints and sealed signing secrets, event types, messages (the Svix view of an
    // event; the payload stays in `events.body`) and the one outbound version the worker's
    // endpoint cache follows. Times in milliseconds; ids sort by creation time.
    r"
    CREATE TABLE applications (
        id            TEXT    PRIMARY KEY,
        uid           TEXT,
        name          TEXT    NOT NULL,
        metadata      TEXT    NOT NULL,
        throttle_rate INTEGER,
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL,
        deleted_at    INTEGER
    ) STRICT, WITHOUT ROWID;
    CREATE UNIQUE INDEX applications_uid ON applications (uid) WHERE deleted_at IS NULL;

    CREATE TABLE endpoints (
        id            TEXT    PRIMARY KEY,
        app_id        TEXT    NOT NULL REFERENCES applications (id),
        uid           TEXT,
        url           TEXT    NOT NULL,
        description   TEXT    NOT NULL,
        event_types   TEXT,
        channels      TEXT,
        metadata      TEXT    NOT NULL,
        throttle_rate INTEGER,
        disabled      INTEGER NOT NULL,
        headers       TEXT    NOT NULL,
        version       INTEGER NOT NULL,
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL,
        deleted_at    INTEGER
    ) STRICT, WITHOUT ROWID;
    CREATE UNIQUE INDEX endpoints_uid ON endpoints (app_id, uid) WHERE deleted_at IS NULL;
    CREATE INDEX endpoints_app ON endpoints (app_id, id);
    CREATE INDEX endpoints_version ON endpoints (version);

    CREATE TABLE endpoint_secrets (
        endpoint_id TEXT    NOT NULL REFERENCES endpoints (id),
        seq         INTEGER NOT NULL,
        sealed      BLOB    NOT NULL,
        key_id      BLOB    NOT NULL,
        expires_at  INTEGER,
        created_at  INTEGER NOT NULL,
        PRIMARY KEY (endpoint_id, seq)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE event_types (
        name         TEXT    PRIMARY KEY,
        description  TEXT    NOT NULL,
        schemas      TEXT,
        archived     INTEGER NOT NULL,
        deprecated   INTEGER NOT NULL,
        feature_flag TEXT,
        created_at   INTEGER NOT NULL,
        updated_at   INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE messages (
        id         TEXT    PRIMARY KEY,
        app_id     TEXT    NOT NULL REFERENCES applications (id),
        event_row  INTEGER NOT NULL,
        event_id   TEXT,
        event_type TEXT    NOT NULL,
        channels   TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER
    ) STRICT, WITHOUT ROWID;
    CREATE UNIQUE INDEX messages_event_id ON messages (app_id, event_id) WHERE event_id IS NOT NULL;
    CREATE INDEX messages_app ON messages (app_id, id);

    CREATE TABLE outbound_version (
        one     INTEGER PRIMARY KEY CHECK (one = 1),
        version INTEGER NOT NULL
    ) STRICT;
    INSERT INTO outbound_version (one, version) VALUES (1, 0);

    CREATE TABLE api_tokens (
        digest     BLOB    PRIMARY KEY,
        app_id     TEXT    NOT NULL,
        expires_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
",
    // Whether a job was last made due by hand (the outbound API's resend or recover): its
    // attempts from then on are `Manual` (`triggerType` 1), as Svix's.
    r"
    ALTER TABLE jobs ADD COLUMN manual INTEGER NOT NULL DEFAULT 0;
",
    // Each attempt's trigger, copied from its job when it is recorded: 1 manual, 0 scheduled.
    r"
    ALTER TABLE attempts ADD COLUMN manual INTEGER NOT NULL DEFAULT 0;
",
    // Application tokens (app-portal-access) name the token that issued them.
    r"
    ALTER TABLE api_tokens ADD COLUMN issued_by TEXT NOT NULL DEFAULT '';
",
    // The retention sweep finds the messages whose payload expired by this index; a
    // purged message's `expires_at` is cleared, so the index holds only waiting ones.
    r"
    CREATE INDEX messages_expiry ON messages (expires_at) WHERE expires_at IS NOT NULL;
",
    // Signed-in browser sessions (the portal's; the dashboard's), known to every process on
    // the file, and the portal's single-use logins (see the model's `session`).
    r"
    CREATE TABLE sessions (
        digest      BLOB    PRIMARY KEY,
        kind        TEXT    NOT NULL CHECK (kind IN ('portal', 'dashboard')),
        app_id      TEXT,
        via         BLOB,
        name        TEXT    NOT NULL,
        role        TEXT    NOT NULL,
        csrf        TEXT    NOT NULL,
        lifetime_ms INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL,
        created_at  INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX sessions_expiry ON sessions (expires_at);
    CREATE TABLE portal_logins (
        digest     BLOB    PRIMARY KEY,
        app_id     TEXT    NOT NULL,
        via        BLOB    NOT NULL,
        expires_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
",
    // Each destination's token bucket, shared by every instance (see core's `limit`): its
    // level in millionths of a token, and when it was brought up to date (NULL: full).
    r"
    ALTER TABLE destinations ADD COLUMN bucket_level INTEGER;
    ALTER TABLE destinations ADD COLUMN bucket_at_ms INTEGER;
",
];

/// The schema version this build writes.
pub const CURRENT_VERSION: u32 = MIGRATIONS.len() as u32;

fn version(conn: &Connection) -> Result<u32, StoreError> {
    Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?)
}

/// Applies every pending migration; refuses a file from a newer build.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    // An up-to-date file needs no write lock: opening a store (a server, or a CLI view
    // next to a running server) then never waits for, or delays, the writer.
    if version(conn)? == CURRENT_VERSION {
        return Ok(());
    }
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let found = version(&tx)?;
        if found > CURRENT_VERSION {
            return Err(StoreError::NewerSchema { found, supported: CURRENT_VERSION });
        }
        let Some(step) = MIGRATIONS.get(found as usize) else {
            return Ok(());
        };
        tx.execute_batch(step)?;
        tx.pragma_update(None, "user_version", found + 1)?;
        tx.commit()?;
    }
}

/// Fails unless the file's schema is exactly the one this build knows.
pub(crate) fn check_current(conn: &Connection) -> Result<(), StoreError> {
    match version(conn)? {
        v if v == CURRENT_VERSION => Ok(()),
        v if v > CURRENT_VERSION => Err(StoreError::NewerSchema { found: v, supported: CURRENT_VERSION }),
        0 => Err(StoreError::Malformed("database has not been initialised by idemgate")),
        _ => {
            Err(StoreError::Malformed("database schema is older than this build; start the server once to migrate it"))
        }
    }
}
