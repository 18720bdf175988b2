#!/usr/bin/env bash
# The provider catalog's tests: the providers' official libraries, pinned, in a Python
# virtual environment (tests/providers/requirements.txt) and a Node.js package folder
# (tests/providers/node/package.json and its package-lock.json). Idempotent: what is
# installed is kept while the manifests are unchanged (a stamp holds their SHA-256).
# The environments live at ${IDEMGATE_PROVIDERS_VENV:-<repo>/target/providers-venv} and
# ${IDEMGATE_PROVIDERS_NODE:-<repo>/target/providers-node}, where
# crates/idemgate/tests/it/providers.rs looks for them; the node drivers are copied in
# beside their node_modules on every run, since ES modules resolve packages from where
# they are.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
here="$repo/tests/providers"
venv="${IDEMGATE_PROVIDERS_VENV:-$repo/target/providers-venv}"
node_dir="${IDEMGATE_PROVIDERS_NODE:-$repo/target/providers-node}"
python="${PYTHON:-python3}"

stamp() { cat "$@" | sha256sum | cut -d' ' -f1; }

python_stamp=$(stamp "$here/requirements.txt")
if [ "$(cat "$venv/.stamp" 2>/dev/null)" != "$python_stamp" ]; then
  command -v "$python" >/dev/null || { echo "FATAL: $python is not installed; the provider tests need it" >&2; exit 1; }
  if [ ! -x "$venv/bin/python" ]; then
    echo "providers venv: creating $venv"
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  echo "$python_stamp" >"$venv/.stamp"
fi
echo "providers venv: $venv ready"

node_stamp=$(stamp "$here/node/package.json" "$here/node/package-lock.json")
mkdir -p "$node_dir"
if [ "$(cat "$node_dir/.stamp" 2>/dev/null)" != "$node_stamp" ]; then
  command -v npm >/dev/null || { echo "FATAL: npm is not installed; the provider tests need Node.js" >&2; exit 1; }
  cp "$here/node/package.json" "$here/node/package-lock.json" "$node_dir/"
  (cd "$node_dir" && npm ci --silent --no-audit --no-fund)
  echo "$node_stamp" >"$node_dir/.stamp"
fi
rm -f "$node_dir"/*.mjs
cp "$here"/node/*.mjs "$node_dir/"
echo "providers node: $node_dir ready"
