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
