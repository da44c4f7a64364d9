"""Drain this host's web process before it stops (a Kubernetes preStop hook):
new calls are refused here and sent elsewhere, running ones finish (sessions/drain.py)."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions.live import RedisLiveStore

PROGRESS_EVERY_S = 10.0


class Command(BaseCommand):
    help = (
        "Stop this web process taking new calls and wait until its calls have ended "
        "(or --wait seconds). --undo takes calls again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--wait", type=float, default=600.0, help="Longest wait, in seconds")
        parser.add_argument(
            "--url",
            default="http://127.0.0.1:8000/readyz",
            help="The process's readiness probe, which reports its calls",
        )
        parser.add_argument("--instance", default="", help="Default: WEB_INSTANCE")
        parser.add_argument("--undo", action="store_true", help="Take new calls again")
        parser.add_argument("--poll", type=float, default=1.0, help="Seconds between readings")

    def handle(self, *args: Any, **options: Any) -> None:
        instance = options["instance"] or settings.WEB_INSTANCE
        wait_s = max(0.0, options["wait"])
        if not settings.REDIS_URL:
            raise CommandError(
                "Draining needs the shared live store (REDIS_URL): the embedded default "
                "keeps its calls in the web process itself."
            )
        if options["undo"]:
            _with_store(lambda store: store.clear_draining(instance))
            self.stdout.write(f"{instance} takes new calls again.")
            return
        _with_store(lambda store: store.set_draining(instance, ttl_s=int(wait_s) + 60))
        self.stdout.write(f"{instance} is draining: new calls go to other web processes.")
        started = time.monotonic()
        last_told = started - PROGRESS_EVERY_S
        last_calls: int | None = None
        while True:
            calls = _calls_left(options["url"])
            waited = time.monotonic() - started
            if calls is None:
                self.stdout.write(f"{options['url']} does not answer: no calls to wait for.")
                return
            if calls == 0:
                self.stdout.write(f"Drained after {waited:.0f} s: no calls left on {instance}.")
                return
            if waited >= wait_s:
                raise CommandError(
                    f"{calls} call(s) still in progress on {instance} after {wait_s:.0f} s; "
                    "stopping anyway."
                )
            if calls != last_calls or time.monotonic() - last_told >= PROGRESS_EVERY_S:
                self.stdout.write(f"  {calls} call(s) in progress, {waited:.0f} s waited")
                last_told, last_calls = time.monotonic(), calls
            time.sleep(options["poll"])


def _calls_left(url: str) -> int | None:
    """The calls the web process reports (its /readyz answers 503 while draining)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        body = exc.read()
    except (urllib.error.URLError, OSError):
        return None
    try:
        return int(json.loads(body)["calls"])
    except (ValueError, KeyError, TypeError):
        return None


def _with_store(use: Callable[[RedisLiveStore], Awaitable[None]]) -> None:
    async def run() -> None:
        store = RedisLiveStore(settings.REDIS_URL, pool=settings.CHANNELS_PREFIX)
        try:
            await use(store)
        finally:
            await store.aclose()

    asyncio.run(run())
