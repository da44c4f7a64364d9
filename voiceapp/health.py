"""Probes for an orchestrator: `/healthz` (the process answers) and `/readyz`
(it takes new calls: not draining, and its live store answers).

They are answered by `ProbeMiddleware`, first in the stack: a kubelet calls the
pod's own address over plain HTTP, with the pod's IP as the host, so the probes
must not go through host validation (ALLOWED_HOSTS) or the HTTPS redirect. The
answers are plain JSON with no secrets in them. `/readyz` also says how many
calls this process is carrying, which `manage.py drain_web` waits on.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import async_to_sync, iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponse, JsonResponse

from sessions import drain
from sessions.live import live_store

log = logging.getLogger(__name__)

PROBES = ("/healthz", "/readyz")


async def probe(path: str, method: str) -> JsonResponse:
    if method not in ("GET", "HEAD"):
        response = JsonResponse({"error": "method_not_allowed"}, status=405)
        response["Allow"] = "GET, HEAD"
        return response
    if path == "/healthz":
        return JsonResponse({"ok": True})
    body: dict[str, Any] = {"instance": drain.instance(), "calls": drain.calls_here()}
    try:
        draining = await drain.draining(live_store())
    except Exception as exc:  # Redis away: no call could be admitted here
        log.warning("readyz: the live store did not answer: %s", exc)
        body.update(ready=False, reason="live_store_unreachable")
        return JsonResponse(body, status=503)
    if draining:
        return JsonResponse({**body, "ready": False, "reason": "draining"}, status=503)
    return JsonResponse({**body, "ready": True})


class ProbeMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponse | Awaitable[HttpResponse]:
        if self.is_async:
            return self._acall(request)
        if request.path in PROBES:
            return async_to_sync(probe)(request.path, request.method or "GET")
        response: HttpResponse = self.get_response(request)
        return response

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        if request.path in PROBES:
            return await probe(request.path, request.method or "GET")
        response: HttpResponse = await self.get_response(request)
        return response
