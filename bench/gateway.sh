#!/usr/bin/env bash
# The gateway end to end: Standard Webhooks deliveries accepted over HTTP, then forwarded
# by the worker (inside `idemgate serve`) to a local sink answering 200
# (examples/bare.rs). Prints the accept rate and the end-to-end delivery rate.
#
#   bench/gateway.sh [EVENTS] [CONCURRENCY]
#   BENCH_STORE=postgres INSTANCES=3 bench/gateway.sh ...   # on PostgreSQL, several instances
#   GATEWAY=path/to/other/idemgate bench/gateway.sh ...       # serve with another build (A/B)
# PostgreSQL: $IDEMGATE_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432/idemgate_bench).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
events=${1:-20000}
concurrency=${2:-64}
cargo build --release --quiet --bin idemgate --example bare
bin=target/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export BENCH_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=

instances=${INSTANCES:-1}
store="path = \"$work/gateway.sqlite3\""
if [ "${BENCH_STORE:-sqlite}" = postgres ]; then
  bench_database
  schema="gateway_$$_$RANDOM"
  psql "$pg" -qc "CREATE SCHEMA $schema"
  store="url = \"$pg?options=-csearch_path%3D$schema\""
fi

start sink $bin/examples/bare 127.0.0.1:0
sink_port=$port
gateway_toml "$work/idemgate.toml" "$store" "$sink_port"
targets="" pids=""
for _ in $(seq "$instances"); do
  IDEMGATE_LOG=warn start gateway "${GATEWAY:-$bin/idemgate}" serve --config "$work/idemgate.toml"
  targets="$targets${targets:+,}http://127.0.0.1:$port/in/bench"
  pids="$pids${pids:+,}$pid"
done
started=$(date +%s.%N)
$bin/idemgate bench webhooks --target "$targets" --secret env:BENCH_SECRET \
    --events "$events" --redeliver 0.2 --concurrency "$concurrency" --server-pid "$pids" --json > "$work/accept.json"
# The sink counts what it answered; polling it costs far less than asking the store.
for _ in $(seq 30000); do
  [ "$(curl -s "http://127.0.0.1:$sink_port/count")" -ge "$events" ] && break
  sleep 0.01
done
finished=$(date +%s.%N)
done_jobs=$($bin/idemgate events stats --config "$work/idemgate.toml" --json \
            | python3 -c 'import json,sys; s=json.load(sys.stdin)["sources"]; print(s[0]["jobs"].get("succeeded",0) if s else 0)')
python3 - "$work/accept.json" "$events" "$started" "$finished" "$done_jobs" <<'PY'
import json, sys
accept = json.load(open(sys.argv[1]))
events, started, finished, delivered = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
print(f"accepted: {accept['requests']} deliveries ({events} events + redeliveries) at {accept['throughput']:.0f}/s, "
      f"p50 {accept['p50_ms']} ms, p99 {accept['p99_ms']} ms, "
      f"server CPU {accept['server_cpu_us_per_request']} us/request (worker included), outcomes {accept['outcomes']}, exactly once {accept['exactly_once']}")
print(f"end to end: {delivered} of {events} events delivered to the sink in {finished - started:.2f} s "
      f"= {delivered / (finished - started):.0f} events/s")
PY
