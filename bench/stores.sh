#!/usr/bin/env bash
# The gateway end to end on SQLite and on PostgreSQL, alternating in one run (SQLite then
# PostgreSQL, then the other way round), so drift on a shared machine falls on both:
# accept, store, the worker forwards to the bare sink. Prints each round's end-to-end
# rate, the gateway's CPU time per event (from /proc/<pid>/stat), on PostgreSQL the
# server's own CPU time per event (`pg_cpu` in lib.sh: the server must run on this
# machine) and the medians' ratio PostgreSQL / SQLite.
#
#   bench/stores.sh [EVENTS] [CONCURRENCY] [ROUNDS]
# PostgreSQL: $IDEMGATE_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432/idemgate_bench),
# a fresh schema per round.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
events=${1:-20000}
concurrency=${2:-64}
rounds=${3:-3}
cargo build --release --quiet --bin idemgate --example bare
bin=${CARGO_TARGET_DIR:-$(pwd)/target}/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export BENCH_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=
bench_database

results="$work/results.jsonl"
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="sqlite postgres"; else order="postgres sqlite"; fi
  for store in $order; do
    if [ "$store" = sqlite ]; then
      line="path = \"$work/gateway-$round.sqlite3\""
    else
      schema="stores_$$_$round"
      psql "$pg" -qc "CREATE SCHEMA $schema"
      line="url = \"$pg?options=-csearch_path%3D$schema\""
    fi
    server_before=$(pg_cpu "$pg")
    row=$(gateway_e2e "$bin/idemgate" "$bin" "$line")
    server=$(awk -v a="$(pg_cpu "$pg")" -v b="$server_before" 'BEGIN { printf "%.6f", a - b }')
    [ "$store" = postgres ] || server=0
    echo "{\"round\":$round,\"store\":\"$store\",\"pg_cpu\":$server,${row#\{}" >> "$results"
    if [ "$store" = postgres ]; then psql "$pg" -qc "DROP SCHEMA $schema CASCADE"; fi
  done
done

python3 - "$results" "$events" "$concurrency" <<'PY'
import json, sys, statistics
rows = [json.loads(line) for line in open(sys.argv[1])]
print(f"{sys.argv[2]} events (+20% redeliveries), C={sys.argv[3]}, {max(r['round'] for r in rows)} rounds, order alternating")
print(f"{'round':>5} {'store':>8} {'accept/s':>8} {'e2e ev/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'CPU us/event':>12} {'PG server us/event':>18}  exactly once")
for r in rows:
    x = r["report"]
    r["per"] = 1e6 * r["cpu"] / int(sys.argv[2])
    r["pg_per"] = 1e6 * r["pg_cpu"] / int(sys.argv[2])
    server = f"{r['pg_per']:>18.1f}" if r["store"] == "postgres" else f"{'-':>18}"
    print(f"{r['round']:>5} {r['store']:>8} {x['throughput']:>8.0f} {r['e2e']:>9.0f} {x['p50_ms']:>7.2f} {x['p99_ms']:>7.2f} {r['per']:>12.1f} {server}  {x['exactly_once']}")
med = lambda store, key: statistics.median(r[key] for r in rows if r["store"] == store)
print(f"median end to end: SQLite {med('sqlite', 'e2e'):.0f}/s, PostgreSQL {med('postgres', 'e2e'):.0f}/s "
      f"(PostgreSQL/SQLite {med('postgres', 'e2e') / med('sqlite', 'e2e'):.2f}); gateway CPU per event: "
      f"SQLite {med('sqlite', 'per'):.1f} us, PostgreSQL {med('postgres', 'per'):.1f} us "
      f"(+ {med('postgres', 'pg_per'):.1f} us in the PostgreSQL server)")
PY
