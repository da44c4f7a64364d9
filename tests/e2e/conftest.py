"""A real browser for the widget: Debian's Chromium through Playwright, with a
fake microphone that plays a spoken question, talking to the live server.

Pages with the widget snippet are served by a small static HTTP server on
another port than the voice server, so the widget runs cross-origin as on a
customer's site. Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import functools
import http.server
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveServer

CHROMIUM = "/usr/bin/chromium"


@dataclass
class PageHost:
    """Serves files from `root` at `url` (http://127.0.0.1:PORT)."""

    root: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def widget_page(
        self, name: str, server: LiveServer, key: str, persona: str, **attrs: str
    ) -> str:
        """Write a page with the one-line snippet; returns its path on this host."""
        extra = "".join(f' data-{k.replace("_", "-")}="{v}"' for k, v in attrs.items())
        snippet = (
            f'<script src="{server.url}/static/widget/v1.js" data-key="{key}" '
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


@pytest.fixture(scope="session")
def page_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PageHost]:
    root = tmp_path_factory.mktemp("pages")
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield PageHost(root, server.server_address[1])
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def question_wav(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fake microphone: 3 s of silence, a spoken question, 12 s of silence
    (Chromium loops the file), as 48 kHz mono PCM16."""
    work = tmp_path_factory.mktemp("mic")
    spoken = work / "spoken.wav"
    subprocess.run(
        ["espeak-ng", "-s", "150", "-w", str(spoken), "What is the capital of France?"],
        check=True,
    )
    out = work / "question.wav"
    subprocess.run(
        ["sox", str(spoken), "-r", "48000", "-b", "16", "-c", "1", str(out), "pad", "3", "12"],
        check=True,
    )
    return out


@pytest.fixture(scope="module")
def browser(question_wav: Path) -> Iterator[Any]:
    """Chromium, for one test module: Playwright's sync API keeps an event loop
    running in this thread while it is open, so the browser does not outlive the
    module, and Django is told that its sync ORM calls here are fine."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package")
    with pytest.MonkeyPatch.context() as mp, sync_playwright() as p:
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "1")
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-default-apps",
                "--no-first-run",
                "--use-fake-ui-for-media-stream",
                "--use-fake-device-for-media-stream",
                f"--use-file-for-fake-audio-capture={question_wav}",
                "--allow-loopback-in-peer-connection",
                "--autoplay-policy=no-user-gesture-required",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def console() -> list[str]:
    """What the page logged (printed when a test fails, through assertion messages)."""
    return []


@pytest.fixture
def requested() -> list[str]:
    """Every URL the page requested."""
    return []


@pytest.fixture
def page(browser: Any, console: list[str], requested: list[str]) -> Iterator[Any]:
    context = browser.new_context()
    page = context.new_page()
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    page.on("request", lambda r: requested.append(r.url))
    yield page
    context.close()
