#!/usr/bin/env bash
# A/B of one PostgreSQL index on the gateway's end-to-end path (accept, store, the worker
# forwards to the bare sink): one fresh schema, the index dropped ("without") or created
# ("with") before each gateway run, the order alternating every round so drift falls on
# both. Prints per run the rate, the gateway's CPU per event and the PostgreSQL server's
# (`pg_cpu` in lib.sh; the server must run on this machine), then the medians.
#
#   bench/pg_index_ab.sh INDEX 'CREATE INDEX …' [EVENTS] [CONCURRENCY] [ROUNDS]
#   e.g. bench/pg_index_ab.sh jobs_unfinished \
#     "CREATE INDEX jobs_unfinished ON jobs (event_id) WHERE state IN ('pending', 'running', 'retrying')"
#
# Binaries: $BIN (default target/release; built with `cargo build --release` when unset).
# PostgreSQL: $IDEMGATE_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432/idemgate_bench).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
[ $# -ge 2 ] || { echo "usage: bench/pg_index_ab.sh INDEX CREATE_STATEMENT [EVENTS] [CONCURRENCY] [ROUNDS]" >&2; exit 2; }
index=$1
create=$2
events=${3:-3000}
concurrency=${4:-32}
rounds=${5:-3}
release_binaries --example bare
work=$(mktemp -d)
export BENCH_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=
bench_database
schema="index_ab_$$"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"; psql "$pg" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" 2>/dev/null' EXIT
url="$pg?options=-csearch_path%3D$schema"
psql "$pg" -qc "CREATE SCHEMA $schema"
gateway_toml "$work/migrate.toml" "url = \"$url\"" 9
"$bin/idemgate" store purge --config "$work/migrate.toml" > /dev/null # migrates

results="$work/results.txt"
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="with without"; else order="without with"; fi
  for variant in $order; do
    if [ "$variant" = with ]; then
      psql "$url" -qc "DROP INDEX IF EXISTS $index" -c "$create"
    else
      psql "$url" -qc "DROP INDEX IF EXISTS $index"
    fi
    server_before=$(pg_cpu "$pg")
    row=$(BENCH_SEED="$round$RANDOM" gateway_e2e "$bin/idemgate" "$bin" "url = \"$url\"
pool_size = 16")
    server=$(awk -v a="$(pg_cpu "$pg")" -v b="$server_before" 'BEGIN { printf "%.6f", a - b }')
    echo "$round $variant $row $server" >> "$results"
  done
done

python3 - "$results" "$events" "$index" <<'PY'
import json, statistics, sys
n = int(sys.argv[2])
rows = []
for line in open(sys.argv[1]):
    round_, variant, rest = line.split(" ", 2)
    row, server = rest.rsplit(" ", 1)
    r = json.loads(row)
    rows.append((int(round_), variant, r["e2e"], 1e6 * r["cpu"] / n, 1e6 * float(server) / n, r["report"]["exactly_once"]))
print(f"index {sys.argv[3]}: {n} events (+20% redeliveries) per run, order alternating")
print(f"{'round':>5} {'variant':>8} {'e2e ev/s':>9} {'CPU us/ev':>9} {'PG us/ev':>8}  exactly once")
for r in rows:
    print(f"{r[0]:>5} {r[1]:>8} {r[2]:>9.0f} {r[3]:>9.1f} {r[4]:>8.1f}  {r[5]}")
med = lambda v, i: statistics.median(r[i] for r in rows if r[1] == v)
print(f"median: with/without e2e {med('with', 2) / med('without', 2):.2f} ({med('with', 2):.0f} against {med('without', 2):.0f} ev/s); "
      f"PG server CPU/event {med('with', 4):.1f} against {med('without', 4):.1f} us; gateway CPU/event {med('with', 3):.1f} against {med('without', 3):.1f} us")
PY
