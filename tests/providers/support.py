"""Provider driver, support group: cases signed with the providers' official libraries.

Prints JSON lines on stdout (see the catalog's test-driver protocol); anything else goes
to stderr. Exits non-zero when a library refuses what it should accept, or accepts a
changed byte.

Env: PROVIDERS_BASE_URL (http://127.0.0.1:PORT), PROVIDERS_NOW (unix seconds).
"""

import base64
import datetime
import json
import os
import secrets
import sys
from unittest import mock

import urllib.parse

import plivo.utils.signature_v3 as plivo_v3
import resend
import svix.webhooks

BASE_URL = os.environ["PROVIDERS_BASE_URL"].rstrip("/")
NOW = int(os.environ["PROVIDERS_NOW"])


def emit(line):
    print(json.dumps(line, separators=(",", ":")), flush=True)


def case(provider, name, headers, body, expect):
    emit(
        {
            "provider": provider,
            "case": name,
            "headers": headers,
            "body_b64": base64.b64encode(body).decode(),
            "expect": expect,
        }
    )


def tampered(body):
    """The body with one byte changed (the last digit or letter turned into another)."""
    changed = bytearray(body)
    for i in range(len(changed) - 1, -1, -1):
        if chr(changed[i]).isalnum():
            changed[i] = ord("0") if changed[i] != ord("0") else ord("1")
            return bytes(changed)
    raise ValueError("no byte to change")


def compact(event):
    return json.dumps(event, separators=(",", ":")).encode()


# --- Resend: Svix (Standard Webhooks v1 in the svix-* spelling) --------------------------
#
# Signed with svix's own `Webhook.sign`, the code Svix's senders share with its verifiers;
# each attempt then goes through the Resend SDK's `Webhooks.verify` (its own HMAC code, not
# svix's), with the SDK's clock set to the attempt's time, and a changed byte must fail it.


def resend_verify(secret, headers, body, at):
    options = {
        "payload": body.decode(),
        "headers": {
            "id": headers["svix-id"],
            "timestamp": headers["svix-timestamp"],
            "signature": headers["svix-signature"],
        },
        "webhook_secret": secret,
    }
    with mock.patch("resend.webhooks._webhooks.time.time", return_value=float(at)):
        resend.Webhooks.verify(options)
        try:
            resend.Webhooks.verify({**options, "payload": tampered(body).decode()})
        except ValueError:
            pass
        else:
            raise SystemExit("resend: Webhooks.verify accepted a changed byte")


def resend_cases():
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    emit({"provider": "resend", "secret": secret})
    signer = svix.webhooks.Webhook(secret)
    msg_id = "msg_2Lh9KRb0pzN4LePd3XiA4v9G"
    # Resend's documented email.delivered event (resend.com/docs/webhooks/emails/delivered).
    event = {
        "type": "email.delivered",
        "created_at": "2024-02-22T23:41:12.126Z",
        "data": {
            "created_at": "2024-02-22T23:41:11.894719+00:00",
            "email_id": "56761188-7520-42d8-8898-ff6fc54ce618",
            "from": "Acme <onboarding@resend.dev>",
            "to": ["delivered@resend.dev"],
            "subject": "Sending this example",
        },
    }
    changed = json.loads(json.dumps(event))
    changed["data"]["subject"] = "Sending another example"
    # Svix resends the message's payload unchanged under the same svix-id, re-signed with
    # the attempt's own timestamp (its schedule: immediately, then 5 seconds later, ...).
    attempts = [("first", event, NOW, "accepted"), ("retry", event, NOW + 5, "duplicate"), ("changed", changed, NOW + 10, "conflict")]
    for name, payload, at, expect in attempts:
        body = compact(payload)
        stamp = datetime.datetime.fromtimestamp(at, tz=datetime.timezone.utc)
        headers = {
            "svix-id": msg_id,
            "svix-timestamp": str(at),
            "svix-signature": signer.sign(msg_id, stamp, body.decode()),
        }
        resend_verify(secret, headers, body, at)
        case("resend", name, headers, body, expect)


# --- Plivo: X-Plivo-Signature-V3 over the URL, the sorted POST parameters and a nonce ----
#
# Signed with the Plivo SDK's own construction (`construct_post_url`, `get_signature_v3`)
# and checked with its `validate_v3_signature`, which must refuse a changed byte. Plivo
# names no identity that survives a retry, so only a first delivery is sent: the catalog
# gives Plivo no default identity.


def plivo_cases():
    token = secrets.token_urlsafe(30)
    url = f"{BASE_URL}/hooks/plivo"
    # Plivo names no event identity, so the source names one: a source for the hangup URL
    # gets one hangup callback per call, and takes the call's CallUUID.
    config = 'identity = { pointer = "/CallUUID" }\n'
    emit({"provider": "plivo", "secret": token, "signed_url": url, "config": config})
    # A hangup callback with the parameters Plivo documents for it (Voice, Hangup URL).
    fields = [
        ("CallUUID", "c8d3c2e6-3e3a-11ee-be56-0242ac120002"),
        ("From", "14155550100"),
        ("To", "14155550111"),
        ("Direction", "inbound"),
        ("CallStatus", "completed"),
        ("Event", "Hangup"),
        ("Duration", "12"),
        ("HangupCause", "NORMAL_CLEARING"),
    ]
    body = urllib.parse.urlencode(fields).encode()
    nonce = str(secrets.randbelow(10**20)).zfill(20)
    params = dict(fields)
    base = plivo_v3.construct_post_url(url, dict(params)).decode()
    signature = plivo_v3.get_signature_v3(token.encode(), base, nonce.encode()).decode()
    if not plivo_v3.validate_v3_signature("POST", url, nonce, token, signature, dict(params)):
        raise SystemExit("plivo: validate_v3_signature refused its own signature")
    changed = dict(urllib.parse.parse_qsl(tampered(body).decode(), keep_blank_values=True))
    if plivo_v3.validate_v3_signature("POST", url, nonce, token, signature, changed):
        raise SystemExit("plivo: validate_v3_signature accepted a changed byte")
    headers = {"X-Plivo-Signature-V3": signature, "X-Plivo-Signature-V3-Nonce": nonce}
    case("plivo", "first", headers, body, "accepted")


def main():
    resend_cases()
    plivo_cases()


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except Exception as error:  # noqa: BLE001 - any failure is the driver's failure
        print(f"support driver: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
