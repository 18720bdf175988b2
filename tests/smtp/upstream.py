#!/usr/bin/env python3
"""A recording SMTP upstream for idemgate's tests, on aiosmtpd (a real SMTP server library,
so the tests' mail is judged by a server nobody here wrote).

    upstream.py --port P --record FILE [--refuse-rcpt ADDR]... [--fail temporary|permanent]
                [--fail-times N] [--lose-reply-times N]
                [--starttls-cert C --starttls-key K] [--auth USER:PASS] [--attempts FILE]

It listens on 127.0.0.1:P and prints `ready` on stdout once it does. Every message it accepts
is appended to FILE as one JSON line:
    {"mail_from": ..., "rcpt_tos": [...], "data": "<message text>", "message_id": ...,
     "tls": true|false, "auth_user": ... or null}

- `--fail temporary` answers 451 to DATA, `--fail permanent` 554 (to every DATA, or only to
  the first N with `--fail-times N`, after which messages are accepted).
- `--refuse-rcpt ADDR` answers 550 to RCPT TO for that address (the others are accepted).
- `--lose-reply-times N`: the first N messages are recorded as accepted, then the connection
  is closed instead of answering 250: the "lost 250" a resubmitting client must survive.
- `--starttls-cert/--starttls-key` offer STARTTLS with that certificate and require it before
  MAIL (530 otherwise), so a test that passes proves the client used TLS.
- `--auth USER:PASS` requires AUTH (PLAIN or LOGIN) with these credentials (after STARTTLS
  when STARTTLS is offered); a wrong password gets 535.
- `--attempts FILE` appends one JSON line per DATA, accepted or not, with its `answer`, so a
  test can count attempts that the upstream refused.
"""

import argparse
import asyncio
import email.parser
import email.policy
import json
import logging
import signal
import ssl
import sys
import warnings

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


def parse_args():
    p = argparse.ArgumentParser(description="recording SMTP upstream on aiosmtpd")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--record", required=True)
    p.add_argument("--refuse-rcpt", action="append", default=[])
    p.add_argument("--fail", choices=["temporary", "permanent"])
    p.add_argument("--fail-times", type=int, default=None)
    p.add_argument("--lose-reply-times", type=int, default=0)
    p.add_argument("--starttls-cert")
    p.add_argument("--starttls-key")
    p.add_argument("--auth")
    p.add_argument("--attempts")
    args = p.parse_args()
    if bool(args.starttls_cert) != bool(args.starttls_key):
        p.error("--starttls-cert and --starttls-key go together")
    if args.auth is not None and ":" not in args.auth:
        p.error("--auth takes USER:PASS")
    return args


def append_line(path, obj):
    # One write of a whole line: a reader never sees half a record as a complete line.
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(obj) + "\n")
        f.flush()


class Recorder:
    def __init__(self, args):
        self.args = args
        self.refused = {a.lower() for a in args.refuse_rcpt}
        self.failures_left = args.fail_times
        self.lost_left = args.lose_reply_times

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower() in self.refused:
            return "550 5.1.1 recipient refused by the test upstream"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        answer = self.decide()
        if self.args.attempts:
            append_line(self.args.attempts, {
                "mail_from": envelope.mail_from,
                "rcpt_tos": list(envelope.rcpt_tos),
                "data": text(envelope),
                "message_id": message_id(envelope),
                "answer": answer or "lost",
            })
        if answer is not None and not answer.startswith("250"):
            return answer
        append_line(self.args.record, {
            "mail_from": envelope.mail_from,
            "rcpt_tos": list(envelope.rcpt_tos),
            "data": text(envelope),
            "message_id": message_id(envelope),
            "tls": session.ssl is not None,
            "auth_user": auth_user(session),
        })
        if answer is None:
            # Accepted and recorded, but the client never hears it.
            server.transport.abort()
            return "250 OK (never sent: the connection is gone)"
        return answer

    def decide(self):
        if self.args.fail is not None and (self.failures_left is None or self.failures_left > 0):
            if self.failures_left is not None:
                self.failures_left -= 1
            if self.args.fail == "temporary":
                return "451 4.3.0 temporary failure at the test upstream"
            return "554 5.7.1 permanent refusal by the test upstream"
        if self.lost_left > 0:
            self.lost_left -= 1
            return None
        return "250 2.0.0 OK queued"


def text(envelope):
    content = envelope.content
    if isinstance(content, bytes):
        return content.decode("utf-8", errors="replace")
    return content


def message_id(envelope):
    raw = envelope.original_content or b""
    headers = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(raw)
    value = headers.get("Message-ID")
    return value.strip() if value else None


def auth_user(session):
    data = session.auth_data
    if isinstance(data, LoginPassword):
        return data.login.decode("utf-8", errors="replace")
    return None


class Authenticator:
    def __init__(self, spec):
        user, password = spec.split(":", 1)
        self.user = user.encode()
        self.password = password.encode()

    def __call__(self, server, session, envelope, mechanism, auth_data):
        ok = (isinstance(auth_data, LoginPassword)
              and auth_data.login == self.user and auth_data.password == self.password)
        return AuthResult(success=ok, handled=False, auth_data=auth_data if ok else None)


async def main():
    args = parse_args()
    # aiosmtpd warns about AUTH without TLS and its own deprecations on every connection:
    # noise in a test's output, since plain AUTH on 127.0.0.1 is what such a test wants.
    warnings.simplefilter("ignore")
    logging.getLogger("mail.log").setLevel(logging.ERROR)
    tls_context = None
    if args.starttls_cert:
        tls_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls_context.load_cert_chain(args.starttls_cert, args.starttls_key)
    handler = Recorder(args)
    authenticator = Authenticator(args.auth) if args.auth else None

    def factory():
        kwargs = {
            "hostname": "upstream.test",
            "ident": "idemgate-test-upstream",
            "data_size_limit": 64 * 1024 * 1024,
            "enable_SMTPUTF8": True,
        }
        if tls_context is not None:
            kwargs.update(tls_context=tls_context, require_starttls=True)
        if authenticator is not None:
            kwargs.update(authenticator=authenticator, auth_required=True,
                          auth_require_tls=tls_context is not None)
        return SMTP(handler, **kwargs)

    loop = asyncio.get_running_loop()
    server = await loop.create_server(factory, host="127.0.0.1", port=args.port)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    await stop.wait()
    server.close()
    await server.wait_closed()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
