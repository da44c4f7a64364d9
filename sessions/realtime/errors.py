"""The one error a client event can cause."""

from __future__ import annotations


class ClientError(Exception):
    """A bad client event: answered with one `error` event; the session goes on.

    `param` is the path of the offending field (``session.audio.input.format``,
    ``item.content[0]``); `event_id` is the client's id of the event, when it
    had a readable one."""

    def __init__(
        self, code: str, message: str, param: str | None = None, event_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.param, self.event_id = code, message, param, event_id

    def __repr__(self) -> str:
        return f"ClientError({self.code!r}, {self.message!r}, {self.param!r})"
