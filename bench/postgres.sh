#!/usr/bin/env bash
# Accepted deliveries/s and latency of the gateway on SQLite, on PostgreSQL with one
# instance, and on PostgreSQL with three instances sharing the store: the same load
# (Standard Webhooks, 20% redeliveries), the same machine, one run, several rounds.
# The worker is off in every instance so that the figure is the receive path alone.
#
#   bench/postgres.sh [EVENTS] [CONCURRENCY] [ROUNDS]
# PostgreSQL: $IDEMGATE_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432/idemgate_bench).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
events=${1:-20000}
concurrency=${2:-64}
rounds=${3:-3}
pg=${IDEMGATE_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432/idemgate_bench}
cargo build --release --quiet --bin idemgate
bin=target/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export BENCH_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=
psql "${pg%/*}/postgres" -qc "DROP DATABASE IF EXISTS ${pg##*/} WITH (FORCE)" -c "CREATE DATABASE ${pg##*/}"

# config NAME STORE-LINES: a gateway config with the worker off.
config() {
  cat > "$work/$1.toml" <<TOML
[server]
listen = "127.0.0.1:0"
[store]
$2
[worker]
enabled = false
[sources.bench]
scheme = "standard-webhooks"
secrets = ["env:BENCH_SECRET"]
destinations = ["sink"]
[destinations.sink]
url = "http://127.0.0.1:9/hook"
TOML
}

# run LABEL CONFIG INSTANCES: starts the instances, drives them, stops them.
run() {
  local label=$1 cfg=$2 instances=$3 targets="" pids=""
  for _ in $(seq "$instances"); do
    IDEMGATE_LOG=warn start "$label" $bin/idemgate serve --config "$work/$cfg.toml"
    targets="$targets${targets:+,}http://127.0.0.1:$port/in/bench"
    pids="$pids $pid"
  done
  $bin/idemgate bench webhooks --target "$targets" --secret env:BENCH_SECRET --events "$events" \
      --redeliver 0.2 --concurrency "$concurrency" --seed "$RANDOM" --server-pid "$(echo $pids | tr ' ' ,)" \
      --json > "$work/$label.json"
  kill $pids; wait $pids 2>/dev/null || true
  python3 - "$work/$label.json" "$label" >> "$work/results" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(json.dumps({"label": sys.argv[2], "rate": r["throughput"], "p50": r["p50_ms"], "p99": r["p99_ms"],
                  "exactly_once": r["exactly_once"], "cpu_us": r["server_cpu_us_per_request"]}))
PY
}

for round in $(seq "$rounds"); do
  rm -f "$work"/*.sqlite3*
  config sqlite "path = \"$work/r$round.sqlite3\""
  schema=$(printf 'bench_%s_%s' "$round" "$RANDOM")
  psql "$pg" -qc "CREATE SCHEMA $schema"
  config pg "url = \"$pg?options=-csearch_path%3D$schema\"
pool_size = 16"
  run sqlite sqlite 1
  run pg1 pg 1
  schema=$(printf 'bench_%s_%s' "$round" "$RANDOM")
  psql "$pg" -qc "CREATE SCHEMA $schema"
  config pg "url = \"$pg?options=-csearch_path%3D$schema\"
pool_size = 16"
  run pg3 pg 3
done

python3 - "$work/results" "$events" "$concurrency" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["label"], []).append(r)
print(f"{sys.argv[2]} events (+20% redeliveries), C={sys.argv[3]}, {len(by['sqlite'])} rounds, medians:")
base = statistics.median(r["rate"] for r in by["sqlite"])
for label, name in [("sqlite", "SQLite, 1 instance"), ("pg1", "PostgreSQL, 1 instance"), ("pg3", "PostgreSQL, 3 instances")]:
    rs = by[label]
    rate = statistics.median(r["rate"] for r in rs)
    p50 = statistics.median(r["p50"] for r in rs)
    p99 = statistics.median(r["p99"] for r in rs)
    once = all(r["exactly_once"] for r in rs)
    print(f"  {name:<26} {rate:>7.0f} deliveries/s  p50 {p50:>6.2f} ms  p99 {p99:>6.2f} ms  "
          f"x{rate / base:.2f} of SQLite  exactly once: {once}")
PY
