"""Outgoing webhook requests that cannot reach the server's own network.

A webhook URL is the customer's, so without a guard anyone could make the
server POST to its own loopback, its private network or a cloud metadata
address. Every address the host resolves to is checked, at creation and again
at each send, and the request goes to an address that was checked (a second
DNS answer cannot swap in another one). Redirects are not followed.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

MAX_URL_CHARS = 500


class UnsafeURL(ValueError):
    """The URL is malformed or points at an address webhooks may not reach."""


@dataclass(frozen=True, slots=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]


def _refusal(address: str) -> str | None:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_private:
        return "a private address"
    if ip.is_multicast or ip.is_reserved or not ip.is_global:
        return "not a public address"
    return None


def parse(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path with query) of an http(s) URL, or UnsafeURL."""
    if len(url) > MAX_URL_CHARS:
        raise UnsafeURL(f"Use a URL of at most {MAX_URL_CHARS} characters.")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise UnsafeURL("This is not a valid URL.") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnsafeURL("Use an http:// or https:// URL with a host name.")
    if parts.username or parts.password:
        raise UnsafeURL("Leave user names and passwords out of the URL.")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path


def resolve(url: str, *, allow_private: bool, what: str = "Webhooks") -> Target:
    """Parse `url` and resolve its host; every address must be public unless
    `allow_private`. Raises UnsafeURL (its message begins with `what`)."""
    scheme, host, port, path = parse(url)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnsafeURL(f"The host {host} could not be resolved.") from exc
    addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise UnsafeURL(f"The host {host} could not be resolved.")
    if not allow_private:
        for address in addresses:
            why = _refusal(address)
            if why is not None:
                raise UnsafeURL(
                    f"{what} cannot be sent to {host}: {address} is {why}. Use a public URL."
                )
    return Target(scheme=scheme, host=host, port=port, path=path, addresses=addresses)


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def post(target: Target, *, body: bytes, headers: dict[str, str], timeout_s: float) -> int:
    """POST `body` to the first address of `target` that accepts a connection;
    the response's status code. Raises OSError (refused, timed out, TLS) or
    http.client.HTTPException."""
    return request(target, body=body, headers=headers, timeout_s=timeout_s)[0]


def request(
    target: Target,
    *,
    body: bytes,
    headers: dict[str, str],
    timeout_s: float,
    max_response_bytes: int = 64 * 1024,
) -> tuple[int, bytes]:
    """`post`, returning the status and the first `max_response_bytes` of the body."""
    kind = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
    last: OSError | None = None
    for address in target.addresses:
        conn = kind(target.host, target.port, address=address, timeout=timeout_s)
        try:
            conn.request("POST", target.path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.read(max_response_bytes)
        except ConnectionRefusedError as exc:
            last = exc
        finally:
            conn.close()
    assert last is not None
    raise last


@dataclass(frozen=True, slots=True)
class Page:
    status: int
    content_type: str
    body: bytes
    too_large: bool  # the body went past the bytes asked for, and was cut there
    url: str  # where it came from, after redirects


def get(
    url: str,
    *,
    allow_private: bool,
    timeout_s: float,
    max_bytes: int,
    what: str = "Pages",
    max_redirects: int = 3,
) -> Page:
    """GET `url`, following up to `max_redirects` redirects, each to a checked
    address. Raises UnsafeURL (a refused address, too many redirects), OSError or
    http.client.HTTPException."""
    for _ in range(max_redirects + 1):
        target = resolve(url, allow_private=allow_private, what=what)
        kind = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
        last: OSError | None = None
        for address in target.addresses:
            conn = kind(target.host, target.port, address=address, timeout=timeout_s)
            try:
                conn.request("GET", target.path, headers={"User-Agent": "voiceapp-knowledge/1"})
                response = conn.getresponse()
                location = response.getheader("Location")
                if response.status in (301, 302, 303, 307, 308) and location:
                    url = urljoin(url, location)
                    break
                body = response.read(max_bytes + 1)
                return Page(
                    status=response.status,
                    content_type=response.getheader("Content-Type") or "",
                    body=body[:max_bytes],
                    too_large=len(body) > max_bytes,
                    url=url,
                )
            except ConnectionRefusedError as exc:
                last = exc
            finally:
                conn.close()
        else:
            assert last is not None
            raise last
    raise UnsafeURL(f"The page redirected more than {max_redirects} times.")
