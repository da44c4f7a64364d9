"""A real HTTP server on loopback that plays Stripe's meter event endpoint: it
records every request and answers like Stripe, with the status codes a test
scripts (then 200)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

ERRORS = {
    400: ("invalid_request_error", "No such customer: 'cus_gone'"),
    429: ("invalid_request_error", "Too many requests."),
    500: ("api_error", "Something went wrong on Stripe's end."),
}


@dataclass
class StripeRequest:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    form: dict[str, str]  # the form-encoded body, one value per key


@dataclass
class FakeStripe:
    url: str
    statuses: list[int] = field(default_factory=list)
    requests: list[StripeRequest] = field(default_factory=list)
    delay_s: float = 0.0  # how long each answer takes

    def answer(self, *statuses: int) -> None:
        """The next requests get these status codes, in order; later ones 200."""
        self.statuses.extend(statuses)


@contextmanager
def fake_stripe() -> Iterator[FakeStripe]:
    fake = FakeStripe(url="")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            form = {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}
            with lock:
                fake.requests.append(
                    StripeRequest(
                        "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, form
                    )
                )
                status = fake.statuses.pop(0) if fake.statuses else 200
            time.sleep(fake.delay_s)
            if status == 200:
                answer: dict[str, object] = {
                    "object": "billing.meter_event",
                    "created": int(time.time()),
                    "event_name": form.get("event_name"),
                    "identifier": form.get("identifier"),
                    "livemode": False,
                    "payload": {
                        k[len("payload[") : -1]: v
                        for k, v in form.items()
                        if k.startswith("payload[")
                    },
                    "timestamp": int(form.get("timestamp", "0")),
                }
            else:
                kind, message = ERRORS.get(status, ("api_error", "error"))
                answer = {"error": {"type": kind, "message": message}}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Request-Id", f"req_{len(fake.requests)}")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
