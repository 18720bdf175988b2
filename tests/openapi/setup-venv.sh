#!/usr/bin/env bash
# The admin API fuzz test's Python: a virtual environment with schemathesis (the OpenAPI
# fuzzer) from PyPI. Idempotent: an environment whose schemathesis is the pinned version
# is kept as it is. The environment lives at ${IDEMGATE_OPENAPI_VENV:-<repo>/target/openapi-venv},
# where crates/idemgate/tests/it/admin_openapi_fuzz.rs looks for it.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${IDEMGATE_OPENAPI_VENV:-$repo/target/openapi-venv}"
python="${PYTHON:-python3}"
version="4.32.5"

if [ -x "$venv/bin/schemathesis" ] && [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null)" = "$version" ]; then
  echo "openapi venv: $venv (schemathesis $version present)"
  exit 0
fi

command -v "$python" >/dev/null || { echo "FATAL: $python is not installed; the OpenAPI fuzz test needs it" >&2; exit 1; }
echo "openapi venv: creating $venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$version"
"$venv/bin/schemathesis" --version || { echo "FATAL: schemathesis does not run in $venv" >&2; exit 1; }
echo "openapi venv: $venv ready"
