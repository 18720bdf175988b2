#!/usr/bin/env bash
# The Idempotency-Key layer's cost, side by side in one run: the orders example without the
# layer, with the layer on first requests (a fresh key each: lock, run, store), and with
# the layer on replays (the same keys again: one lookup, no handler call).
#
#   bench/idempotency.sh [REQUESTS] [CONCURRENCY] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
requests=${1:-60000}
concurrency=${2:-32}
rounds=${3:-3}
cargo build --release --quiet --bin idemgate --example orders
bin=target/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT


results="$work/results.jsonl"
for round in $(seq "$rounds"); do
  for run in bare first replay; do
    if [ "$run" = bare ]; then
      start bare $bin/examples/orders serve --listen 127.0.0.1:0; keys=none
    else
      start layer $bin/examples/orders serve --listen 127.0.0.1:0 --idempotent --db "$work/$run-$round.db"
      [ "$run" = first ] && keys=unique || keys=replay
    fi
    json=$($bin/idemgate bench api --target "http://127.0.0.1:$port/orders" --requests "$requests" \
           --keys "$keys" --concurrency "$concurrency" --seed "$round" --server-pid "$pid" --json)
    echo "{\"round\":$round,\"run\":\"$run\",\"report\":$json}" >> "$results"
    stop
  done
done

python3 - "$results" "$requests" "$concurrency" <<'PY'
import json, sys, statistics
rows = [json.loads(line) for line in open(sys.argv[1])]
print(f"idempotency benchmark: {sys.argv[2]} POST /orders per run, C={sys.argv[3]}, {max(r['round'] for r in rows)} rounds")
print(f"{'round':>5} {'run':>7} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'CPU us/req':>10}  outcomes")
for r in rows:
    x = r["report"]
    print(f"{r['round']:>5} {r['run']:>7} {x['throughput']:>9.0f} {x['p50_ms']:>8.2f} {x['p99_ms']:>8.2f} {x['max_ms']:>8.2f} {x['server_cpu_us_per_request']:>10.1f}  {x['outcomes']}")
med = lambda run, k: statistics.median(r["report"][k] for r in rows if r["run"] == run)
for run in ("first", "replay"):
    print(f"{run:>7}: {med(run,'throughput')/med('bare','throughput'):.2f}x the bare handler's throughput, "
          f"p99 {med(run,'p99_ms'):.2f} ms vs {med('bare','p99_ms'):.2f} ms, "
          f"CPU {med(run,'server_cpu_us_per_request'):.1f} vs {med('bare','server_cpu_us_per_request'):.1f} us/request "
          f"({med(run,'server_cpu_us_per_request')/med('bare','server_cpu_us_per_request'):.2f}x)")
PY
