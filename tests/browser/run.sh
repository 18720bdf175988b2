#!/usr/bin/env bash
# The browser test: starts idemgate with the dashboard (two dead jobs and a conflict) and the
# outbound API with its customer portal (two applications seeded through /api/v1), then
# drives two journeys in headless Chromium (Debian's package, installed here if missing):
# the operator's in the dashboard (dashboard.mjs) and a customer's in the portal
# (portal.mjs), checking every page with axe-core (a serious or critical violation fails).
# Full-page screenshots of each page at 1280 px and 390 px land in docs/screenshots/
# (SCREENSHOTS=dir for another folder). Exits non-zero when a journey fails.
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
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
dest_port=$(free_port)
# The public listener's port is chosen up front: the portal's links start with
# [api] public_url, which must be the address the browser opens.
public_port=$(free_port)
# A port nobody listens on: the second application's endpoint, failing, for the dashboard.
dead_port=$(free_port)
export ADMIN_TOKEN=browser-test-admin-token
export VIEWER_TOKEN=browser-test-viewer-token
export HOOK_SECRET=whsec_aWRlbWdhdGUtc2FtcGxlLXNlY3JldC0zMi1ieXRlcyE=
export API_ADMIN_TOKEN=browser-test-api-admin-token
export API_SECRETS_KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
cat > "$work/idemgate.toml" <<TOML
[server]
listen = "127.0.0.1:$public_port"
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
[api]
enabled = true
secrets_key = "env:API_SECRETS_KEY"
# The customer's endpoint is the test's recording server on loopback.
allow_http = true
allow_networks = ["127.0.0.0/8"]
public_url = "http://127.0.0.1:$public_port"
[api.tokens.provider]
token = "env:API_ADMIN_TOKEN"
role = "admin"
# No logo_url: it must be https, and the test reaches nothing outside this machine.
[api.portal]
name = "Acme Webhooks"
accent = "#0b6e4f"
TOML
touch "$work/out"
$bin serve --config "$work/idemgate.toml" > "$work/out" 2> "$work/err" &
for _ in $(seq 100); do [ "$(wc -l < "$work/out")" -ge 2 ] && break; sleep 0.1; done
gateway=$(sed -n 's/^listening on //p' "$work/out")
admin=$(sed -n 's/^admin listening on //p' "$work/out")
[ -n "$gateway" ] && [ -n "$admin" ] || { cat "$work/err" >&2; exit 1; }
[ "$gateway" = "127.0.0.1:$public_port" ] || { echo "browser test: listening on $gateway, not $public_port" >&2; exit 1; }
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

# The sending side, through /api/v1 as a provider would: the customer's application (no
# endpoint yet), two event types with schemas and examples, and a second application with
# an endpoint and a message, whose ids the customer must not reach.
api() { # METHOD PATH [JSON]: the answer's body; fails on a status other than 2xx.
  curl -sS --fail-with-body -X "$1" "http://$gateway/api/v1$2" -H "authorization: Bearer $API_ADMIN_TOKEN" \
      -H 'content-type: application/json' ${3:+--data "$3"}
}
field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
api POST /app '{"name":"Globex Corporation","uid":"globex"}' > /dev/null
api POST /event-type '{"name":"invoice.paid","description":"An invoice was paid in full.","schemas":{"1":{
  "type":"object","required":["invoice","amount","currency"],"properties":{"invoice":{"type":"string"},
  "amount":{"type":"integer","minimum":0},"currency":{"type":"string","minLength":3,"maxLength":3}},
  "examples":[{"invoice":"in_1001","amount":4200,"currency":"EUR"}]}}}' > /dev/null
api POST /event-type '{"name":"customer.created","description":"A customer signed up.","schemas":{"1":{
  "type":"object","required":["customer"],"properties":{"customer":{"type":"object","properties":{
  "id":{"type":"string"},"email":{"type":"string"}}}},
  "examples":[{"customer":{"id":"cus_42","email":"ada@example.com"}}]}}}' > /dev/null
other_app=$(api POST /app '{"name":"Initech","uid":"initech"}' | field id)
other_endpoint=$(api POST /app/initech/endpoint "{\"url\":\"http://127.0.0.1:$dead_port/hook\",
  \"description\":\"Initech's receiver\"}" | field id)
other_message=$(api POST /app/initech/msg '{"eventType":"invoice.paid","eventId":"evt_initech_1",
  "payload":{"invoice":"in_2002","amount":990,"currency":"USD"}}' | field id)

ADMIN_URL="http://$admin" GATEWAY_URL="http://$gateway" DEST_PORT=$dest_port \
  PORTAL_APP=globex OTHER_APP=$other_app OTHER_ENDPOINT=$other_endpoint OTHER_MESSAGE=$other_message \
  node tests/browser/main.mjs
