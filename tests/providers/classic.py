"""The first providers' official Python libraries: Stripe, Slack, Standard Webhooks, Svix."""

import base64
import datetime
import json
import urllib.parse

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


def slack_command_cases():
    # A slash command, form-encoded, signed like the Events API (v0:{timestamp}:{body}).
    key = "8f742231b10e8888abcd99yyyzzz85a6"
    secret("slack-commands", key)
    verifier = slack_sdk.signature.SignatureVerifier(signing_secret=key)

    def command(name, text, trigger):
        return urllib.parse.urlencode([
            ("token", "gIkuvaNzQIHg97ATvDxqgjtO"), ("team_id", "T0001"), ("team_domain", "example"),
            ("channel_id", "C2147483705"), ("channel_name", "test"), ("user_id", "U2147483697"),
            ("user_name", "Steve"), ("command", name), ("text", text),
            ("response_url", "https://hooks.slack.com/commands/1234/5678"), ("trigger_id", trigger),
            ("api_app_id", "A123456"),
        ]).encode()

    def signed(body, at):
        signature = verifier.generate_signature(timestamp=str(at), body=body)
        require(verifier.is_valid(body=body, timestamp=str(at), signature=signature), "slack verifies its own")
        require(not verifier.is_valid(body=tampered(body), timestamp=str(at), signature=signature), "slack tamper")
        return {"X-Slack-Request-Timestamp": str(at), "X-Slack-Signature": signature,
                "Content-Type": "application/x-www-form-urlencoded"}

    trigger = "13345224609.738474920.8088930838d88f008e0"
    first = command("/deploy", "api to production", trigger)
    case("slack-commands", "first", signed(first, NOW), first, "accepted")
    case("slack-commands", "retry", signed(first, NOW + 2), first, "duplicate")
    changed = command("/deploy", "api to staging", trigger)
    case("slack-commands", "changed", signed(changed, NOW + 3), changed, "conflict")
    # Another command, accepted but not of the type the end-to-end test forwards.
    other = command("/weather", "berlin", "13345224609.738474920.99999")
    case("slack-commands", "other", signed(other, NOW + 4), other, "accepted")


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
slack_command_cases()
standard_cases("standard-webhooks", standardwebhooks.webhooks, "webhook-id", "webhook-timestamp", "webhook-signature")
standard_cases("svix", svix.webhooks, "svix-id", "svix-timestamp", "svix-signature")
