#!/usr/bin/env bash
# The OpenAPI tests' Python: a virtual environment with schemathesis (the OpenAPI fuzzer,
# whose validator checks the documents) and Svix's own Python SDK (`svix`, for the smoke
# test of /api/v1), both from PyPI and pinned. Idempotent: an environment holding the pinned
# versions is kept as it is. The environment lives at
# ${IDEMGATE_OPENAPI_VENV:-<repo>/target/openapi-venv}, where
# crates/idemgate/tests/it/admin_openapi_fuzz.rs looks for it.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${IDEMGATE_OPENAPI_VENV:-$repo/target/openapi-venv}"
python="${PYTHON:-python3}"
version="4.32.5"
svix="2.9.1"

installed() {
  "$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null
}

if [ -x "$venv/bin/schemathesis" ] && [ "$(installed schemathesis)" = "$version" ] && [ "$(installed svix)" = "$svix" ]; then
  echo "openapi venv: $venv (schemathesis $version and svix $svix present)"
  exit 0
fi

command -v "$python" >/dev/null || { echo "FATAL: $python is not installed; the OpenAPI tests need it" >&2; exit 1; }
if [ ! -x "$venv/bin/python" ]; then
  echo "openapi venv: creating $venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$version" "svix==$svix"
"$venv/bin/schemathesis" --version || { echo "FATAL: schemathesis does not run in $venv" >&2; exit 1; }
"$venv/bin/python" -c 'import svix.api, svix.webhooks' || { echo "FATAL: svix does not import in $venv" >&2; exit 1; }
echo "openapi venv: $venv ready"
