#!/usr/bin/env bash
# A/B of two builds of the gateway end to end on PostgreSQL (accept, store, the worker
# forwards to the bare sink), alternating the order every round so drift falls on both.
# Beside the rates it prints what PostgreSQL itself costs, which the gateway's own CPU
# does not show: the server's CPU time per event (`pg_cpu` in lib.sh; the server must run
# on this machine) and the transactions it committed per event (pg_stat_database).
#
#   bench/pg_ab.sh A_DIR B_DIR [EVENTS] [CONCURRENCY] [ROUNDS]
#
# A_DIR and B_DIR are release target dirs holding `idemgate` (e.g. a worktree of the older
# commit built with `cargo build --release --bin idemgate --example bare`); the load
# generator and the sink are B's. PostgreSQL: $IDEMGATE_BENCH_POSTGRES (default
# postgres://postgres@127.0.0.1:5432/idemgate_bench), a fresh schema per run.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
[ $# -ge 2 ] || { echo "usage: bench/pg_ab.sh A_DIR B_DIR [EVENTS] [CONCURRENCY] [ROUNDS]" >&2; exit 2; }
a=$(cd "$1" && pwd)
b=$(cd "$2" && pwd)
events=${3:-20000}
concurrency=${4:-64}
rounds=${5:-3}
for file in "$a/idemgate" "$b/idemgate" "$b/examples/bare"; do
  [ -x "$file" ] || { echo "$file is missing: build it first" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export BENCH_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=
bench_database
commits() { psql "$pg" -qAtc "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"; }

results="$work/results.jsonl"
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="A B"; else order="B A"; fi
  for side in $order; do
    if [ "$side" = A ]; then dir=$a; else dir=$b; fi
    schema="ab_$$_${round}_$side"
    psql "$pg" -qc "CREATE SCHEMA $schema"
    server_before=$(pg_cpu "$pg")
    commits_before=$(commits)
    row=$(gateway_e2e "$dir/idemgate" "$b" "url = \"$pg?options=-csearch_path%3D$schema\"")
    server=$(awk -v a="$(pg_cpu "$pg")" -v b="$server_before" 'BEGIN { printf "%.6f", a - b }')
    committed=$(( $(commits) - commits_before ))
    echo "{\"round\":$round,\"side\":\"$side\",\"pg_cpu\":$server,\"commits\":$committed,${row#\{}" >> "$results"
    psql "$pg" -qc "DROP SCHEMA $schema CASCADE" 2>/dev/null
  done
done

python3 - "$results" "$events" "$concurrency" "$a" "$b" <<'PY'
import json, sys, statistics
rows = [json.loads(line) for line in open(sys.argv[1])]
events = int(sys.argv[2])
print(f"A = {sys.argv[4]}\nB = {sys.argv[5]}")
print(f"{events} events (+20% redeliveries), C={sys.argv[3]}, {max(r['round'] for r in rows)} rounds, order alternating")
print(f"{'round':>5} {'side':>4} {'accept/s':>8} {'e2e ev/s':>9} {'gateway us/ev':>13} {'server us/ev':>12} {'commits/ev':>10}  exactly once")
for r in rows:
    r["gateway"], r["server"], r["per_commit"] = (1e6 * r["cpu"] / events, 1e6 * r["pg_cpu"] / events, r["commits"] / events)
    x = r["report"]
    print(f"{r['round']:>5} {r['side']:>4} {x['throughput']:>8.0f} {r['e2e']:>9.0f} {r['gateway']:>13.1f} {r['server']:>12.1f} {r['per_commit']:>10.3f}  {x['exactly_once']}")
med = lambda side, key: statistics.median(r[key] for r in rows if r["side"] == side)
for key, name in (("e2e", "end to end ev/s"), ("gateway", "gateway CPU us/event"), ("server", "PostgreSQL server CPU us/event")):
    print(f"median {name}: A {med('A', key):.1f}, B {med('B', key):.1f} (B/A {med('B', key) / med('A', key):.2f})")
PY
