#!/usr/bin/env bash
# p99 latency at half of the maximum throughput, for the counter example: first the
# closed-loop maximum at C connections, then an open-loop run (`--rate`) at half of it,
# where every latency counts from the moment its request was due. ROUNDS times, each on a
# fresh database.
#
#   bench/half_load.sh [EVENTS] [CONCURRENCY] [ROUNDS]
#   BASELINE=path/to/other/counter bench/half_load.sh ...   # A/B: both binaries, alternating
#   PIN=1 bench/half_load.sh ...   # server on core 0, load generator on core 1 (taskset)
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

server=() client=()
if [ -n "${PIN:-}" ]; then server=(taskset -c 0) client=(taskset -c 1); fi
labels="current"
[ -n "${BASELINE:-}" ] && labels="current baseline"
for round in $(seq "$rounds"); do
  for label in $labels; do
    counter=$bin/examples/counter
    [ "$label" = baseline ] && counter=$BASELINE
    start counter "${server[@]}" "$counter" serve --listen 127.0.0.1:0 --db "$work/$label-max-$round.db"
    "${client[@]}" $bin/idemgate bench counter --target "http://127.0.0.1:$port/webhook" --events "$events" --redeliver 0.2 \
        --concurrency "$concurrency" --seed "$round" --server-pid "$pid" --json > "$work/$label-max-$round.json"
    stop
    half=$(python3 -c "import json; print(json.load(open('$work/$label-max-$round.json'))['throughput'] / 2)")
    start counter "${server[@]}" "$counter" serve --listen 127.0.0.1:0 --db "$work/$label-half-$round.db"
    "${client[@]}" $bin/idemgate bench counter --target "http://127.0.0.1:$port/webhook" --events "$events" --redeliver 0.2 \
        --concurrency "$concurrency" --seed "$round" --rate "$half" --server-pid "$pid" --json > "$work/$label-half-$round.json"
    stop
  done
done

python3 - "$work" "$rounds" "$events" "$concurrency" $labels <<'PY'
import json, statistics, sys
work, rounds, labels = sys.argv[1], int(sys.argv[2]), sys.argv[5:]
print(f"counter: {sys.argv[3]} events (+20% redeliveries), C={sys.argv[4]}, {rounds} rounds")
print(f"{'binary':>8} {'round':>5} {'max req/s':>10} {'max p99':>8} {'half rate':>10} {'p50 ms':>7} {'p90 ms':>7} "
      f"{'p99 ms':>7} {'max ms':>7} {'late p99':>8} {'svc p99':>8} once")
for label in labels:
    p99s, tops, svc = [], [], []
    for r in range(1, rounds + 1):
        top = json.load(open(f"{work}/{label}-max-{r}.json"))
        half = json.load(open(f"{work}/{label}-half-{r}.json"))
        p99s.append(half["p99_ms"])
        svc.append(half.get("service_p99_ms", half["p99_ms"]))
        tops.append(top["throughput"])
        print(f"{label:>8} {r:>5} {top['throughput']:>10.0f} {top['p99_ms']:>8.2f} {half['throughput']:>10.0f} "
              f"{half['p50_ms']:>7.2f} {half['p90_ms']:>7.2f} {half['p99_ms']:>7.2f} {half['max_ms']:>7.2f} "
              f"{half.get('late_p99_ms', 0):>8.2f} {half.get('service_p99_ms', 0):>8.2f} {half['exactly_once']}")
    print(f"{label:>8} median: max {statistics.median(tops):.0f} req/s, p99 at half load {statistics.median(p99s):.2f} ms "
          f"(from the due time; service p99 {statistics.median(svc):.2f} ms, from the actual send)")
PY
