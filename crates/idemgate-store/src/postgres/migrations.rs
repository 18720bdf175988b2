//! Versioned schema migrations for PostgreSQL, tracked in `idemgate_schema`.
//!
//! All pending migrations run in one transaction that first takes an advisory lock for
//! the current schema, so several instances starting at once apply each exactly once and
//! the others find the schema complete. PostgreSQL's DDL is transactional: a migration
//! that fails leaves nothing behind. Entries are never edited once released.
//!
//! Text keys use the `"C"` collation: comparisons and `ORDER BY` are by bytes, as in
//! SQLite, so both backends order identities and ordering versions the same way.

use deadpool_postgres::Object;

use crate::StoreError;

/// Migration `i` brings the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    r#"
    CREATE TABLE receipts (
        source      TEXT COLLATE "C" NOT NULL,
        identity    TEXT COLLATE "C" NOT NULL,
        body_sha256 BYTEA  NOT NULL CHECK (octet_length(body_sha256) = 32),
        outcome     TEXT   NOT NULL CHECK (outcome IN ('applied')),
        result      TEXT   NOT NULL,
        received_at BIGINT NOT NULL,
        PRIMARY KEY (source, identity)
    );
    CREATE INDEX receipts_age ON receipts (source, received_at);

    CREATE TABLE conflicts (
        source        TEXT COLLATE "C" NOT NULL,
        identity      TEXT COLLATE "C" NOT NULL,
        body_sha256   BYTEA  NOT NULL CHECK (octet_length(body_sha256) = 32),
        first_seen_at BIGINT NOT NULL,
        last_seen_at  BIGINT NOT NULL,
        seen_count    BIGINT NOT NULL CHECK (seen_count > 0),
        PRIMARY KEY (source, identity, body_sha256)
    );

    CREATE TABLE events (
        id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        source         TEXT COLLATE "C" NOT NULL,
        identity       TEXT COLLATE "C" NOT NULL,
        event_type     TEXT,
        content_type   TEXT,
        body           BYTEA   NOT NULL,
        received_at    BIGINT  NOT NULL,
        headers        TEXT,
        ordering_key   TEXT COLLATE "C",
        payload_purged BOOLEAN NOT NULL DEFAULT false,
        UNIQUE (source, identity),
        FOREIGN KEY (source, identity) REFERENCES receipts (source, identity)
            DEFERRABLE INITIALLY DEFERRED
    );
    CREATE INDEX events_ordering ON events (source, ordering_key) WHERE ordering_key IS NOT NULL;
    CREATE INDEX events_age ON events (source, received_at);

    CREATE TABLE jobs (
        id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        event_id        BIGINT  NOT NULL REFERENCES events (id),
        destination     TEXT COLLATE "C" NOT NULL,
        state           TEXT    NOT NULL CHECK (state IN
                            ('pending', 'running', 'succeeded', 'retrying', 'dead', 'superseded')),
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_at BIGINT  NOT NULL,
        lease_until     BIGINT,
        lease_token     BIGINT  NOT NULL DEFAULT 0,
        last_error      TEXT,
        created_at      BIGINT  NOT NULL,
        updated_at      BIGINT  NOT NULL,
        UNIQUE (event_id, destination)
    );
    CREATE INDEX jobs_due ON jobs (state, next_attempt_at);

    CREATE TABLE attempts (
        id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        job_id          BIGINT  NOT NULL REFERENCES jobs (id),
        attempt         INTEGER NOT NULL,
        started_at      BIGINT  NOT NULL,
        latency_ms      BIGINT  NOT NULL,
        status          INTEGER,
        error           TEXT,
        response_prefix TEXT
    );
    CREATE INDEX attempts_job ON attempts (job_id);

    CREATE TABLE destinations (
        name            TEXT COLLATE "C" PRIMARY KEY,
        disabled_at     BIGINT,
        disabled_reason TEXT
    );

    CREATE TABLE ordering_versions (
        source       TEXT COLLATE "C" NOT NULL,
        ordering_key TEXT COLLATE "C" NOT NULL,
        version_int  BIGINT,
        version_text TEXT COLLATE "C",
        event_id     BIGINT NOT NULL REFERENCES events (id),
        CHECK ((version_int IS NULL) != (version_text IS NULL)),
        PRIMARY KEY (source, ordering_key)
    );

    CREATE TABLE idempotency_records (
        scope           TEXT COLLATE "C" NOT NULL,
        key             TEXT COLLATE "C" NOT NULL,
        fingerprint     BYTEA   NOT NULL CHECK (octet_length(fingerprint) = 32),
        state           TEXT    NOT NULL CHECK (state IN ('in_flight', 'completed')),
        lock_token      BIGINT  NOT NULL,
        locked_until_ms BIGINT,
        status          INTEGER,
        headers         TEXT,
        body            BYTEA,
        body_omitted    BOOLEAN NOT NULL DEFAULT false,
        created_at_ms   BIGINT  NOT NULL,
        expires_at_ms   BIGINT  NOT NULL,
        PRIMARY KEY (scope, key)
    );
    CREATE INDEX idempotency_expiry ON idempotency_records (expires_at_ms);
"#,
    r#"
    ALTER TABLE events ADD COLUMN outgoing_id TEXT COLLATE "C";
    UPDATE events SET outgoing_id = identity;
    ALTER TABLE events ALTER COLUMN outgoing_id SET NOT NULL;

    CREATE TABLE body_receipts (
        source      TEXT COLLATE "C" NOT NULL,
        body_sha256 BYTEA NOT NULL CHECK (octet_length(body_sha256) = 32),
        identity    TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (source, body_sha256),
        FOREIGN KEY (source, identity) REFERENCES receipts (source, identity)
            DEFERRABLE INITIALLY DEFERRED
    );
    CREATE INDEX body_receipts_identity ON body_receipts (source, identity);
"#,
    // Due times in milliseconds: whole seconds rounded a 1 s retry down to an instant one.
    r"
    ALTER TABLE jobs RENAME COLUMN next_attempt_at TO next_attempt_at_ms;
    UPDATE jobs SET next_attempt_at_ms = next_attempt_at_ms * 1000;
",
    // Alerts: the last alert of each (condition, target), and dead jobs by when they died.
    r#"
    CREATE TABLE alerts (
        condition   TEXT COLLATE "C" NOT NULL,
        target      TEXT COLLATE "C" NOT NULL,
        since       BIGINT NOT NULL,
        opened_at   BIGINT NOT NULL,
        resolved_at BIGINT,
        PRIMARY KEY (condition, target)
    );
    CREATE INDEX jobs_dead_at ON jobs (updated_at) WHERE state = 'dead';
"#,
    // Each destination's circuit breaker, shared by every instance (see core's `breaker`).
    r"
    ALTER TABLE destinations ADD COLUMN failures BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE destinations ADD COLUMN failing_since_ms BIGINT;
    ALTER TABLE destinations ADD COLUMN paused_at_ms BIGINT;
    ALTER TABLE destinations ADD COLUMN next_probe_at_ms BIGINT;
    ALTER TABLE destinations ADD COLUMN probe_interval_ms BIGINT;
",
    // Since when a destination's rate limit or in-flight cap holds its jobs back, as its
    // workers last saw it (NULL: not throttled), so that other processes can show it.
    r"
    ALTER TABLE destinations ADD COLUMN throttled_since_ms BIGINT;
",
    // The audit log of operators' actions (see the model's `audit`), purged by its own retention.
    r#"
    CREATE TABLE audit_log (
        id       BIGSERIAL PRIMARY KEY,
        at       BIGINT NOT NULL,
        token    TEXT COLLATE "C" NOT NULL,
        action   TEXT COLLATE "C" NOT NULL,
        target   TEXT COLLATE "C" NOT NULL,
        affected BIGINT NOT NULL CHECK (affected >= 0)
    );
    CREATE INDEX audit_log_at ON audit_log (at);
"#,
    // The claim's two scans, each a partial index in its order (see `jobs::due`): jobs
    // waiting by due time, leases by their end. They replace (state, next_attempt_at_ms),
    // which a claim could only read in one bitmap scan over every version a vacuum had not
    // yet removed. The leases' index is on the lease, not on the state `running`, so that a
    // completion, which names its jobs by id, finds them by id and not by a scan of it.
    r"
    DROP INDEX jobs_due;
    CREATE INDEX jobs_waiting ON jobs (next_attempt_at_ms, id) WHERE state IN ('pending', 'retrying');
    CREATE INDEX jobs_leased ON jobs (lease_until, id) WHERE lease_until IS NOT NULL;
",
    // Each attempt's outcome, as on SQLite (its migration says how existing rows are read).
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
    // The outbound API's data, as on SQLite (its migration says what each table is).
    r#"
    CREATE TABLE applications (
        id            TEXT COLLATE "C" PRIMARY KEY,
        uid           TEXT COLLATE "C",
        name          TEXT    NOT NULL,
        metadata      TEXT    NOT NULL,
        throttle_rate INTEGER,
        created_at    BIGINT  NOT NULL,
        updated_at    BIGINT  NOT NULL,
        deleted_at    BIGINT
    );
    CREATE UNIQUE INDEX applications_uid ON applications (uid) WHERE deleted_at IS NULL;

    CREATE TABLE endpoints (
        id            TEXT COLLATE "C" PRIMARY KEY,
        app_id        TEXT COLLATE "C" NOT NULL REFERENCES applications (id),
        uid           TEXT COLLATE "C",
        url           TEXT    NOT NULL,
        description   TEXT    NOT NULL,
        event_types   TEXT,
        channels      TEXT,
        metadata      TEXT    NOT NULL,
        throttle_rate INTEGER,
        disabled      BOOLEAN NOT NULL,
        headers       TEXT    NOT NULL,
        version       BIGINT  NOT NULL,
        created_at    BIGINT  NOT NULL,
        updated_at    BIGINT  NOT NULL,
        deleted_at    BIGINT
    );
    CREATE UNIQUE INDEX endpoints_uid ON endpoints (app_id, uid) WHERE deleted_at IS NULL;
    CREATE INDEX endpoints_app ON endpoints (app_id, id);
    CREATE INDEX endpoints_version ON endpoints (version);

    CREATE TABLE endpoint_secrets (
        endpoint_id TEXT COLLATE "C" NOT NULL REFERENCES endpoints (id),
        seq         BIGINT  NOT NULL,
        sealed      BYTEA   NOT NULL,
        key_id      BYTEA   NOT NULL,
        expires_at  BIGINT,
        created_at  BIGINT  NOT NULL,
        PRIMARY KEY (endpoint_id, seq)
    );

    CREATE TABLE event_types (
        name         TEXT COLLATE "C" PRIMARY KEY,
        description  TEXT    NOT NULL,
        schemas      TEXT,
        archived     BOOLEAN NOT NULL,
        deprecated   BOOLEAN NOT NULL,
        feature_flag TEXT,
        created_at   BIGINT  NOT NULL,
        updated_at   BIGINT  NOT NULL
    );

    CREATE TABLE messages (
        id         TEXT COLLATE "C" PRIMARY KEY,
        app_id     TEXT COLLATE "C" NOT NULL REFERENCES applications (id),
        event_row  BIGINT  NOT NULL,
        event_id   TEXT COLLATE "C",
        event_type TEXT COLLATE "C" NOT NULL,
        channels   TEXT,
        created_at BIGINT  NOT NULL,
        expires_at BIGINT
    );
    CREATE UNIQUE INDEX messages_event_id ON messages (app_id, event_id) WHERE event_id IS NOT NULL;
    CREATE INDEX messages_app ON messages (app_id, id);

    CREATE TABLE outbound_version (
        one     INTEGER PRIMARY KEY CHECK (one = 1),
        version BIGINT  NOT NULL
    );
    INSERT INTO outbound_version (one, version) VALUES (1, 0);

    CREATE TABLE api_tokens (
        digest     BYTEA   PRIMARY KEY,
        app_id     TEXT COLLATE "C" NOT NULL,
        expires_at BIGINT  NOT NULL,
        created_at BIGINT  NOT NULL
    );
"#,
    // Whether a job was last made due by hand (the outbound API's resend or recover): its
    // attempts from then on are `Manual` (`triggerType` 1), as Svix's.
    r"
    ALTER TABLE jobs ADD COLUMN manual BOOLEAN NOT NULL DEFAULT false;
",
    // Each attempt's trigger, copied from its job when it is recorded.
    r"
    ALTER TABLE attempts ADD COLUMN manual BOOLEAN NOT NULL DEFAULT false;
",
    // Application tokens (app-portal-access) name the token that issued them.
    r#"
    ALTER TABLE api_tokens ADD COLUMN issued_by TEXT NOT NULL DEFAULT '';
"#,
    // The retention sweep finds the messages whose payload expired by this index; a
    // purged message's `expires_at` is cleared, so the index holds only waiting ones.
    r"
    CREATE INDEX messages_expiry ON messages (expires_at) WHERE expires_at IS NOT NULL;
",
    // Signed-in browser sessions (the portal's; the dashboard's), known to every instance,
    // and the portal's single-use logins (see the model's `session`).
    r#"
    CREATE TABLE sessions (
        digest      BYTEA   PRIMARY KEY,
        kind        TEXT COLLATE "C" NOT NULL CHECK (kind IN ('portal', 'dashboard')),
        app_id      TEXT COLLATE "C",
        via         BYTEA,
        name        TEXT    NOT NULL,
        role        TEXT    NOT NULL,
        csrf        TEXT    NOT NULL,
        lifetime_ms BIGINT  NOT NULL,
        expires_at  BIGINT  NOT NULL,
        created_at  BIGINT  NOT NULL
    );
    CREATE INDEX sessions_expiry ON sessions (expires_at);
    CREATE TABLE portal_logins (
        digest     BYTEA   PRIMARY KEY,
        app_id     TEXT COLLATE "C" NOT NULL,
        via        BYTEA   NOT NULL,
        expires_at BIGINT  NOT NULL,
        created_at BIGINT  NOT NULL
    );
"#,
    // Each destination's token bucket, shared by every instance (see core's `limit`): its
    // level in millionths of a token, and when it was brought up to date (NULL: full).
    r"
    ALTER TABLE destinations ADD COLUMN bucket_level BIGINT;
    ALTER TABLE destinations ADD COLUMN bucket_at_ms BIGINT;
",
    // Attempts and the audit log in day partitions of their row id (see
    // docs/design/postgres-partitions.md; events, jobs and receipts stay plain tables with
    // their unique keys and foreign keys): each table is rebuilt as a partitioned one whose
    // first partition takes every existing row as it is, ids kept; the sequences move to
    // today's block. A table partitioned already is left as it is (a test that put back an
    // older version of a current schema runs the later migrations again).
    r#"
    DO $$
    DECLARE
        t text;
        today bigint := floor(extract(epoch FROM now()) / 86400)::bigint;
        converted text[] := '{}';
    BEGIN
        FOREACH t IN ARRAY ARRAY['attempts', 'audit_log'] LOOP
            CONTINUE WHEN (SELECT relkind FROM pg_class WHERE oid = t::regclass) = 'p';
            converted := converted || t;
            EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (id)',
                           t || '_partitioned', t);
            EXECUTE format('ALTER TABLE %I ALTER COLUMN id DROP DEFAULT', t || '_partitioned');
            EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (MINVALUE) TO (%s)',
                           t || '_d' || (today - 1), t || '_partitioned', today << 36);
            EXECUTE format('INSERT INTO %I SELECT * FROM %I', t || '_partitioned', t);
        END LOOP;
        FOREACH t IN ARRAY converted LOOP
            EXECUTE format('DROP TABLE %I', t);
        END LOOP;
        FOREACH t IN ARRAY converted LOOP
            EXECUTE format('ALTER TABLE %I RENAME TO %I', t || '_partitioned', t);
            EXECUTE format('CREATE SEQUENCE %I AS bigint OWNED BY %I.id', t || '_id_seq', t);
            EXECUTE format('ALTER TABLE %I ALTER COLUMN id SET DEFAULT nextval(%L)', t, t || '_id_seq');
            EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (id)', t);
            EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%s) TO (%s)',
                           t || '_d' || today, t, today << 36, (today + 1) << 36);
            EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%s) TO (%s)',
                           t || '_d' || (today + 1), t, (today + 1) << 36, (today + 2) << 36);
            PERFORM setval(t || '_id_seq', today << 36, false);
        END LOOP;
        IF 'attempts' = ANY (converted) THEN
            ALTER TABLE attempts ADD CONSTRAINT attempts_job_id_fkey FOREIGN KEY (job_id) REFERENCES jobs (id);
        END IF;
    END
    $$;
    CREATE INDEX IF NOT EXISTS attempts_job ON attempts (job_id);
    CREATE INDEX IF NOT EXISTS audit_log_at ON audit_log (at);
"#,
    // Payload bytes (events' bodies and outbound messages' contents) in a table of day
    // partitions of the event id, which retention drops whole (see
    // docs/design/postgres-partitions.md; events stays a plain table): a first partition
    // takes every body not purged, ids kept; events' ids move to today's block; the
    // events' `body` and `payload_purged` go (purged is now: no payload row). No foreign
    // key either way: the code writes an event and its payload in one statement. A schema
    // whose events have no body any more is left as it is (a test that put back an older
    // version of a current schema runs the later migrations again).
    r#"
    DO $$
    DECLARE
        today bigint := floor(extract(epoch FROM now()) / 86400)::bigint;
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_attribute
                       WHERE attrelid = 'events'::regclass AND attname = 'body' AND NOT attisdropped) THEN
            RETURN;
        END IF;
        CREATE TABLE payloads (
            event_id BIGINT NOT NULL,
            body     BYTEA  NOT NULL,
            PRIMARY KEY (event_id)
        ) PARTITION BY RANGE (event_id);
        EXECUTE format('CREATE TABLE %I PARTITION OF payloads FOR VALUES FROM (MINVALUE) TO (%s)',
                       'payloads_d' || (today - 1), today << 36);
        INSERT INTO payloads (event_id, body) SELECT id, body FROM events WHERE NOT payload_purged;
        EXECUTE format('CREATE TABLE %I PARTITION OF payloads FOR VALUES FROM (%s) TO (%s)',
                       'payloads_d' || today, today << 36, (today + 1) << 36);
        EXECUTE format('CREATE TABLE %I PARTITION OF payloads FOR VALUES FROM (%s) TO (%s)',
                       'payloads_d' || (today + 1), (today + 1) << 36, (today + 2) << 36);
        ALTER TABLE events DROP COLUMN body, DROP COLUMN payload_purged;
        PERFORM setval('events_id_seq', today << 36, false) FROM events_id_seq WHERE last_value < today << 36;
    END
    $$;
"#,
    // Attempts keep no foreign key to their job: with the key, every deleted job made
    // PostgreSQL look for its attempts in every day of `attempts` (32 s for a day's 22,000
    // jobs in 366 days). Attempts are written only for a job held under a lease, read only
    // joined to their job, and go whole with their day (docs/design/postgres-partitions.md).
    r#"
    ALTER TABLE attempts DROP CONSTRAINT IF EXISTS attempts_job_id_fkey;
"#,
    // Retention's questions answered by an index, not a read of every job or event: which
    // events owe work (the unfinished jobs, a partial index the size of the queue, not the
    // history) and which hold an ordering version (also what a deleted event's foreign key
    // checks). Without them a day's retirement on 20 million events read `jobs` and
    // `events` whole (docs/design/postgres-partitions.md, "What retention drops").
    r#"
    CREATE INDEX IF NOT EXISTS jobs_unfinished ON jobs (event_id) WHERE state IN ('pending', 'running', 'retrying');
    CREATE INDEX IF NOT EXISTS ordering_versions_event ON ordering_versions (event_id);
"#,
];

/// The schema version this build writes on PostgreSQL.
pub(crate) const CURRENT_VERSION: i32 = MIGRATIONS.len() as i32;

/// Any constant shared by all idemgate builds; the second key is the schema's name.
const LOCK_CLASS: i32 = 0x1de6;

/// Applies every pending migration; refuses a schema from a newer build.
pub(crate) async fn migrate(client: &mut Object) -> Result<(), StoreError> {
    migrate_to(client, CURRENT_VERSION).await
}

/// Applies the pending migrations up to `target` (for tests that need a store as an
/// older build left it); refuses a schema newer than this build.
pub(crate) async fn migrate_to(client: &mut Object, target: i32) -> Result<(), StoreError> {
    let target = target.clamp(0, CURRENT_VERSION);
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))", &[&LOCK_CLASS]).await?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS idemgate_schema (version INTEGER NOT NULL)").await?;
    let found: i32 = match tx.query_opt("SELECT version FROM idemgate_schema", &[]).await? {
        Some(row) => row.try_get(0)?,
        None => {
            tx.execute("INSERT INTO idemgate_schema (version) VALUES (0)", &[]).await?;
            0
        }
    };
    if found > CURRENT_VERSION {
        return Err(StoreError::NewerSchema { found: found.unsigned_abs(), supported: CURRENT_VERSION.unsigned_abs() });
    }
    for step in MIGRATIONS.get(found.unsigned_abs() as usize..target.unsigned_abs() as usize).unwrap_or_default() {
        tx.batch_execute(step).await?;
    }
    tx.execute("UPDATE idemgate_schema SET version = $1", &[&found.max(target)]).await?;
    tx.commit().await?;
    Ok(())
}
