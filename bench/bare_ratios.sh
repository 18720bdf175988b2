#!/usr/bin/env bash
# CPU per request next to the bare server, alternating in one run: the bare server
# (examples/bare.rs), the counter example, and the gateway end to end on SQLite (accept,
# store, the worker forwards to the bare sink). Each is driven by the same `idemgate bench`
# binary; each figure is the server's utime + stime from /proc/<pid>/stat over the run,
# divided by requests (bare, counter) or by events (gateway: the whole process until the
# sink has every event). Prints each round, then the medians as multiples of bare, with
# the counter's time split by thread (the runtime's workers, the SQLite writer).
#
#   bench/bare_ratios.sh [EVENTS] [CONCURRENCY] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
events=${1:-20000}
concurrency=${2:-64}
rounds=${3:-5}
cargo build --release --quiet --bin idemgate --example counter --example bare
bin=${CARGO_TARGET_DIR:-$(pwd)/target}/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export COUNTER_SECRET=$(printf 'ab%.0s' $(seq 32))
export BENCH_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=

results="$work/results.jsonl"
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="bare counter gateway"; else order="gateway counter bare"; fi
  for target in $order; do
    case $target in
      bare|counter)
        if [ "$target" = bare ]; then
          start bare "$bin/examples/bare" 127.0.0.1:0
        else
          start counter "$bin/examples/counter" serve --listen 127.0.0.1:0 --db "$work/counter-$round.db"
        fi
        # bare answers every redelivery "applied", so its exactly-once check fails by design.
        json=$("$bin/idemgate" bench counter --target "http://127.0.0.1:$port/webhook" --events "$events" \
               --redeliver 0.2 --concurrency "$concurrency" --seed "$round" --server-pid "$pid" --json || true)
        stop
        python3 -c 'import json,sys; r=json.loads(sys.argv[3]); print(json.dumps({"round":int(sys.argv[1]),"target":sys.argv[2],
          "rate":r["throughput"],"us":r["server_cpu_us_per_request"],"threads":r["server_cpu_us_per_request_by_thread"],
          "exactly_once":r["exactly_once"]}))' "$round" "$target" "$json" >> "$results"
        ;;
      gateway)
        row=$(gateway_e2e "$bin/idemgate" "$bin" "path = \"$work/gateway-$round.sqlite3\"")
        python3 -c 'import json,sys; r=json.loads(sys.argv[2]); n=int(sys.argv[3]); print(json.dumps({"round":int(sys.argv[1]),"target":"gateway",
          "rate":r["e2e"],"us":1e6*r["cpu"]/n,"threads":{},"exactly_once":r["report"]["exactly_once"]}))' "$round" "$row" "$events" >> "$results"
        ;;
    esac
  done
done

python3 - "$results" "$events" "$concurrency" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
print(f"{sys.argv[2]} events (+20% redeliveries), C={sys.argv[3]}, {max(r['round'] for r in rows)} rounds, order alternating")
print(f"{'round':>5} {'target':>8} {'rate/s':>8} {'CPU us':>8}  by thread / exactly once")
for r in rows:
    threads = ", ".join(f"{k} {v}" for k, v in r["threads"].items())
    print(f"{r['round']:>5} {r['target']:>8} {r['rate']:>8.0f} {r['us']:>8.1f}  {threads} {r['exactly_once']}")
med = lambda t: statistics.median(r["us"] for r in rows if r["target"] == t)
bare = med("bare")
print(f"median CPU: bare {bare:.1f} us/request; counter {med('counter'):.1f} us/request = {med('counter') / bare:.2f}x bare; "
      f"gateway end to end {med('gateway'):.1f} us/event = {med('gateway') / bare:.2f}x bare")
for name in sorted({k for r in rows if r["target"] == "counter" for k in r["threads"]}):
    print(f"  counter, thread {name}: median {statistics.median(r['threads'].get(name, 0) for r in rows if r['target'] == 'counter'):.1f} us/request")
PY
