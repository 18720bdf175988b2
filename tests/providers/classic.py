"""The first providers' official Python libraries: Stripe, Slack, Standard Webhooks, Svix."""

import base64
import datetime
import json

import slack_sdk.signature
import standardwebhooks
import stripe
import svix.webhooks

from driver import NOW, case, require, secret, tampered


def stripe_cases():
    # Stripe's library verifies (Webhook.construct_event); the header is built as Stripe
    # documents it (t=…,v1=HMAC-SHA256 of "t.body") and the library must accept it.
    key = "whsec_a_stripe_endpoint_secret"
    secret("stripe", key)

    def event(pending, amount):
        return json.dumps({
            "id": "evt_1PqZ3aLkdIwHu7ix0Qw7b3fC",
            "object": "event",
            "api_version": "2024-06-20",
            "created": NOW - 5,
            "data": {"object": {"id": "pi_3PqZ", "object": "payment_intent", "amount": amount}},
            "livemode": False,
            "pending_webhooks": pending,
            "type": "payment_intent.succeeded",
        }, separators=(",", ":")).encode()

    def signed(body, at):
        mac = stripe.WebhookSignature._compute_signature(f"{at}.{body.decode()}", key)
        header = f"t={at},v1={mac}"
        stripe.Webhook.construct_event(body, header, key, tolerance=None)
        try:
            stripe.Webhook.construct_event(tampered(body), header, key, tolerance=None)
            require(False, "stripe accepted a changed byte")
        except stripe.SignatureVerificationError:
            pass
        return {"Stripe-Signature": header, "Content-Type": "application/json; charset=utf-8"}

    first = event(2, 2000)
    case("stripe", "first", signed(first, NOW), first, "accepted")
    # A retry of the same Event once another endpoint has taken it: pending_webhooks fell.
    retry = event(1, 2000)
    case("stripe", "retry", signed(retry, NOW + 60), retry, "duplicate")
    changed = event(1, 2500)
    case("stripe", "changed", signed(changed, NOW + 61), changed, "conflict")


def slack_cases():
    key = "8f742231b10e8888abcd99yyyzzz85a5"
    secret("slack", key)
    verifier = slack_sdk.signature.SignatureVerifier(signing_secret=key)

    def event(text):
        return json.dumps({
            "token": "XXYYZZ",
            "team_id": "T123ABC456",
            "api_app_id": "A123ABC456",
            "event": {"type": "app_mention", "user": "U123ABC456", "text": text, "ts": "1515449522.000016"},
            "type": "event_callback",
            "event_id": "Ev123ABC456",
            "event_time": 1515449522,
        }, separators=(",", ":")).encode()

    def signed(body, at, retry=None):
        signature = verifier.generate_signature(timestamp=str(at), body=body)
        require(verifier.is_valid(body=body, timestamp=str(at), signature=signature), "slack verifies its own")
        require(not verifier.is_valid(body=tampered(body), timestamp=str(at), signature=signature), "slack tamper")
        headers = {"X-Slack-Request-Timestamp": str(at), "X-Slack-Signature": signature,
                   "Content-Type": "application/json"}
        if retry:
            headers["X-Slack-Retry-Num"] = str(retry)
            headers["X-Slack-Retry-Reason"] = "http_timeout"
        return headers

    first = event("<@U0LAN0Z89> is it everything a river should be?")
    case("slack", "first", signed(first, NOW), first, "accepted")
    case("slack", "retry", signed(first, NOW + 1, retry=1), first, "duplicate")
    changed = event("<@U0LAN0Z89> is it not?")
    case("slack", "changed", signed(changed, NOW + 2), changed, "conflict")


def standard_cases(provider, library, id_header, ts_header, sig_header):
    key = "whsec_" + base64.b64encode(b"a-standard-webhooks-secret-key!!").decode()
    secret(provider, key)
    hook = library.Webhook(key)

    def signed(message_id, body, at):
        when = datetime.datetime.fromtimestamp(at, tz=datetime.timezone.utc)
        signature = hook.sign(message_id, when, body.decode())
        headers = {id_header: message_id, ts_header: str(at), sig_header: signature,
                   "Content-Type": "application/json"}
        hook.verify(body, headers)
        return headers

    first = b'{"type":"invoice.paid","timestamp":"2026-12-07T00:00:00Z","data":{"invoice":"in_1","amount":10}}'
    case(provider, "first", signed("msg_2Lj1", first, NOW), first, "accepted")
    case(provider, "retry", signed("msg_2Lj1", first, NOW + 30), first, "duplicate")
    changed = first.replace(b'"amount":10', b'"amount":11')
    case(provider, "changed", signed("msg_2Lj1", changed, NOW + 31), changed, "conflict")


stripe_cases()
slack_cases()
standard_cases("standard-webhooks", standardwebhooks.webhooks, "webhook-id", "webhook-timestamp", "webhook-signature")
standard_cases("svix", svix.webhooks, "svix-id", "svix-timestamp", "svix-signature")
