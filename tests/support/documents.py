"""Documents for the knowledge tests: a PDF made by WeasyPrint from HTML, a Word
file made by python-docx, and a small HTTP server that serves pages on loopback."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def pdf_bytes(body_html: str) -> bytes:
    from weasyprint import HTML

    return HTML(string=f"<html><body>{body_html}</body></html>").write_pdf()


def docx_bytes(
    paragraphs: list[tuple[str, str]], *, table: list[tuple[str, ...]] | None = None
) -> bytes:
    """`paragraphs`: (style, text); a style of "" is a plain paragraph."""
    import docx

    document = docx.Document()
    for style, text in paragraphs:
        if style.startswith("Heading"):
            document.add_heading(text, level=int(style.rsplit(" ", 1)[-1]))
        elif style == "List Bullet":
            document.add_paragraph(text, style="List Bullet")
        else:
            document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, cell in enumerate(row):
                grid.cell(r, c).text = cell
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


class PageServer:
    """Serves `pages[path] = (status, content_type, body)` on 127.0.0.1; counts GETs."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[int, str, bytes]] = {}
        self.hits: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # the standard library's name
                server.hits[self.path] = server.hits.get(self.path, 0) + 1
                status, content_type, body = server.pages.get(
                    self.path, (404, "text/plain", b"not found")
                )
                self.send_response(status)
                if status in (301, 302):
                    self.send_header("Location", body.decode())
                    body = b""
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @contextmanager
    def running(self) -> Iterator[PageServer]:
        thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._httpd.shutdown()
            self._httpd.server_close()
