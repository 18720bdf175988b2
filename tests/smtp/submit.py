"""Submits messages with Python's smtplib (a client nobody here wrote), for idemgate's
SMTP listener tests, and prints one JSON line per submission: the final reply's code and
text, or the error when no reply came.

    submit.py --port P [--user U --password W] [--starttls --cafile C] [--implicit-tls]
              --from A --to B [--to C] --file MSG [--parallel N]
    submit.py --port P ... --stream N --key-prefix K --file TEMPLATE --deadline S

--parallel N submits the same message N times at once (threads, one connection each).
--stream N submits N keyed messages one after another (the template's {key} and {n}
replaced), resubmitting each, with the same key and bytes, until it gets a 250: a lost
connection, a refused connection or a 4xx is retried, as a careful application would.
It prints {"n":…, "key":…, "code":250, "message":…} for each.
"""

import argparse
import json
import smtplib
import ssl
import sys
import threading
import time


def submit(args, data):
    try:
        if args.implicit_tls:
            context = ssl.create_default_context(cafile=args.cafile)
            client = smtplib.SMTP_SSL("127.0.0.1", args.port, timeout=30, context=context)
        else:
            client = smtplib.SMTP("127.0.0.1", args.port, timeout=30)
        with client:
            client.ehlo("submitter.test")
            if args.starttls:
                client.starttls(context=ssl.create_default_context(cafile=args.cafile))
                client.ehlo("submitter.test")
            if args.user:
                client.login(args.user, args.password)
            code, message = client.mail(args.sender)
            if code != 250:
                return {"code": code, "message": message.decode(errors="replace")}
            for to in args.to:
                code, message = client.rcpt(to)
                if code not in (250, 251):
                    return {"code": code, "message": message.decode(errors="replace")}
            code, message = client.data(data)
            return {"code": code, "message": message.decode(errors="replace")}
    except smtplib.SMTPResponseException as err:
        return {"code": err.smtp_code, "message": err.smtp_error.decode(errors="replace")}
    except (smtplib.SMTPException, OSError) as err:
        return {"error": f"{type(err).__name__}: {err}"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--user")
    parser.add_argument("--password")
    parser.add_argument("--starttls", action="store_true")
    parser.add_argument("--implicit-tls", action="store_true")
    parser.add_argument("--cafile")
    parser.add_argument("--from", dest="sender", required=True)
    parser.add_argument("--to", action="append", required=True)
    parser.add_argument("--file", required=True)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--stream", type=int, default=0)
    parser.add_argument("--key-prefix", default="k")
    parser.add_argument("--deadline", type=float, default=120.0)
    args = parser.parse_args()
    with open(args.file, "rb") as f:
        data = f.read()

    if args.stream:
        end = time.monotonic() + args.deadline
        for n in range(args.stream):
            key = f"{args.key_prefix}-{n}"
            message = data.replace(b"{key}", key.encode()).replace(b"{n}", str(n).encode())
            while True:
                result = submit(args, message)
                if result.get("code") == 250:
                    print(json.dumps({"n": n, "key": key, **result}), flush=True)
                    break
                if result.get("code", 400) >= 500 or time.monotonic() > end:
                    print(json.dumps({"n": n, "key": key, **result}), flush=True)
                    sys.exit(1)
                time.sleep(0.02)
        return

    results = [None] * args.parallel
    start = threading.Barrier(args.parallel)

    def run(i):
        start.wait()
        results[i] = submit(args, data)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(args.parallel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result in results:
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
