"""Load for bench/smtp.sh: C connections, each submitting its share of N keyed messages
one after another on an authenticated smtplib session (a new one every 200 messages). Prints the accept rate (messages
answered 250, so committed durably) as JSON."""

import json
import smtplib
import sys
import threading
import time

port, total, concurrency = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
codes = []
lock = threading.Lock()


def connect():
    client = smtplib.SMTP("127.0.0.1", port, timeout=60)
    client.login("bench", "bench-password")
    return client


def run(worker):
    client = connect()
    for i, n in enumerate(range(worker, total, concurrency)):
        if i and i % 200 == 0:
            # A session is limited to 1000 commands (each message takes four).
            client.quit()
            client = connect()
        client.mail("app@example.com")
        client.rcpt("to@example.com")
        body = f"Subject: bench {n}\r\nIdempotency-Key: bench-{n}\r\n\r\nMessage {n}.\r\n".encode()
        code, _ = client.data(body)
        with lock:
            codes.append(code)
    client.quit()


threads = [threading.Thread(target=run, args=(i,)) for i in range(concurrency)]
start = time.monotonic()
for t in threads:
    t.start()
for t in threads:
    t.join()
elapsed = time.monotonic() - start
print(json.dumps({"accepted": codes.count(250), "seconds": round(elapsed, 3), "per_second": round(codes.count(250) / elapsed)}))
