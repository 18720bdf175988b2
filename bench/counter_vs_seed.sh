#!/usr/bin/env bash
# The counter benchmark, side by side in one run on one machine: the seed's own Python
# receiver, idemgate's counter example, and a bare hyper server answering 200 without a
# store (the ceiling HTTP alone allows). Same N, same C, alternating, ROUNDS times, each
# server started on a fresh database per round.
#
#   SEED_COUNTER=/path/to/seed_counter.py bench/counter_vs_seed.sh [EVENTS] [CONCURRENCY] [ROUNDS]
#
# The seed's receiver is not part of this repository: BENCHMARKS.md says where it comes
# from. SEED_COUNTER names it (a Python script speaking docs/counter-contract.md).
set -euo pipefail
if [[ -z ${SEED_COUNTER:-} ]]; then
  echo "bench/counter_vs_seed.sh: set SEED_COUNTER to the seed's Python receiver (seed_counter.py); see BENCHMARKS.md" >&2
  exit 2
fi
if [[ ! -f $SEED_COUNTER ]]; then
  echo "bench/counter_vs_seed.sh: SEED_COUNTER=$SEED_COUNTER is not a file" >&2
  exit 2
fi
ref=$(realpath "$SEED_COUNTER")
cd "$(dirname "$0")/.."
source bench/lib.sh
events=${1:-10000}
concurrency=${2:-64}
rounds=${3:-3}
seed_events=$(( events / 10 ))   # the seed receiver is slow: a tenth of the events, same C
cargo build --release --quiet --bin idemgate --example counter --example bare
bin=target/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export COUNTER_SECRET=$(printf 'ab%.0s' $(seq 32))


results="$work/results.jsonl"
for round in $(seq "$rounds"); do
  for target in seed counter bare; do
    case $target in
      seed)    start seed python3 "$ref" serve --listen 127.0.0.1:0 --db "$work/seed-$round.db"; n=$seed_events ;;
      counter) start counter $bin/examples/counter serve --listen 127.0.0.1:0 --db "$work/counter-$round.db"; n=$events ;;
      bare)    start bare $bin/examples/bare 127.0.0.1:0; n=$events ;;
    esac
    json=$($bin/idemgate bench counter --target "http://127.0.0.1:$port/webhook" --events "$n" \
           --redeliver 0.2 --concurrency "$concurrency" --seed "$round" --server-pid "$pid" --json || true)
    echo "{\"round\":$round,\"target\":\"$target\",\"report\":$json}" >> "$results"
    stop
  done
done

python3 - "$results" "$events" "$concurrency" <<'PY'
import json, sys, statistics
rows = [json.loads(line) for line in open(sys.argv[1])]
print(f"counter benchmark: {sys.argv[2]} events (+20% redeliveries), C={sys.argv[3]}, {max(r['round'] for r in rows)} rounds")
print(f"{'round':>5} {'target':>8} {'req/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'CPU us/req':>10}  outcomes / exactly once")
for r in rows:
    x = r["report"]
    print(f"{r['round']:>5} {r['target']:>8} {x['throughput']:>10.0f} {x['p50_ms']:>8.2f} {x['p99_ms']:>8.2f} {x['max_ms']:>8.2f} {x.get('server_cpu_us_per_request') or 0:>10.1f}  {x['outcomes']} {x['exactly_once']}")
med = lambda t, k: statistics.median(r["report"][k] for r in rows if r["target"] == t)
print(f"median throughput: counter/seed = {med('counter','throughput')/med('seed','throughput'):.1f}x, "
      f"counter/bare = {100*med('counter','throughput')/med('bare','throughput'):.0f}%")
print(f"median p99: seed/counter = {med('seed','p99_ms')/med('counter','p99_ms'):.1f}x lower for the counter")
PY
