"""The developer-tools group's providers whose official libraries are on PyPI.

- OpenAI: Standard Webhooks. Signed with the `standardwebhooks` reference library, then
  verified by the official `openai` library (`client.webhooks.verify_signature`), which must
  also refuse a changed byte.
- Replicate: Standard Webhooks too. Signed with `standardwebhooks`, verified by the official
  `replicate` library (`replicate.webhook.Webhooks.validate`), which must refuse a changed byte.
- PagerDuty (v3): no library on PyPI or npm signs or checks its signature (its own is the Go
  client's `webhookv3`), so the first case is the example vector published with that client
  (tests/providers/vectors/pagerduty.json, signature as published); the retry resends those
  bytes, and the changed case is signed as PagerDuty documents it (hex HMAC-SHA256 of the body,
  `v1=` entries separated by commas), after checking that this signing reproduces the vector.
- GitLab: a shared token in X-Gitlab-Token, nothing signed; the delivery headers and the push
  event are GitLab's documented examples (tests/providers/vectors/gitlab.json); no library
  signs or checks a token.

Prints JSON lines as the catalog spec describes: for each provider its secret, then the cases
first, retry and changed. Env: PROVIDERS_NOW (unix seconds to sign at); PROVIDERS_BASE_URL is
unused (no provider here signs its URL). Exits non-zero on any error.
"""

import base64
import hashlib
import hmac
import json
import os
import sys
from pathlib import Path
from datetime import datetime, timezone

import openai
from replicate.webhook import WebhookSigningSecret, Webhooks
from standardwebhooks.webhooks import Webhook


def emit(line):
    sys.stdout.write(json.dumps(line) + "\n")


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def tampered(raw: bytes) -> bytes:
    """`raw` with one byte inside its data changed, to check that a verifier refuses it."""
    at = raw.find(b'"data"')
    i = at + 10 if at >= 0 else 1
    return raw[:i] + (b"y" if raw[i:i + 1] == b"x" else b"x") + raw[i + 1:]


def standard_headers(secret: str, msg_id: str, at: int, raw: bytes) -> dict:
    signature = Webhook(secret).sign(msg_id, datetime.fromtimestamp(at, tz=timezone.utc), raw.decode("utf-8"))
    return {"webhook-id": msg_id, "webhook-timestamp": str(at), "webhook-signature": signature}


def openai_cases(now: int) -> None:
    secret = "whsec_" + base64.b64encode(b"openai developer group test key!").decode("ascii")
    emit({"provider": "openai", "secret": secret})
    client = openai.OpenAI(api_key="sk-unused", webhook_secret=secret)
    real_now = int(datetime.now(tz=timezone.utc).timestamp())

    def verify(raw: bytes, headers: dict, at: int) -> None:
        # The library checks the timestamp against its clock: allow exactly the distance to `at`.
        tolerance = abs(real_now - at) + 300
        client.webhooks.verify_signature(raw, headers, secret=secret, tolerance=tolerance)
        try:
            client.webhooks.verify_signature(tampered(raw), headers, secret=secret, tolerance=tolerance)
        except openai.InvalidWebhookSignatureError:
            return
        raise SystemExit("openai: verify_signature accepted a changed byte")

    # The response.completed sample from OpenAI's webhook guide.
    def body(response_id: str) -> bytes:
        return (
            '{"id":"evt_685343a1381c819085d44c354e1b330e","object":"event","created_at":1750287018,'
            '"type":"response.completed","data":{"id":"' + response_id + '"}}'
        ).encode()

    msg_id = "wh_685342e6c53c8190a1be43f081506c52"
    for case, raw, at, expect in [
        ("first", body("resp_abc123"), now, "accepted"),
        # A retry: the same webhook-id and body, a new timestamp and signature.
        ("retry", body("resp_abc123"), now + 30, "duplicate"),
        ("changed", body("resp_def456"), now + 60, "conflict"),
    ]:
        headers = standard_headers(secret, msg_id, at, raw)
        verify(raw, headers, at)
        emit({
            "provider": "openai",
            "case": case,
            "headers": {"Content-Type": "application/json", **headers},
            "body_b64": b64(raw),
            "expect": expect,
        })


def replicate_cases(now: int) -> None:
    secret = "whsec_" + base64.b64encode(b"replicate developer group key!!").decode("ascii")
    emit({"provider": "replicate", "secret": secret})

    def verify(raw: bytes, headers: dict) -> None:
        key = WebhookSigningSecret(key=secret)
        Webhooks.validate(headers=headers, body=raw.decode("utf-8"), secret=key)
        try:
            Webhooks.validate(headers=headers, body=tampered(raw).decode("utf-8"), secret=key)
        except Exception:  # noqa: BLE001 - the library raises InvalidSignatureError (a ValueError)
            return
        raise SystemExit("replicate: Webhooks.validate accepted a changed byte")

    # A prediction as Replicate's webhook docs show it.
    def body(output: str) -> bytes:
        return (
            '{"id":"ufawqhfynnddngldkgtslldrkq","model":"replicate/hello-world",'
            '"version":"5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa",'
            '"input":{"text":"Alice"},"logs":"","output":' + json.dumps(output) + ','
            '"data_removed":false,"error":null,"status":"succeeded",'
            '"created_at":"2022-04-26T22:13:06.224088Z","started_at":"2022-04-26T22:13:06.231Z",'
            '"completed_at":"2022-04-26T22:13:06.284Z","urls":{'
            '"get":"https://api.replicate.com/v1/predictions/ufawqhfynnddngldkgtslldrkq",'
            '"cancel":"https://api.replicate.com/v1/predictions/ufawqhfynnddngldkgtslldrkq/cancel"},'
            '"metrics":{"predict_time":0.053}}'
        ).encode()

    msg_id = "msg_p5jXN8AQM9LWM0D4loKWxJek"
    for case, raw, at, expect in [
        ("first", body("hello Alice"), now, "accepted"),
        ("retry", body("hello Alice"), now + 30, "duplicate"),
        ("changed", body("goodbye Alice"), now + 60, "conflict"),
    ]:
        headers = standard_headers(secret, msg_id, at, raw)
        verify(raw, headers)
        emit({
            "provider": "replicate",
            "case": case,
            "headers": {"Content-Type": "application/json", **headers},
            "body_b64": b64(raw),
            "expect": expect,
        })


def pagerduty_cases() -> None:
    vector = json.loads((Path(__file__).parent / "vectors" / "pagerduty.json").read_text())
    secret = vector["secret"]
    emit({"provider": "pagerduty", "secret": secret})

    def sign(raw: bytes) -> str:
        return "v1=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()

    published = vector["body"].encode()
    if sign(published) != vector["headers"]["X-PagerDuty-Signature"]:
        raise SystemExit("pagerduty: the documented signing does not reproduce the published vector")
    # During a secret rotation PagerDuty sends one v1 entry per secret: an old one first here.
    other = "v1=" + hmac.new(b"a rotated-out secret", published, hashlib.sha256).hexdigest()
    changed = published.replace(b'"urgency":"high"', b'"urgency":"low"')
    if changed == published:
        raise SystemExit("pagerduty: the vector's body has no urgency to change")
    for case, raw, signature, expect in [
        ("first", published, vector["headers"]["X-PagerDuty-Signature"], "accepted"),
        ("retry", published, other + "," + sign(published), "duplicate"),
        ("changed", changed, sign(changed), "conflict"),
    ]:
        emit({
            "provider": "pagerduty",
            "case": case,
            "headers": {
                "Content-Type": "application/json",
                "User-Agent": "PagerDuty-Webhook/V3.0",
                "X-PagerDuty-Signature": signature,
                "X-Webhook-Id": "9e6b3b4e-1b9c-4d2f-8a7e-2f4c6d8e0a13",
                "X-Webhook-Subscription": "PY1OQXQ",
            },
            "body_b64": b64(raw),
            "expect": expect,
        })


def gitlab_cases() -> None:
    # GitLab's documented delivery: the push event example of its webhook events page and the
    # delivery headers' example values (tests/providers/vectors/gitlab.json); the token is ours.
    vector = json.loads((Path(__file__).parent / "vectors" / "gitlab.json").read_text())
    emit({"provider": "gitlab", "secret": vector["secret"]})
    first = vector["body"].encode()
    changed = first.replace(b'"total_commits_count": 4', b'"total_commits_count": 5')
    if changed == first:
        raise SystemExit("gitlab: the vector's body has no total_commits_count to change")

    def headers(webhook_uuid: str) -> dict:
        # X-Gitlab-Webhook-UUID is new for each request; Idempotency-Key stays.
        return {**vector["headers"], "X-Gitlab-Webhook-UUID": webhook_uuid}

    for case, raw, uuid, expect in [
        ("first", first, vector["headers"]["X-Gitlab-Webhook-UUID"], "accepted"),
        # A resend: the same request body and Idempotency-Key.
        ("retry", first, "7b0c6a52-4d3e-4a8f-9b1e-2f6d8c0a1e33", "duplicate"),
        ("changed", changed, "9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e55", "conflict"),
    ]:
        emit({"provider": "gitlab", "case": case, "headers": headers(uuid), "body_b64": b64(raw), "expect": expect})


def main() -> None:
    now = int(os.environ["PROVIDERS_NOW"])
    openai_cases(now)
    replicate_cases(now)
    pagerduty_cases()
    gitlab_cases()


if __name__ == "__main__":
    main()
