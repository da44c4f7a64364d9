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

    def errors(self, lines: int = 60) -> str:
        """The server's logged errors (with their tracebacks), for a failure's message."""
        if self.logs is None:
            return ""
        found: list[str] = []
        for name in ("web.log", "worker.log"):
            path = self.logs / name
            text = path.read_text(errors="replace").splitlines() if path.exists() else []
            for i, line in enumerate(text):
                if " ERROR " in line or "Traceback" in line:
                    found.extend(text[i : i + 25])
        return "\n".join(found[-lines:])
