"""The documents bench (bench/documents.py) as a CI slice: its cases are sound, and
its development set is read, cut and graded as an upload would be."""

from __future__ import annotations

from bench.document_cases import DEV, check
from bench.document_dev2 import DEV2
from bench.document_heldout import HELD_OUT
from bench.documents import business_facts, grade, summary


def test_every_expected_answer_is_one_sentence_of_its_documents() -> None:
    check()
    assert {b.key for b in DEV}.isdisjoint(b.key for b in HELD_OUT)


def test_each_expected_answer_lands_whole_in_one_passage() -> None:
    # the passages are what the agent speaks: an answer cut in two could not be said
    for business in (*DEV, *DEV2, *HELD_OUT):
        texts = [f.answer for f in business_facts(business)]
        for case in business.cases:
            if case.expect is not None:
                assert sum(case.expect in t for t in texts) == 1, (business.key, case.expect)


def test_the_development_set_is_graded() -> None:
    graded, passages = grade(DEV)
    result = summary(graded, passages)
    answerable = sum(c.expect is not None for b in DEV for c in b.cases)
    assert result["questions"] == sum(len(b.cases) for b in DEV) == len(graded)
    # every answerable question ends one way: right, wrong or declined
    shares = result["right_passage"] + result["wrong_passage"] + result["declined_answerable"]
    assert abs(shares - 1) < 0.01 and answerable > 0
    assert all(g.said for g in graded if not g.declined)
