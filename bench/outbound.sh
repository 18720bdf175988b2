#!/usr/bin/env bash
# The outbound API (Svix-compatible, /api/v1) end to end on SQLite and on PostgreSQL,
# alternating in one run (SQLite then PostgreSQL, then the other way round): one
# application with one endpoint on the bare sink (`POST /ids`, which keeps each
# delivery's webhook-id), then MESSAGES keyed publishes from `idemgate bench outbound`
# over CONCURRENCY keep-alive connections, 10 % of them repeats of an earlier publish with
# the same idempotency-key and body. Prints each round's publish rate, the time until the
# sink has every distinct message (the delivery rate), the gateway's CPU per distinct
# message over the whole run (/proc/<pid>/stat) and over the publishes alone, on
# PostgreSQL the server's own CPU per message (`pg_cpu` in lib.sh: the server must run on
# this machine; all of its work, other databases' included) and that of the gateway's own
# backends alone (`backends_cpu` below), and the checks: every key answered 202 once and replayed otherwise, the
# sink saw exactly the distinct messages' webhook-ids, and how many deliveries it got.
#
#   bench/outbound.sh [MESSAGES] [CONCURRENCY] [ROUNDS]
# PostgreSQL: $IDEMGATE_BENCH_POSTGRES (default postgres://postgres@127.0.0.1:5432/idemgate_bench),
# a fresh schema per round.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
messages=${1:-20000}
concurrency=${2:-64}
rounds=${3:-3}
repeat=0.1
distinct=$(awk -v n="$messages" -v r="$repeat" 'BEGIN { printf "%d", n - int(n * r + 0.5) }')
cargo build --release --quiet --bin idemgate --example bare
bin=${CARGO_TARGET_DIR:-$(pwd)/target}/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export BENCH_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=
export BENCH_API_TOKEN=bench-api-token-0123456789abcdef
export BENCH_SECRETS_KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
bench_database

# outbound_toml FILE STORE_LINE SINK_PORT: the bench gateway (lib.sh) with [api] on, one
# admin token, loopback endpoints allowed.
outbound_toml() {
  gateway_toml "$1" "$2" "$3"
  cat >> "$1" <<TOML
[api]
enabled = true
secrets_key = "env:BENCH_SECRETS_KEY"
allow_http = true
allow_networks = ["127.0.0.0/8"]
[api.tokens.bench]
token = "env:BENCH_API_TOKEN"
role = "admin"
TOML
}

# api METHOD PATH BODY: one call to the gateway's API; fails the run on a non-2xx answer.
api() {
  curl -sf -X "$1" "http://127.0.0.1:$port/api/v1$2" -H "authorization: Bearer $BENCH_API_TOKEN" \
    -H 'content-type: application/json' -d "$3" > /dev/null
}

# backends_cpu: "PID TICKS" for each live backend connected to the bench database (the
# gateway's pool): the server's CPU for this gateway alone, which `pg_cpu` cannot tell
# apart from other databases' work when the server is shared (background processes such
# as the WAL writer are left out).
backends_cpu() {
  psql "$pg" -qAtc "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()" |
    while read -r backend; do awk -v p="$backend" '{ print p, $14 + $15 }' "/proc/$backend/stat" 2>/dev/null || true; done
}

# outbound_e2e STORE_LINE: one run; prints one JSON object.
outbound_e2e() {
  start sink "$bin/examples/bare" 127.0.0.1:0
  local sink_pid=$pid sink_port=$port
  outbound_toml "$work/idemgate.toml" "$1" "$sink_port"
  IDEMGATE_LOG=warn start gateway "$bin/idemgate" serve --config "$work/idemgate.toml"
  api POST /app '{"name":"Bench","uid":"bench"}'
  api POST /app/bench/endpoint "{\"url\":\"http://127.0.0.1:$sink_port/ids\",\"uid\":\"sink\"}"
  backends_cpu > "$work/backends.before"
  local before; before=$(cpu "$pid")
  local started; started=$(date +%s.%N)
  local json; json=$("$bin/idemgate" bench outbound --target "http://127.0.0.1:$port/api/v1/app/bench/msg" \
    --token env:BENCH_API_TOKEN --messages "$messages" --repeat "$repeat" --concurrency "$concurrency" \
    --server-pid "$pid" --json)
  local published; published=$(date +%s.%N)
  for _ in $(seq 30000); do
    [ "$(curl -s "http://127.0.0.1:$sink_port/ids")" -ge "$distinct" ] && break
    sleep 0.01
  done
  local finished; finished=$(date +%s.%N)
  local after; after=$(cpu "$pid")
  backends_cpu > "$work/backends.after"
  local backends; backends=$(awk -v tick="$tick" 'NR == FNR { was[$1] = $2; next } { sum += $2 - was[$1] } END { printf "%.6f", sum / tick }' \
    "$work/backends.before" "$work/backends.after")
  # Anything delivered twice or late would show here: half a second more for stragglers.
  sleep 0.5
  local ids; ids=$(curl -s "http://127.0.0.1:$sink_port/ids")
  local deliveries; deliveries=$(curl -s "http://127.0.0.1:$sink_port/count")
  stop
  kill "$sink_pid" 2>/dev/null || true
  wait "$sink_pid" 2>/dev/null || true
  echo "{\"backends\":$backends,\"cpu\":$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.6f", a - b }'),\"seconds\":$(awk -v s="$started" -v f="$finished" 'BEGIN { printf "%.3f", f - s }'),\"publish_seconds\":$(awk -v s="$started" -v f="$published" 'BEGIN { printf "%.3f", f - s }'),\"ids\":$ids,\"deliveries\":$deliveries,\"report\":$json}"
}

results="$work/results.jsonl"
for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="sqlite postgres"; else order="postgres sqlite"; fi
  for store in $order; do
    if [ "$store" = sqlite ]; then
      line="path = \"$work/outbound-$round.sqlite3\""
    else
      schema="outbound_$$_$round"
      psql "$pg" -qc "CREATE SCHEMA $schema"
      line="url = \"$pg?options=-csearch_path%3D$schema\""
    fi
    server_before=$(pg_cpu "$pg")
    row=$(outbound_e2e "$line")
    server=$(awk -v a="$(pg_cpu "$pg")" -v b="$server_before" 'BEGIN { printf "%.6f", a - b }')
    [ "$store" = postgres ] || server=0
    echo "{\"round\":$round,\"store\":\"$store\",\"pg_cpu\":$server,${row#\{}" >> "$results"
    if [ "$store" = postgres ]; then psql "$pg" -qc "SET client_min_messages = warning; DROP SCHEMA $schema CASCADE"; fi
  done
done

python3 - "$results" "$messages" "$distinct" "$concurrency" <<'PY'
import json, sys, statistics
rows = [json.loads(line) for line in open(sys.argv[1])]
messages, distinct, concurrency = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
print(f"{messages} keyed publishes ({distinct} messages, {messages - distinct} repeats with the same key), "
      f"C={concurrency}, {max(r['round'] for r in rows)} rounds, order alternating; one endpoint on the bare sink")
print(f"{'round':>5} {'store':>8} {'publish/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'delivered/s':>11} "
      f"{'CPU us/msg':>10} {'publish CPU us/req':>18} {'PG server us/msg':>16} {'PG backends us/msg':>18}  checks")
ok = True
for r in rows:
    x = r["report"]
    r["publish"] = x["throughput"]
    r["delivered"] = distinct / r["seconds"]
    r["per"] = 1e6 * r["cpu"] / distinct
    r["pg_per"] = 1e6 * r["pg_cpu"] / distinct
    r["backends_per"] = 1e6 * r["backends"] / distinct
    server = (f"{r['pg_per']:>16.1f} {r['backends_per']:>18.1f}" if r["store"] == "postgres"
              else f"{'-':>16} {'-':>18}")
    checks = (f"keys {'ok' if x['exactly_once'] else 'FAILED'}, sink {r['ids']} ids"
              f"{'' if r['ids'] == distinct else ' (WRONG)'}, {r['deliveries']} deliveries; {x['outcomes']}")
    ok = ok and x["exactly_once"] and r["ids"] == distinct
    print(f"{r['round']:>5} {r['store']:>8} {r['publish']:>9.0f} {x['p50_ms']:>7.2f} {x['p99_ms']:>7.2f} "
          f"{r['delivered']:>11.0f} {r['per']:>10.1f} {x['server_cpu_us_per_request']:>18.1f} {server}  {checks}")
med = lambda store, key: statistics.median(r[key] for r in rows if r["store"] == store)
print(f"median publish: SQLite {med('sqlite', 'publish'):.0f}/s, PostgreSQL {med('postgres', 'publish'):.0f}/s; "
      f"delivered: SQLite {med('sqlite', 'delivered'):.0f}/s, PostgreSQL {med('postgres', 'delivered'):.0f}/s; "
      f"gateway CPU per message: SQLite {med('sqlite', 'per'):.1f} us, PostgreSQL {med('postgres', 'per'):.1f} us "
      f"(+ {med('postgres', 'pg_per'):.1f} us in the PostgreSQL server, {med('postgres', 'backends_per'):.1f} us "
      f"in the gateway's own backends)")
sys.exit(0 if ok else 1)
PY
