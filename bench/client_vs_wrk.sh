#!/usr/bin/env bash
# The load generator against wrk on the bare server (examples/bare.rs), alternating per
# round (bench then wrk, then wrk then bench), the same connections. Beside each rate: the
# server's CPU time per request (utime + stime from /proc/PID/stat), which drifts far less
# than throughput on a shared machine; what the generator itself costs shows as rate lost.
#
#   bench/client_vs_wrk.sh [REQUESTS] [CONNECTIONS] [ROUNDS] [WRK_SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
requests=${1:-200000}
connections=${2:-32}
rounds=${3:-3}
seconds=${4:-5}
command -v wrk > /dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 2; }
cargo build --release --quiet --bin idemgate --example bare
bin=target/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
tick=$(getconf CLK_TCK)
cpu() { awk -v tick="$tick" '{ sub(/.*\) /, ""); print ($12 + $13) / tick }' "/proc/$1/stat"; }

# The same request as `idemgate bench api --keys none`: POST, a small JSON body.
cat > "$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"qty":5}'
wrk.headers["Content-Type"] = "application/json"
done = function(summary, latency, requests)
  io.write(string.format("WRK %d %f %f %f %d\n", summary.requests, summary.duration / 1e6,
    latency:percentile(50) / 1e3, latency:percentile(99) / 1e3, summary.errors.status + summary.errors.connect
    + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
LUA

results="$work/results.jsonl"
bench_run() {  # ROUND
  start bare $bin/examples/bare 127.0.0.1:0
  local json; json=$($bin/idemgate bench api --target "http://127.0.0.1:$port/orders" --keys none \
    --requests "$requests" --concurrency "$connections" --seed "$1" --server-pid "$pid" --json)
  stop
  echo "{\"round\":$1,\"client\":\"bench\",\"report\":$json}" >> "$results"
}
wrk_run() {  # ROUND
  start bare $bin/examples/bare 127.0.0.1:0
  local before; before=$(cpu "$pid")
  local line; line=$(wrk -t 2 -c "$connections" -d "${seconds}s" -s "$work/post.lua" "http://127.0.0.1:$port/orders" | grep '^WRK')
  local after; after=$(cpu "$pid")
  stop
  read -r _ n secs p50 p99 errors <<< "$line"
  python3 -c "import json,sys; n,s,p50,p99,e,b,a=sys.argv[1:]; n=int(n); print(json.dumps({'round':$1,'client':'wrk','report':{
    'requests':n,'throughput':n/float(s),'p50_ms':float(p50),'p99_ms':float(p99),'errors':int(e),
    'server_cpu_us_per_request':(float(a)-float(b))*1e6/n}}))" "$n" "$secs" "$p50" "$p99" "$errors" "$before" "$after" >> "$results"
}

for round in $(seq "$rounds"); do
  if [ $((round % 2)) = 1 ]; then bench_run "$round"; wrk_run "$round"; else wrk_run "$round"; bench_run "$round"; fi
done

python3 - "$results" "$connections" <<'PY'
import json, sys, statistics
rows = [json.loads(line) for line in open(sys.argv[1])]
print(f"bare server, {sys.argv[2]} connections: idemgate bench vs wrk -t 2, {max(r['round'] for r in rows)} rounds")
print(f"{'round':>5} {'client':>6} {'requests':>9} {'req/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'CPU us/req':>10}")
for r in rows:
    x = r["report"]
    print(f"{r['round']:>5} {r['client']:>6} {x['requests']:>9} {x['throughput']:>9.0f} {x['p50_ms']:>7.2f} {x['p99_ms']:>7.2f} "
          f"{x['server_cpu_us_per_request']:>10.1f}")
med = lambda c, k: statistics.median(r["report"][k] for r in rows if r["client"] == c)
print(f"medians: bench {med('bench','throughput'):.0f} req/s, wrk {med('wrk','throughput'):.0f} req/s, "
      f"bench/wrk = {100*med('bench','throughput')/med('wrk','throughput'):.0f} %; server CPU "
      f"{med('bench','server_cpu_us_per_request'):.1f} vs {med('wrk','server_cpu_us_per_request'):.1f} us/request")
PY
