"""Knowledge from documents: is a caller's question answered from the right passage?

    .venv/bin/python -m bench.documents                  # the held-out businesses
    .venv/bin/python -m bench.documents --set dev -v     # the set retrieval is tuned on

The businesses of `bench/document_heldout.py` (`--set held-out`: a dental
practice and a bike shop, written on 2026-12-07 before the changes after it)
, `bench/document_cases.py` (`--set dev`: a guest house, a plumber, a dog
groomer and a language school) and `bench/document_dev2.py` (`--set dev2`: a
garage and a wedding venue, written on 2026-12-07 to find how unseen documents
fail, and tuned on since) give their documents as Markdown, HTML, plain text and Word
files. Each is read, cut into passages and embedded as an upload is
(voiceapp/knowledge), and the persona's prompt builder takes each question as
a call's turn does. With the embedded model the passages it picks are spoken as
written, so what it picks is what the caller hears:

- an answerable question is *right* when the picked passages hold the words of
  the sentence that answers (`expect`); *declined* when nothing was picked;
- an unanswerable one is right when it is declined.

Writes bench/results/documents-<time>.json.
"""

from __future__ import annotations

import argparse
import io
import time
from dataclasses import asdict, dataclass
from typing import Any

from .baseline import report_passes
from .document_cases import DEV, Business, Document
from .document_dev2 import DEV2
from .document_heldout import HELD_OUT
from .engine_setup import setup_django

SETS = {"held-out": HELD_OUT, "dev": DEV, "dev2": DEV2}
_EXTENSIONS = {"markdown": "md", "html": "html", "text": "txt", "docx-outline": "docx"}


@dataclass(frozen=True, slots=True)
class Graded:
    business: str
    question: str
    expect: str | None
    said: str  # the passages picked, or the decline
    ok: bool
    declined: bool


def document_bytes(document: Document) -> tuple[str, bytes]:
    """The file a business would upload: its name and bytes."""
    name = document.name
    if not name.endswith("." + _EXTENSIONS[document.format]):
        name = f"{name}.{_EXTENSIONS[document.format]}"
    if document.format != "docx-outline":
        return name, document.body.encode()
    import docx

    word = docx.Document()
    for line in document.body.splitlines():
        if line.startswith("## "):
            word.add_heading(line[3:], level=2)
        elif line.startswith("# "):
            word.add_heading(line[2:], level=1)
        elif line.startswith("- "):
            word.add_paragraph(line[2:], style="List Bullet")
        elif line.strip():
            word.add_paragraph(line)
    out = io.BytesIO()
    word.save(out)
    return name, out.getvalue()


def business_facts(business: Business) -> tuple[Any, ...]:
    """The business's documents as an upload makes them: passages with embeddings."""
    import numpy as np

    from voiceapp.engine.embedder import shared_encoder
    from voiceapp.engine.knowledge import Fact, fact_text
    from voiceapp.knowledge.extract import detect_format, extract
    from voiceapp.knowledge.passages import passages_of

    encoder = shared_encoder()
    facts: list[Any] = []
    for document in business.documents:
        name, data = document_bytes(document)
        passages = passages_of(extract(data, detect_format(data, name=name)))
        plain = [Fact(answer=p.text, question=p.heading) for p in passages]
        vectors = (
            np.asarray(encoder.encode([fact_text(f) for f in plain]), dtype="<f4")
            if encoder is not None
            else [None] * len(plain)
        )
        facts.extend(
            Fact(answer=f.answer, question=f.question, vector=v, passage=True)
            for f, v in zip(plain, vectors, strict=True)
        )
    return tuple(facts)


def grade(businesses: tuple[Business, ...]) -> tuple[list[Graded], dict[str, int]]:
    from voiceapp.engine.embedder import shared_encoder
    from voiceapp.engine.prompt import PromptBuilder

    graded: list[Graded] = []
    passages: dict[str, int] = {}
    for business in businesses:
        facts = business_facts(business)
        passages[business.key] = len(facts)
        builder = PromptBuilder(
            instructions=business.persona_instructions,
            facts=facts,
            encoder=shared_encoder(),
        )
        for case in business.cases:
            turn = builder.turn(case.question)
            declined = turn.declined or not turn.matches
            said = turn.direct or " ".join(m.fact.answer for m in turn.matches[:1])
            if declined:
                said = turn.direct or ""
            ok = declined if case.expect is None else (not declined and case.expect in said)
            graded.append(Graded(business.key, case.question, case.expect, said, ok, declined))
    return graded, passages


def summary(graded: list[Graded], passages: dict[str, int]) -> dict[str, Any]:
    answerable = [g for g in graded if g.expect is not None]
    other = [g for g in graded if g.expect is None]

    def rate(hits: int, of: list[Graded]) -> float:
        return round(hits / max(1, len(of)), 3)

    return {
        "questions": len(graded),
        "passages": sum(passages.values()),
        "right_passage": rate(sum(g.ok for g in answerable), answerable),
        "wrong_passage": rate(sum(not g.ok and not g.declined for g in answerable), answerable),
        "declined_answerable": rate(sum(g.declined for g in answerable), answerable),
        "declined_right": rate(sum(g.ok for g in other), other),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", default="held-out", choices=sorted(SETS))
    parser.add_argument("-v", "--verbose", action="store_true", help="print every miss")
    args = parser.parse_args()
    setup_django()
    started = time.monotonic()
    graded, passages = grade(SETS[args.set])
    print(f"graded {len(graded)} questions in {time.monotonic() - started:.1f} s")
    if args.verbose:
        for g in graded:
            if not g.ok:
                print(f"  {g.business}: {g.question!r} (want {g.expect!r}) -> {g.said!r}")
    result = {"summary": summary(graded, passages), "replies": [asdict(g) for g in graded]}
    report_passes("documents", vars(args), {"this tree": result})


if __name__ == "__main__":
    main()
