"""Draining a web process: it admits no new calls and lets its own calls finish.

Before Kubernetes stops a web pod it runs the pod's preStop hook,
`manage.py drain_web` (deploy/kubernetes/web.yaml). That marks this process
(`settings.WEB_INSTANCE`, the pod's name) as draining in the live store, so:

- `CallSlots.take` refuses new calls here with `server_draining` (503,
  Retry-After 1): a client that connects again reaches another pod;
- `/readyz` answers 503, and the Service stops sending this pod new
  connections;
- calls already running go on to their end, however long (up to the pod's
  termination grace period); `drain_web` waits for `/readyz` to report none
  left here, then the pod gets its SIGTERM.

The mark expires by itself (its TTL is the drain's wait plus a minute), so a
process whose drain was abandoned takes calls again. The count of calls in
progress is this process's own: the slots it took and has not freed.
"""

from __future__ import annotations

import time

from django.conf import settings

from sessions.auth import AuthError
from sessions.live import LiveStore

CACHE_S = 1.0  # how long one reading of the mark is trusted (one Redis read per second)

_calls: set[str] = set()
_read: tuple[float, bool] = (0.0, False)


def instance() -> str:
    return settings.WEB_INSTANCE


def call_started(call_id: str) -> None:
    _calls.add(call_id)


def call_ended(call_id: str) -> None:
    _calls.discard(call_id)


def calls_here() -> int:
    """Calls holding slots taken by this process."""
    return len(_calls)


async def draining(store: LiveStore) -> bool:
    """This process is draining (read at most once per `CACHE_S`)."""
    global _read
    at, value = _read
    now = time.monotonic()
    if now - at >= CACHE_S:
        value = await store.draining(instance())
        _read = (now, value)
    return value


def forget_reading() -> None:
    """The next `draining()` reads the store again (after this process set the mark)."""
    global _read
    _read = (0.0, False)


def draining_error() -> AuthError:
    return AuthError(
        "server_draining",
        "This server is shutting down and takes no new calls; connect again to reach another.",
        503,
        retry_after=1,
    )
