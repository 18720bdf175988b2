"""The host-side destination of the container smoke test: answers 200 to every POST and
appends one line per request to LOG, `<path> <webhook-id>`, so the test can count
deliveries per event. Usage: receiver.py PORT LOG (listens on 127.0.0.1)."""
import http.server
import sys

port, log = int(sys.argv[1]), sys.argv[2]


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{self.path} {self.headers.get('webhook-id', '-')}\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", port), Receiver).serve_forever()
