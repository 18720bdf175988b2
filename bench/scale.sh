#!/usr/bin/env bash
# Throughput on an empty store vs a store already holding 10 million receipts, and the
# counter's peak RSS during a long run. Same N and C for both, alternating, ROUNDS times.
#
#   bench/scale.sh [EVENTS] [CONCURRENCY] [ROUNDS] [LONG_EVENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
events=${1:-20000}
concurrency=${2:-64}
rounds=${3:-3}
long_events=${4:-1000000}
cargo build --release --quiet --bin idemgate --example counter
bin=target/release
work=${SCALE_DIR:-$(mktemp -d)}
export COUNTER_SECRET=$(printf 'ab%.0s' $(seq 32))
[ -f "$work/big.sqlite3" ] || $bin/idemgate bench seed --db "$work/big.sqlite3" --receipts 10000000


# The big store is kept between runs (SCALE_DIR), so event ids must be new each time.
base=$(date +%s)
for round in $(seq "$rounds"); do
  for store in empty big; do
    db="$work/$store.sqlite3"; [ "$store" = empty ] && rm -f "$db"*
    start counter $bin/examples/counter serve --listen 127.0.0.1:0 --db "$db"
    json=$($bin/idemgate bench counter --target "http://127.0.0.1:$port/webhook" --events "$events" \
           --concurrency "$concurrency" --seed "$((base * 10 + round))" --server-pid "$pid" --json)
    echo "round $round $store $json"
    stop
  done
done

rm -f "$work/long.sqlite3"*
start counter $bin/examples/counter serve --listen 127.0.0.1:0 --db "$work/long.sqlite3"
$bin/idemgate bench counter --target "http://127.0.0.1:$port/webhook" --events "$long_events" \
    --redeliver 0.1 --concurrency "$concurrency" --seed 9 --server-pid "$pid" --json > "$work/long.json"
echo "long run: $(cat "$work/long.json")"
echo "counter peak RSS: $(grep VmHWM /proc/$pid/status)"
stop
