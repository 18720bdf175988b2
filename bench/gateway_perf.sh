#!/usr/bin/env bash
# Where the gateway's CPU goes per event, end to end on SQLite: `perf record` on `idemgate
# serve` while `idemgate bench webhooks` sends EVENTS signed events (+20 % redeliveries)
# and the worker forwards them to the bare sink, then the samples filed by stage
# (bench/perf_breakdown.py's gateway stages). Give CPU_US, the gateway's CPU per event
# measured without perf (bench/bare_ratios.sh prints it), to turn the shares into
# microseconds; perf's unwinding inflates the total, not the shares.
#
#   bench/gateway_perf.sh [EVENTS] [CPU_US]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
events=${1:-20000}
cpu_us=${2:-0}
cargo build --release --quiet --bin idemgate --example bare
bin=target/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export BENCH_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=

start sink $bin/examples/bare 127.0.0.1:0
sink_port=$port
gateway_toml "$work/idemgate.toml" "path = \"$work/gateway.sqlite3\"" "$sink_port"
IDEMGATE_LOG=warn start gateway $bin/idemgate serve --config "$work/idemgate.toml"
perf record -q -e cpu-clock -F 2999 --call-graph dwarf,16384 -p "$pid" -o "$work/perf.data" 2>/dev/null &
recorder=$!
sleep 0.5
$bin/idemgate bench webhooks --target "http://127.0.0.1:$port/in/bench" --secret env:BENCH_SECRET \
  --events "$events" --redeliver 0.2 --concurrency 64 >/dev/null
for _ in $(seq 30000); do
  [ "$(curl -s "http://127.0.0.1:$sink_port/count")" -ge "$events" ] && break
  sleep 0.01
done
kill -INT "$recorder"
wait "$recorder" || true
perf script -i "$work/perf.data" -F comm,tid,ip,sym 2>/dev/null | python3 bench/perf_breakdown.py "$events" "$cpu_us" gateway
