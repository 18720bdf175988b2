#!/usr/bin/env bash
# SMTP submission end to end: keyed messages submitted over smtplib to an [smtp.bench]
# listener (answered 250 after the commit), relayed by the worker inside `idemgate serve`
# to the aiosmtpd recording upstream (tests/smtp/upstream.py). Prints the accept rate and
# the end-to-end rate (until the upstream has recorded every message).
#
#   bench/smtp.sh [MESSAGES] [CONNECTIONS]
# Needs the venv of tests/smtp/setup-venv.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
messages=${1:-5000}
connections=${2:-8}
[ -x target/release/idemgate ] || cargo build --release --quiet --bin idemgate
bash tests/smtp/setup-venv.sh >/dev/null
python=${IDEMGATE_SMTP_VENV:-target/smtp-venv}/bin/python
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
up_port=$(free_port)
smtp_port=$(free_port)
"$python" tests/smtp/upstream.py --port "$up_port" --record "$work/received.jsonl" >"$work/upstream.out" 2>&1 &
until grep -q ready "$work/upstream.out"; do sleep 0.05; done
cat >"$work/idemgate.toml" <<TOML
[server]
listen = "127.0.0.1:0"
[store]
path = "$work/gateway.sqlite3"
[worker]
batch = 16
poll_interval = "20ms"
[destinations.upstream]
kind = "smtp"
url = "smtp://127.0.0.1:$up_port"
starttls = "never"
[smtp.bench]
listen = "127.0.0.1:$smtp_port"
destinations = ["upstream"]
users = { bench = "env:BENCH_SMTP_PASSWORD" }
TOML
BENCH_SMTP_PASSWORD=bench-password IDEMGATE_LOG=warn target/release/idemgate serve --config "$work/idemgate.toml" >"$work/serve.out" 2>&1 &
until grep -q "smtp bench listening" "$work/serve.out"; do sleep 0.05; done
started=$(date +%s.%N)
python3 bench/smtp_load.py "$smtp_port" "$messages" "$connections"
until [ "$(wc -l <"$work/received.jsonl" 2>/dev/null || echo 0)" -ge "$messages" ]; do sleep 0.01; done
ended=$(date +%s.%N)
received=$(wc -l <"$work/received.jsonl")
python3 -c "print(f'end to end: $received messages in {($ended - $started):.2f} s = {$received / ($ended - $started):.0f} messages/s')"
