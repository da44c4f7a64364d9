"""A document's text, as sections: a heading and the blocks of text under it.

Formats: PDF (pypdf), Word .docx (python-docx), HTML (the standard library's
parser; navigation, scripts, styles, forms and footers are left out), Markdown
and plain text. `detect_format` tells them apart by their first bytes and their
name, so a file named .pdf that is not one is refused before it is stored.
Every failure is an `UnreadableDocument` whose message says what to do.
"""

from __future__ import annotations

import html
import io
import re
import zipfile
from dataclasses import dataclass, field
from html.parser import HTMLParser

FORMATS = ("pdf", "docx", "html", "markdown", "text")
FORMAT_NAMES = {
    "pdf": "PDF",
    "docx": "Word document",
    "html": "web page",
    "markdown": "Markdown",
    "text": "text",
}
_EXTENSIONS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
}
_CONTENT_TYPES = {
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/plain": "text",
}


class UnreadableDocument(ValueError):
    """The file is not a document of a format we read, or holds no text."""


@dataclass(slots=True)
class Section:
    heading: str
    blocks: list[str] = field(default_factory=list)


def detect_format(data: bytes, *, name: str = "", content_type: str = "") -> str:
    """The format of `data` (one of FORMATS). Raises UnreadableDocument."""
    if not data.strip():
        raise UnreadableDocument("The file is empty.")
    if data.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(b"PK\x03\x04"):
        if _is_docx(data):
            return "docx"
        raise UnreadableDocument(
            "This is a zip file but not a Word .docx document. Upload PDF, DOCX, "
            "Markdown, HTML or plain text."
        )
    if b"\x00" in data[:4096]:
        raise UnreadableDocument(
            "This file is not text, PDF or a Word .docx document (an old .doc? Save it as "
            ".docx or PDF)."
        )
    ext = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
    claimed = _EXTENSIONS.get(ext) or _CONTENT_TYPES.get(content_type.split(";")[0].strip())
    if claimed in ("pdf", "docx"):
        raise UnreadableDocument(
            f"The file is named as a {FORMAT_NAMES[claimed]}, but it is not one."
        )
    if claimed in ("markdown", "text"):
        return claimed
    head = data[:2048].lstrip().lower()
    if claimed == "html" or head.startswith((b"<!doctype html", b"<html")) or b"<body" in head:
        return "html"
    if ext and ext not in _EXTENSIONS:
        raise UnreadableDocument(
            f"Files ending in {ext} are not read. Upload PDF, DOCX, Markdown, HTML or plain text."
        )
    return "text"


def _is_docx(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return "word/document.xml" in archive.namelist()
    except zipfile.BadZipFile:
        return False


def extract(data: bytes, fmt: str) -> list[Section]:
    """The sections of a document of format `fmt`, with at least some text.
    Raises UnreadableDocument."""
    readers = {
        "pdf": _pdf,
        "docx": _docx,
        "html": lambda d: _html(_decode(d)),
        "markdown": lambda d: _markdown(_decode(d)),
        "text": lambda d: _text(_decode(d)),
    }
    if fmt not in readers:
        raise UnreadableDocument(f"Unknown format {fmt!r}.")
    sections = [s for s in readers[fmt](data) if s.blocks or s.heading]
    if not any(s.blocks for s in sections):
        if fmt == "pdf":
            raise UnreadableDocument(
                "No text was found in this PDF. A scanned PDF holds pictures of its pages, "
                "not text: upload a PDF with text in it, or the text itself."
            )
        raise UnreadableDocument("No text was found in this file.")
    return sections


def _decode(data: bytes) -> str:
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# --- plain text and Markdown --------------------------------------------------------

_MD_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_MD_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_MD_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")


def _markdown_inline(text: str) -> str:
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)  # images: their alt text
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)  # links: their words
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])([*_])(?!\s)(.+?)(?<!\s)\1(?![\w*])", r"\2", text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    return text


def _markdown(text: str) -> list[Section]:
    sections = [Section("")]
    paragraph: list[str] = []
    in_code = False

    def flush() -> None:
        block = _clean(" ".join(paragraph))
        if block:
            sections[-1].blocks.append(block)
        paragraph.clear()

    lines = text.splitlines()
    for i, raw in enumerate(lines):
        if raw.strip().startswith("```"):
            flush()
            in_code = not in_code
            continue
        if in_code:
            continue
        heading = _MD_HEADING.match(raw)
        if heading:
            flush()
            sections.append(Section(_clean(_markdown_inline(heading.group(2)))))
        elif not raw.strip() or _MD_RULE.match(raw):
            flush()
        elif raw.lstrip().startswith("|"):  # a table row: its cells, joined
            flush()
            cells = [c.strip() for c in raw.strip().strip("|").split("|")]
            following = lines[i + 1].strip() if i + 1 < len(lines) else ""
            header = bool(re.fullmatch(r"\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?", following))
            if not header and not all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
                paragraph.append(_markdown_inline(": ".join(c for c in cells if c)))
                flush()
        elif _MD_ITEM.match(raw):
            flush()
            paragraph.append(_markdown_inline(_MD_ITEM.sub("", raw, count=1)))
        else:
            paragraph.append(_markdown_inline(raw.lstrip("> ")))
    flush()
    return sections


# "Nearest station: Ashby Wold, 2.5 miles away": a line of its own, not a heading
_LABELLED = re.compile(r"^[A-Z][\w'&/ -]{0,30}:\s+\S")


def _is_heading_line(line: str) -> bool:
    """A short line without closing punctuation: a heading, when text follows it."""
    return (
        0 < len(line.split()) <= 8
        and not re.search(r"[.,;:!]$", line)
        and not line.startswith(("-", "*", "•"))
        and not _LABELLED.match(line)
    )


def _text(text: str) -> list[Section]:
    """Paragraphs are separated by blank lines; a heading is a short line with no
    closing stop, on its own or first in its paragraph, with text after it."""
    paragraphs: list[list[str]] = [[]]
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            if paragraphs[-1]:
                paragraphs.append([])
        else:
            paragraphs[-1].append(line)
    paragraphs = [p for p in paragraphs if p]
    sections = [Section("")]
    for i, lines in enumerate(paragraphs):
        has_next = len(lines) > 1 or i + 1 < len(paragraphs)
        if _is_heading_line(lines[0]) and has_next:
            sections.append(Section(lines[0]))
            lines = lines[1:]
        block: list[str] = []
        for line in lines:
            if re.match(r"^[-*•]\s+", line) or _LABELLED.match(line):
                _add(sections[-1], block)
                block = [re.sub(r"^[-*•]\s+", "", line)]
            else:
                block.append(line)
        _add(sections[-1], block)
    return sections


def _add(section: Section, lines: list[str]) -> None:
    block = _clean(" ".join(lines))
    if block:
        section.blocks.append(block)


# --- HTML ---------------------------------------------------------------------------

_SKIPPED = frozenset(
    "script style noscript template nav footer header form button select option svg "
    "iframe head aside".split()
)
_BLOCKS = frozenset(
    "p div li dd dt td th tr blockquote section article main pre address figcaption "
    "caption br table ul ol dl".split()
)
_HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
_VOID = frozenset("br hr img input meta link area base col embed source track wbr".split())


class _PageText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections = [Section("")]
        self._skip: list[str] = []  # the open skipped elements (nav, script, ...)
        self._text: list[str] = []
        self._cells: list[str] | None = None
        self._header_row = False  # a row of <th> cells only: the table's labels
        self._in_heading = False

    def flush(self) -> None:
        block = _clean("".join(self._text))
        self._text.clear()
        if not block:
            return
        if self._cells is not None:
            self._cells.append(block)
        elif self._in_heading:
            self.sections.append(Section(block))
        else:
            self.sections[-1].blocks.append(block)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            if tag == "br" and not self._skip:
                self.flush()  # "Monday to Friday: 8 to 6<br>Saturday: ...": lines of their own
            return
        if tag in _SKIPPED:
            self._skip.append(tag)
            return
        if self._skip:
            return
        if tag in _HEADINGS:
            self.flush()
            self._in_heading = True
        elif tag == "tr":
            self.flush()
            self._cells = []
            self._header_row = True
        elif tag in _BLOCKS:
            if tag == "td":
                self._header_row = False
            self.flush()

    def handle_endtag(self, tag: str) -> None:
        if self._skip:
            if tag == self._skip[-1]:
                self._skip.pop()
            return
        if tag in _HEADINGS:
            self.flush()
            self._in_heading = False
        elif tag == "tr":
            self.flush()
            if self._cells and not self._header_row:
                self.sections[-1].blocks.append(": ".join(self._cells))
            self._cells = None
        elif tag in _BLOCKS:
            self.flush()

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._text.append(data)


def _html(text: str) -> list[Section]:
    parser = _PageText()
    # Of the <head> (skipped) only the <title> is kept: the first section's heading.
    title = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
    parser.feed(text)
    parser.close()
    parser.flush()
    sections = parser.sections
    if title and not sections[0].heading:
        sections[0].heading = _clean(html.unescape(title.group(1)))
    return sections


# --- PDF and Word -------------------------------------------------------------------


def _pdf(data: bytes) -> list[Section]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                unlocked = bool(reader.decrypt(""))
            except Exception:  # pypdf raises several kinds for ciphers it lacks
                unlocked = False
            if not unlocked:
                raise UnreadableDocument(
                    "This PDF is protected by a password. Upload a copy without one."
                )
        pages = [page.extract_text() or "" for page in reader.pages]
    except UnreadableDocument:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise UnreadableDocument(f"This PDF could not be read ({exc}).") from exc
    return _text("\n\n".join(pages))


def _docx(data: bytes) -> list[Section]:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise UnreadableDocument(f"This Word document could not be read ({exc}).") from exc
    sections = [Section("")]
    for paragraph in document.paragraphs:
        text = _clean(paragraph.text)
        if not text:
            continue
        style = (paragraph.style.name if paragraph.style is not None else "") or ""
        if style.startswith(("Heading", "Title")):
            sections.append(Section(text))
        else:
            sections[-1].blocks.append(text)
    for table in document.tables:
        for row in table.rows:
            cells = [_clean(c.text) for c in row.cells]
            line = ": ".join(dict.fromkeys(c for c in cells if c))
            if line:
                sections[-1].blocks.append(line)
    return sections
