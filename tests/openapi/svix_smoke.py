"""A smoke test of idemgate's /api/v1 with Svix's own Python SDK (`svix` from PyPI, in the
venv `tests/openapi/setup-venv.sh` makes), as a customer's code would drive it.

Usage: python svix_smoke.py <server_url> <token>

It creates an application, an event type and an endpoint pointing at a recording HTTP
server of its own on 127.0.0.1, publishes one message twice with the same idempotency key
(the same message id both times), waits for the delivery, verifies its signature with the
SDK's `Webhook`, and lists the message's attempts. On success it prints one JSON line with
what it saw; any failure raises (exit status 1).
"""

import http.server
import json
import sys
import threading
import time
import uuid

from svix.api import (
    ApplicationIn,
    EndpointIn,
    EventTypeIn,
    MessageCreateOptions,
    MessageIn,
    Svix,
    SvixOptions,
)
from svix.webhooks import Webhook

received = []
arrived = threading.Event()


class Recorder(http.server.BaseHTTPRequestHandler):
    """Records every POST (headers and body) and answers 204."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        received.append(({k.lower(): v for k, v in self.headers.items()}, body))
        arrived.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    server_url, token = sys.argv[1], sys.argv[2]
    recorder = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=recorder.serve_forever, daemon=True).start()
    hook_url = f"http://127.0.0.1:{recorder.server_address[1]}/hook"

    svix = Svix(token, SvixOptions(server_url=server_url, retry_schedule=[0.05, 0.1]))
    app = svix.application.create(ApplicationIn(name="Python smoke", uid="python-smoke"))
    svix.event_type.create(EventTypeIn(name="invoice.paid", description="An invoice was paid"))
    endpoint = svix.endpoint.create(app.id, EndpointIn(url=hook_url, event_types=["invoice.paid"]))
    secret = svix.endpoint.get_secret(app.id, endpoint.id).key

    key = f"python-{uuid.uuid4()}"
    message = MessageIn(event_type="invoice.paid", payload={"invoice": "in_1", "amount": 4200})
    first = svix.message.create(app.id, message, MessageCreateOptions(idempotency_key=key))
    again = svix.message.create(app.id, message, MessageCreateOptions(idempotency_key=key))
    assert first.id == again.id, f"the same key gave two messages: {first.id} {again.id}"
    assert first.id.startswith("msg_"), first.id

    assert arrived.wait(60), "the message was never delivered to the endpoint"
    headers, body = received[0]
    assert headers["webhook-id"] == first.id, headers
    Webhook(secret).verify(body, headers)
    assert json.loads(body) == {"invoice": "in_1", "amount": 4200}, body

    attempts = []
    for _ in range(300):
        attempts = svix.message_attempt.list_by_msg(app.id, first.id).data
        if attempts:
            break
        time.sleep(0.05)
    assert attempts, "the delivered message lists no attempt"
    assert attempts[0].msg_id == first.id and attempts[0].endpoint_id == endpoint.id, attempts[0]
    assert attempts[0].response_status_code == 204, attempts[0]

    messages = svix.message.list(app.id).data
    print(
        json.dumps(
            {
                "app": app.id,
                "endpoint": endpoint.id,
                "message": first.id,
                "repeat": again.id,
                "deliveries": len(received),
                "verified": True,
                "attempts": len(attempts),
                "messages": len(messages),
            }
        )
    )


if __name__ == "__main__":
    main()
