"""Client JSON is parsed with a bound on nesting and one clear error."""

from __future__ import annotations

import pytest

from voiceapp.safejson import MAX_DEPTH, JSONInputError, depth, loads


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_depth_counts_lists_and_objects() -> None:
    assert depth(1) == 0
    assert depth([]) == 1
    assert depth({"a": [{"b": 1}]}) == 3


def test_json_at_the_limit_is_parsed() -> None:
    assert depth(loads(nested(MAX_DEPTH))) == MAX_DEPTH


def test_one_level_more_is_refused() -> None:
    with pytest.raises(JSONInputError, match="nested more than"):
        loads(nested(MAX_DEPTH + 1))


def test_brackets_deeper_than_the_interpreter_allows_are_refused() -> None:
    # 6 KB of "[" made the realtime consumer die with RecursionError
    with pytest.raises(JSONInputError, match="nested more than"):
        loads("[" * 6000)
    with pytest.raises(JSONInputError, match="nested more than"):
        loads(nested(100_000))


@pytest.mark.parametrize("raw", ["", "{", "nope", b"\xff\xfe", '{"a": }'])
def test_malformed_text_is_refused_with_the_reason(raw: str | bytes) -> None:
    with pytest.raises(JSONInputError, match="Not valid JSON"):
        loads(raw)
