#!/usr/bin/env python3
"""How long an accepted event waits before the worker forwards it, at low load.

    bench/forward_latency.py GATEWAY_URL SINK_URL EVENTS

Sends EVENTS Standard Webhooks deliveries (signed with $BENCH_SECRET) one at a time. For
each, the time from the gateway's 202 to the sink having one more request (its
`GET /count`, polled every 0.2 ms) is the wait; prints the percentiles as JSON.
"""
import base64, hashlib, hmac, http.client, json, os, sys, time
from urllib.parse import urlsplit


def connect(url):
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname, parts.port), parts.path


def main():
    gateway, path = connect(sys.argv[1])
    sink, count_path = connect(sys.argv[2])
    events = int(sys.argv[3])
    secret = base64.b64decode(os.environ["BENCH_SECRET"].removeprefix("whsec_"))

    def count():
        sink.request("GET", count_path)
        return int(sink.getresponse().read())

    waits = []
    seen = count()
    for n in range(events):
        body = json.dumps({"type": "latency.probe", "n": n}).encode()
        msg_id, stamp = f"msg_latency_{os.getpid()}_{n}", str(int(time.time()))
        mac = hmac.new(secret, f"{msg_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
        headers = {"content-type": "application/json", "webhook-id": msg_id, "webhook-timestamp": stamp,
                   "webhook-signature": "v1," + base64.b64encode(mac).decode()}
        gateway.request("POST", path, body, headers)
        answer = gateway.getresponse()
        answer.read()
        assert answer.status == 202, answer.status
        accepted = time.perf_counter()
        while count() <= seen:
            time.sleep(0.0002)
        waits.append(time.perf_counter() - accepted)
        seen += 1
    waits.sort()
    pick = lambda q: round(1000 * waits[min(len(waits) - 1, int(q * len(waits)))], 2)
    print(json.dumps({"events": events, "p50_ms": pick(0.5), "p90_ms": pick(0.9), "p99_ms": pick(0.99),
                      "max_ms": round(1000 * waits[-1], 2)}))


if __name__ == "__main__":
    main()
