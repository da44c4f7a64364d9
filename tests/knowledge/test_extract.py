"""Reading documents: each format's text and headings, and a clear refusal of
files that are not what they claim, or hold no text."""

from __future__ import annotations

import io

import pytest

from tests.support.documents import docx_bytes, pdf_bytes
from voiceapp.knowledge.extract import Section, UnreadableDocument, detect_format, extract


def blocks(sections: list[Section]) -> list[str]:
    return [b for s in sections for b in s.blocks]


def test_markdown_headings_lists_and_tables() -> None:
    text = (
        "# Rosie's Bakery\n\nWe bake **sourdough** every [morning](https://x.test).\n\n"
        "## Payment\n- Visa\n- Cash\n\n| Cake | Price |\n|---|---|\n| Birthday cake | £30 |\n"
        "```\ncode is skipped\n```\n"
    ).encode()
    sections = extract(text, detect_format(text, name="faq.md"))
    assert [s.heading for s in sections] == ["Rosie's Bakery", "Payment"]
    assert sections[0].blocks == ["We bake sourdough every morning."]
    assert sections[1].blocks == ["Visa", "Cash", "Birthday cake: £30"]  # header row left out


def test_html_keeps_the_content_and_drops_navigation_scripts_and_footers() -> None:
    page = b"""<!doctype html><html><head><title>Spokes</title><style>p{}</style></head>
    <body><nav><a href="/">Home</a><a href="/prices">Prices</a></nav>
    <h1>Repairs</h1><p>Most repairs take <b>two days</b>.</p><ul><li>Puncture fix</li></ul>
    <table><tr><th>Service</th><th>Price</th></tr><tr><td>Full service</td><td>&pound;60</td></tr>
    </table><script>var tracking = 1;</script><footer>Copyright Spokes</footer></body></html>"""
    sections = extract(page, detect_format(page, name="index.html"))
    assert sections[0].heading == "Spokes"
    assert [s.heading for s in sections[1:]] == ["Repairs"]
    assert sections[1].blocks == [
        "Most repairs take two days.",
        "Puncture fix",
        "Full service: £60",
    ]
    text = " ".join(blocks(sections))
    assert "Home" not in text and "tracking" not in text and "Copyright" not in text


def test_plain_text_short_lines_before_text_are_headings() -> None:
    text = (
        b"Opening hours\nWe open at 9 on weekdays.\nAnd at 10 on Saturdays.\n\n"
        b"Parking\n\nUse the car park behind the shop.\n"  # a heading on a line of its own
    )
    sections = extract(text, detect_format(text, name="notes.txt"))
    assert [(s.heading, s.blocks) for s in sections if s.blocks] == [
        ("Opening hours", ["We open at 9 on weekdays. And at 10 on Saturdays."]),
        ("Parking", ["Use the car park behind the shop."]),
    ]


def test_lines_a_page_breaks_or_labels_are_lines_of_their_own() -> None:
    page = b"""<html><body><h2>Opening hours</h2>
    <p>Monday to Friday: 8 am to 6 pm<br>Saturday: 9 am to noon<br>Sunday: closed</p>
    </body></html>"""
    sections = extract(page, detect_format(page, name="hours.html"))
    assert sections[-1].blocks == [
        "Monday to Friday: 8 am to 6 pm",
        "Saturday: 9 am to noon",
        "Sunday: closed",
    ]
    # "Label: value" lines are neither a heading nor one run-on line
    text = b"Getting here\n\nAddress: 1 Mill Lane, Ashby\nNearest station: Ashby, 2 miles away\n"
    sections = extract(text, detect_format(text, name="brochure.txt"))
    assert [(s.heading, s.blocks) for s in sections if s.blocks] == [
        ("Getting here", ["Address: 1 Mill Lane, Ashby", "Nearest station: Ashby, 2 miles away"])
    ]


def test_word_documents_keep_headings_paragraphs_and_tables() -> None:
    data = docx_bytes(
        [("Heading 1", "Terms"), ("", "A deposit of £20 is taken when you book.")],
        table=[("Item", "Price"), ("Call-out", "£80")],
    )
    assert detect_format(data, name="terms.docx") == "docx"
    sections = extract(data, "docx")
    assert sections[-1].heading == "Terms"
    assert sections[-1].blocks == [
        "A deposit of £20 is taken when you book.",
        "Item: Price",
        "Call-out: £80",
    ]


def test_pdf_text_is_read() -> None:
    data = pdf_bytes("<h1>Prices</h1><p>A check-up costs £45 and takes half an hour.</p>")
    assert detect_format(data, name="prices.pdf") == "pdf"
    text = " ".join(blocks(extract(data, "pdf")))
    assert "A check-up costs £45 and takes half an hour." in text


@pytest.mark.parametrize(
    ("data", "name", "message"),
    [
        (b"", "empty.txt", "The file is empty."),
        (b"just some words", "fake.pdf", "named as a PDF, but it is not one"),
        (b"PK\x03\x04 not really a zip", "fake.docx", "not a Word .docx document"),
        (b"\xd0\xcf\x11\xe0\x00\x00binary", "old.doc", "old .doc"),
        (b"a,b,c\n1,2,3\n", "table.csv", "Files ending in .csv are not read"),
    ],
)
def test_files_that_are_not_what_they_claim_are_refused(
    data: bytes, name: str, message: str
) -> None:
    with pytest.raises(UnreadableDocument, match=message):
        detect_format(data, name=name)


def test_a_pdf_without_text_says_so() -> None:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=595, height=842)  # a page as a scanner leaves it: no text
    out = io.BytesIO()
    writer.write(out)
    with pytest.raises(UnreadableDocument, match="scanned PDF"):
        extract(out.getvalue(), "pdf")


def test_a_password_protected_pdf_says_so() -> None:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes("<p>Secret prices.</p>"))))
    writer.encrypt(user_password="letmein", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    with pytest.raises(UnreadableDocument, match="password"):
        extract(out.getvalue(), "pdf")


def test_a_broken_pdf_says_it_could_not_be_read() -> None:
    data = pdf_bytes("<p>Hello there, this is fine.</p>")
    with pytest.raises(UnreadableDocument):
        extract(data[:200], "pdf")
