"""Where tests reach the live server (daphne and an inference worker) and find
what it wrote."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class LiveServer:
    host: str
    port: int
    logs: Path | None = None  # web.log (daphne) and worker.log
    media: Path | None = None  # the server's MEDIA_ROOT (call recordings)
    spool: Path | None = None  # its CALL_RECORDING_SPOOL_DIR
    pool: str = ""  # its CHANNELS_PREFIX: the name of its inference pool

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.port}"
