"""What every Python driver of tests/providers/ shares: the run's settings and the JSON
lines it prints (see crates/idemgate/tests/it/providers.rs for the protocol)."""

import base64
import json
import os
import sys
import time

# The URL a provider that signs the URL signs: `{BASE}/hooks/<name>`, given to idemgate
# as the source's signed_url (as registered with the provider; it need not be reachable).
BASE = os.environ.get("PROVIDERS_BASE_URL", "https://hooks.example.test")
# The time deliveries are signed at, in Unix seconds.
NOW = int(os.environ.get("PROVIDERS_NOW") or time.time())


def url(provider):
    """The URL `provider`'s deliveries are signed for."""
    return f"{BASE}/hooks/{provider}"


def secret(provider, text, **extra):
    """The text idemgate's `secrets` gets for `provider`, and optional `config` (TOML lines
    for its source) or `signed_url`."""
    print(json.dumps({"provider": provider, "secret": text, **extra}), flush=True)


def case(provider, name, headers, body, expect):
    """One delivery: `name` is first, retry or changed; `expect` is accepted, duplicate or
    conflict."""
    assert isinstance(body, bytes), provider
    line = {
        "provider": provider,
        "case": name,
        "headers": headers,
        "body_b64": base64.b64encode(body).decode(),
        "expect": expect,
    }
    print(json.dumps(line), flush=True)


def require(condition, what):
    """Stops the driver (and so the test) when the provider's library disagrees."""
    if not condition:
        print(f"driver check failed: {what}", file=sys.stderr)
        sys.exit(1)


def tampered(body):
    """`body` with one byte changed."""
    changed = bytearray(body)
    changed[len(changed) // 2] ^= 1
    return bytes(changed)
