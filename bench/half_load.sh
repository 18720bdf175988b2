#!/usr/bin/env bash
# p99 latency at half of the maximum throughput, for the counter example: first the
# closed-loop maximum at C connections, then an open-loop run (`--rate`) at half of it,
# where every latency counts from the moment its request was due. ROUNDS times, each on a
# fresh database.
#
#   bench/half_load.sh [EVENTS] [CONCURRENCY] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
events=${1:-20000}
concurrency=${2:-64}
rounds=${3:-3}
cargo build --release --quiet --bin idemgate --example counter
bin=target/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export COUNTER_SECRET=$(printf 'ab%.0s' $(seq 32))

for round in $(seq "$rounds"); do
  start counter $bin/examples/counter serve --listen 127.0.0.1:0 --db "$work/max-$round.db"
  $bin/idemgate bench counter --target "http://127.0.0.1:$port/webhook" --events "$events" --redeliver 0.2 \
      --concurrency "$concurrency" --seed "$round" --json > "$work/max-$round.json"
  stop
  half=$(python3 -c "import json; print(json.load(open('$work/max-$round.json'))['throughput'] / 2)")
  start counter $bin/examples/counter serve --listen 127.0.0.1:0 --db "$work/half-$round.db"
  $bin/idemgate bench counter --target "http://127.0.0.1:$port/webhook" --events "$events" --redeliver 0.2 \
      --concurrency "$concurrency" --seed "$round" --rate "$half" --json > "$work/half-$round.json"
  stop
done

python3 - "$work" "$rounds" "$events" "$concurrency" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
print(f"counter: {sys.argv[3]} events (+20% redeliveries), C={sys.argv[4]}, {rounds} rounds")
print(f"{'round':>5} {'max req/s':>10} {'max p99':>8} {'half rate':>10} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7} {'max ms':>7} once")
p99s = []
for r in range(1, rounds + 1):
    top = json.load(open(f"{work}/max-{r}.json"))
    half = json.load(open(f"{work}/half-{r}.json"))
    p99s.append(half["p99_ms"])
    print(f"{r:>5} {top['throughput']:>10.0f} {top['p99_ms']:>8.2f} {half['throughput']:>10.0f} {half['p50_ms']:>7.2f} "
          f"{half['p90_ms']:>7.2f} {half['p99_ms']:>7.2f} {half['max_ms']:>7.2f} {half['exactly_once']}")
print(f"median p99 at half load: {statistics.median(p99s):.2f} ms")
PY
