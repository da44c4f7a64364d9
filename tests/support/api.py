"""A JSON API client for tests, and the error shape every API error has."""

from __future__ import annotations

from typing import Any

from django.test import Client


class Api:
    """``api.get("personas/")``, ``api.post("personas/", {...})``: requests to
    ``/api/v1/`` with the secret key as bearer and JSON bodies."""

    def __init__(self, key: str | None) -> None:
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}

    def __getattr__(self, method: str) -> Any:
        def call(path: str, data: Any = None, **kw: Any) -> Any:
            kwargs = {"headers": {**self.headers, **kw.pop("headers", {})}, **kw}
            if data is not None:
                kwargs.update(data=data, content_type="application/json")
            return getattr(self.client, method)("/api/v1/" + path, **kwargs)

        return call


def error_of(response: Any) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["code"] and body["error"]["message"]
    return body["error"]  # type: ignore[no-any-return]
