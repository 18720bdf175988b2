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
