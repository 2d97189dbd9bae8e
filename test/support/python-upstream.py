"""A plain Python http.server upstream, as many services are written: it reads a body by its
Content-Length and cannot read a chunked one. Each request it serves is one JSON line on
stdout (method, target, X-Auth-Subject, framing, body as latin1), written before its answer;
the first line holds the port it listens on (127.0.0.1, port 0)."""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Lock

LOCK = Lock()


def emit(entry):
    with LOCK:
        sys.stdout.write(json.dumps(entry) + "\n")
        sys.stdout.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        emit(
            {
                "method": self.command,
                "target": self.path,
                "subject": self.headers.get("X-Auth-Subject"),
                "length": self.headers.get("Content-Length"),
                "encoding": self.headers.get("Transfer-Encoding"),
                "body": body.decode("latin1"),
            }
        )
        answer = b"served\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("X-Test-Upstream", "python")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = serve

    def log_message(self, format, *args):
        # The JSON lines above are the log; http.server's own goes to stderr.
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    emit({"port": server.server_address[1]})
    server.serve_forever()
