#!/usr/bin/env bash
# Builds idemgate's container image and smoke-tests it, as CI does (`.ci/run` calls this):
#
# 1. one container on SQLite, its data in a named volume, its port published on loopback:
#    the image's own health check passes, a signed event sent from the host is forwarded
#    to a destination on the host, `podman stop` drains and exits 0, and after `podman
#    start` the redelivery is a duplicate (the receipt survived in the volume) and nothing
#    is forwarded twice; the server runs as uid 10001, never root;
# 2. compose.yaml, run by podman-compose: two instances on the host network and one
#    PostgreSQL database; the same event sent to both is accepted once and a duplicate at
#    the other, and each of several events reaches the destination exactly once.
#
# Needs root (rootful podman); installs podman, runc and slirp4netns from Debian's
# packages and podman-compose from PyPI (Debian's 1.0.3 mistranslates network_mode: host
# and exec-form health checks) when missing. Uses IDEMGATE_BIN if set, else builds the
# dist binary. Needs PostgreSQL on 127.0.0.1:5432 (trust auth), as .ci/run ensures.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
case $target in /*) ;; *) target=$root/$target ;; esac
export CONTAINERS_CONF=$here/containers.conf

fail() {
  echo "FATAL: $*" >&2
  exit 1
}
[ "$(id -u)" = 0 ] || fail "packaging/container/test.sh runs rootful podman and needs root"
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v slirp4netns >/dev/null || missing+=(slirp4netns)
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi
compose_venv=$target/podman-compose-venv
if [ ! -x "$compose_venv/bin/podman-compose" ]; then
  echo "installing podman-compose from PyPI into $compose_venv"
  python3 -m venv "$compose_venv"
  "$compose_venv/bin/pip" install -q 'podman-compose==1.6.0'
fi
compose() { "$compose_venv/bin/podman-compose" -p idemgate-ci -f "$here/compose.yaml" "$@"; }

bin=${IDEMGATE_BIN:-}
if [ -z "$bin" ]; then
  cargo build --profile dist --locked --bin idemgate
  bin=$target/dist/idemgate
fi
image=localhost/idemgate:ci
state=$(mktemp -d)
single=idemgate-ci-single
volume=idemgate-ci-data
secret=idemgate-ci-app-secret
database=idemgate_container_ci
admin_db=postgres://postgres@127.0.0.1:5432/postgres
receiver_pid=
# What a run leaves behind, also one that was killed: removed before and after.
leftovers() {
  podman rm -f -t 0 "$single" >/dev/null 2>&1
  podman volume rm -f "$volume" >/dev/null 2>&1
  podman secret rm "$secret" >/dev/null 2>&1
  compose down -t 0 >/dev/null 2>&1
  psql "$admin_db" -qc "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1
  podman image prune -f >/dev/null 2>&1
}
cleanup() {
  set +e
  leftovers
  [ -n "$receiver_pid" ] && kill "$receiver_pid" 2>/dev/null
  rm -rf "$state"
}
trap cleanup EXIT
leftovers || true

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_healthy() {
  for _ in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$1/healthz" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  return 1
}
# The number of lines the receiver logged for one event id (0 when none).
forwarded() {
  local n
  n=$(grep -c " $1\$" "$state/received" 2>/dev/null) || true
  echo "${n:-0}"
}
wait_forwarded() {
  for _ in $(seq 1 150); do
    [ "$(forwarded "$1")" -ge 1 ] && return 0
    sleep 0.2
  done
  return 1
}
IDEMGATE_DEMO_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
IDEMGATE_APP_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
export IDEMGATE_DEMO_SECRET IDEMGATE_APP_SECRET
# One signed delivery from the host; prints the gateway's answer status ("accepted",
# "duplicate", ...).
deliver() {
  "$bin" send --scheme standard-webhooks --secret env:IDEMGATE_DEMO_SECRET --event-id "$2" \
    --max-attempts 1 --json -d "{\"type\":\"order.paid\",\"id\":\"$2\"}" "http://127.0.0.1:$1/in/demo" \
    | python3 -c 'import json, sys; print(json.loads(json.load(sys.stdin)["body"])["status"])'
}
expect() {
  [ "$2" = "$3" ] || fail "$1: expected $3, got $2"
  echo "$1: $2"
}

echo "-- the image (packaging/container/build.sh, FROM scratch)"
IDEMGATE_BIN=$bin bash "$here/build.sh" "$image"
[ "$(podman image inspect --format '{{.Config.User}}' "$image")" = 10001:10001 ] \
  || fail "the image does not run as 10001:10001"

receiver_port=$(free_port)
python3 "$here/receiver.py" "$receiver_port" "$state/received" &
receiver_pid=$!

echo "-- one container on SQLite, data in the volume $volume"
port=$(free_port)
podman volume create "$volume" >/dev/null
# The destination's secret reaches this container as a file (a podman secret, mounted at
# /run/secrets/NAME), the source's as an environment variable: both ways the user guide names
# (docs/guide/install.md, "The container image").
printf '%s' "$IDEMGATE_APP_SECRET" | podman secret create "$secret" - >/dev/null
# slirp4netns with allow_host_loopback: the container reaches the host's 127.0.0.1 as
# 10.0.2.2, and its published port listens on the host's loopback only.
run_single() {
  podman run -d --name "$single" --network slirp4netns:allow_host_loopback=true \
    -p "127.0.0.1:$port:8080" -v "$volume:/var/lib/idemgate" \
    -e IDEMGATE_DEMO_SECRET --secret "$secret" \
    -e "IDEMGATE_DESTINATIONS__APP__SECRET=file:/run/secrets/$secret" \
    -e "IDEMGATE_DESTINATIONS__APP__URL=http://10.0.2.2:$receiver_port/hook" "$image" >/dev/null
}
run_single
wait_healthy "$port" || { podman logs "$single" >&2; fail "the container did not answer /healthz"; }
podman healthcheck run "$single" 2>/dev/null || { podman logs "$single" >&2; fail "the image's health check failed"; }
echo "the image's health check passes"
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$(podman inspect --format '{{.State.Pid}}' "$single")/status")
expect "the server's uid" "$uid" 10001
expect "first delivery" "$(deliver "$port" evt-container-1)" accepted
wait_forwarded evt-container-1 || { podman logs "$single" >&2; fail "evt-container-1 was not forwarded"; }
echo "forwarded to the host's destination"
podman stop -t 30 "$single" >/dev/null
expect "exit code after podman stop" "$(podman inspect --format '{{.State.ExitCode}}' "$single")" 0
podman start "$single" >/dev/null
wait_healthy "$port" || { podman logs "$single" >&2; fail "the restarted container did not answer /healthz"; }
expect "redelivery after the restart" "$(deliver "$port" evt-container-1)" duplicate
sleep 1
expect "times evt-container-1 was forwarded" "$(forwarded evt-container-1)" 1
podman stop -t 30 "$single" >/dev/null
podman rm "$single" >/dev/null

echo "-- compose.yaml: two instances on the host network, one PostgreSQL"
psql "$admin_db" -v ON_ERROR_STOP=1 -qc "CREATE DATABASE $database" >/dev/null
export DATABASE_URL=postgres://postgres@127.0.0.1:5432/$database
export IDEMGATE_IMAGE=$image IDEMGATE_APP_URL=http://127.0.0.1:$receiver_port/hook
GATEWAY_A_PORT=$(free_port)
GATEWAY_B_PORT=$(free_port)
export GATEWAY_A_PORT GATEWAY_B_PORT
compose up -d >"$state/compose.log" 2>&1 || { cat "$state/compose.log" >&2; fail "podman-compose up failed"; }
for p in "$GATEWAY_A_PORT" "$GATEWAY_B_PORT"; do
  wait_healthy "$p" || { compose logs >&2 2>&1; fail "an instance on port $p did not answer /healthz"; }
done
expect "the event at instance a" "$(deliver "$GATEWAY_A_PORT" evt-shared)" accepted
expect "the same event at instance b" "$(deliver "$GATEWAY_B_PORT" evt-shared)" duplicate
events=10
for i in $(seq 1 $events); do
  a=$GATEWAY_A_PORT b=$GATEWAY_B_PORT
  if [ $((i % 2)) = 0 ]; then a=$GATEWAY_B_PORT b=$GATEWAY_A_PORT; fi
  [ "$(deliver "$a" "evt-pg-$i")" = accepted ] || fail "evt-pg-$i was not accepted"
  [ "$(deliver "$b" "evt-pg-$i")" = duplicate ] || fail "evt-pg-$i was not a duplicate at the other instance"
done
for id in evt-shared $(seq -f 'evt-pg-%g' 1 $events); do
  wait_forwarded "$id" || { compose logs >&2 2>&1; fail "$id was not forwarded"; }
done
sleep 1
for id in evt-shared $(seq -f 'evt-pg-%g' 1 $events); do
  [ "$(forwarded "$id")" = 1 ] || fail "$id was forwarded $(forwarded "$id") times"
done
echo "$((events + 1)) events, each accepted once across both instances and forwarded exactly once"
compose stop >/dev/null 2>&1
for service in gateway-a gateway-b; do
  code=$(podman inspect --format '{{.State.ExitCode}}' "idemgate-ci_${service}_1")
  expect "exit code of $service after stop" "$code" 0
done
echo "container image built and smoke-tested"
