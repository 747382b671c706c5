"""A stand-in for the gateway's status endpoints, to test and preview the status page alone.

StatusStub serves src/gateway/status_page.html at /status and a JSON document it is given at
/status.json, on 127.0.0.1 with a free port. After `good_polls` answers to /status.json it
fails every later poll: "drop" closes the connection without answering (a gateway that is
gone), "http503" answers 503 (a gateway that is there but refusing).

Preview the page in a browser while editing it (the file is read on every request):

    python3 tests/python/status_stub.py      # prints the URL to open
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent.parent / "src" / "gateway" / "status_page.html"

T0 = 1_764_500_000


def sample_status() -> dict:
    """Two workers (one ejected and simulated), twelve 5 s buckets with gaps, totals."""
    p95 = [None, 410.0, None, 455.5, None, 830.2, 1210.0, 2950.4, None, 1730.0, 912.4, 640.0]
    hit = [None, 0.1, None, 0.2, None, 0.33, 0.25, 0.5, None, 0.41, 0.38, 0.3]
    return {
        "gateway": {"policy": "p2c", "uptime_s": 3725.4, "version": "0.1.0"},
        "workers": [
            {"name": "w0", "url": "http://127.0.0.1:18080", "state": "healthy", "queue": 7,
             "in_flight": 3, "backlog_ms": 812.5, "share": 0.734, "chosen": 734, "weight": 1.0,
             "simulated": False, "last_error": ""},
            {"name": "w1", "url": "http://127.0.0.1:18081", "state": "ejected", "queue": 0,
             "in_flight": 0, "backlog_ms": 0.0, "share": 0.266, "chosen": 266, "weight": 1.0,
             "simulated": True, "last_error": "connect: connection refused"},
        ],
        "window_s": 300,
        "bucket_s": 5,
        "series": [{"t": T0 + 5 * i, "requests": 0 if v is None else 40 + i, "errors": 0,
                    "p95_ms": v, "hit_rate": h} for i, (v, h) in enumerate(zip(p95, hit))],
        "totals": {"requests": 1000, "errors": 4, "retries": 17, "cache_hits": 330,
                   "hit_rate": 0.33, "p95_ms_1m": 912.4, "rps_1m": 6.3,
                   "cache_audited": 40, "cache_audit_disagreements": 2, "cache_audits_failed": 0,
                   "cache_audits_skipped": 1, "false_hit_rate": 0.05,
                   "false_hit_rate_95": [0.01383, 0.16502]},
    }


class StatusStub:
    def __init__(self, status: dict, good_polls: int | None = None, failure: str = "drop"):
        assert failure in ("drop", "http503"), failure
        self.status = status
        self.good_polls = good_polls
        self.failure = failure
        self.polls = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def _next_poll_fails(self) -> bool:
        with self._lock:
            self.polls += 1
            return self.good_polls is not None and self.polls > self.good_polls

    def _handler(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # the test output is no place for access logs
                pass

            def _send(self, code: int, ctype: str, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                path = self.path.split("?", 1)[0]
                if path == "/status":
                    self._send(200, "text/html; charset=utf-8", PAGE.read_bytes())
                elif path == "/status.json":
                    if not stub._next_poll_fails():
                        self._send(200, "application/json", json.dumps(stub.status).encode())
                    elif stub.failure == "http503":
                        self._send(503, "text/plain", b"unavailable\n")
                    else:
                        self.close_connection = True
                else:
                    self._send(404, "text/plain", b"not found\n")

        return Handler

    def __enter__(self) -> "StatusStub":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


if __name__ == "__main__":
    with StatusStub(sample_status()) as stub:
        print(f"status page: {stub.url}/status  (Ctrl-C to stop)", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
