"""A web process with calls in progress, for tests that kill it.

    python -m tests.support.call_process <secret key> <persona slug> [<calls>]

Without <calls>: starts one call (as the WebSocket endpoint would), prints
``CALL <session id>`` and runs until it is killed. With <calls>: places that
many short calls one after another, each hung up after 0.1 to 0.8 s, printing
``CALL <session id>`` as each starts, then ``DONE``. The environment names the
database and Redis."""

from __future__ import annotations

import asyncio
import os
import random
import sys

import django


async def _run(raw_key: str, model: str, calls: int | None) -> None:
    from sessions.auth import grant_from_secret_key
    from sessions.runner import start_realtime_session
    from tests.support.transports import ListTransport

    grant = await grant_from_secret_key(raw_key, model=model)
    if calls is None:
        session = await start_realtime_session(
            grant=grant, transport=ListTransport(), client_info={}
        )
        print("CALL", session.id, flush=True)
        await session.run()
        return
    for _ in range(calls):
        session = await start_realtime_session(
            grant=grant, transport=ListTransport(), client_info={}
        )
        print("CALL", session.id, flush=True)
        await asyncio.sleep(random.uniform(0.1, 0.8))
        await session.close("hangup")
    print("DONE", flush=True)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "voiceapp.settings")
    django.setup()
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else None
    asyncio.run(_run(sys.argv[1], sys.argv[2], calls))


if __name__ == "__main__":
    main()
