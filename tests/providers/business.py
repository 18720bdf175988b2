"""The business group's official Python libraries: HubSpot, WorkOS, ElevenLabs."""

import hashlib
import hmac
import json
from unittest import mock

from elevenlabs.errors import BadRequestError
from elevenlabs.webhooks_custom import WebhooksClient as ElevenLabsWebhooks
from hubspot.utils.signature import Signature as HubSpotSignature
from workos.webhooks import _verification as workos_verification

from driver import NOW, case, require, secret, tampered, url


def compact(value):
    return json.dumps(value, separators=(",", ":")).encode()


# HubSpot, signature v3: base64 HMAC-SHA256 of method + URI + body + timestamp (ms),
# signed by the library's own Signature.get_signature.
def hubspot():
    name = "hubspot"
    key = "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy"
    signed_url = url(name)
    secret(name, key, signed_url=signed_url)

    def event(attempt, value):
        return compact([{
            "eventId": 1001,
            "subscriptionId": 12345,
            "portalId": 62515,
            "appId": 54321,
            "occurredAt": 1564113600000,
            "subscriptionType": "contact.propertyChange",
            "attemptNumber": attempt,
            "objectId": 123,
            "propertyName": "lifecyclestage",
            "propertyValue": value,
            "changeSource": "CRM",
        }])

    def signed(body, timestamp):
        signature = HubSpotSignature.get_signature(
            key, body.decode(), "v3", http_uri=signed_url, http_method="POST", timestamp=timestamp)
        forged = HubSpotSignature.get_signature(
            key, tampered(body).decode(), "v3", http_uri=signed_url, http_method="POST", timestamp=timestamp)
        require(forged != signature, "hubspot: a changed byte keeps the signature")
        return {
            "X-HubSpot-Signature-v3": signature,
            "X-HubSpot-Request-Timestamp": timestamp,
            "Content-Type": "application/json",
        }

    first = event(0, "lead")
    case(name, "first", signed(first, str(NOW * 1000)), first, "accepted")
    # A retry: the same event, attemptNumber counted up, signed again at its own time.
    retry = event(1, "lead")
    case(name, "retry", signed(retry, str(NOW * 1000 + 60_000)), retry, "duplicate")
    changed = event(0, "customer")
    case(name, "changed", signed(changed, str(NOW * 1000 + 1_000)), changed, "conflict")


# WorkOS: WorkOS-Signature "t=<ms>, v1=<hex HMAC-SHA256 of '<t>.<body>'>"; the library only
# verifies (workos.webhooks verify_header), so we build it as documented and it must agree.
def workos():
    name = "workos"
    key = "sKzYq8p3Vb1mRt6wXe0nLc4hJd7gFa2u"
    secret(name, key)

    def event(state):
        return compact({
            "id": "event_07FKJ843CVE8F7BXQSPFH0M53V",
            "event": "dsync.user.updated",
            "data": {
                "id": "directory_user_01E1X1B89NH8Z3SDFJR4H7RGX7",
                "directory_id": "directory_01ECAZ4NV9QMV47GW873HDCX74",
                "organization_id": "org_01EZTR6WYX1A0DSE2CYMGXQ24Y",
                "email": "lela.block@example.com",
                "state": state,
            },
            "created_at": "2023-04-28 20:05:31.093",
        })

    def signed(body, millis):
        tag = hmac.new(key.encode(), f"{millis}.".encode() + body, hashlib.sha256).hexdigest()
        header = f"t={millis}, v1={tag}"
        # The library reads the clock for its window: it is the signing time here.
        with mock.patch.object(workos_verification.time, "time", return_value=millis / 1000):
            workos_verification.verify_header(event_body=body, event_signature=header, secret=key)
            try:
                workos_verification.verify_header(event_body=tampered(body), event_signature=header, secret=key)
                require(False, "workos accepted a changed byte")
            except ValueError:
                pass
        return {"WorkOS-Signature": header, "Content-Type": "application/json"}

    first = event("active")
    case(name, "first", signed(first, NOW * 1000), first, "accepted")
    # WorkOS retries the event itself: the same bytes, a new signature time.
    case(name, "retry", signed(first, NOW * 1000 + 30_000), first, "duplicate")
    changed = event("inactive")
    case(name, "changed", signed(changed, NOW * 1000 + 1_000), changed, "conflict")


# ElevenLabs: ElevenLabs-Signature "t=<s>,v0=<hex HMAC-SHA256 of '<t>.<body>'>"; the library
# only verifies (webhooks.construct_event).
def elevenlabs():
    name = "elevenlabs"
    key = "wsec_9c1f0e2d7a4b4c8e9f3a6b5d2e1c0f7a"
    secret(name, key)
    verifier = ElevenLabsWebhooks(client_wrapper=mock.Mock())

    def event(summary):
        return compact({
            "type": "post_call_transcription",
            "event_timestamp": 1739537297,
            "data": {
                "agent_id": "xyz",
                "conversation_id": "abc",
                "status": "done",
                "transcript": [
                    {"role": "agent", "message": "Hey there angelo. How are you?", "time_in_call_secs": 0},
                ],
                "analysis": {"call_successful": "success", "transcript_summary": summary},
            },
        })

    def signed(body, seconds):
        tag = hmac.new(key.encode(), f"{seconds}.".encode() + body, hashlib.sha256).hexdigest()
        header = f"t={seconds},v0={tag}"
        with mock.patch("elevenlabs.webhooks_custom.time.time", return_value=float(seconds)):
            verifier.construct_event(rawBody=body.decode(), sig_header=header, secret=key)
            try:
                verifier.construct_event(rawBody=tampered(body).decode(), sig_header=header, secret=key)
                require(False, "elevenlabs accepted a changed byte")
            except BadRequestError:
                pass
        return {"ElevenLabs-Signature": header, "Content-Type": "application/json"}

    first = event("Angelo asks for a fun fact.")
    case(name, "first", signed(first, NOW), first, "accepted")
    # "The retry payload is identical to the original delivery attempt."
    case(name, "retry", signed(first, NOW + 30), first, "duplicate")
    changed = event("Angelo asks about pricing.")
    case(name, "changed", signed(changed, NOW + 1), changed, "conflict")


if __name__ == "__main__":
    hubspot()
    workos()
    elevenlabs()
