"""A real browser for the widget: Debian's Chromium through Playwright, with a
fake microphone that plays a spoken question, talking to the live server.

Pages with the widget snippet are served on another port than the voice server
(bench/pagehost.py, shared with the browser benchmark), so the widget runs
cross-origin as on a customer's site. Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.pagehost import CHROMIUM, PageHost, chromium_args, serve_pages


@pytest.fixture(scope="session")
def page_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PageHost]:
    with serve_pages(tmp_path_factory.mktemp("pages")) as host:
        yield host


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
            args=chromium_args(question_wav),
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
