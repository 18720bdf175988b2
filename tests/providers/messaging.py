#!/usr/bin/env python3
"""The messaging group's providers (Twilio, SendGrid, Discord, Telnyx), signed or checked by
their official libraries.

Twilio: `twilio` RequestValidator.compute_signature signs, .validate checks.
SendGrid: its library only verifies (EventWebhook.verify_signature); the signature is made
as SendGrid documents it (ECDSA P-256, SHA-256, over timestamp + payload) with
`cryptography`, then the library must accept it and refuse a changed byte.
Discord: signed with PyNaCl (ed25519 over timestamp + body), checked by Discord's own
`discord-interactions` verify_key.
Telnyx: signed with PyNaCl (ed25519 over "timestamp|body"), checked by the `telnyx`
library's verify_webhook_signature.

The protocol and the environment are driver.py's (crates/idemgate/tests/it/providers.rs).
Exits non-zero when a library disagrees.
"""

import base64
import contextlib
import json
import sys
import types
import urllib.parse

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from nacl.signing import SigningKey

from driver import NOW, case, require, secret, tampered, url


@contextlib.contextmanager
def quiet():
    """Keeps a library's prints (discord-interactions prints why it refused) off stdout,
    which carries the JSON lines only."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def compact(value):
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


# --- Twilio -------------------------------------------------------------------------------


def twilio():
    from twilio.request_validator import RequestValidator

    token = "9f2a6c1e4b7d8a0c3e5f7a9b1d3c5e7f"
    signed_url = url("twilio")
    validator = RequestValidator(token)
    secret("twilio", token, signed_url=signed_url)

    def status_callback(status):
        # An SMS status callback as Twilio posts it (Messaging, "Outbound Message Status in
        # Status Callbacks"), in the order Twilio sends the fields.
        return [
            ("SmsSid", "SM1f0e8ae6ade43cb3c0ce4525424e404f"),
            ("SmsStatus", status),
            ("MessageStatus", status),
            ("To", "+15558675310"),
            ("MessageSid", "SM1f0e8ae6ade43cb3c0ce4525424e404f"),
            ("AccountSid", "AC1234567890abcdef1234567890abcdef"),
            ("From", "+15017122661"),
            ("ApiVersion", "2010-04-01"),
        ]

    def request(status, token="9b1e0a6c-2f4d-4c8e-a1b3-5d7f9e2c4a60"):
        fields = status_callback(status)
        body = urllib.parse.urlencode(fields).encode("ascii")
        params = dict(fields)
        signature = validator.compute_signature(signed_url, params)
        require(validator.validate(signed_url, params, signature), "twilio: the library refuses its own signature")
        changed = dict(urllib.parse.parse_qsl(tampered(body).decode("ascii"), keep_blank_values=True))
        require(not validator.validate(signed_url, changed, signature), "twilio: the library accepts a changed byte")
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Twilio-Signature": signature,
            "I-Twilio-Idempotency-Token": token,
        }
        return headers, body

    headers, body = request("delivered")
    case("twilio", "first", headers, body, "accepted")
    # Twilio retries a failed connection with the same request: same bytes, same token.
    case("twilio", "retry", headers, body, "duplicate")
    headers, body = request("undelivered")
    case("twilio", "changed", headers, body, "conflict")
    # An earlier callback of the same message, of another status: accepted, and not of the
    # type the end-to-end test forwards.
    headers, body = request("sent", token="0c2d4e6f-8a1b-4c3d-9e5f-7a9b1c3d5e7f")
    case("twilio", "other", headers, body, "accepted")


# --- SendGrid -----------------------------------------------------------------------------


def sendgrid():
    from sendgrid.helpers.eventwebhook import EventWebhook

    private_key = ec.derive_private_key(0x5E4D6C1A2B3F, ec.SECP256R1())
    der = private_key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    verification_key = base64.b64encode(der).decode("ascii")
    # SendGrid names no identity of a batch; this source takes the first event's sg_event_id
    # (see the catalog entry).
    secret("sendgrid", verification_key, config='identity = { pointer = "/0/sg_event_id" }')
    library = EventWebhook(verification_key)

    def events(second_event):
        # The Event Webhook's sample batch (Event Webhook Reference, delivery events).
        return compact(
            [
                {
                    "email": "example@test.com",
                    "timestamp": 1513299569,
                    "smtp-id": "<14c5d75ce93.dfd.64b469@ismtpd-555>",
                    "event": "processed",
                    "category": "cat facts",
                    "sg_event_id": "rbtnWrG1DVDGGGFHFyun0A==",
                    "sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0",
                },
                {
                    "email": "example@test.com",
                    "timestamp": 1513299570,
                    "smtp-id": "<14c5d75ce93.dfd.64b469@ismtpd-555>",
                    "event": second_event,
                    "category": "cat facts",
                    "sg_event_id": "lYzGS4QsTNCVqvZDjhKJ4Q==",
                    "sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0",
                    "response": "250 OK",
                },
            ]
        )

    def request(body, timestamp):
        timestamp = str(timestamp)
        signed = timestamp.encode("ascii") + body
        signature = base64.b64encode(private_key.sign(signed, ec.ECDSA(hashes.SHA256()))).decode("ascii")
        payload = body.decode("utf-8")
        require(library.verify_signature(payload, signature, timestamp), "sendgrid: the library refuses the signature")
        changed = tampered(body).decode("utf-8")
        require(not library.verify_signature(changed, signature, timestamp), "sendgrid: the library accepts a changed byte")
        headers = {
            "Content-Type": "application/json",
            "X-Twilio-Email-Event-Webhook-Signature": signature,
            "X-Twilio-Email-Event-Webhook-Timestamp": timestamp,
        }
        return headers, body

    body = events("delivered")
    case("sendgrid", "first", *request(body, NOW), "accepted")
    # A retried POST of the same batch, signed again at its own time.
    case("sendgrid", "retry", *request(body, NOW + 30), "duplicate")
    case("sendgrid", "changed", *request(events("deferred"), NOW + 60), "conflict")


# --- Discord ------------------------------------------------------------------------------


def discord():
    from discord_interactions import verify_key

    key = SigningKey(bytes(range(1, 33)))
    public_key = key.verify_key.encode().hex()
    # Webhook events carry no event id; an ENTITLEMENT_CREATE names its entitlement, which
    # this source takes (see the catalog entry).
    secret("discord", public_key, config='identity = { pointer = "/event/data/id" }')

    def event(sku):
        # Discord's ENTITLEMENT_CREATE example (Webhook Events, Entitlement Create).
        return compact(
            {
                "version": 1,
                "application_id": "1234560123453231555",
                "type": 1,
                "event": {
                    "type": "ENTITLEMENT_CREATE",
                    "timestamp": "2024-10-18T18:41:21.109604",
                    "data": {
                        "application_id": "1234560123453231555",
                        "consumed": False,
                        "deleted": False,
                        "gift_code_flags": 0,
                        "id": "1234505980407808808",
                        "promotion_id": None,
                        "sku_id": sku,
                        "type": 4,
                        "user_id": "111178765189277770",
                    },
                },
            }
        )

    def request(body, timestamp):
        timestamp = str(timestamp)
        signature = key.sign(timestamp.encode("ascii") + body).signature.hex()
        with quiet():
            require(verify_key(body, signature, timestamp, public_key), "discord: verify_key refuses the signature")
            require(not verify_key(tampered(body), signature, timestamp, public_key), "discord: verify_key accepts a changed byte")
        headers = {"Content-Type": "application/json", "X-Signature-Ed25519": signature, "X-Signature-Timestamp": timestamp}
        return headers, body

    body = event("123489045643835123")
    case("discord", "first", *request(body, NOW), "accepted")
    # Discord resends an unacknowledged event; signed again at its own time here (whether
    # Discord renews the timestamp is not documented; the tolerance covers either).
    case("discord", "retry", *request(body, NOW + 30), "duplicate")
    case("discord", "changed", *request(event("123489045643835999"), NOW + 60), "conflict")


# --- Telnyx -------------------------------------------------------------------------------


def telnyx():
    import telnyx.lib.webhook_verification as verification

    # The library checks its five-minute window against the wall clock; it is given the
    # signing time instead, so the check is of the signature and not of this run's clock.
    clock = types.SimpleNamespace(time=lambda: NOW)
    verification.time = clock

    key = SigningKey(bytes(range(101, 133)))
    public_key = base64.b64encode(key.verify_key.encode()).decode("ascii")
    secret("telnyx", public_key)

    def event(status, attempt):
        # message.finalized as Telnyx documents it (Receiving Webhooks for Messaging),
        # trimmed; meta.attempt counts the delivery attempts.
        return compact(
            {
                "data": {
                    "event_type": "message.finalized",
                    "id": "4ee8c3a6-4995-4309-a3c6-38e3db9ea4be",
                    "occurred_at": "2019-12-09T21:32:14.148+00:00",
                    "payload": {
                        "completed_at": "2019-12-09T21:32:14.148+00:00",
                        "direction": "outbound",
                        "from": {"carrier": "Telnyx", "line_type": "Wireless", "phone_number": "+12125559000"},
                        "id": "b301ed3f-1490-491f-995f-6e64e69674d4",
                        "text": "Hello there!",
                        "to": [
                            {
                                "carrier": "T-MOBILE USA, INC.",
                                "line_type": "Wireless",
                                "phone_number": "+13125550001",
                                "status": status,
                            }
                        ],
                        "type": "SMS",
                    },
                    "record_type": "event",
                },
                "meta": {"attempt": attempt, "delivered_to": url("telnyx")},
            }
        )

    def request(body, timestamp):
        timestamp = str(timestamp)
        clock.time = lambda: int(timestamp)
        signature = base64.b64encode(key.sign(f"{timestamp}|".encode("ascii") + body).signature).decode("ascii")
        headers = {"Content-Type": "application/json", "telnyx-signature-ed25519": signature, "telnyx-timestamp": timestamp}
        verification.verify_webhook_signature(body, headers, public_key)
        try:
            verification.verify_webhook_signature(tampered(body), headers, public_key)
        except verification.WebhookVerificationError:
            pass
        else:
            raise SystemExit("messaging.py: telnyx: the library accepts a changed byte")
        return headers, body

    case("telnyx", "first", *request(event("delivered", 1), NOW), "accepted")
    # A retry: the same event, meta.attempt counted up, signed again at its own time.
    case("telnyx", "retry", *request(event("delivered", 2), NOW + 30), "duplicate")
    case("telnyx", "changed", *request(event("delivery_failed", 3), NOW + 60), "conflict")


if __name__ == "__main__":
    twilio()
    sendgrid()
    discord()
    telnyx()
