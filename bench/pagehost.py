"""A customer's site for the widget, and the headless Chromium that visits it.

Pages with the one-line widget snippet are served by a small static HTTP server
on another port than the voice server, so the widget runs cross-origin as on a
customer's site. Chromium (Debian's, driven by Playwright) gets a fake
microphone that plays a WAV file. Shared by the widget's browser tests
(tests/e2e) and the browser benchmark (bench/browser.py); everything stays on
127.0.0.1.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"


@dataclass
class PageHost:
    """Serves files from `root` at `url` (http://127.0.0.1:PORT)."""

    root: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def widget_page(self, name: str, server_url: str, key: str, persona: str, **attrs: str) -> str:
        """Write a page with the one-line snippet of the voice server at `server_url`;
        returns its path on this host."""
        extra = "".join(f' data-{k.replace("_", "-")}="{v}"' for k, v in attrs.items())
        snippet = (
            f'<script src="{server_url}/static/widget/v1.js" data-key="{key}" '
            f'data-persona="{persona}"{extra} async></script>'
        )
        html = (
            "<!doctype html><html lang=en><head><meta charset=utf-8><title>Shop</title></head>"
            f"<body><h1>A customer's shop</h1><p>Questions? Call us.</p>{snippet}</body></html>"
        )
        (self.root / f"{name}.html").write_text(html)
        return f"/{name}.html"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve_pages(root: Path) -> Iterator[PageHost]:
    """A static HTTP server for `root` on a free port of 127.0.0.1, while in the block."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield PageHost(root, server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def chromium_args(mic_wav: Path) -> list[str]:
    """Headless Chromium's flags: a fake microphone playing `mic_wav` (Chromium loops
    it), granted without a prompt, WebRTC on loopback, audio that plays unclicked."""
    return [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--no-first-run",
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={mic_wav}",
        "--allow-loopback-in-peer-connection",
        "--autoplay-policy=no-user-gesture-required",
    ]
