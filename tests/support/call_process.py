"""A web process with one call in progress, for tests that kill it.

    python -m tests.support.call_process <secret key> <persona slug>

Starts a call (as the WebSocket endpoint would), prints ``CALL <id>`` and runs
until it is killed. The environment names the database and Redis."""

from __future__ import annotations

import asyncio
import os
import sys

import django


async def _run(raw_key: str, model: str) -> None:
    from sessions.auth import grant_from_secret_key
    from sessions.runner import start_realtime_session
    from tests.support.transports import ListTransport

    grant = await grant_from_secret_key(raw_key, model=model)
    session = await start_realtime_session(grant=grant, transport=ListTransport(), client_info={})
    print("CALL", session.id, flush=True)
    await session.run()


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "voiceapp.settings")
    django.setup()
    asyncio.run(_run(sys.argv[1], sys.argv[2]))


if __name__ == "__main__":
    main()
