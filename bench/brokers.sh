#!/usr/bin/env bash
# The gateway end to end (accept, store, the worker delivers) to each kind of destination:
# the bare HTTP sink, a RabbitMQ queue (publisher confirms) and a NATS JetStream stream
# (publish acks), one build, in rounds whose order rotates so that drift on a shared
# machine falls on every kind. The end-to-end rate is events / (first request .. last
# successful attempt), the attempts read from the gateway's /metrics; beside it the
# gateway's CPU time per event (utime + stime from /proc/<pid>/stat). Afterwards the queue
# and the stream of each round (made for it, deleted after it) are counted to check that
# every event arrived.
#
#   bench/brokers.sh [RELEASE_DIR] [EVENTS] [CONCURRENCY] [ROUNDS]
#
# RELEASE_DIR holds idemgate and examples/bare (default target/release):
#   cargo build --release --bin idemgate --example bare
# and examples/broker_setup is taken from it or from target/debug:
#   cargo build --example broker_setup
# The brokers are the machine's: BENCH_AMQP (amqp://guest:guest@127.0.0.1:5672/%2f) and
# BENCH_NATS (nats://127.0.0.1:4222).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
dir=$(cd "${1:-target/release}" && pwd)
events=${2:-20000}
concurrency=${3:-64}
rounds=${4:-3}
setup=$dir/examples/broker_setup
[ -x "$setup" ] || setup=target/debug/examples/broker_setup
for file in "$dir/idemgate" "$dir/examples/bare" "$setup"; do
  [ -x "$file" ] || { echo "$file is missing: build it first" >&2; exit 2; }
done
amqp=${BENCH_AMQP:-amqp://guest:guest@127.0.0.1:5672/%2f}
nats=${BENCH_NATS:-nats://127.0.0.1:4222}
work=$(mktemp -d)
name=""
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  if [ -n "$name" ]; then
    "$setup" amqp-delete "$amqp" "$name" 2>/dev/null || true
    "$setup" nats-delete "$nats" "$name" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
export BENCH_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=
tick=$(getconf CLK_TCK)

cpu() { awk -v tick="$tick" '{ print ($14 + $15) / tick }' "/proc/$1/stat"; }

# Successful attempts so far (2xx from HTTP, accepted from a broker), from /metrics.
delivered() {
  curl -s "http://127.0.0.1:$1/metrics" |
    awk '/^idemgate_attempts_total\{/ && /result="(2xx|accepted)"/ { n += $NF } END { printf "%d\n", n }'
}

# destination KIND SINK_PORT: the [destinations.sink] table for KIND.
destination() {
  case $1 in
    http) printf '[destinations.sink]\nurl = "http://127.0.0.1:%s/hook"\ntimeout = "5s"\n' "$2" ;;
    rabbitmq) printf '[destinations.sink]\nkind = "rabbitmq"\nurl = "%s"\nrouting_key = "%s"\ntimeout = "5s"\n' "$amqp" "$name" ;;
    nats) printf '[destinations.sink]\nkind = "nats"\nurl = "%s"\nsubject = "bench.%s"\ntimeout = "5s"\n' "$nats" "$name" ;;
  esac
}

run() {  # run KIND ROUND
  name="idemgate_bench_$$_$2"
  case $1 in
    rabbitmq) "$setup" amqp-declare "$amqp" "$name" ;;
    nats) "$setup" nats-create "$nats" "$name" "bench.$name" ;;
  esac
  start sink "$dir/examples/bare" 127.0.0.1:0
  local sink_pid=$pid sink_port=$port
  gateway_toml "$work/idemgate.toml" "path = \"$work/gateway-$1-$2.sqlite3\"" "$sink_port"
  # Keep the gateway's tables, replace its destination by KIND's.
  sed -i '/^\[destinations.sink\]/,$d' "$work/idemgate.toml"
  destination "$1" "$sink_port" >> "$work/idemgate.toml"
  IDEMGATE_LOG=warn start gateway "$dir/idemgate" serve --config "$work/idemgate.toml"
  local before; before=$(cpu "$pid")
  local started; started=$(date +%s.%N)
  local json; json=$("$dir/idemgate" bench webhooks --target "http://127.0.0.1:$port/in/bench" \
    --secret env:BENCH_SECRET --events "$events" --redeliver 0.2 --concurrency "$concurrency" --json)
  for _ in $(seq 30000); do
    [ "$(delivered "$port")" -ge "$events" ] && break
    sleep 0.01
  done
  local finished; finished=$(date +%s.%N)
  local after; after=$(cpu "$pid")
  stop
  local http_count; http_count=$(curl -s "http://127.0.0.1:$sink_port/count" || echo -1)
  kill "$sink_pid" 2>/dev/null || true
  wait "$sink_pid" 2>/dev/null || true
  local e2e; e2e=$(awk -v n="$events" -v s="$started" -v f="$finished" 'BEGIN { printf "%.3f", n / (f - s) }')
  local arrived
  case $1 in
    http) arrived=$http_count ;;
    rabbitmq) arrived=$("$setup" amqp-count "$amqp" "$name"); "$setup" amqp-delete "$amqp" "$name" ;;
    nats) arrived=$("$setup" nats-count "$nats" "$name"); "$setup" nats-delete "$nats" "$name" ;;
  esac
  name=""
  echo "{\"kind\":\"$1\",\"arrived\":$arrived,\"round\":$2,\"cpu\":$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.6f", a - b }'),\"e2e\":$e2e,\"report\":$json}"
}

results="$work/results.jsonl"
kinds=(http rabbitmq nats)
for round in $(seq "$rounds"); do
  for i in 0 1 2; do
    run "${kinds[$(( (i + round - 1) % 3 ))]}" "$round" >> "$results"
  done
done

python3 - "$results" "$events" "$concurrency" "$rounds" <<'PY'
import json, sys, statistics
rows = [json.loads(line) for line in open(sys.argv[1])]
events, conc, rounds = int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
print(f"{events} events (+20% redeliveries), C={conc}, {rounds} rounds, order rotating")
print(f"{'round':>5} {'kind':>9} {'accept/s':>9} {'e2e ev/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'CPU us/event':>12} {'arrived':>8}")
for r in rows:
    x = r["report"]
    r["per"] = 1e6 * r["cpu"] / events
    print(f"{r['round']:>5} {r['kind']:>9} {x['throughput']:>9.0f} {r['e2e']:>9.0f} {x['p50_ms']:>7.2f} {x['p99_ms']:>7.2f} {r['per']:>12.1f} {r['arrived']:>8}")
for kind in ("http", "rabbitmq", "nats"):
    med = lambda f: statistics.median(f(r) for r in rows if r["kind"] == kind)
    print(f"{kind}: median end to end {med(lambda r: r['e2e']):.0f} events/s, CPU {med(lambda r: r['per']):.1f} us per event")
print("every event arrived in every round" if all(r["arrived"] >= events for r in rows) else "SOME EVENTS DID NOT ARRIVE")
PY
