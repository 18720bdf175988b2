# Shared by the bench scripts: start a server that prints `listening on HOST:PORT` first.
# start NAME COMMAND...  sets $port and $pid; the output is kept in $work/NAME.out.
start() {
  local name=$1
  shift
  : > "$work/$name.out"
  "$@" > "$work/$name.out" 2> "$work/$name.err" &
  pid=$!
  for _ in $(seq 100); do grep -q listening "$work/$name.out" 2>/dev/null && break; sleep 0.1; done
  port=$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$work/$name.out" | head -1)
  [ -n "$port" ] || { echo "$name did not start:" >&2; cat "$work/$name.err" >&2; exit 1; }
}

stop() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# gateway_toml FILE STORE_LINE SINK_PORT: the gateway the bench scripts serve, one source
# (Standard Webhooks, $BENCH_SECRET) forwarding to the sink; STORE_LINE is the [store] line.
gateway_toml() {
  cat > "$1" <<TOML
[server]
listen = "127.0.0.1:0"
[store]
$2
[worker]
batch = 256
poll_interval = "20ms"
[sources.bench]
scheme = "standard-webhooks"
secrets = ["env:BENCH_SECRET"]
destinations = ["sink"]
[destinations.sink]
url = "http://127.0.0.1:$3/hook"
timeout = "5s"
TOML
}

tick=$(getconf CLK_TCK)

# CPU seconds (user + system) the process has used so far.
cpu() { awk -v tick="$tick" '{ print ($14 + $15) / tick }' "/proc/$1/stat"; }

# release_binaries [CARGO_ARGS...]: sets $bin to $BIN when it is set, else builds the
# release `idemgate` (with CARGO_ARGS, e.g. `--example bare`) and uses target/release.
release_binaries() {
  if [ -z "${BIN:-}" ]; then
    cargo build --release --quiet --bin idemgate "$@"
    BIN=${CARGO_TARGET_DIR:-$(pwd)/target}/release
  fi
  bin=$BIN
}

# bench_database: sets $pg to the benchmarks' PostgreSQL database ($IDEMGATE_BENCH_POSTGRES,
# by default idemgate_bench on the local server) and creates it if it is missing.
bench_database() {
  pg=${IDEMGATE_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432/idemgate_bench}
  psql "${pg%/*}/postgres" -qAtc "SELECT 1 FROM pg_database WHERE datname = '${pg##*/}'" | grep -q 1 \
    || psql "${pg%/*}/postgres" -qc "CREATE DATABASE ${pg##*/}"
}

# pg_cpu URL: CPU seconds the local PostgreSQL server behind URL has used so far: the
# postmaster's own, its ended children's (the backends of connections closed since it
# started) and its live children's. Read after the gateway has stopped, so that its
# backends have ended and are counted.
pg_cpu() {
  local dir postmaster
  dir=$(psql "$1" -qAtc "SHOW data_directory")
  postmaster=$(head -1 "$dir/postmaster.pid")
  sleep 0.5
  {
    awk '{ print $14 + $15 + $16 + $17 }' "/proc/$postmaster/stat"
    for child in $(pgrep -P "$postmaster"); do awk '{ print $14 + $15 }' "/proc/$child/stat" 2>/dev/null || true; done
  } | awk -v tick="$tick" '{ sum += $1 } END { print sum / tick }'
}

# gateway_e2e IDEMGATE LOADGEN_DIR STORE_LINE: one end-to-end run of `serve` (built
# IDEMGATE) on the store STORE_LINE, $events signed events plus 20 % redeliveries at
# $concurrency from LOADGEN_DIR's `idemgate bench`, until the sink (LOADGEN_DIR's
# examples/bare) has every event. Prints one JSON object: the gateway's CPU seconds
# over the run, the end-to-end rate and the load generator's report.
gateway_e2e() {
  local server=$1 loadgen=$2 store_line=$3
  start sink "$loadgen/examples/bare" 127.0.0.1:0
  local sink_pid=$pid sink_port=$port
  gateway_toml "$work/idemgate.toml" "$store_line" "$sink_port"
  IDEMGATE_LOG=warn start gateway "$server" serve --config "$work/idemgate.toml"
  local before; before=$(cpu "$pid")
  local started; started=$(date +%s.%N)
  local json; json=$("$loadgen/idemgate" bench webhooks --target "http://127.0.0.1:$port/in/bench" \
    --secret env:BENCH_SECRET --events "$events" --redeliver 0.2 --concurrency "$concurrency" \
    ${BENCH_SEED:+--seed "$BENCH_SEED"} --json)
  for _ in $(seq 30000); do
    [ "$(curl -s "http://127.0.0.1:$sink_port/count")" -ge "$events" ] && break
    sleep 0.01
  done
  local finished; finished=$(date +%s.%N)
  local after; after=$(cpu "$pid")
  stop
  kill "$sink_pid" 2>/dev/null || true
  wait "$sink_pid" 2>/dev/null || true
  local e2e; e2e=$(awk -v n="$events" -v s="$started" -v f="$finished" 'BEGIN { printf "%.3f", n / (f - s) }')
  echo "{\"workload\":\"gateway\",\"cpu\":$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.6f", a - b }'),\"e2e\":$e2e,\"report\":$json}"
}
