"""The caller's IP address, for HTTP requests and WebSocket scopes alike.

Only the proxies we run are trusted: with TRUSTED_PROXY_HOPS = N, each of the
N proxies in front of the app appends the address it received the request
from to X-Forwarded-For, so the client is the N-th entry from the right.
Anything further left was written by the client and is ignored. With N = 0
(the default: clients connect to the app directly) the header is ignored.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse


def client_ip(*, remote_addr: str, forwarded_for: str, hops: int) -> str:
    """The client's address: `remote_addr`, or with `hops` trusted proxies the
    entry of `forwarded_for` the outermost of them appended."""
    if hops <= 0:
        return remote_addr
    entries = [entry.strip() for entry in forwarded_for.split(",") if entry.strip()]
    if not entries:
        return remote_addr
    # Fewer entries than hops: the request skipped outer proxies, and every
    # entry was still written by a trusted one.
    candidate = entries[-hops] if len(entries) >= hops else entries[0]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote_addr


def client_ip_from_scope(scope: dict[str, Any]) -> str:
    """The client's address for an ASGI scope (the WebSocket endpoints)."""
    client = scope.get("client") or ("", 0)
    return client_ip(
        remote_addr=str(client[0]),
        forwarded_for=_header(scope.get("headers", []), b"x-forwarded-for"),
        hops=settings.TRUSTED_PROXY_HOPS,
    )


def _header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str:
    # Repeated headers count as one comma-separated list, in order.
    values = [value.decode("latin-1") for key, value in headers if key.lower() == name]
    return ",".join(values)


class ClientIPMiddleware:
    """Sets REMOTE_ADDR to the client's address (see the module docstring), so
    every reader (rate limits, call records, allauth) sees the same one."""

    sync_capable = True
    async_capable = True

    def __init__(
        self, get_response: Callable[[HttpRequest], HttpResponse | Awaitable[HttpResponse]]
    ) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def _resolve(self, request: HttpRequest) -> None:
        request.META["REMOTE_ADDR"] = client_ip(
            remote_addr=request.META.get("REMOTE_ADDR", ""),
            forwarded_for=request.META.get("HTTP_X_FORWARDED_FOR", ""),
            hops=settings.TRUSTED_PROXY_HOPS,
        )

    def __call__(self, request: HttpRequest) -> Any:
        self._resolve(request)
        if self.is_async:
            return self._acall(request)
        return self.get_response(request)

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        assert not isinstance(response, HttpResponse)
        return await response
