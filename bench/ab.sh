#!/usr/bin/env bash
# A/B of two builds on the two workloads that matter most: the counter example (accept,
# apply, commit, answer) and the gateway end to end (accept, store, worker forwards to the
# bare sink). Rounds alternate the order (A then B, then B then A) so drift on a shared
# machine falls on both sides. Beside each rate it prints the server's CPU time per request
# (utime + stime from /proc/<pid>/stat), which drifts far less than throughput.
#
#   bench/ab.sh A_DIR B_DIR [EVENTS] [CONCURRENCY] [ROUNDS]
#
# A_DIR and B_DIR are release target dirs (each holding idemgate, examples/counter and
# examples/bare), e.g. a worktree of the older commit built with
#   cargo build --release --bin idemgate --example counter --example bare
# The load generator and the sink are always B's, so only the server differs.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
[ $# -ge 2 ] || { echo "usage: bench/ab.sh A_DIR B_DIR [EVENTS] [CONCURRENCY] [ROUNDS]" >&2; exit 2; }
a=$(cd "$1" && pwd)
b=$(cd "$2" && pwd)
events=${3:-20000}
concurrency=${4:-64}
rounds=${5:-3}
for dir in "$a" "$b"; do
  for file in idemgate examples/counter examples/bare; do
    [ -x "$dir/$file" ] || { echo "$dir/$file is missing: build it first" >&2; exit 2; }
  done
done
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export COUNTER_SECRET=$(printf 'ab%.0s' $(seq 32))
export BENCH_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=
counter() {  # counter DIR ROUND
  start counter "$1/examples/counter" serve --listen 127.0.0.1:0 --db "$work/counter-$2-$RANDOM.db"
  local before; before=$(cpu "$pid")
  local json; json=$("$b/idemgate" bench counter --target "http://127.0.0.1:$port/webhook" \
    --events "$events" --redeliver 0.2 --concurrency "$concurrency" --seed "$2" --json)
  local after; after=$(cpu "$pid")
  stop
  echo "{\"workload\":\"counter\",\"cpu\":$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.6f", a - b }'),\"report\":$json}"
}

gateway() {  # gateway DIR ROUND
  gateway_e2e "$1/idemgate" "$b" "path = \"$work/gateway-$2-$RANDOM.sqlite3\""
}

results="$work/results.jsonl"
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="A B"; else order="B A"; fi
  for workload in counter gateway; do
    for side in $order; do
      if [ "$side" = A ]; then dir=$a; else dir=$b; fi
      row=$($workload "$dir" "$round")
      echo "{\"round\":$round,\"side\":\"$side\",${row#\{}" >> "$results"
    done
  done
done

python3 - "$results" "$events" "$concurrency" "$a" "$b" <<'PY'
import json, sys, statistics
rows = [json.loads(line) for line in open(sys.argv[1])]
events, conc = int(sys.argv[2]), sys.argv[3]
print(f"A = {sys.argv[4]}\nB = {sys.argv[5]}")
print(f"{events} events (+20% redeliveries), C={conc}, {max(r['round'] for r in rows)} rounds, order alternating")
print(f"{'round':>5} {'workload':>8} {'side':>4} {'req/s':>8} {'e2e ev/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'CPU us/req':>10}  exactly once")
for r in rows:
    x = r["report"]
    per = 1e6 * r["cpu"] / x["requests"]
    r["per"] = per
    e2e = f"{r['e2e']:.0f}" if "e2e" in r else "-"
    print(f"{r['round']:>5} {r['workload']:>8} {r['side']:>4} {x['throughput']:>8.0f} {e2e:>9} {x['p50_ms']:>7.2f} {x['p99_ms']:>7.2f} {per:>10.1f}  {x['exactly_once']}")
for w in ("counter", "gateway"):
    med = lambda side, f: statistics.median(f(r) for r in rows if r["workload"] == w and r["side"] == side)
    rate = lambda r: r["report"]["throughput"]
    cpu = lambda r: r["per"]
    line = (f"{w}: median req/s A {med('A', rate):.0f}, B {med('B', rate):.0f} (B/A {med('B', rate)/med('A', rate):.2f}); "
            f"CPU per request A {med('A', cpu):.1f} us, B {med('B', cpu):.1f} us (B/A {med('B', cpu)/med('A', cpu):.2f})")
    if w == "gateway":
        e2e = lambda r: r["e2e"]
        line += f"; end to end A {med('A', e2e):.0f}/s, B {med('B', e2e):.0f}/s"
    print(line)
PY
