#!/usr/bin/env bash
# The cost of migrating an existing PostgreSQL store to payloads in day partitions
# (docs/design/postgres-partitions.md): a store at the schema version before it (events
# holding their bodies, every fifth one purged), filled in bulk with SQL with EVENTS events,
# each with a receipt, a finished job and an attempt; then `idemgate store purge` (which
# applies the migration first) is timed, and every receipt, event and body is compared
# before and after. Prints the time, the rows, and the tables' sizes before and after.
#
#   bench/migrate-payloads.sh [EVENTS]
# Binaries: $BIN (default target/release; built with `cargo build --release` when unset).
# PostgreSQL: $IDEMGATE_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432/idemgate_bench).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
total=${1:-2000000}
release_binaries
work=$(mktemp -d)
export BENCH_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=
bench_database
schema="migrate_$$"
trap 'rm -rf "$work"; psql "$pg" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" 2>/dev/null' EXIT
url="$pg?options=-csearch_path%3D$schema"
psql "$pg" -qc "CREATE SCHEMA $schema"
gateway_toml "$work/store.toml" "url = \"$url\"" 9
"$BIN/idemgate" store purge --config "$work/store.toml" > /dev/null # today's schema

# Back to the version before payloads had a table: the bodies in events, with the flag
# (the later migrations apply again; the attempts' foreign key is already gone).
psql "$url" -qv ON_ERROR_STOP=1 <<SQL
DROP TABLE payloads;
ALTER TABLE events ADD COLUMN body BYTEA NOT NULL DEFAULT ''::bytea,
                   ADD COLUMN payload_purged BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE events ALTER COLUMN body DROP DEFAULT;
UPDATE idemgate_schema SET version = 17; -- the last version with the bodies in events
SELECT setval('events_id_seq', 1, false); -- ids as such a store has them: not yet in day blocks
INSERT INTO receipts (source, identity, body_sha256, outcome, result, received_at)
  SELECT 'legacy', 'm' || n, sha256(n::text::bytea), 'applied', '{"status":202}', 1700000000 + n % 86400
  FROM generate_series(1, $total) n;
WITH ev AS (
  INSERT INTO events (source, identity, event_type, content_type, body, received_at, headers, outgoing_id, payload_purged)
    SELECT 'legacy', 'm' || n, 'order.created', 'application/json',
           CASE WHEN n % 5 = 0 THEN ''::bytea
                ELSE convert_to(rpad('{"id":"m' || n || '","data":"', 180, 'x') || '"}', 'UTF8') END,
           1700000000 + n % 86400, '[]', 'm' || n, n % 5 = 0
    FROM generate_series(1, $total) n
    RETURNING id, received_at),
jb AS (
  INSERT INTO jobs (event_id, destination, state, attempts, next_attempt_at_ms, created_at, updated_at)
    SELECT id, 'sink', 'succeeded', 1, received_at * 1000, received_at, received_at FROM ev
    RETURNING id, created_at)
INSERT INTO attempts (job_id, attempt, started_at, latency_ms, status, outcome)
  SELECT id, 1, created_at, 3, 200, 'succeeded' FROM jb;
VACUUM ANALYZE;
SQL
sizes() {
  psql "$url" -qAtc "SELECT string_agg(t || '=' || pg_size_pretty(s), ' ' ORDER BY t) FROM (
    SELECT t, (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c WHERE c.oid = to_regclass(t)
               OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = to_regclass(t))) AS s
    FROM unnest(ARRAY['receipts', 'events', 'payloads', 'jobs', 'attempts']) t) x"
}
# What must survive: every receipt, and per event its identity and body (purged: none).
digest() {
  psql "$url" -qAtc "SELECT (SELECT count(*) || ':' || md5(string_agg(md5(identity || result), '' ORDER BY identity)) FROM receipts),
    (SELECT count(*) || ':' || md5(string_agg(md5(e.identity || ':' || coalesce(encode($1, 'hex'), '-')), '' ORDER BY e.id))
     FROM events e $2)"
}
before=$(digest "CASE WHEN payload_purged THEN NULL ELSE body END" "")
sizes_before=$(sizes)
# A store purge runs the migrations, rolls, and purges nothing here: the events are of a
# source the configuration does not name, which has no retention.
started=$(date +%s.%N)
"$BIN/idemgate" store purge --config "$work/store.toml" > /dev/null
took=$(awk -v s="$started" -v f="$(date +%s.%N)" 'BEGIN { printf "%.1f", f - s }')
after=$(digest "p.body" "LEFT JOIN payloads p ON p.event_id = e.id")
sizes_after=$(sizes)
echo "store: $total events (a receipt, a finished job and an attempt each; every fifth payload purged), filled by SQL"
echo "migration (idemgate store purge, which applies it): $took s"
echo "sizes before: $sizes_before"
echo "sizes after:  $sizes_after"
if [ "$before" = "$after" ]; then echo "every receipt, event and body as before: yes"; else echo "CHANGED: $before -> $after"; exit 1; fi
