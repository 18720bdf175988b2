"""The developer group's providers whose backing is on PyPI or is a published vector.

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
"""

import base64
import datetime
import hashlib
import hmac
import json
from pathlib import Path

import openai
import standardwebhooks
from replicate.webhook import WebhookSigningSecret, Webhooks

from driver import NOW, case, require, secret, tampered

VECTORS = Path(__file__).parent / "vectors"


def standard_headers(key, msg_id, at, body):
    when = datetime.datetime.fromtimestamp(at, tz=datetime.timezone.utc)
    signature = standardwebhooks.Webhook(key).sign(msg_id, when, body.decode())
    return {"webhook-id": msg_id, "webhook-timestamp": str(at), "webhook-signature": signature,
            "Content-Type": "application/json"}


def openai_cases():
    key = "whsec_" + base64.b64encode(b"openai developer group test key!").decode()
    secret("openai", key)
    client = openai.OpenAI(api_key="sk-unused", webhook_secret=key)

    def signed(msg_id, body, at):
        headers = standard_headers(key, msg_id, at, body)
        # The library checks the timestamp against its own clock: allow the distance to NOW.
        tolerance = abs(int(datetime.datetime.now(tz=datetime.timezone.utc).timestamp()) - at) + 300
        client.webhooks.verify_signature(body, headers, secret=key, tolerance=tolerance)
        try:
            client.webhooks.verify_signature(tampered(body), headers, secret=key, tolerance=tolerance)
            require(False, "openai accepted a changed byte")
        except openai.InvalidWebhookSignatureError:
            pass
        return headers

    # The response.completed event of OpenAI's webhook guide.
    def event(response_id):
        return json.dumps({
            "id": "evt_685343a1381c819085d44c354e1b330e",
            "object": "event",
            "created_at": 1750287018,
            "type": "response.completed",
            "data": {"id": response_id},
        }, separators=(",", ":")).encode()

    msg_id = "wh_685342e6c53c8190a1be43f081506c52"
    first = event("resp_abc123")
    case("openai", "first", signed(msg_id, first, NOW), first, "accepted")
    # A retry: the same webhook-id and event, a new timestamp and signature.
    case("openai", "retry", signed(msg_id, first, NOW + 30), first, "duplicate")
    changed = event("resp_def456")
    case("openai", "changed", signed(msg_id, changed, NOW + 60), changed, "conflict")


def replicate_cases():
    key = "whsec_" + base64.b64encode(b"replicate developer group key!!").decode()
    secret("replicate", key)

    def signed(msg_id, body, at):
        headers = standard_headers(key, msg_id, at, body)
        signing = WebhookSigningSecret(key=key)
        Webhooks.validate(headers=headers, body=body.decode(), secret=signing)
        try:
            Webhooks.validate(headers=headers, body=tampered(body).decode(errors="replace"), secret=signing)
            require(False, "replicate accepted a changed byte")
        except ValueError:  # the library's InvalidSignatureError
            pass
        return headers

    # A prediction, as Replicate's webhook docs show one.
    def prediction(output):
        return json.dumps({
            "id": "ufawqhfynnddngldkgtslldrkq",
            "model": "replicate/hello-world",
            "version": "5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa",
            "input": {"text": "Alice"},
            "logs": "",
            "output": output,
            "data_removed": False,
            "error": None,
            "status": "succeeded",
            "created_at": "2022-04-26T22:13:06.224088Z",
            "started_at": "2022-04-26T22:13:06.231Z",
            "completed_at": "2022-04-26T22:13:06.284Z",
            "urls": {
                "get": "https://api.replicate.com/v1/predictions/ufawqhfynnddngldkgtslldrkq",
                "cancel": "https://api.replicate.com/v1/predictions/ufawqhfynnddngldkgtslldrkq/cancel",
            },
            "metrics": {"predict_time": 0.053},
        }, separators=(",", ":")).encode()

    msg_id = "msg_p5jXN8AQM9LWM0D4loKWxJek"
    first = prediction("hello Alice")
    case("replicate", "first", signed(msg_id, first, NOW), first, "accepted")
    case("replicate", "retry", signed(msg_id, first, NOW + 30), first, "duplicate")
    changed = prediction("goodbye Alice")
    case("replicate", "changed", signed(msg_id, changed, NOW + 60), changed, "conflict")


def pagerduty_cases():
    vector = json.loads((VECTORS / "pagerduty.json").read_text())
    key = vector["secret"]
    secret("pagerduty", key)

    def sign(body, with_key=key):
        return "v1=" + hmac.new(with_key.encode(), body, hashlib.sha256).hexdigest()

    published = vector["body"].encode()
    require(sign(published) == vector["headers"]["X-PagerDuty-Signature"],
            "the documented signing reproduces PagerDuty's published vector")

    def headers(signature):
        return {"Content-Type": "application/json", "User-Agent": "PagerDuty-Webhook/V3.0",
                "X-PagerDuty-Signature": signature, "X-Webhook-Id": "9e6b3b4e-1b9c-4d2f-8a7e-2f4c6d8e0a13",
                "X-Webhook-Subscription": "PY1OQXQ"}

    case("pagerduty", "first", headers(vector["headers"]["X-PagerDuty-Signature"]), published, "accepted")
    # The same webhook again, while a rotated-out secret still signs too: one v1= entry each.
    rotated = sign(published, "a rotated-out secret") + "," + sign(published)
    case("pagerduty", "retry", headers(rotated), published, "duplicate")
    changed = published.replace(b'"urgency":"high"', b'"urgency":"low"')
    require(changed != published, "the vector's body has an urgency to change")
    case("pagerduty", "changed", headers(sign(changed)), changed, "conflict")


def gitlab_cases():
    # GitLab's documented delivery: the push event example of its webhook events page and the
    # delivery headers' example values (vectors/gitlab.json); the token is ours.
    vector = json.loads((VECTORS / "gitlab.json").read_text())
    secret("gitlab", vector["secret"])
    first = vector["body"].encode()

    def headers(webhook_uuid):
        # X-Gitlab-Webhook-UUID is new for each request; Idempotency-Key stays.
        return {**vector["headers"], "X-Gitlab-Webhook-UUID": webhook_uuid}

    case("gitlab", "first", headers(vector["headers"]["X-Gitlab-Webhook-UUID"]), first, "accepted")
    # A resend (Recent events, Resend request): the same body and Idempotency-Key.
    case("gitlab", "retry", headers("7b0c6a52-4d3e-4a8f-9b1e-2f6d8c0a1e33"), first, "duplicate")
    changed = first.replace(b'"total_commits_count": 4', b'"total_commits_count": 5')
    require(changed != first, "the vector's body has a total_commits_count to change")
    case("gitlab", "changed", headers("9c1d2e3f-4a5b-4c6d-8e7f-0a1b2c3d4e55"), changed, "conflict")


openai_cases()
replicate_cases()
pagerduty_cases()
gitlab_cases()
