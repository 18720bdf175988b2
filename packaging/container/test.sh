#!/usr/bin/env bash
# Builds idemgate's container image and smoke-tests it, as CI does (`.ci/run` calls this):
#
# 1. one container on SQLite, its data in a named volume, its port published on loopback:
#    the image's own health check passes, a signed event sent from the host is forwarded
#    to a destination on the host, `podman stop` drains and exits 0, and after `podman
#    start` the redelivery is a duplicate (the receipt survived in the volume) and nothing
#    is forwarded twice; the server runs as uid 10001, never root; the admin API answers
#    through the published port 9090 with the README's variables (a token and the plaintext
#    opt-in; a token and TLS from podman secrets in a second container), and a token alone
#    is refused at start, naming what is missing;
# 2. compose.yaml, run by podman-compose: two instances on the host network and one
#    PostgreSQL database; the same event sent to both is accepted once and a duplicate at
#    the other, and each of several events reaches the destination exactly once; the
#    compose file's default ports are none of idemgate's defaults, and IDEMGATE_CONFIG (the
#    command line's --config) in the environment does not change what it mounts.
#
# Needs root (rootful podman); installs podman, runc and slirp4netns from Debian's
# packages and podman-compose from PyPI (Debian's 1.0.3 mistranslates network_mode: host
# and exec-form health checks) when missing. Uses IDEMGATE_BIN if set, else builds the
# binary of the Cargo profile IDEMGATE_PACKAGE_PROFILE names (default dist, what is
# shipped); `.ci/run` sets it to dev, so that the image holds the debug binary its test stage
# has already built instead of a third cold build of every dependency. Needs PostgreSQL on
# 127.0.0.1:5432 (trust auth), as .ci/run ensures.
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
  profile=${IDEMGATE_PACKAGE_PROFILE:-dist}
  cargo build --profile "$profile" --locked --bin idemgate
  case $profile in dev) bin=$target/debug/idemgate ;; *) bin=$target/$profile/idemgate ;; esac
fi
image=localhost/idemgate:ci
state=$(mktemp -d)
single=idemgate-ci-single
tls_single=idemgate-ci-admin-tls
volume=idemgate-ci-data
secret=idemgate-ci-app-secret
tls_secrets=(idemgate-ci-admin-cert idemgate-ci-admin-key)
database=idemgate_container_ci
admin_db=postgres://postgres@127.0.0.1:5432/postgres
receiver_pid=
# What a run leaves behind, also one that was killed: removed before and after.
leftovers() {
  # The volumes the image's VOLUME gives each container: -v for the containers podman
  # runs; podman-compose's are named first and removed after its containers.
  local composed
  composed=$(podman inspect --format '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}' \
    idemgate-ci_gateway-a_1 idemgate-ci_gateway-b_1 2>/dev/null)
  podman rm -f -v -t 0 "$single" "$tls_single" >/dev/null 2>&1
  podman volume rm -f "$volume" >/dev/null 2>&1
  podman secret rm "$secret" "${tls_secrets[@]}" >/dev/null 2>&1
  compose down -t 0 >/dev/null 2>&1
  # shellcheck disable=SC2086 # one name per word
  [ -z "${composed// /}" ] || podman volume rm -f $composed >/dev/null 2>&1
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
IDEMGATE_ADMIN_TOKEN=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
export IDEMGATE_DEMO_SECRET IDEMGATE_APP_SECRET IDEMGATE_ADMIN_TOKEN
# The HTTP status of an admin API request through a published port; extra curl options
# (--cacert, a header) follow the base URL.
admin_status() {
  local url=$1
  shift
  curl -s -o /dev/null -w '%{http_code}' "$@" "$url/admin/v1/destinations" || true
}
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
admin_port=$(free_port)
podman volume create "$volume" >/dev/null
# The destination's secret reaches this container as a file (a podman secret, mounted at
# /run/secrets/NAME), the source's as an environment variable: both ways the user guide names
# (docs/guide/install.md, "The container image").
printf '%s' "$IDEMGATE_APP_SECRET" | podman secret create "$secret" - >/dev/null
# slirp4netns with allow_host_loopback: the container reaches the host's 127.0.0.1 as
# 10.0.2.2, and its published port listens on the host's loopback only.
# The admin API on the image's 0.0.0.0:9090, published on the host's loopback: a token and
# the plaintext opt-in, as the README says.
run_single() {
  podman run -d --name "$single" --network slirp4netns:allow_host_loopback=true \
    -p "127.0.0.1:$port:8080" -p "127.0.0.1:$admin_port:9090" -v "$volume:/var/lib/idemgate" \
    -e IDEMGATE_DEMO_SECRET --secret "$secret" \
    -e IDEMGATE_ADMIN__TOKEN=env:IDEMGATE_ADMIN_TOKEN -e IDEMGATE_ADMIN_TOKEN \
    -e IDEMGATE_ADMIN__ALLOW_PLAINTEXT=true \
    -e "IDEMGATE_DESTINATIONS__APP__SECRET=file:/run/secrets/$secret" \
    -e "IDEMGATE_DESTINATIONS__APP__URL=http://10.0.2.2:$receiver_port/hook" "$image" >/dev/null
}
run_single
wait_healthy "$port" || { podman logs "$single" >&2; fail "the container did not answer /healthz"; }
podman healthcheck run "$single" 2>/dev/null || { podman logs "$single" >&2; fail "the image's health check failed"; }
echo "the image's health check passes"
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$(podman inspect --format '{{.State.Pid}}' "$single")/status")
expect "the server's uid" "$uid" 10001
admin=http://127.0.0.1:$admin_port
expect "admin API through the published port 9090" \
  "$(admin_status "$admin" -H "Authorization: Bearer $IDEMGATE_ADMIN_TOKEN")" 200
expect "admin API without the token" "$(admin_status "$admin")" 401
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

echo "-- the admin API with TLS from podman secrets, and a token alone refused"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$state/admin-key.pem" -out "$state/admin-cert.pem" 2>/dev/null
podman secret create "${tls_secrets[0]}" "$state/admin-cert.pem" >/dev/null
podman secret create "${tls_secrets[1]}" "$state/admin-key.pem" >/dev/null
admin_env=(-e IDEMGATE_DEMO_SECRET -e IDEMGATE_APP_SECRET -e IDEMGATE_ADMIN_TOKEN
  -e IDEMGATE_ADMIN__TOKEN=env:IDEMGATE_ADMIN_TOKEN)
# A gateway that starts anyway would run until the timeout; its refusal is the line
# idemgate prints (podman adds lines of its own).
refused=$(timeout 60 podman run --rm --name "$tls_single" "${admin_env[@]}" "$image" 2>&1 | grep '^idemgate:' || true)
podman rm -f -t 0 "$tls_single" >/dev/null 2>&1 || true
case $refused in
  *"admin.listen: 0.0.0.0:9090 is not a loopback address"*admin.allow_plaintext*) echo "a token alone is refused: $refused" ;;
  *) fail "a token alone: expected a refusal naming admin.listen, got: ${refused:-nothing}" ;;
esac
podman run -d --name "$tls_single" --network slirp4netns -p "127.0.0.1:$admin_port:9090" "${admin_env[@]}" \
  --secret "${tls_secrets[0]}" --secret "${tls_secrets[1]}" \
  -e "IDEMGATE_ADMIN__TLS__CERT=/run/secrets/${tls_secrets[0]}" \
  -e "IDEMGATE_ADMIN__TLS__KEY=/run/secrets/${tls_secrets[1]}" "$image" >/dev/null
admin=https://127.0.0.1:$admin_port
for _ in $(seq 1 100); do
  [ "$(admin_status "$admin" --cacert "$state/admin-cert.pem")" = 401 ] && break
  sleep 0.2
done
expect "admin API over TLS through the published port 9090" \
  "$(admin_status "$admin" --cacert "$state/admin-cert.pem" -H "Authorization: Bearer $IDEMGATE_ADMIN_TOKEN")" 200
podman rm -f -v -t 10 "$tls_single" >/dev/null

echo "-- compose.yaml: two instances on the host network, one PostgreSQL"
# Its default ports (no port variable set yet): four of their own, none of idemgate's
# defaults (8080 public, 8081 admin, 9090 the image's admin).
defaults=$(compose config 2>/dev/null | grep -o '127\.0\.0\.1:[0-9]*' | cut -d: -f2 | sort -u | tr '\n' ' ')
expect "compose.yaml's default ports" "$defaults" "8091 8092 9091 9092 "
psql "$admin_db" -v ON_ERROR_STOP=1 -qc "CREATE DATABASE $database" >/dev/null
export DATABASE_URL=postgres://postgres@127.0.0.1:5432/$database
export IDEMGATE_IMAGE=$image IDEMGATE_APP_URL=http://127.0.0.1:$receiver_port/hook
GATEWAY_A_PORT=$(free_port)
GATEWAY_B_PORT=$(free_port)
export GATEWAY_A_PORT GATEWAY_B_PORT
# IDEMGATE_CONFIG is the command line's --config, not the compose file's mount.
IDEMGATE_CONFIG=$state/not-a-config.toml compose up -d >"$state/compose.log" 2>&1 || { cat "$state/compose.log" >&2; fail "podman-compose up failed"; }
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
