#!/usr/bin/env bash
# The dashboard's browser test: starts idemgate with two dead jobs and a conflict, then drives the page in
# headless Chromium (Debian's package, installed here if missing), checking every page with axe-core
# (a serious or critical violation fails). Full-page screenshots of each page at 1280 px and 390 px
# land in docs/screenshots/ (SCREENSHOTS=dir for another folder).
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v chromium >/dev/null; then
  echo "== installing Debian's chromium for the browser test"
  apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
command -v chromium >/dev/null || { echo "browser test: chromium is not available" >&2; exit 1; }
(cd tests/browser && npm ci --no-audit --no-fund --silent)
cargo build --quiet --bin idemgate
bin=${CARGO_TARGET_DIR:-target}/debug/idemgate

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
dest_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export ADMIN_TOKEN=browser-test-admin-token
export VIEWER_TOKEN=browser-test-viewer-token
export HOOK_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=
cat > "$work/idemgate.toml" <<TOML
[server]
listen = "127.0.0.1:0"
[store]
path = "$work/store.sqlite3"
[worker]
poll_interval = "50ms"
[admin]
listen = "127.0.0.1:0"
token = "env:ADMIN_TOKEN"
[admin.tokens.viewer]
token = "env:VIEWER_TOKEN"
role = "read"
[sources.hooks]
scheme = "standard-webhooks"
secrets = ["env:HOOK_SECRET"]
destinations = ["app"]
event_type = "/type"
forward_headers = ["x-trace"]
[destinations.app]
url = "http://127.0.0.1:$dest_port/hook"
# The test's receiver answers after 2 s, so the latency chart's scale reads four digits.
timeout = "10s"
retry_schedule = []
TOML
touch "$work/out"
$bin serve --config "$work/idemgate.toml" > "$work/out" 2> "$work/err" &
for _ in $(seq 100); do [ "$(wc -l < "$work/out")" -ge 2 ] && break; sleep 0.1; done
gateway=$(sed -n 's/^listening on //p' "$work/out")
admin=$(sed -n 's/^admin listening on //p' "$work/out")
[ -n "$gateway" ] && [ -n "$admin" ] || { cat "$work/err" >&2; exit 1; }
$bin send "http://$gateway/in/hooks" --scheme standard-webhooks --secret env:HOOK_SECRET \
    --event-id msg_browser -H 'X-Trace: browser-1' -d '{"type":"t","data":{"id":7,"tags":["a","<b>"]}}' > /dev/null
# The same id with other bytes: a conflict (409), for the rejections page.
$bin send "http://$gateway/in/hooks" --scheme standard-webhooks --secret env:HOOK_SECRET \
    --event-id msg_browser -d '{"type":"t","other":true}' > /dev/null 2>&1 || true
# A second event, dead too, for the destination's "Replay all dead jobs".
$bin send "http://$gateway/in/hooks" --scheme standard-webhooks --secret env:HOOK_SECRET \
    --event-id msg_other -d '{"type":"t","data":{"id":8}}' > /dev/null
for _ in $(seq 100); do
  dead=$($bin events list --config "$work/idemgate.toml" --state dead --json)
  grep -q msg_browser <<< "$dead" && grep -q msg_other <<< "$dead" && break
  sleep 0.1
done
ADMIN_URL="http://$admin" GATEWAY_URL="http://$gateway" DEST_PORT=$dest_port node tests/browser/dashboard.mjs
