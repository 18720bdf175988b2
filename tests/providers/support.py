"""The support group's official Python libraries: Resend (with Svix, which it sends
through) and Plivo."""

import datetime
import json
import secrets
import urllib.parse
from unittest import mock

import plivo.utils.signature_v3 as plivo_v3
import resend
import svix.webhooks

from driver import NOW, case, require, secret, tampered, url


def compact(event):
    return json.dumps(event, separators=(",", ":")).encode()


def resend_cases():
    # Signed with svix's Webhook.sign (Resend sends through Svix); every attempt then goes
    # through the Resend SDK's own Webhooks.verify (its own HMAC code, not svix's), with the
    # SDK's clock set to the attempt's time, and a changed byte must fail it.
    key = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    secret("resend", key)
    signer = svix.webhooks.Webhook(key)
    msg_id = "msg_2Lh9KRb0pzN4LePd3XiA4v9G"

    def verify(headers, body, at):
        options = {
            "payload": body.decode(),
            "headers": {
                "id": headers["svix-id"],
                "timestamp": headers["svix-timestamp"],
                "signature": headers["svix-signature"],
            },
            "webhook_secret": key,
        }
        with mock.patch("resend.webhooks._webhooks.time.time", return_value=float(at)):
            resend.Webhooks.verify(options)
            try:
                resend.Webhooks.verify({**options, "payload": tampered(body).decode()})
                require(False, "resend: Webhooks.verify accepted a changed byte")
            except ValueError:
                pass

    # Resend's documented email.delivered event (Webhooks, Event types).
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
    attempts = [
        ("first", event, NOW, "accepted"),
        ("retry", event, NOW + 5, "duplicate"),
        ("changed", changed, NOW + 10, "conflict"),
    ]
    for name, payload, at, expect in attempts:
        body = compact(payload)
        stamp = datetime.datetime.fromtimestamp(at, tz=datetime.timezone.utc)
        headers = {
            "svix-id": msg_id,
            "svix-timestamp": str(at),
            "svix-signature": signer.sign(msg_id, stamp, body.decode()),
            "Content-Type": "application/json",
        }
        verify(headers, body, at)
        case("resend", name, headers, body, expect)


def plivo_cases():
    # Signed with the Plivo SDK's own construction (construct_post_url, get_signature_v3)
    # and checked with its validate_v3_signature, which must refuse a changed byte.
    token = "MAXXXXXXXXXXXXXXXXXX-auth-token-" + secrets.token_hex(8)
    signed_url = url("plivo")
    # Plivo names no event identity, so the source names one: a source for the hangup URL
    # gets one hangup callback per call, and takes the call's CallUUID. Only a first
    # delivery is sent, since no retry of Plivo's is documented to compare it with.
    secret("plivo", token, signed_url=signed_url, config='identity = { pointer = "/CallUUID" }\n')
    # A hangup callback with parameters Plivo documents for it (Voice, hangup_url).
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
    base = plivo_v3.construct_post_url(signed_url, dict(fields)).decode()
    signature = plivo_v3.get_signature_v3(token.encode(), base, nonce.encode()).decode()
    require(
        plivo_v3.validate_v3_signature("POST", signed_url, nonce, token, signature, dict(fields)),
        "plivo: validate_v3_signature accepts its own signature",
    )
    changed = dict(urllib.parse.parse_qsl(tampered(body).decode(), keep_blank_values=True))
    require(
        not plivo_v3.validate_v3_signature("POST", signed_url, nonce, token, signature, changed),
        "plivo: validate_v3_signature refuses a changed byte",
    )
    headers = {
        "X-Plivo-Signature-V3": signature,
        "X-Plivo-Signature-V3-Nonce": nonce,
        "Content-Type": "application/x-www-form-urlencoded",
    }
    case("plivo", "first", headers, body, "accepted")


resend_cases()
plivo_cases()
