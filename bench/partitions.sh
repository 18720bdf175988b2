#!/usr/bin/env bash
# PostgreSQL's day partitions at scale (docs/design/postgres-partitions.md): one store
# filled in bulk with SQL (generate_series, not HTTP) with EVENTS events over DAYS day
# (each day's attempts and payloads in their own partitions; events and jobs are plain
# tables), each event with its payload, one finished job and one attempt, next to an empty store,
# alternating in one run. Prints per round the gateway's end-to-end rate (accept, worker,
# forward to the bare sink), the gateway's and the PostgreSQL server's CPU time per event
# (/proc/<pid>/stat), the claim's latency (the gateway's claim statement and its read of
# the taken jobs' payloads, run by pgbench for 5 s with statements planned for their
# parameters, each claim in a transaction rolled back, with 1,000 jobs due), the ratios filled/empty; then the
# cost of retiring the oldest day (`idemgate store purge`: the day's attempts and payloads
# partitions dropped, its events, jobs and receipts deleted by rows) and the tables' sizes
# before and after.
#
#   bench/partitions.sh [EVENTS] [DAYS] [LOAD_EVENTS] [CONCURRENCY] [ROUNDS]
# FRESH_DAY=1: the live traffic goes to a partition of its own (as just after the day
# rolled) instead of sharing the last filled day's.
# Binaries: $BIN (default target/release; built with `cargo build --release` when unset).
# PostgreSQL: $IDEMGATE_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432/idemgate_bench).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
total=${1:-20000000}
days=${2:-10}
events=${3:-20000}
concurrency=${4:-64}
rounds=${5:-3}
claimable=1000
release_binaries --example bare
work=$(mktemp -d)
export BENCH_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=
bench_database
empty="parts_empty_$$"
full="parts_full_$$"
# The filled store is dropped at the end: at a million events it holds gigabytes.
# KEEP_STORE=1 keeps both schemas (named in the output) to look into afterwards.
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"
      [ -n "${KEEP_STORE:-}" ] ||
        psql "$pg" -qc "DROP SCHEMA IF EXISTS $empty CASCADE" -c "DROP SCHEMA IF EXISTS $full CASCADE" 2>/dev/null' EXIT
url() { echo "$pg?options=-csearch_path%3D$1"; }
[ -z "${KEEP_STORE:-}" ] || echo "schemas kept: $empty (empty) $full (filled)"
for schema in $empty $full; do
  psql "$pg" -qc "CREATE SCHEMA $schema"
  gateway_toml "$work/$schema.toml" "url = \"$(url "$schema")\"" 9
  "$bin/idemgate" store purge --config "$work/$schema.toml" > /dev/null # migrates and opens today's partitions
done

# The fill: day k (1..DAYS) in its own partitions (attempts', and payloads' by the events'
# ids), opened as the maintenance pass opens a day's; day 1 is 40 days old (past the
# default 30-day retention), the others hours old.
fill_started=$(date +%s.%N)
per_day=$((total / days))
for k in $(seq "$days"); do
  psql "$(url $full)" -qv ON_ERROR_STOP=1 <<SQL
DO \$\$
DECLARE
  t text;
  d bigint := floor(extract(epoch FROM now()) / 86400)::bigint + $k;
BEGIN
  FOREACH t IN ARRAY ARRAY['attempts', 'payloads'] LOOP
    EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF %I FOR VALUES FROM (%s) TO (%s)',
                   t || '_d' || d, t, d << 36, (d + 1) << 36);
  END LOOP;
  PERFORM setval('attempts_id_seq', d << 36, false);
  PERFORM setval('events_id_seq', d << 36, false);
END
\$\$;
CREATE TEMP TABLE day AS
  SELECT n, 'd$k-' || n AS identity,
         CASE WHEN $k = 1 THEN floor(extract(epoch FROM now()))::bigint - 40 * 86400
              ELSE floor(extract(epoch FROM now()))::bigint - ($days - $k + 1) * 3600 END + n % 3600 AS at
  FROM generate_series(1, $per_day) n;
INSERT INTO receipts (source, identity, body_sha256, outcome, result, received_at)
  SELECT 'bench', identity, sha256(identity::bytea), 'applied', '{"status":202}', at FROM day;
WITH ev AS (
  INSERT INTO events (source, identity, event_type, content_type, received_at, headers, outgoing_id)
    SELECT 'bench', identity, 'order.created', 'application/json', at, '[]', identity
    FROM day
    RETURNING id, identity, received_at),
pl AS (
  INSERT INTO payloads (event_id, body)
    SELECT id, convert_to(rpad('{"id":"' || identity || '","data":"', 180, 'x') || '"}', 'UTF8') FROM ev),
jb AS (
  INSERT INTO jobs (event_id, destination, state, attempts, next_attempt_at_ms, created_at, updated_at)
    SELECT id, 'sink', 'succeeded', 1, received_at * 1000, received_at, received_at FROM ev
    RETURNING id, created_at)
INSERT INTO attempts (job_id, attempt, started_at, latency_ms, status, outcome)
  SELECT id, 1, created_at, 3, 200, 'succeeded' FROM jb;
SQL
done
if [ -n "${FRESH_DAY:-}" ]; then
  # Today's traffic in a partition of its own, as just after the day rolled.
  psql "$(url $full)" -qv ON_ERROR_STOP=1 <<SQL
DO \$\$
DECLARE
  t text;
  d bigint := floor(extract(epoch FROM now()) / 86400)::bigint + $days + 1;
BEGIN
  FOREACH t IN ARRAY ARRAY['attempts', 'payloads'] LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%s) TO (%s)', t || '_d' || d, t, d << 36, (d + 1) << 36);
  END LOOP;
  PERFORM setval('attempts_id_seq', d << 36, false);
  PERFORM setval('events_id_seq', d << 36, false);
END
\$\$;
SQL
fi
psql "$(url $full)" -qc "VACUUM ANALYZE"
fill=$(awk -v s="$fill_started" -v f="$(date +%s.%N)" 'BEGIN { printf "%.0f", f - s }')

# claim_latency SCHEMA: mean latency (ms) of the claim statement and the payloads' read
# with $claimable jobs due,
# each claim rolled back so that every one finds the same jobs.
claim_latency() {
  local u; u=$(url "$1")
  psql "$u" -qc "BEGIN; CREATE TEMP TABLE c AS SELECT 1; ROLLBACK" # connect once
  cat > "$work/claim.sql" <<'SQL'
BEGIN;
WITH paused AS (SELECT count(*) AS n FROM destinations WHERE paused_at_ms IS NOT NULL),
waiting AS (SELECT j.id, j.next_attempt_at_ms FROM jobs j
  WHERE j.state IN ('pending', 'retrying') AND j.next_attempt_at_ms <= 9000000000000
    AND NOT EXISTS (SELECT 1 FROM destinations d WHERE d.name = j.destination AND d.disabled_at IS NOT NULL)
  ORDER BY j.next_attempt_at_ms, j.id LIMIT 256 FOR UPDATE OF j SKIP LOCKED),
expired AS (SELECT j.id, j.next_attempt_at_ms FROM jobs j
  WHERE j.state = 'running' AND j.lease_until <= 9000000000
  ORDER BY j.lease_until, j.id LIMIT 256 FOR UPDATE OF j SKIP LOCKED),
due AS (SELECT id, next_attempt_at_ms FROM (SELECT * FROM waiting UNION ALL SELECT * FROM expired) AS due
  ORDER BY next_attempt_at_ms, id LIMIT 256),
taken AS (UPDATE jobs SET state = 'running', lease_until = 9000000000, lease_token = jobs.lease_token + 1,
    attempts = jobs.attempts + 1, updated_at = 1
  FROM events e
  WHERE e.id = jobs.event_id AND jobs.id IN (SELECT id FROM due)
  RETURNING jobs.id, e.id AS event)
SELECT coalesce(array_agg(event), '{}') AS events FROM taken \gset
SELECT count(*) FROM payloads WHERE event_id = ANY(:events::bigint[]);
ROLLBACK;
SQL
  pgbench -n -M extended -T 5 -c 1 -f "$work/claim.sql" "$u" 2>/dev/null | awk '/latency average/ { print $4 }'
}

# Jobs due in both stores, as the live traffic's: $claimable events with a pending job.
for schema in $empty $full; do
  psql "$(url "$schema")" -qc "
    INSERT INTO receipts (source, identity, body_sha256, outcome, result, received_at)
      SELECT 'claim', 'c' || n, sha256(n::text::bytea), 'applied', '{}', 1 FROM generate_series(1, $claimable) n;
    WITH ev AS (
      INSERT INTO events (source, identity, received_at, outgoing_id)
        SELECT 'claim', 'c' || n, 1, 'c' || n FROM generate_series(1, $claimable) n RETURNING id)
    INSERT INTO payloads (event_id, body) SELECT id, '\x7b7d' FROM ev;
    INSERT INTO jobs (event_id, destination, state, next_attempt_at_ms, created_at, updated_at)
      SELECT id, 'elsewhere', 'pending', 1000, 1, 1 FROM events WHERE source = 'claim';
    ANALYZE"
done

results="$work/results.jsonl"
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="$empty $full"; else order="$full $empty"; fi
  for schema in $order; do
    label=$([ "$schema" = "$empty" ] && echo empty || echo filled)
    # The claim's due jobs go to a destination the gateway does not know: out of its way.
    psql "$(url "$schema")" -qc "UPDATE jobs SET state = 'dead' WHERE event_id IN (SELECT id FROM events WHERE source = 'claim')"
    server_before=$(pg_cpu "$pg")
    # A seed per run: both stores are kept across rounds, so each round's identities are new.
    row=$(BENCH_SEED="$round$RANDOM" gateway_e2e "$bin/idemgate" "$bin" "url = \"$(url "$schema")\"
pool_size = 16")
    server=$(awk -v a="$(pg_cpu "$pg")" -v b="$server_before" 'BEGIN { printf "%.6f", a - b }')
    psql "$(url "$schema")" -qc "UPDATE jobs SET state = 'pending' WHERE event_id IN (SELECT id FROM events WHERE source = 'claim')"
    claim=$(claim_latency "$schema")
    psql "$(url "$schema")" -qc "VACUUM jobs" # the rolled-back claims' row versions
    echo "{\"round\":$round,\"store\":\"$label\",\"claim_ms\":$claim,\"pg_cpu\":$server,${row#\{}" >> "$results"
  done
done

# Retiring the oldest day: sizes before and after, and the purge's time.
sizes() {
  psql "$(url $full)" -qAtc "SELECT string_agg(t || '=' || pg_size_pretty(s), ' ' ORDER BY t) FROM (
    SELECT t, (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c WHERE c.oid = t::regclass
               OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = t::regclass)) AS s
    FROM unnest(ARRAY['receipts', 'events', 'payloads', 'jobs', 'attempts']) t) x"
}
before=$(sizes)
partitions() {
  psql "$(url $full)" -qAtc "SELECT (SELECT count(*) FROM pg_inherits WHERE inhparent = 'attempts'::regclass) || ' attempts, '
    || (SELECT count(*) FROM pg_inherits WHERE inhparent = 'payloads'::regclass) || ' payloads'"
}
partitions_before=$(partitions)
gateway_toml "$work/retire.toml" "url = \"$(url $full)\"" 9
started=$(date +%s.%N)
report=$("$bin/idemgate" store purge --config "$work/retire.toml" | tr '\n' ' ')
retire=$(awk -v s="$started" -v f="$(date +%s.%N)" 'BEGIN { printf "%.2f", f - s }')
partitions_after=$(partitions)
after=$(sizes)

python3 - "$results" "$events" "$concurrency" "$total" "$days" "$fill" <<PY
import json, sys, statistics
rows = [json.loads(line) for line in open(sys.argv[1])]
n = int(sys.argv[2])
print(f"filled store: {int(sys.argv[4]):,} events with a payload, a finished job and an attempt each, over {sys.argv[5]} days (attempts and payloads in day partitions), filled by SQL in {sys.argv[6]} s")
print(f"load: {n} events (+20% redeliveries), C={sys.argv[3]}, order alternating")
print(f"{'round':>5} {'store':>7} {'e2e ev/s':>9} {'p99 ms':>7} {'CPU us/ev':>9} {'PG us/ev':>8} {'claim ms':>8}  exactly once")
for r in rows:
    r["per"] = 1e6 * r["cpu"] / n
    r["pg_per"] = 1e6 * r["pg_cpu"] / n
    print(f"{r['round']:>5} {r['store']:>7} {r['e2e']:>9.0f} {r['report']['p99_ms']:>7.2f} {r['per']:>9.1f} {r['pg_per']:>8.1f} {r['claim_ms']:>8.3f}  {r['report']['exactly_once']}")
med = lambda store, key: statistics.median(r[key] for r in rows if r["store"] == store)
print(f"median: end to end filled/empty {med('filled', 'e2e') / med('empty', 'e2e'):.2f} ({med('filled', 'e2e'):.0f} against {med('empty', 'e2e'):.0f} ev/s); "
      f"claim {med('filled', 'claim_ms'):.3f} against {med('empty', 'claim_ms'):.3f} ms; "
      f"PG server CPU/event {med('filled', 'pg_per'):.1f} against {med('empty', 'pg_per'):.1f} us")
print("retiring the oldest day: $retire s (store purge: $report); partitions $partitions_before -> $partitions_after")
print("sizes before: $before")
print("sizes after:  $after")
PY
