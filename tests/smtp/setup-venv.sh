#!/usr/bin/env bash
# The SMTP tests' Python: a virtual environment with aiosmtpd (the recording upstream's
# server library) from PyPI. Idempotent: an environment that already imports aiosmtpd is
# kept as it is. The environment lives at ${IDEMGATE_SMTP_VENV:-<repo>/target/smtp-venv},
# where idemgate_testkit::smtp::python() looks for it.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${IDEMGATE_SMTP_VENV:-$repo/target/smtp-venv}"
python="${PYTHON:-python3}"

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import aiosmtpd' 2>/dev/null; then
  echo "smtp venv: $venv (aiosmtpd present)"
  exit 0
fi

command -v "$python" >/dev/null || { echo "FATAL: $python is not installed; the SMTP tests need it" >&2; exit 1; }
echo "smtp venv: creating $venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'aiosmtpd==1.4.6'
"$venv/bin/python" -c 'import aiosmtpd' || { echo "FATAL: aiosmtpd does not import in $venv" >&2; exit 1; }
echo "smtp venv: $venv ready"
