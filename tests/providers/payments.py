#!/usr/bin/env python3
"""Driver for the payments group of the provider catalog (issue 39).

For each provider: one line with the secret idemgate is configured with, then the cases
`first` (accepted), `retry` (duplicate: the provider's own retry of the same event) and
`changed` (conflict: same identity, other content, validly signed), as JSON lines on stdout.

Every signature is checked by the provider's official library before it is printed: where
the library can sign, it signs; where it only verifies, the signature is built as the
provider documents it and the library's verifier must accept it and must refuse the same
body with one byte changed. Any disagreement exits non-zero.

Protocol and environment: see driver.py and crates/idemgate/tests/it/providers.rs.
"""

import base64
import datetime as _datetime
import hashlib
import hmac
import json
import types

from driver import NOW, case, require, secret, tampered, url


def compact(value):
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def accepts(verify) -> bool:
    """True when the library's `verify()` vouches: returns truthy or None without raising."""
    try:
        result = verify()
    except Exception:  # noqa: BLE001 - every library raises its own error type
        return False
    return result is None or bool(result)


def checked(provider, body, verify):
    """The library's `verify(body)` must accept `body` and refuse it with one byte changed."""
    require(accepts(lambda: verify(body)), f"{provider}: the library refuses the documented signature")
    require(not accepts(lambda: verify(tampered(body))), f"{provider}: the library accepts a changed byte")


def hmac_hex(key: bytes, message: bytes) -> str:
    return hmac.new(key, message, hashlib.sha256).hexdigest()


# --- Paddle Billing ---------------------------------------------------------------------
# Paddle-Signature: ts=<unix>;h1=<hex HMAC-SHA256 of "<ts>:<raw body>"> under the
# notification destination's secret key. paddle-python-sdk only verifies.
def paddle():
    from paddle_billing.Notifications import Secret
    from paddle_billing.Notifications.PaddleSignature import PaddleSignature

    name = "paddle"
    key = "pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_6h3qd3uFSi9YCD3OLYAShQI90XTI5vEI"
    secret(name, key)

    def event(total, notification_id="ntf_01hv8x2af7eqknhfj9wb8y7x0b"):
        return compact(
            {
                "event_id": "evt_01hv8x2acma2gz9kf0qfvvp1mk",
                "event_type": "transaction.paid",
                "occurred_at": "2024-04-12T10:18:49.621022Z",
                "notification_id": notification_id,
                "data": {
                    "id": "txn_01hv8wptq8987qeep44cyrewp9",
                    "status": "paid",
                    "customer_id": "ctm_01hv6y1jedq4p1n0yqn5ba3ky4",
                    "currency_code": "USD",
                    "details": {"totals": {"total": total, "currency_code": "USD"}},
                },
            }
        )

    def signed(body, ts):
        header = f"ts={ts};h1={hmac_hex(key.encode(), str(ts).encode() + b':' + body)}"

        def verify(candidate):
            return PaddleSignature().verify(header, candidate.decode("utf-8"), Secret(key))

        checked(name, body, verify)
        return {"Paddle-Signature": header}

    body = event("2400")
    case(name, "first", signed(body, NOW - 2), body, "accepted")
    # A replay: "Paddle creates a new notification entity for the replay, related to the same
    # event_id", so the body carries a new notification_id, signed at the attempt's time.
    replay = event("2400", notification_id="ntf_01hv8y5q3k2m7n4p6r8s9t0v1w")
    case(name, "retry", signed(replay, NOW), replay, "duplicate")
    changed = event("4800")
    case(name, "changed", signed(changed, NOW), changed, "conflict")


# --- Square -----------------------------------------------------------------------------
# x-square-hmacsha256-signature: base64 HMAC-SHA256 of notification URL + raw body under the
# subscription's signature key. squareup only verifies.
def square():
    from square.utils.webhooks_helper import verify_signature

    name = "square"
    key = "asdf1234qwerQWER5678zxcv"
    signed_url = url(name)
    secret(name, key, signed_url=signed_url)

    def event(amount):
        return compact(
            {
                "merchant_id": "6SSW7HV8K2ST5",
                "type": "payment.updated",
                "event_id": "13b867cf-db3d-4b1c-90b6-2f32a9d78124",
                "created_at": "2020-02-06T21:27:34.308Z",
                "data": {
                    "type": "payment",
                    "id": "hYy9pRFVxpDsO1FB05SunFWUe9JZY",
                    "object": {
                        "payment": {
                            "id": "hYy9pRFVxpDsO1FB05SunFWUe9JZY",
                            "amount_money": {"amount": amount, "currency": "USD"},
                            "status": "COMPLETED",
                            "version": 3,
                        }
                    },
                },
            }
        )

    def signed(body):
        signature = base64.b64encode(hmac.new(key.encode(), signed_url.encode() + body, hashlib.sha256).digest()).decode()

        def verify(candidate):
            return verify_signature(
                request_body=candidate.decode("utf-8"),
                signature_header=signature,
                signature_key=key,
                notification_url=signed_url,
            )

        checked(name, body, verify)
        return {"x-square-hmacsha256-signature": signature}

    body = event(100)
    case(name, "first", signed(body), body, "accepted")
    case(name, "retry", signed(body), body, "duplicate")
    changed = event(200)
    case(name, "changed", signed(changed), changed, "conflict")


# --- Razorpay ---------------------------------------------------------------------------
# X-Razorpay-Signature: hex HMAC-SHA256 of the raw body under the webhook secret;
# x-razorpay-event-id names the event. razorpay's Utility only verifies.
def razorpay_():
    import razorpay

    name = "razorpay"
    key = "Rzp_wh_secret_8dKq2Lm7"
    secret(name, key)
    event_id = "KRXJ8sJ4hVv3pZ"
    utility = razorpay.Client(auth=("rzp_test_key", "rzp_test_secret")).utility

    def event(amount):
        return compact(
            {
                "entity": "event",
                "account_id": "acc_BFQ7uQEaa7j2z7",
                "event": "payment.captured",
                "contains": ["payment"],
                "payload": {
                    "payment": {
                        "entity": {
                            "id": "pay_DESlfW9H8K9uqM",
                            "entity": "payment",
                            "amount": amount,
                            "currency": "INR",
                            "status": "captured",
                            "order_id": "order_DESlLckIVRkHWj",
                            "captured": True,
                        }
                    }
                },
                "created_at": 1567674606,
            }
        )

    def signed(body):
        signature = hmac_hex(key.encode(), body)
        checked(name, body, lambda candidate: utility.verify_webhook_signature(candidate.decode("utf-8"), signature, key))
        return {"X-Razorpay-Signature": signature, "x-razorpay-event-id": event_id}

    body = event(100)
    case(name, "first", signed(body), body, "accepted")
    case(name, "retry", signed(body), body, "duplicate")
    changed = event(200)
    case(name, "changed", signed(changed), changed, "conflict")


# --- Coinbase Commerce ------------------------------------------------------------------
# X-CC-Webhook-Signature: hex HMAC-SHA256 of the raw body under the shared secret. Each
# attempt carries its own attempt_number and scheduled_for in the signed body.
def coinbase_commerce():
    from coinbase_commerce.webhook import WebhookSignature

    name = "coinbase-commerce"
    key = "9f6e6800-cfae-4749-9c0d-5b2b2d1b7c55"
    secret(name, key)

    def delivery(attempt, scheduled_for, amount):
        return compact(
            {
                "attempt_number": attempt,
                "event": {
                    "api_version": "2018-03-22",
                    "created_at": "2023-08-30T19:29:20Z",
                    "data": {
                        "id": "2aee9dd1-67b8-43ef-8dfe-977959850f27",
                        "code": "XA6G6ZFR",
                        "pricing": {"local": {"amount": amount, "currency": "USD"}},
                    },
                    "id": "10b5b4a3-4f0d-4b55-9c24-8e2b0b9d1c7e",
                    "resource": "event",
                    "type": "charge:confirmed",
                },
                "id": "f41e37e0-3ad6-4a5a-a4a1-ef1e1e7a8b52",
                "scheduled_for": scheduled_for,
            }
        )

    def signed(body):
        signature = hmac_hex(key.encode(), body)
        checked(name, body, lambda candidate: WebhookSignature.verify_sig_header(candidate.decode("utf-8"), signature, key))
        return {"X-CC-Webhook-Signature": signature}

    body = delivery(1, "2023-08-30T19:29:21Z", "1.00")
    case(name, "first", signed(body), body, "accepted")
    # The next attempt: attempt_number and scheduled_for change, the event does not.
    retry = delivery(2, "2023-08-30T19:30:21Z", "1.00")
    case(name, "retry", signed(retry), retry, "duplicate")
    changed = delivery(2, "2023-08-30T19:30:21Z", "2.00")
    case(name, "changed", signed(changed), changed, "conflict")


# --- GoCardless -------------------------------------------------------------------------
# Webhook-Signature: hex HMAC-SHA256 of the raw body under the endpoint's secret.
# gocardless_pro only verifies (webhooks.parse). GoCardless documents no identity of a
# batch that survives a retry, so the catalog has none and a source names its own: this
# one takes meta.webhook_id for the test's sake, and only the first delivery is sent
# (what a retry would be under an identity GoCardless does not vouch for is not asserted).
def gocardless():
    from gocardless_pro import webhooks

    name = "gocardless"
    key = "ElVE6Hh1oXxyKCbpkLGRx4cQOl0gTjAMCvmNl9nL"
    secret(name, key, config='identity = { pointer = "/meta/webhook_id" }\n')

    body = compact(
        {
            "events": [
                {
                    "id": "EV00BD05S5VM2T",
                    "created_at": "2018-07-05T09:13:51.404Z",
                    "resource_type": "payments",
                    "action": "confirmed",
                    "links": {"payment": "PM000AKJNY0Y6N"},
                    "details": {
                        "origin": "gocardless",
                        "cause": "payment_confirmed",
                        "description": "Payment was confirmed as collected",
                    },
                    "metadata": {},
                }
            ],
            "meta": {"webhook_id": "WB0000HBBPH4V4"},
        }
    )
    signature = hmac_hex(key.encode(), body)
    checked(name, body, lambda candidate: webhooks.parse(candidate, key, signature))
    case(name, "first", {"Webhook-Signature": signature}, body, "accepted")


# --- EasyPost ---------------------------------------------------------------------------
# X-Hmac-Signature: "hmac-sha256-hex=" + hex HMAC-SHA256 of the raw body under the
# webhook_secret (NFKD-normalised). easypost only verifies.
def easypost():
    import unicodedata

    from easypost.util import validate_webhook

    name = "easypost"
    # The library NFKD-normalises the secret before keying; an ASCII secret is its own
    # normal form, and that is the text idemgate takes.
    key = "whk_sec_3f9Kq7LmZx2Tn8Rb"
    secret(name, key)
    hmac_key = unicodedata.normalize("NFKD", key).encode("utf-8")

    def event(status):
        return compact(
            {
                "id": "evt_qatAiJDM",
                "object": "Event",
                "created_at": "2014-11-19T10:51:54Z",
                "updated_at": "2014-11-19T10:51:54Z",
                "description": "tracker.updated",
                "mode": "test",
                "previous_attributes": {"status": "unknown"},
                "pending_urls": [],
                "completed_urls": [],
                "result": {
                    "id": "trk_Txyy1vaM",
                    "object": "Tracker",
                    "mode": "test",
                    "tracking_code": "EZ4000000004",
                    "status": status,
                    "carrier": "UPS",
                },
            }
        )

    def signed(body):
        signature = "hmac-sha256-hex=" + hmac_hex(hmac_key, body)
        checked(name, body, lambda candidate: validate_webhook(candidate, {"X-Hmac-Signature": signature}, key))
        return {"X-Hmac-Signature": signature}

    body = event("delivered")
    case(name, "first", signed(body), body, "accepted")
    case(name, "retry", signed(body), body, "duplicate")
    changed = event("return_to_sender")
    case(name, "changed", signed(changed), changed, "conflict")


# --- Standard Webhooks (Polar, Lithic) ----------------------------------------------------
class _FixedNow(_datetime.datetime):
    """datetime whose now() is PROVIDERS_NOW, so the libraries' tolerance checks use the
    driver's clock rather than the wall clock."""

    @classmethod
    def now(cls, tz=None):
        return _datetime.datetime.fromtimestamp(NOW, tz=tz)


def standard_signed(provider, whsecret, msg_id, ts, body, verify):
    from standardwebhooks.webhooks import Webhook

    signature = Webhook(whsecret).sign(
        msg_id, _datetime.datetime.fromtimestamp(ts, tz=_datetime.timezone.utc), body.decode("utf-8")
    )
    headers = {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": signature}
    checked(provider, body, lambda candidate: verify(candidate, headers))
    return headers


# Polar signs with the Standard Webhooks library under the UTF-8 bytes of its secret text;
# idemgate's standard-webhooks scheme takes those bytes as whsec_ + base64.
def polar():
    import polar.webhooks as polar_webhooks
    from polar.v2026_10.webhooks import validate_event

    name = "polar"
    polar_secret = "polar_whs_7Yx3kQ9vLm2Tn5Rb8Hc4Wd6Fj1Gs0Pz3Aq5Ek7Ur9Io"
    whsecret = "whsec_" + base64.b64encode(polar_secret.encode()).decode()
    secret(name, whsecret)
    # The SDK's tolerance check reads time.time() through its own module attribute.
    polar_webhooks.time = types.SimpleNamespace(time=lambda: float(NOW))
    msg_id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"

    def event(amount):
        return compact(
            {
                "type": "order.paid",
                "timestamp": "2026-10-01T12:00:00.000000Z",
                "data": {
                    "id": "0b3a8e2e-5b9c-4f3e-9d2a-6c1f7e8a9b01",
                    "created_at": "2026-10-01T11:59:58.000000Z",
                    "status": "paid",
                    "paid": True,
                    "total_amount": amount,
                    "currency": "usd",
                    "customer_id": "5d1e0f4a-2b3c-4d5e-8f90-a1b2c3d4e5f6",
                },
            }
        )

    def verify(candidate, headers):
        # The SDK's typed loader wants a complete order; its signature check is what is
        # asserted here, followed by the same check through the public validate_event.
        polar_webhooks._verify_signature(candidate.decode("utf-8"), headers, polar_secret)
        try:
            validate_event(candidate, headers, polar_secret)
        except polar_webhooks.PolarWebhookVerificationError:
            raise
        except polar_webhooks.PolarWebhookError:
            pass  # verified, then not a complete typed payload
        return True

    body = event(2000)
    case(name, "first", standard_signed(name, whsecret, msg_id, NOW - 2, body, verify), body, "accepted")
    case(name, "retry", standard_signed(name, whsecret, msg_id, NOW, body, verify), body, "duplicate")
    changed = event(4000)
    case(name, "changed", standard_signed(name, whsecret, msg_id, NOW, changed, verify), changed, "conflict")


def lithic():
    import standardwebhooks.webhooks as standard
    from lithic import Lithic

    name = "lithic"
    whsecret = "whsec_" + base64.b64encode(bytes(range(1, 33))).decode()
    secret(name, whsecret)
    standard.datetime = _FixedNow
    client = Lithic(api_key="test-key", webhook_secret=whsecret)
    msg_id = "msg_2Lh9KQ0u1cVvYRm3y7Yb2S4xZpQ"

    def event(amount):
        return compact(
            {
                "event_type": "card_transaction.updated",
                "token": "c3ce4ce0-8f4f-4c3c-9a8b-1d2e3f4a5b6c",
                "card_token": "19c22c47-7a75-43ee-9891-595419830f7e",
                "status": "SETTLED",
                "amount": amount,
                "created": "2026-10-01T12:00:00Z",
            }
        )

    def verify(candidate, headers):
        client.webhooks.verify_signature(candidate, headers, secret=whsecret)
        return True

    body = event(1000)
    case(name, "first", standard_signed(name, whsecret, msg_id, NOW - 2, body, verify), body, "accepted")
    case(name, "retry", standard_signed(name, whsecret, msg_id, NOW, body, verify), body, "duplicate")
    changed = event(1500)
    case(name, "changed", standard_signed(name, whsecret, msg_id, NOW, changed, verify), changed, "conflict")


PROVIDERS = [paddle, square, razorpay_, coinbase_commerce, gocardless, easypost, polar, lithic]

if __name__ == "__main__":
    for provider in PROVIDERS:
        provider()
