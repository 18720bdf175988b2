#!/usr/bin/env bash
# The wait between an event's 202 and its forward to the sink, at low load (one event at a
# time), with the worker's default poll interval: two builds alternating, A then B, then B
# then A. Both use the same sink (examples/bare) and bench/forward_latency.py.
#
#   bench/forward_latency.sh A_IDEMGATE B_IDEMGATE [EVENTS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
[ $# -ge 2 ] || { echo "usage: bench/forward_latency.sh A_IDEMGATE B_IDEMGATE [EVENTS] [ROUNDS]" >&2; exit 2; }
events=${3:-200}
rounds=${4:-2}
cargo build --release --quiet --example bare
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export BENCH_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=
start sink target/release/examples/bare 127.0.0.1:0
sink_port=$port
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="A B"; else order="B A"; fi
  for side in $order; do
    if [ "$side" = A ]; then server=$1; else server=$2; fi
    # The bench's gateway, with the worker's default poll interval.
    gateway_toml "$work/idemgate.toml" "path = \"$work/$side-$round.sqlite3\"" "$sink_port"
    sed -i '/^batch = /d; /^poll_interval = /d' "$work/idemgate.toml"
    IDEMGATE_LOG=warn start gateway "$server" serve --config "$work/idemgate.toml"
    echo "round $round $side $(python3 bench/forward_latency.py "http://127.0.0.1:$port/in/bench" \
      "http://127.0.0.1:$sink_port/count" "$events")"
    stop
  done
done
